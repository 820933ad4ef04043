//go:build !unix

package record

import (
	"io/fs"
	"os"
)

// openNoFollow opens path with flags (mode 0644 when created), never
// through a symbolic link in its last element: errSymlink then. Without
// O_NOFOLLOW the link is looked for first, so a link planted between the
// look and the open is followed; with O_EXCL (no overwrite) the open
// still fails on anything there.
func openNoFollow(path string, flags int) (*os.File, error) {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return nil, errSymlink
	}
	return os.OpenFile(path, flags, 0o644)
}
