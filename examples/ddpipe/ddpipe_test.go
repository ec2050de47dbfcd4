package ddpipe

import (
	"strings"
	"testing"
	"time"
)

// The first metric is flushed (dialing the pipe) right away; the client is
// closed 8 ms later.
func TestCloseAfterFirstMetric(t *testing.T) {
	pipe := &MemPipe{}
	c := New(`\\.\pipe\dogstatsd`, pipe.Dial)
	c.Count("requests", 1)
	time.Sleep(8 * time.Millisecond)
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got := pipe.String(); got != "" && !strings.HasPrefix(got, "requests:1|c") {
		t.Fatalf("pipe content %q", got)
	}
}
