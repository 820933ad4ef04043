//go:build unix

package record

import (
	"errors"
	"os"
	"syscall"
)

// openNoFollow opens path with flags (mode 0644 when created), never
// through a symbolic link in its last element: errSymlink then.
func openNoFollow(path string, flags int) (*os.File, error) {
	f, err := os.OpenFile(path, flags|syscall.O_NOFOLLOW, 0o644)
	if errors.Is(err, syscall.ELOOP) {
		return nil, errSymlink
	}
	return f, err
}
