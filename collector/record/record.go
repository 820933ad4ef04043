package record

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/sentinel-top/sentinel-top/core/wire"
)

// ErrExists is returned by Create for a path that already exists when
// overwriting was not asked for.
var ErrExists = errors.New("already exists (overwrite it explicitly, or name another file)")

// errSymlink is openNoFollow's refusal of a symbolic link.
var errSymlink = errors.New("is a symbolic link")

// Reader reads a recording file: the wire.Reader of Open's file, with the
// file's name in its positions and errors. Close it when done.
type Reader struct {
	*wire.Reader
	f *os.File
}

// Open opens the recording or fixture file at path, plain or
// gzip-compressed (told by its bytes, not its name).
func Open(path string) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	return &Reader{Reader: wire.NewReader(f, path), f: f}, nil
}

// Close closes the file; closing it again does nothing.
func (r *Reader) Close() error {
	if r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f = nil
	return err
}

// Writer writes a recording file: the wire.Writer to Create's file. Close
// it, not the wire.Writer, to end the stream and close the file.
type Writer struct {
	*wire.Writer
	f *os.File
}

// Create creates a recording at path, gzip-compressed when the name ends
// in ".gz". It never writes through a symbolic link, overwrite or not, and
// unless overwrite is set it refuses a path where anything is already
// there (an error wrapping ErrExists). Close the Writer to flush
// everything.
func Create(path string, overwrite bool) (*Writer, error) {
	flags := os.O_WRONLY | os.O_CREATE
	if overwrite {
		flags |= os.O_TRUNC
	} else {
		flags |= os.O_EXCL
	}
	f, err := openNoFollow(path, flags)
	switch {
	case errors.Is(err, os.ErrExist):
		return nil, fmt.Errorf("%s: %w", path, ErrExists)
	case errors.Is(err, errSymlink):
		return nil, fmt.Errorf("%s: is a symbolic link; a recording is never written through one", path)
	case err != nil:
		return nil, err
	}
	w := &Writer{f: f}
	if strings.HasSuffix(path, ".gz") {
		w.Writer = wire.NewGzipWriter(f)
	} else {
		w.Writer = wire.NewWriter(f)
	}
	return w, nil
}

// Close flushes, ends the gzip stream and closes the file; the first
// error of the three is returned.
func (w *Writer) Close() error {
	err := w.Writer.Close()
	if w.f != nil {
		if cerr := w.f.Close(); err == nil {
			err = cerr
		}
		w.f = nil
	}
	return err
}
