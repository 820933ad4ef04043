package rulefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
)

// DefaultMaxBytes is ReadFile's bound on a file's size when it is given
// none: 4 MiB, some ten thousand rules.
const DefaultMaxBytes = 4 << 20

// The errors of reading a file, for errors.Is.
var (
	// ErrTooLarge: the file is larger than the bound.
	ErrTooLarge = errors.New("rule file too large")
	// ErrNotRegular: the path names a directory, a named pipe, a device
	// or a socket, which a rule file is not.
	ErrNotRegular = errors.New("not a regular file")
)

// ReadFile reads and parses the rule file at path, as Parse does with
// format f. It reads at most maxBytes (DefaultMaxBytes when 0 or less): a
// larger file is an error wrapping ErrTooLarge that says its size and
// the bound. It reads only a regular file (a symbolic link to one is
// followed): a directory, a named pipe, a device or a socket is an error
// wrapping ErrNotRegular, and opening one never blocks (a named pipe
// without a writer). Errors name the path.
func ReadFile(path string, f Format, maxBytes int64) (Rules, Format, error) {
	data, err := readBounded(path, maxBytes)
	if err != nil {
		return Rules{}, f, err
	}
	rules, format, err := Parse(data, f)
	if err != nil {
		return Rules{}, format, fmt.Errorf("%s: %w", path, err)
	}
	return rules, format, nil
}

// readBounded reads a regular file of at most maxBytes.
func readBounded(path string, maxBytes int64) ([]byte, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	file, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, notRegular(path, st.Mode())
	}
	if st.Size() > maxBytes {
		return nil, tooLarge(path, st.Size(), maxBytes)
	}
	// The file may grow between the look and the read: read one byte more
	// than the bound to see it.
	data, err := io.ReadAll(io.LimitReader(file, maxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(data)) > maxBytes {
		return nil, tooLarge(path, int64(len(data)), maxBytes)
	}
	return data, nil
}

// tooLarge is the error of a file of size bytes (at least) over the bound.
func tooLarge(path string, size, maxBytes int64) error {
	return fmt.Errorf("%s: %w: %d bytes, over the limit of %d bytes", path, ErrTooLarge, size, maxBytes)
}

// notRegular is the error of a path that is not a regular file.
func notRegular(path string, mode fs.FileMode) error {
	what := "a special file"
	switch {
	case mode.IsDir():
		what = "a directory"
	case mode&fs.ModeNamedPipe != 0:
		what = "a named pipe"
	case mode&fs.ModeDevice != 0:
		what = "a device"
	case mode&fs.ModeSocket != 0:
		what = "a socket"
	}
	return fmt.Errorf("%s: %w: it is %s", path, ErrNotRegular, what)
}
