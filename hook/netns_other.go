//go:build !linux

package hook

import "errors"

// loopbackUp: network namespaces of their own are Linux's.
func loopbackUp() error {
	return errors.New("no network namespaces on this system")
}
