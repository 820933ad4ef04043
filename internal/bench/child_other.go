//go:build !linux

package bench

import (
	"io"
	"syscall"
)

// childAttr: elsewhere an agents' process ends when its standard
// input does, which the bench's death also ends.
func childAttr() *syscall.SysProcAttr { return nil }

// quietReader: elsewhere an agents' process's output is read as it is.
func quietReader(r io.Reader) io.Reader { return r }
