//go:build !linux

package bench

import "syscall"

// childAttr: elsewhere an agents' process ends when its standard
// input does, which the bench's death also ends.
func childAttr() *syscall.SysProcAttr { return nil }
