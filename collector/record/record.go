package record

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

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
	f    *os.File
	file *failingFile
}

// failingFile is the file as the wire.Writer writes it: it keeps the
// first error a write returned (a full disk, a file size limit) and closes
// failed when it does, so that the owner learns of it at once, not when it
// next writes or at Close.
type failingFile struct {
	f      *os.File
	once   sync.Once
	failed chan struct{}
	err    error // set before failed is closed
}

func (w *failingFile) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	if err != nil {
		w.once.Do(func() { w.err = err; close(w.failed) })
	}
	return n, err
}

// Failed is closed when a write to the file first fails; Err then says why.
func (w *Writer) Failed() <-chan struct{} { return w.file.failed }

// Err is the first error writing the file, nil while every write has
// succeeded.
func (w *Writer) Err() error {
	select {
	case <-w.file.failed:
		return w.file.err
	default:
		return nil
	}
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
	w := &Writer{f: f, file: &failingFile{f: f, failed: make(chan struct{})}}
	if strings.HasSuffix(path, ".gz") {
		w.Writer = wire.NewGzipWriter(w.file)
	} else {
		w.Writer = wire.NewWriter(w.file)
	}
	return w, nil
}

// Start creates a recording at path as Create does and writes meta, its
// first line. When meta cannot be written (wire.Write's error, returned
// as it is) the file is closed, and left where it was created.
func Start(path string, overwrite bool, meta *wire.Meta) (*Writer, error) {
	w, err := Create(path, overwrite)
	if err != nil {
		return nil, err
	}
	if err := w.Write(meta); err != nil {
		w.Close()
		return nil, err
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
