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

// steps is what a ring keeps beside its slots: their length, and the
// slot written last with its start (math.MinInt64 before the first). The
// next write falls in that slot more often than not (an app's instances
// report the same second), and then costs no division (the slot's start
// is checked all the same, as any other's).
type steps struct {
	stepMs int64
	last   int
	lastAt int64
}

func (s *steps) align(t int64) int64 { return t - floorMod(t, s.stepMs) }

// index is the slot of n that the step starting at aligned time a takes.
func (s *steps) index(a int64, n int) int { return int(floorMod(a/s.stepMs, int64(n))) }

// locate returns the start of the step holding t and its slot of n.
func (s *steps) locate(t int64, n int) (a int64, i int) {
	if d := t - s.lastAt; d >= 0 && d < s.stepMs {
		return s.lastAt, s.last
	}
	a = s.align(t)
	return a, s.index(a, n)
}

// parts is how many steps a bucket of bucketMs is spread over: a bucket
// longer than a step (a Prometheus step of 15 s in slots of 1 s) is spread
// evenly over the steps it spans, so that each slot's rate is the
// bucket's, not its whole count in one slot; a bucket that is not a whole
// number of steps takes the slot of its start.
func (s *steps) parts(bucketMs int64) int64 {
	if bucketMs > s.stepMs && bucketMs%s.stepMs == 0 {
		return bucketMs / s.stepMs
	}
	return 1
}

// spread calls add with each of the k parts of m (k from parts) and the
// start of its step, for a ring of n slots: errors and slow calls stay
// within the completions of each part, and of a bucket longer than the
// ring only the last n steps are added (the earlier parts would be
// overwritten by the later ones at once).
func (s *steps) spread(start, k int64, n int, m *core.Metrics, add func(t int64, part *core.Metrics)) {
	for j := max(0, k-int64(n)); j < k; j++ {
		part := partOf(m, j, j+1, k)
		add(start+j*s.stepMs, &part)
	}
}

// partOf is the sum of m's shares j0 to j1-1 of k (share): errors and
// slow calls within the completions of the part, rtMax whole.
func partOf(m *core.Metrics, j0, j1, k int64) core.Metrics {
	d := func(v int64) int64 { return shares(v, j1, k) - shares(v, j0, k) }
	part := core.Metrics{Pass: d(m.Pass), Block: d(m.Block), Complete: d(m.Complete), Error: d(m.Error),
		Slow: d(m.Slow), RtSum: d(m.RtSum), RtMax: m.RtMax}
	for i := range m.Hist {
		part.Hist[i] = d(m.Hist[i])
	}
	return part
}

// ring is a fixed run of slots of stepMs each, without histograms: the
// slot for time t is reused once t is a whole ring later. Writes older
// than the ring's span are refused.
type ring struct {
	steps
	starts []int64
	slots  []counts
}

// newRing is a ring of n slots whose starts are kept in starts (len n)
// when it is not nil: the caller's memory, beside what else it touches
// with each write.
func newRing(stepMs int64, n int, starts []int64) ring {
	if starts == nil {
		starts = make([]int64, n)
	}
	r := ring{steps: steps{stepMs: stepMs, lastAt: math.MinInt64}, starts: starts, slots: make([]counts, n)}
	for i := range r.starts {
		r.starts[i] = math.MinInt64
	}
	return r
}

// slot returns the slot holding time t for writing, zeroing a stale one;
// nil when t is older than what the slot holds now.
func (r *ring) slot(t int64) *counts {
	a, i := r.locate(t, len(r.starts))
	switch {
	case r.starts[i] == a:
	case r.starts[i] < a:
		r.starts[i], r.slots[i] = a, counts{}
	default:
		return nil
	}
	r.last, r.lastAt = i, a
	return &r.slots[i]
}

// at returns the slot that starts exactly at aligned time a, if held.
func (r *ring) at(a int64) *counts {
	if i := r.index(a, len(r.starts)); r.starts[i] == a {
		return &r.slots[i]
	}
	return nil
}

// addSpread folds a bucket of bucketMs from start into the slots it
// covers (steps.parts).
func (r *ring) addSpread(start, bucketMs int64, m *core.Metrics) {
	if k := r.parts(bucketMs); k > 1 {
		r.spread(start, k, len(r.starts), m, func(t int64, part *core.Metrics) { r.add(t, part) })
		return
	}
	r.add(start, m)
}

func (r *ring) add(t int64, m *core.Metrics) {
	if sl := r.slot(t); sl != nil {
		sl.add(m)
	}
}

// histRing is a ring whose slots keep a response-time histogram too, each
// slot in one cell with its start and counts: a write touches one place
// of the ring, where starts, counts and histograms apart were three
// (pages apart, in the caches' way: a message's items go to as many app x
// resource series, each with two rings of its own).
type histRing struct {
	steps
	cells []histCell
}

// histCell is a slot of a histRing.
type histCell struct {
	start int64
	c     counts
	hist  [histLen]uint32
}

const histLen = core.HistogramSlots

func newHistRing(stepMs int64, n int) histRing {
	r := histRing{steps: steps{stepMs: stepMs, lastAt: math.MinInt64}, cells: make([]histCell, n)}
	for i := range r.cells {
		r.cells[i].start = math.MinInt64
	}
	return r
}

// slot returns the cell holding time t for writing, zeroing a stale one;
// nil when t is older than what the cell holds now.
func (r *histRing) slot(t int64) *histCell { return r.slotFolding(t, nil) }

// slotFolding is slot, folding a stale cell into into (when not nil)
// before it is zeroed: what it held goes on there.
func (r *histRing) slotFolding(t int64, into *histRing) *histCell {
	a, i := r.locate(t, len(r.cells))
	c := &r.cells[i]
	switch {
	case c.start == a:
	case c.start < a:
		if into != nil && c.start != math.MinInt64 {
			into.fold(c)
		}
		*c = histCell{start: a}
	default:
		return nil
	}
	r.last, r.lastAt = i, a
	return c
}

// fold adds cell c of another ring, of a step that divides r's, to the
// cell of r its start falls in; nothing when r holds newer there.
func (r *histRing) fold(c *histCell) {
	if d := r.slot(c.start); d != nil {
		d.merge(c)
	}
}

// merge adds cell o's counts and histogram to c's.
func (c *histCell) merge(o *histCell) {
	c.c.addCounts(&o.c)
	for k, v := range o.hist {
		c.hist[k] = sat32(c.hist[k], int64(v))
	}
}

// at returns the cell that starts exactly at aligned time a, if held.
func (r *histRing) at(a int64) *histCell {
	if c := &r.cells[r.index(a, len(r.cells))]; c.start == a {
		return c
	}
	return nil
}

// span is how far back the ring reaches.
func (r *histRing) span() int64 { return r.stepMs * int64(len(r.cells)) }

// add folds m into the cell holding t; counted names the histogram's
// slots to add, those that count calls (core.HistogramCounted).
func (r *histRing) add(t int64, m *core.Metrics, counted uint16) {
	if c := r.slot(t); c != nil {
		c.put(m, counted)
	}
}

// put adds a bucket's metrics to the cell (counted as for addHist).
func (c *histCell) put(m *core.Metrics, counted uint16) {
	c.c.add(m)
	addHist(&c.hist, m, counted)
}

// appRings are an app series' two rings: fine, a slot a second over the
// last minutes, and coarse, a slot of coarseStepMs over the retention. A
// bucket is written to the fine ring alone, and a fine slot goes into the
// coarse ring when the fine ring reuses it, its time then older than the
// fine ring reaches: the coarse ring holds all but what the fine ring
// still does, and a coarse slot is read with the fine slots inside it
// (coarseAt). A message's items wrote each their app's two rings before;
// the fold is one write a second per app series.
type appRings struct {
	fine, coarse histRing
}

func newAppRings(fineSlots, coarseSlots int) appRings {
	return appRings{fine: newHistRing(fineStepMs, fineSlots), coarse: newHistRing(coarseStepMs, coarseSlots)}
}

// add folds a bucket of bucketMs from start into the rings, spread over
// the steps it spans (steps.parts): into the fine slots it covers, and
// into the coarse ring what is older than the fine ring holds. Of a
// bucket longer than the fine ring, the fine parts before its last
// len(fine.cells) go straight to the coarse slots they fall in, summed
// by slot: what folding them would have put there.
func (r *appRings) add(start, bucketMs int64, m *core.Metrics, counted uint16) {
	f := &r.fine
	k := f.parts(bucketMs)
	if k == 1 {
		r.put(start, m, counted)
		return
	}
	for j0, head := int64(0), k-int64(len(f.cells)); j0 < head; {
		t := start + j0*f.stepMs
		end := r.coarse.align(t) + r.coarse.stepMs
		j1 := min(head, (end-start+f.stepMs-1)/f.stepMs) // the first part in the next coarse slot
		part := partOf(m, j0, j1, k)
		r.coarse.add(t, &part, counted)
		j0 = j1
	}
	f.spread(start, k, len(f.cells), m, func(t int64, part *core.Metrics) { r.put(t, part, counted) })
}

// put adds m at t to its fine slot, or to its coarse one when the fine
// ring holds newer there.
func (r *appRings) put(t int64, m *core.Metrics, counted uint16) {
	if c := r.fine.slotFolding(t, &r.coarse); c != nil {
		c.put(m, counted)
		return
	}
	r.coarse.add(t, m, counted)
}

// coarseAt is the coarse slot that starts at aligned time a, the fine
// slots inside it added: false when neither ring holds any of it.
func (r *appRings) coarseAt(a int64) (histCell, bool) {
	var out histCell
	held := false
	if c := r.coarse.at(a); c != nil {
		out, held = *c, true
	}
	for t := a; t < a+r.coarse.stepMs; t += r.fine.stepMs {
		if c := r.fine.at(t); c != nil {
			out.merge(c)
			held = true
		}
	}
	out.start = a
	return out, held
}

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

// shares is the sum of the first h of n's k shares: n in k parts as
// even as integers go, the remainder spread over them (a part's share is
// shares(n, j+1, k) - shares(n, j, k)).
func shares(n, h, k int64) int64 {
	q, rem := n/k, n%k
	return q*h + rem*h/k
}
