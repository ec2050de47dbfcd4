package hook

import (
	"syscall"
	"unsafe"
)

// loopbackUp sets the lo interface of the process's network namespace up
// (abi.EnvNetNS) and drops the ambient capabilities a user namespace gave
// the process for it.
func loopbackUp() error {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	// struct ifreq: the name, then the flags (a short) in the union.
	var ifr [40]byte
	copy(ifr[:], "lo")
	flags := (*uint16)(unsafe.Pointer(&ifr[syscall.IFNAMSIZ]))
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.SIOCGIFFLAGS, uintptr(unsafe.Pointer(&ifr))); e != 0 {
		return e
	}
	*flags |= syscall.IFF_UP | syscall.IFF_RUNNING
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.SIOCSIFFLAGS, uintptr(unsafe.Pointer(&ifr))); e != 0 {
		return e
	}
	const prCapAmbient, prCapAmbientClearAll = 47, 4
	syscall.RawSyscall6(syscall.SYS_PRCTL, prCapAmbient, prCapAmbientClearAll, 0, 0, 0, 0)
	return nil
}
