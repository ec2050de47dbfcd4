package watchadd

import (
	"testing"
	"time"
)

// certinel's TestClose: an empty certificate, its load error, then Close
// (here 8 ms after the error).
func TestClose(t *testing.T) {
	watcher := New("/etc/certs/cert.pem", "")
	_, errChan := watcher.Watch()
	select {
	case err := <-errChan:
		if err == nil {
			t.Fatal("expected a certificate error")
		}
	case <-time.After(time.Second):
		t.Fatal("expected a certificate error")
	}
	time.Sleep(8 * time.Millisecond)
	if err := watcher.Close(); err != nil {
		t.Fatal(err)
	}
}
