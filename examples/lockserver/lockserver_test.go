package lockserver

import (
	"testing"
	"time"
)

// config is the test's own work between Init and Close (loading the agent
// configuration): long enough that run has created the server in a plain
// run.
func config() int {
	time.Sleep(50 * time.Millisecond)
	return 1
}

func TestInitClose(t *testing.T) {
	dps := New("127.0.0.1:8038")
	dps.Init()
	if config() == 0 {
		t.Fatal("no config")
	}
	dps.Close()
	<-dps.Started()
}
