package testrun

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestNetNS runs a test that listens on a fixed port while this process
// holds that port: on the host network it fails, in a network namespace of
// its own it passes (its loopback up).
func TestNetNS(t *testing.T) {
	ok, err := NetNSAvailable()
	if !ok {
		t.Skipf("no network namespaces here: %v", err)
	}
	bin, dir := helperBinary(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	out := filepath.Join(t.TempDir(), "out.log")
	run := Run{Binary: bin, Dir: dir, Test: "TestListen", Timeout: time.Minute, Output: out, Env: []string{"H_PORT=" + port}}
	res, err := run.Start(context.Background())
	if err != nil || res.ExitCode != 1 || res.NetNS {
		data, _ := os.ReadFile(out)
		t.Errorf("on the host network: %+v, %v, want exit 1 (port taken)\n%s", res, err, data)
	}
	run.NetNS = true
	res, err = run.Start(context.Background())
	if err != nil || res.ExitCode != 0 || !res.NetNS {
		data, _ := os.ReadFile(out)
		t.Errorf("in a namespace of its own: %+v, %v, want exit 0\n%s", res, err, data)
	}
}

// TestNetNSHungRunIsKilled: the helper becomes the test binary, so a hung
// run in a namespace of its own is killed with its children as any other.
func TestNetNSHungRunIsKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a timeout")
	}
	if ok, err := NetNSAvailable(); !ok {
		t.Skipf("no network namespaces here: %v", err)
	}
	bin, dir := helperBinary(t)
	out := filepath.Join(t.TempDir(), "out.log")
	start := time.Now()
	res, err := Run{Binary: bin, Dir: dir, Test: "TestHang", Timeout: 3 * time.Second, Output: out, NetNS: true,
		Env: []string{"H_PIDFILE=" + filepath.Join(t.TempDir(), "started")}}.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut || !res.NetNS {
		t.Errorf("hung run in a namespace of its own: %+v", res)
	}
	if d := time.Since(start); d > 2*time.Minute {
		t.Errorf("hung run took %v", d)
	}
}
