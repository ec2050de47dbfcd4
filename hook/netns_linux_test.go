package hook

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/memorder/wafl/abi"
)

// TestNetNSLoopback starts this test binary in a network namespace of its
// own: with abi.EnvNetNS the runtime's init brings loopback up and the
// child listens and dials on 127.0.0.1; without it loopback stays down.
func TestNetNSLoopback(t *testing.T) {
	if os.Getenv("HOOK_NETNS_CHILD") != "" {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		go func() {
			if c, err := l.Accept(); err == nil {
				c.Close()
			}
		}()
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		return
	}
	run := func(netns bool) error {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestNetNSLoopback$")
		cmd.Env = append(os.Environ(), "HOOK_NETNS_CHILD=1")
		if netns {
			cmd.Env = append(cmd.Env, abi.Env(abi.EnvNetNS, "1"))
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Logf("netns %v: %v\n%s", netns, err, out)
		}
		return err
	}
	err := run(false)
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Skipf("no network namespace for a child here: %v", err)
	}
	if err == nil {
		t.Error("without abi.EnvNetNS the child's loopback is up; want it down, as a new namespace has it")
	}
	if err := run(true); err != nil {
		t.Errorf("with abi.EnvNetNS: %v; want loopback up", err)
	}
}
