//go:build unix

package rulefile

import (
	"os"
	"syscall"
)

// openRegular opens path for reading without blocking on a named pipe
// (O_NONBLOCK), so that its caller can look at what it opened and refuse
// it. A regular file ignores O_NONBLOCK.
func openRegular(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
