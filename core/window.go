package core

import (
	"fmt"
	"math"
	"runtime"
	"sync/atomic"
)

// Resetter is implemented by the pointer type of every bucket a Window holds:
// Reset zeroes the bucket in place when its slot is reused for a newer
// period. It must be safe against concurrent writers (use atomic stores).
type Resetter[B any] interface {
	*B
	Reset()
}

const (
	// slotEmpty marks a slot that has never held a bucket.
	slotEmpty int64 = math.MinInt64
	// slotResetting marks a slot whose bucket is being zeroed for reuse.
	slotResetting int64 = math.MinInt64 + 1
)

// Window is Sentinel's LeapArray: a ring of sampleCount buckets that together
// cover intervalMs. The bucket for time t lives in slot (t/bucketMs) %
// sampleCount and starts at t - t%bucketMs; a slot still holding an older
// bucket is zeroed in place and reused, so writing never allocates.
//
// Writers are safe concurrently; readers take no lock. As in Sentinel, a
// writer that raced with a reset may land its count in the new bucket.
//
// A bucket is valid at time now when it started at or before now and no more
// than intervalMs before it (now - start <= intervalMs). The inclusive bound
// is sentinel-golang's: at an exact bucket boundary, before the current slot
// has been rewritten, the bucket one full interval old still counts.
//
// A reader that sends each bucket once, right after it closes
// (wsstream.Shipper), seals the buckets it has read (Seal), and a writer
// tells the window when it has written (Wrote): a count that reached a
// sealed bucket, its writer paused between reading the clock and adding,
// is a late write (LateWrites), and the reader reads its sealed buckets
// again only then. The reader seals before it reads and the writer checks
// the seal after it wrote, both with sequentially consistent atomics: either
// the reader's read saw the count, or the writer sees the seal.
type Window[B any, P Resetter[B]] struct {
	bucketMs   int64
	intervalMs int64
	slots      []windowSlot[B]
	sealed     atomic.Int64  // buckets starting before it were read; see Seal
	hint       atomic.Int64  // slot of the bucket Current returned last: most calls land in it again
	late       atomic.Uint64 // see LateWrites
}

type windowSlot[B any] struct {
	start atomic.Int64
	held  atomic.Uint64 // buckets the slot has held: see Slot
	data  B
	_     [8]byte // keeps hot slots apart; cheap, and measurable under RunParallel
}

// NewWindow returns a window of sampleCount buckets over intervalMs. The
// interval must be a positive multiple of sampleCount.
func NewWindow[B any, P Resetter[B]](sampleCount int, intervalMs int64) (*Window[B, P], error) {
	if sampleCount <= 0 {
		return nil, fmt.Errorf("window: sampleCount %d must be positive", sampleCount)
	}
	if intervalMs <= 0 || intervalMs%int64(sampleCount) != 0 {
		return nil, fmt.Errorf("window: intervalMs %d must be a positive multiple of sampleCount %d", intervalMs, sampleCount)
	}
	w := &Window[B, P]{
		bucketMs:   intervalMs / int64(sampleCount),
		intervalMs: intervalMs,
		slots:      make([]windowSlot[B], sampleCount),
	}
	for i := range w.slots {
		w.slots[i].start.Store(slotEmpty)
	}
	w.sealed.Store(slotEmpty)
	return w, nil
}

// Seal says that the buckets starting before end have been read. It never
// moves back: a reader whose clock went backwards keeps the later seal.
func (w *Window[B, P]) Seal(end int64) { storeMax(&w.sealed, end) }

// Wrote is what a writer calls after adding to the bucket Current(now)
// returned (however many adds): when that bucket was sealed meanwhile, it
// counts a late write. Every writer of a window that is sealed must call
// it, or its late counts may never be read.
func (w *Window[B, P]) Wrote(now int64) {
	if now < w.sealed.Load() {
		w.late.Add(1)
	}
}

// LateWrites counts the writes that reached a sealed bucket (Wrote). A
// reader loads it before reading its sealed buckets again, and reads them
// again when it has moved since: a late write after the load moves it
// again.
func (w *Window[B, P]) LateWrites() uint64 { return w.late.Load() }

// BucketMs is the length of one bucket.
func (w *Window[B, P]) BucketMs() int64 { return w.bucketMs }

// IntervalMs is the span the window covers.
func (w *Window[B, P]) IntervalMs() int64 { return w.intervalMs }

// SampleCount is the number of buckets in the ring.
func (w *Window[B, P]) SampleCount() int { return len(w.slots) }

// BucketStart returns the start of the bucket holding time t.
func (w *Window[B, P]) BucketStart(t int64) int64 { return t - floorMod(t, w.bucketMs) }

func (w *Window[B, P]) index(t int64) int {
	return int(floorMod(floorDiv(t, w.bucketMs), int64(len(w.slots))))
}

// Current returns the bucket holding time now, zeroing a stale slot first.
// When the slot already holds a newer bucket (the clock went backwards) it
// returns nil and the caller drops the sample, as sentinel-golang does; with
// a single bucket it returns that newer bucket, also as sentinel-golang does.
func (w *Window[B, P]) Current(now int64) P {
	// Fast path without divisions: still inside the bucket returned last.
	s := &w.slots[w.hint.Load()]
	if start := s.start.Load(); start > slotResetting && now >= start && now-start < w.bucketMs {
		return &s.data
	}
	return w.current(now)
}

func (w *Window[B, P]) current(now int64) P {
	i := w.index(now)
	s := &w.slots[i]
	want := now - floorMod(now, w.bucketMs)
	for {
		start := s.start.Load()
		switch {
		case start == want:
			w.hint.Store(int64(i))
			return &s.data
		case start == slotResetting:
			runtime.Gosched()
		case start < want:
			if s.start.CompareAndSwap(start, slotResetting) {
				s.held.Add(1)
				P(&s.data).Reset()
				s.start.Store(want)
				w.hint.Store(int64(i))
				return &s.data
			}
		default: // start > want: time went backwards
			if len(w.slots) == 1 {
				return &s.data
			}
			return nil
		}
	}
}

// At returns slot i's bucket and its start if it is valid at time now.
// Iterate i over [0, SampleCount()) to visit the window without allocating.
func (w *Window[B, P]) At(now int64, i int) (start int64, b P, ok bool) {
	s := &w.slots[i]
	start = s.start.Load()
	if start <= slotResetting || start > now || now-start > w.intervalMs {
		return start, nil, false
	}
	return start, &s.data, true
}

// Lookup returns the bucket that starts exactly at start, if the ring still
// holds it (it may be past the interval: callers that ship closed buckets
// read them just after they close).
func (w *Window[B, P]) Lookup(start int64) (P, bool) {
	s := &w.slots[w.index(start)]
	if s.start.Load() != start {
		return nil, false
	}
	return &s.data, true
}

// Index returns the slot that holds the bucket of time t.
func (w *Window[B, P]) Index(t int64) int { return w.index(t) }

// Slot returns the start of slot i's bucket, false when it has never held
// one, and how many buckets it has held: one more each time a writer
// takes the slot for a newer bucket (Current). A reader that saw the
// count before can tell how many buckets came and went in the slot since,
// those it never read among them. A reset in progress is waited out, so
// the two always agree.
func (w *Window[B, P]) Slot(i int) (start int64, held uint64, ok bool) {
	s := &w.slots[i]
	for {
		start = s.start.Load()
		if start == slotResetting {
			runtime.Gosched()
			continue
		}
		held = s.held.Load()
		if s.start.Load() == start {
			return start, held, start != slotEmpty
		}
	}
}

// Reset zeroes every bucket that is valid at now, keeping their starts. It is
// how a breaker forgets its history when it closes.
func (w *Window[B, P]) Reset(now int64) {
	for i := range w.slots {
		if _, b, ok := w.At(now, i); ok {
			b.Reset()
		}
	}
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 {
	m := a % b
	if m != 0 && (m < 0) != (b < 0) {
		m += b
	}
	return m
}
