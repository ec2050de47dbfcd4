package testrun

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/memorder/wafl/abi"
)

// A run with NetNS set starts in a network namespace of its own: the
// process is cloned into a new namespace (and, for a user without
// CAP_SYS_ADMIN, a new user namespace mapping only its own ids). An
// instrumented test binary brings the namespace's loopback interface up
// itself, first thing in its runtime's init (abi.EnvNetNS, package hook);
// any other binary starts through a helper: the executable that started
// it (wafl, or a test binary linking this package) with envNetns set,
// which brings loopback up and replaces itself with the test binary
// (netnsExec). The test binary then binds 127.0.0.1 and ::1 ports and
// abstract Unix sockets that no other process sees.

// envNetns marks the helper process; its value is unused.
const envNetns = "WAFL_NETNS_EXEC"

func init() {
	if _, ok := os.LookupEnv(envNetns); ok {
		netnsExec()
	}
}

// netnsExec is the helper: os.Args[1:] are the test binary and its
// arguments (none: a probe, which exits 0 once loopback is up).
func netnsExec() {
	os.Unsetenv(envNetns)
	if err := loopbackUp(); err != nil {
		fmt.Fprintf(os.Stderr, "wafl: bringing up loopback in a network namespace of its own: %v\n", err)
		os.Exit(125)
	}
	if len(os.Args) < 2 {
		os.Exit(0)
	}
	// The capability that brought loopback up is not the test's.
	_ = unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
	err := syscall.Exec(os.Args[1], os.Args[1:], os.Environ())
	fmt.Fprintf(os.Stderr, "wafl: %s: %v\n", os.Args[1], err)
	os.Exit(125)
}

// loopbackUp sets the lo interface of the current network namespace up.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("lo: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP | unix.IFF_RUNNING)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("lo: %w", err)
	}
	return nil
}

// netnsAttr is how a helper is cloned into a new network namespace:
// root (with CAP_SYS_ADMIN) needs nothing more; anyone else needs a user
// namespace too, in which the helper keeps CAP_NET_ADMIN across its exec.
func netnsAttr(root bool) *syscall.SysProcAttr {
	if root {
		return &syscall.SysProcAttr{Setpgid: true, Cloneflags: syscall.CLONE_NEWNET}
	}
	uid, gid := os.Getuid(), os.Getgid()
	return &syscall.SysProcAttr{
		Setpgid:                    true,
		Cloneflags:                 syscall.CLONE_NEWNET | syscall.CLONE_NEWUSER,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
		GidMappingsEnableSetgroups: false,
		AmbientCaps:                []uintptr{unix.CAP_NET_ADMIN},
	}
}

// netns is what the probe found: the clone attributes that work here,
// or none (the system allows no new network namespace, or wafl cannot
// start itself).
var netns = sync.OnceValues(func() (func() *syscall.SysProcAttr, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, root := range []bool{true, false} {
		if root && os.Geteuid() != 0 {
			continue
		}
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), envNetns+"=")
		cmd.SysProcAttr = netnsAttr(root)
		out, err := cmd.CombinedOutput()
		if err == nil {
			return func() *syscall.SysProcAttr { return netnsAttr(root) }, nil
		}
		errs = append(errs, fmt.Errorf("%w %s", err, out))
	}
	return nil, fmt.Errorf("no network namespace of its own for a test process: %v", errs)
})

// NetNSAvailable says whether runs with NetNS set get a network
// namespace of their own here; when not, err says why (those runs then
// share the host's network).
func NetNSAvailable() (bool, error) {
	attr, err := netns()
	return attr != nil, err
}

// isolate makes cmd start in a network namespace of its own, when the
// system allows it, bringing its loopback up itself (selfUp: a binary
// linking wafl's runtime, given abi.EnvNetNS) or through the helper; it
// reports whether it did.
func isolate(cmd *exec.Cmd, selfUp bool) bool {
	attr, _ := netns()
	if attr == nil {
		return false
	}
	if selfUp {
		cmd.Env = append(cmd.Env, abi.Env(abi.EnvNetNS, "1"))
		cmd.SysProcAttr = attr()
		return true
	}
	self, err := os.Executable()
	if err != nil {
		return false
	}
	cmd.Args = append([]string{self}, cmd.Args...)
	cmd.Args[1] = cmd.Path
	cmd.Path = self
	cmd.Env = append(cmd.Env, envNetns+"=")
	cmd.SysProcAttr = attr()
	return true
}
