//go:build !linux

package testrun

import (
	"errors"
	"os/exec"
)

// NetNSAvailable says whether runs with NetNS set get a network
// namespace of their own: only on Linux.
func NetNSAvailable() (bool, error) {
	return false, errors.New("network namespaces of their own for test processes are Linux's")
}

func isolate(*exec.Cmd, bool) bool { return false }
