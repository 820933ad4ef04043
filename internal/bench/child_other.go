//go:build !linux

package bench

import "syscall"

// benchChildAttr: elsewhere an agents' process ends when its standard
// input does, which the bench's death also ends.
func benchChildAttr() *syscall.SysProcAttr { return nil }
