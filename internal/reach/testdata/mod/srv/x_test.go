package srv_test

import (
	"testing"

	"example.com/mod/srv"
)

func TestOther(t *testing.T) { srv.Other(&srv.Server{}) }
