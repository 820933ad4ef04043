package source

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"

	"github.com/sentinel-top/sentinel-top/core/wire"
)

// A replay reads its recording as a stream, once to learn its range and
// once more for every pass (a seek back starts a new one), holding one
// message at a time: its memory does not grow with the recording's size.
// A regular file is opened again for each pass; an input that cannot be
// read twice (a pipe, a FIFO, <(zcat ...), a device) is copied as it is
// read the first time to an unnamed temporary file, of at most
// ReplayOptions.MaxBytes, which later passes read.

// replayItem is one line of a pass: a message, or a line that cannot be
// used (err), at place.
type replayItem struct {
	m     wire.Message
	place string
	err   error
}

// replayPass yields the items of one pass in order; ok is false at the
// end; fatal ends the pass (the input failed or passed its bound).
type replayPass func() (it replayItem, ok bool, fatal error)

// replayOpener starts a new pass from the beginning; close ends it.
type replayOpener func() (pass replayPass, close func(), err error)

// fileOpener reads src anew for each pass: by its name when it is a
// regular file, through ReadAt when it has one, or else from a spool
// filled as the first pass reads it. first is how the first pass reads
// src.
func fileOpener(name string, src io.Reader, opts ReplayOptions) (open replayOpener, first io.Reader, spool *os.File, err error) {
	limits, bound := opts.Limits, replayBound(opts)
	reader := func(in io.Reader, closer func()) (replayPass, func(), error) {
		rd := wire.NewReaderLimits(in, name, limits)
		rd.LimitInput(bound)
		return linePass(rd, name, bound), closer, nil
	}
	if f, ok := src.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			path := f.Name()
			return func() (replayPass, func(), error) {
				g, err := os.Open(path)
				if err != nil {
					return nil, nil, fmt.Errorf("%s: opened again for a new pass: %w", name, err)
				}
				return reader(g, func() { g.Close() })
			}, src, nil, nil
		}
	}
	if ra, ok := src.(interface {
		io.ReaderAt
		Size() int64
	}); ok {
		return func() (replayPass, func(), error) {
			return reader(io.NewSectionReader(ra, 0, ra.Size()), func() {})
		}, src, nil, nil
	}
	spool, err = os.CreateTemp("", "sentinel-top-replay-*")
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s: cannot be read twice, and no temporary file to copy it to: %w", name, err)
	}
	os.Remove(spool.Name()) // unnamed: it goes with the process
	copied := &countingWriter{w: spool}
	// The copy is bounded as the reading is: past the bound (decompressed,
	// so at least as many bytes as read) the first pass fails.
	first = io.TeeReader(src, copied)
	return func() (replayPass, func(), error) {
		return reader(io.NewSectionReader(spool, 0, copied.n), func() {})
	}, first, spool, nil
}

// replayBound is the most a replay reads in one pass, decompressed.
func replayBound(opts ReplayOptions) int64 { return cmp.Or(opts.MaxBytes, DefaultMaxReplayBytes) }

// linePass yields the lines of rd: each message cloned (the reader reuses
// its buffers), each bad line as an item with its error.
func linePass(rd *wire.Reader, name string, bound int64) replayPass {
	return func() (replayItem, bool, error) {
		m, err := rd.Next()
		switch {
		case errors.Is(err, io.EOF):
			return replayItem{}, false, nil
		case errors.Is(err, wire.ErrInputTooLarge):
			return replayItem{}, false, fmt.Errorf("%s: over %d MiB of messages (decompressed): split the recording, or raise the bound: %w",
				name, bound>>20, err)
		case err != nil:
			var le *wire.LineError
			if !errors.As(err, &le) {
				return replayItem{}, false, err
			}
			return replayItem{place: le.Pos.String(), err: le.Err}, true, nil
		}
		return replayItem{m: wire.Clone(m), place: name + ":" + itoa(int64(rd.Pos().Line))}, true, nil
	}
}

// messagesOpener replays messages held in memory (converted from another
// format), place i+1 each.
func messagesOpener(name string, msgs []wire.Message) replayOpener {
	return func() (replayPass, func(), error) {
		i := 0
		return func() (replayItem, bool, error) {
			if i >= len(msgs) {
				return replayItem{}, false, nil
			}
			i++
			return replayItem{m: msgs[i-1], place: name + ":" + itoa(int64(i))}, true, nil
		}, func() {}, nil
	}
}

// scan reads a first pass through pass: the range, the messages, the meta
// line and the bad lines (counted, the first kept), holding none of them.
func (r *Replay) scan(pass replayPass) error {
	haveFrom := false
	defer r.order.finish()
	for seq := 0; ; seq++ {
		it, ok, err := pass()
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		r.order.note(seq, it)
		if it.err != nil {
			if r.rejN == 0 {
				r.rej1 = lineReject{it.place, it.err}
			}
			r.rejN++
			continue
		}
		r.count++
		if meta, isMeta := it.m.(*wire.Meta); isMeta {
			r.meta = meta
			continue
		}
		ts := it.m.Head().Ts
		if !haveFrom || ts < r.from {
			r.from, haveFrom = ts, true
		}
		r.to = max(r.to, ts)
	}
}

// countingWriter counts what it wrote.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	k, err := c.w.Write(p)
	c.n += int64(k)
	return k, err
}

// closeWhenUnused closes the spool once the replay is unreachable.
func closeWhenUnused(r *Replay, spool *os.File) {
	if spool != nil {
		runtime.AddCleanup(r, func(f *os.File) { f.Close() }, spool)
	}
}
