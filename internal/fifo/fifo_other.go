//go:build !unix

package fifo

import (
	"errors"
	"fmt"
)

// Make creates a named pipe at path with mode perm; there is none here.
func Make(path string, perm uint32) error {
	return fmt.Errorf("%s: named pipes: %w", path, errors.ErrUnsupported)
}
