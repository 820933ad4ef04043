package collector

import (
	"math"
	"math/bits"

	"github.com/sentinel-top/sentinel-top/core"
)

// counts is one slot of a series: what the buckets that fell in it add up
// to, a compact form of core.Metrics for the rates and charts. Counts are
// 32-bit and saturate (they are not exact past 2^32 - 1), which keeps
// 50,000 series within the memory goal; a slot of 15 s at 286,000 requests
// a second still fits. Exact sums are kept in totals.
type counts struct {
	pass, block, complete, err, slow uint32
	rtMax                            uint32
	rtSum                            uint64
}

func sat32(v uint32, d int64) uint32 {
	if d <= 0 {
		return v
	}
	s := uint64(v) + uint64(d)
	if s > math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(s)
}

// add folds one bucket's metrics into the slot.
func (c *counts) add(m *core.Metrics) {
	c.pass = sat32(c.pass, m.Pass)
	c.block = sat32(c.block, m.Block)
	c.complete = sat32(c.complete, m.Complete)
	c.err = sat32(c.err, m.Error)
	c.slow = sat32(c.slow, m.Slow)
	if m.RtSum > 0 {
		c.rtSum = min(c.rtSum+uint64(m.RtSum), math.MaxUint64>>1)
	}
	if m.RtMax > int64(c.rtMax) {
		c.rtMax = uint32(min(m.RtMax, math.MaxUint32))
	}
}

// addCounts folds another slot into c.
func (c *counts) addCounts(o *counts) {
	c.pass = sat32(c.pass, int64(o.pass))
	c.block = sat32(c.block, int64(o.block))
	c.complete = sat32(c.complete, int64(o.complete))
	c.err = sat32(c.err, int64(o.err))
	c.slow = sat32(c.slow, int64(o.slow))
	c.rtSum = min(c.rtSum+o.rtSum, math.MaxUint64>>1)
	c.rtMax = max(c.rtMax, o.rtMax)
}

// addHist folds a bucket's response-time histogram into a slot's: the
// slots of counted (core.HistogramCounted; the others add nothing).
func addHist(h *[histLen]uint32, m *core.Metrics, counted uint16) {
	for ; counted != 0; counted &= counted - 1 {
		k := bits.TrailingZeros16(counted)
		h[k] = sat32(h[k], m.Hist[k])
	}
}

// ring is a fixed run of slots of stepMs each: the slot for time t is
// reused once t is a whole ring later. Writes older than the ring's span
// are refused.
type ring struct {
	stepMs int64
	starts []int64
	slots  []counts
	hists  [][histLen]uint32 // nil unless the ring keeps histograms
	// last is the slot written last, lastAt its start: the next write
	// falls in it more often than not (an app's instances report the same
	// second), and then costs no division.
	last   int
	lastAt int64
}

const histLen = core.HistogramSlots

func newRing(stepMs int64, n int, withHist bool) ring {
	r := newRingOver(stepMs, n, nil)
	if withHist {
		r.hists = make([][histLen]uint32, n)
	}
	return r
}

// newRingOver is a ring of n slots without histograms whose starts are
// kept in starts (len n) when it is not nil: the caller's memory, beside
// what else it touches with each write.
func newRingOver(stepMs int64, n int, starts []int64) ring {
	if starts == nil {
		starts = make([]int64, n)
	}
	r := ring{stepMs: stepMs, starts: starts, slots: make([]counts, n), lastAt: math.MinInt64}
	for i := range r.starts {
		r.starts[i] = math.MinInt64
	}
	return r
}

func (r *ring) align(t int64) int64 { return t - floorMod(t, r.stepMs) }

func (r *ring) index(aligned int64) int {
	return int(floorMod(aligned/r.stepMs, int64(len(r.starts))))
}

// slot returns the slot holding time t for writing, zeroing a stale one; nil
// when t is older than what the slot holds now.
func (r *ring) slot(t int64) (*counts, *[histLen]uint32) {
	var a int64
	var i int
	if d := t - r.lastAt; d >= 0 && d < r.stepMs && r.starts[r.last] == r.lastAt {
		a, i = r.lastAt, r.last
	} else {
		a = r.align(t)
		i = r.index(a)
		r.last, r.lastAt = i, a
	}
	switch {
	case r.starts[i] == a:
	case r.starts[i] < a:
		r.starts[i] = a
		r.slots[i] = counts{}
		if r.hists != nil {
			r.hists[i] = [histLen]uint32{}
		}
	default:
		return nil, nil
	}
	if r.hists != nil {
		return &r.slots[i], &r.hists[i]
	}
	return &r.slots[i], nil
}

// at returns the slot that starts exactly at aligned time a, if held.
func (r *ring) at(a int64) (*counts, *[histLen]uint32) {
	i := r.index(a)
	if r.starts[i] != a {
		return nil, nil
	}
	if r.hists != nil {
		return &r.slots[i], &r.hists[i]
	}
	return &r.slots[i], nil
}

// span is how far back the ring reaches.
func (r *ring) span() int64 { return r.stepMs * int64(len(r.starts)) }

func floorMod(a, b int64) int64 {
	m := a % b
	if m != 0 && (m < 0) != (b < 0) {
		m += b
	}
	return m
}

// dedupe remembers which bucket indexes (start / bucketMs) of a series have
// arrived, over the last dedupeSpan of them, so that a bucket sent twice
// (a reconnect's backlog, a replayed recording) is counted once.
type dedupe struct {
	max  int64
	used bool
	bits [dedupeSpan / 64]uint64
}

const dedupeSpan = 1024 // 512 s of 500 ms buckets

// mark records idx; dup reports it was already there, old that it is too
// far behind the newest to tell (the caller refuses it).
func (d *dedupe) mark(idx int64) (dup, old bool) {
	switch {
	case !d.used:
		d.used, d.max = true, idx
	case idx > d.max:
		if idx-d.max >= dedupeSpan {
			d.bits = [dedupeSpan / 64]uint64{}
		} else {
			for j := d.max + 1; j <= idx; j++ {
				b := floorMod(j, dedupeSpan)
				d.bits[b/64] &^= 1 << (b % 64)
			}
		}
		d.max = idx
	case d.max-idx >= dedupeSpan:
		return false, true
	}
	b := floorMod(idx, dedupeSpan)
	if d.bits[b/64]&(1<<(b%64)) != 0 {
		return true, false
	}
	d.bits[b/64] |= 1 << (b % 64)
	return false, false
}

// addSpread folds a bucket of bucketMs from start into the slots it
// covers: a bucket longer than the ring's step (a Prometheus step of 15 s
// in slots of 1 s) is spread evenly over the steps it spans, so that each
// slot's rate is the bucket's, not its whole count in one slot. Errors
// and slow calls stay within the completions of each part. A bucket that
// is not a whole number of steps takes the slot
// of its start; of one longer than the ring, the ring keeps the last
// steps. hist names the histogram's slots to add, those that count calls
// (core.HistogramCounted): 0 adds none.
func (r *ring) addSpread(start, bucketMs int64, m *core.Metrics, hist uint16) {
	k := int64(1)
	if bucketMs > r.stepMs && bucketMs%r.stepMs == 0 {
		k = bucketMs / r.stepMs
	}
	if k == 1 {
		if sl, h := r.slot(start); sl != nil {
			sl.add(m)
			if hist != 0 && h != nil {
				addHist(h, m, hist)
			}
		}
		return
	}
	// The ring holds its last len(starts) steps: earlier parts would be
	// overwritten by the later ones at once.
	for j := max(0, k-int64(len(r.starts))); j < k; j++ {
		part := core.Metrics{Pass: share(m.Pass, j, k), Block: share(m.Block, j, k),
			Complete: share(m.Complete, j, k), Error: share(m.Error, j, k), Slow: share(m.Slow, j, k),
			RtSum: share(m.RtSum, j, k), RtMax: m.RtMax}
		for i := range m.Hist {
			part.Hist[i] = share(m.Hist[i], j, k)
		}
		if sl, h := r.slot(start + j*r.stepMs); sl != nil {
			sl.add(&part)
			if hist != 0 && h != nil {
				addHist(h, &part, hist)
			}
		}
	}
}

// share is part j of n split evenly in k parts (the parts sum to n, and
// a larger n gives no smaller part).
func share(n, j, k int64) int64 {
	q, rem := n/k, n%k
	return q + rem*(j+1)/k - rem*j/k
}
