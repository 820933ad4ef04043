//go:build !unix

package rulefile

import "os"

// openRegular opens path for reading, after looking at it: without
// O_NONBLOCK, opening a named pipe could block, so what is not a regular
// file is refused before it is opened (and, by its caller, after).
func openRegular(path string) (*os.File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, notRegular(path, st.Mode())
	}
	return os.Open(path)
}
