package srv

import (
	"net"
	"testing"
)

func TestRunClose(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skip(err)
	}
	s := Run(l)
	s.Close()
}

func TestDeep(t *testing.T) {
	x := 1
	Deep(&x)
}

func TestSubtest(t *testing.T) {
	t.Run("sorted", func(t *testing.T) { (&Server{}).Sorted() })
}
