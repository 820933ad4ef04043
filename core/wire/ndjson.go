package wire

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"iter"
	"strconv"
)

// Pos is a place in a fixture: file name and 1-based line number.
type Pos struct {
	File string
	Line int
}

// String returns "file:line".
func (p Pos) String() string { return p.File + ":" + strconv.Itoa(p.Line) }

// LineError is a fixture line that could not be used. Reading goes on
// after it, except when the stream itself broke (Err then wraps the I/O
// error, such as io.ErrUnexpectedEOF for a truncated gzip stream).
type LineError struct {
	Pos Pos
	Err error
}

// Error returns "file:line: reason".
func (e *LineError) Error() string { return e.Pos.String() + ": " + e.Err.Error() }

// Unwrap returns the reason: a *DecodeError or an I/O error.
func (e *LineError) Unwrap() error { return e.Err }

// ErrMetaNotFirst is the reason given for a meta line that is not the first
// line of its file.
var ErrMetaNotFirst = errors.New("meta is only valid as the first line")

// Reader reads a fixture: NDJSON, one wire message per line, optionally
// gzip-compressed (recognised by its magic bytes, whatever the stream's
// name, so a pipe or a copy reads as the file would). Blank lines are skipped;
// a last line without a newline is read like any other. Memory stays
// bounded whatever the input: a line longer than the frame limit is
// skipped in pieces, never held whole.
//
//	for m, err := range r.All() {
//		if err != nil {
//			log.Print(err) // "file:line: reason"; reading goes on
//			continue
//		}
//		use(m, r.Pos())
//	}
//
// Messages are valid until the next call, like those of Decoder.Decode.
type Reader struct {
	name    string
	src     io.Reader
	br      *bufio.Reader
	dec     *Decoder
	line    int
	pos     Pos
	started bool
	done    bool
	first   bool // no non-blank line seen yet
	meta    *Meta
	limit   int64 // most bytes to read, decompressed (0: no limit)
}

// ErrInputTooLarge is returned by Next when the input passed the bound
// LimitInput set: a gzip bomb, /dev/zero, or a recording to split.
var ErrInputTooLarge = errors.New("input too large")

// LimitInput bounds the bytes Next reads, after decompression: past n,
// Next returns an error wrapping ErrInputTooLarge and reading stops. Call
// it before the first Next.
func (r *Reader) LimitInput(n int64) { r.limit = n }

// limitedReader fails once more than n bytes were read through it.
type limitedReader struct {
	r    io.Reader
	n    int64
	name string
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, fmt.Errorf("%s: %w: more than the bytes allowed, decompressed", l.name, ErrInputTooLarge)
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	k, err := l.r.Read(p)
	l.n -= int64(k)
	return k, err
}

// NewReader returns a Reader of r; name is the file name in positions and
// errors.
func NewReader(r io.Reader, name string) *Reader {
	return NewReaderLimits(r, name, Limits{})
}

// NewReaderLimits is NewReader with limits for the lines' decoder.
func NewReaderLimits(r io.Reader, name string, lim Limits) *Reader {
	return &Reader{name: name, src: r, dec: NewDecoder(lim), first: true}
}

// Meta returns the file's meta line, once it has been read.
func (r *Reader) Meta() *Meta { return r.meta }

// Pos returns the position of the message or error Next returned last.
func (r *Reader) Pos() Pos { return r.pos }

func (r *Reader) start() error {
	r.started = true
	lim := r.dec.Limits()
	size := lim.MaxFrameBytes + 2 // the line, a '\r' and the '\n'
	br := bufio.NewReaderSize(r.src, 4096)
	magic, _ := br.Peek(2)
	if len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return err
		}
		r.br = bufio.NewReaderSize(r.bounded(zr), size)
	} else {
		r.br = bufio.NewReaderSize(r.bounded(br), size)
	}
	return nil
}

// bounded applies LimitInput's bound to the decompressed stream.
func (r *Reader) bounded(src io.Reader) io.Reader {
	if r.limit <= 0 {
		return src
	}
	return &limitedReader{r: src, n: r.limit + 1, name: r.name}
}

// Next returns the next message. A line that cannot be used gives a
// *LineError and the next call goes on with the following line; the end
// of the input gives io.EOF, and so does every call after it.
func (r *Reader) Next() (Message, error) {
	if r.done {
		return nil, io.EOF
	}
	if !r.started {
		if err := r.start(); err != nil {
			r.done = true
			r.pos = Pos{r.name, 1}
			return nil, &LineError{r.pos, err}
		}
	}
	for {
		line, err := r.br.ReadSlice('\n')
		r.line++
		r.pos = Pos{r.name, r.line}
		if errors.Is(err, bufio.ErrBufferFull) {
			// Longer than any frame: skip to its end, never holding it.
			n := len(line)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = r.br.ReadSlice('\n')
				n += len(line)
			}
			r.first = false
			if err == nil {
				n-- // the newline
			}
			if err != nil && err != io.EOF {
				r.done = true
				return nil, &LineError{r.pos, readErr(err)}
			}
			if err == io.EOF {
				r.done = true
			}
			lim := r.dec.Limits()
			return nil, &LineError{r.pos, errorf(ErrTooLarge, "", "",
				fmt.Sprintf("line of %d bytes exceeds the limit of %d", n, lim.MaxFrameBytes))}
		}
		complete := err == nil
		if err != nil {
			r.done = true
			if err != io.EOF {
				if len(bytes.TrimSpace(line)) == 0 {
					return nil, &LineError{r.pos, readErr(err)}
				}
				return nil, &LineError{r.pos, fmt.Errorf("truncated line: %w", readErr(err))}
			}
			if len(line) == 0 {
				return nil, io.EOF
			}
		}
		line = bytes.TrimSuffix(line, []byte{'\n'})
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if len(bytes.TrimSpace(line)) == 0 {
			if !complete {
				return nil, io.EOF
			}
			continue
		}
		first := r.first
		r.first = false
		m, derr := r.dec.Decode(line)
		if derr != nil {
			if !complete {
				derr = fmt.Errorf("%w (last line, no newline: truncated?)", derr)
			}
			return nil, &LineError{r.pos, derr}
		}
		if meta, ok := m.(*Meta); ok {
			if !first {
				return nil, &LineError{r.pos, ErrMetaNotFirst}
			}
			r.meta = meta
		}
		return m, nil
	}
}

func readErr(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// All yields every message, and every bad line as a *LineError, until the
// end of the input.
func (r *Reader) All() iter.Seq2[Message, error] {
	return func(yield func(Message, error) bool) {
		for {
			m, err := r.Next()
			if err == io.EOF {
				return
			}
			if !yield(m, err) {
				return
			}
		}
	}
}

// Writer writes a fixture: one message per line, to an io.Writer it does
// not own (closing a Writer ends the fixture, not w).
type Writer struct {
	bw    *bufio.Writer
	zw    *gzip.Writer
	buf   []byte
	lines int
	err   error
}

// NewWriter returns a Writer to w, uncompressed.
func NewWriter(w io.Writer) *Writer {
	return &Writer{bw: bufio.NewWriter(w)}
}

// NewGzipWriter returns a Writer to w that gzip-compresses the fixture
// (the .ndjson.gz form). Flush writes a gzip block through, so what was
// flushed can be read back even if the stream is never ended; Close ends
// the stream.
func NewGzipWriter(w io.Writer) *Writer {
	zw := gzip.NewWriter(w)
	return &Writer{bw: bufio.NewWriter(zw), zw: zw}
}

// Write appends m as one line. A Meta may only be the first line.
func (w *Writer) Write(m Message) error {
	if w.err != nil {
		return w.err
	}
	if _, ok := m.(*Meta); ok && w.lines > 0 {
		return ErrMetaNotFirst
	}
	var err error
	if w.buf, err = Append(w.buf[:0], m); err != nil {
		return err
	}
	w.buf = append(w.buf, '\n')
	if _, err := w.bw.Write(w.buf); err != nil {
		w.err = err
		return err
	}
	w.lines++
	return nil
}

// Flush writes buffered lines through (and a gzip block, when compressing).
func (w *Writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	if err := w.bw.Flush(); err != nil {
		w.err = err
		return err
	}
	if w.zw != nil {
		if err := w.zw.Flush(); err != nil {
			w.err = err
			return err
		}
	}
	return nil
}

// Close flushes and, for a NewGzipWriter, ends the gzip stream; it does
// not close the io.Writer underneath. Writing after Close is an error.
func (w *Writer) Close() error {
	err := w.bw.Flush()
	if w.zw != nil {
		if zerr := w.zw.Close(); err == nil {
			err = zerr
		}
		w.zw = nil
	}
	if err == nil {
		err = w.err
	}
	if w.err == nil {
		w.err = errors.New("wire: writer closed")
	}
	return err
}
