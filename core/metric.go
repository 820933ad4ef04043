package core

import (
	"math"
	"sync/atomic"
)

// HistogramSlots is the number of response-time histogram slots, fixed by
// wire v1.
const HistogramSlots = 14

// HistogramBounds are the inclusive upper bounds, in ms, of the first 13
// histogram slots; the 14th counts everything slower.
var HistogramBounds = [HistogramSlots - 1]int64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000}

// HistogramSlot returns the slot that counts a response time of rtMs.
func HistogramSlot(rtMs int64) int {
	// A short unrolled search: this runs on every completion.
	switch {
	case rtMs <= 20:
		switch {
		case rtMs <= 1:
			return 0
		case rtMs <= 2:
			return 1
		case rtMs <= 5:
			return 2
		case rtMs <= 10:
			return 3
		default:
			return 4
		}
	case rtMs <= 500:
		switch {
		case rtMs <= 50:
			return 5
		case rtMs <= 100:
			return 6
		case rtMs <= 200:
			return 7
		default:
			return 8
		}
	case rtMs <= 1000:
		return 9
	case rtMs <= 2000:
		return 10
	case rtMs <= 5000:
		return 11
	case rtMs <= 10000:
		return 12
	default:
		return 13
	}
}

// MetricBucket counts what happened to one resource during one bucket. All
// fields are updated atomically; read them through Snapshot.
//
// Completions are not counted separately: every one lands in exactly one
// histogram slot, so their number is the histogram's sum (one atomic add
// fewer on every Exit).
type MetricBucket struct {
	pass, block, err, slow atomic.Int64
	rtSum, rtMin, rtMax    atomic.Int64
	concurrency            atomic.Int64 // highest in-flight count seen
	hist                   [HistogramSlots]atomic.Int64
}

// Reset zeroes the bucket.
func (b *MetricBucket) Reset() {
	b.pass.Store(0)
	b.block.Store(0)
	b.err.Store(0)
	b.slow.Store(0)
	b.rtSum.Store(0)
	b.rtMin.Store(math.MaxInt64)
	b.rtMax.Store(0)
	b.concurrency.Store(0)
	for i := range b.hist {
		b.hist[i].Store(0)
	}
}

// AddPass counts n admitted entries.
func (b *MetricBucket) AddPass(n int64) { b.pass.Add(n) }

// AddBlock counts n rejected entries.
func (b *MetricBucket) AddBlock(n int64) { b.block.Add(n) }

// ObserveConcurrency records an in-flight count, keeping the highest.
func (b *MetricBucket) ObserveConcurrency(n int64) { storeMax(&b.concurrency, n) }

// AddComplete counts one finished entry with its response time, whether it
// failed, and whether it was slow.
func (b *MetricBucket) AddComplete(rtMs int64, failed, slow bool) {
	if rtMs < 0 {
		rtMs = 0
	}
	if failed {
		b.err.Add(1)
	}
	if slow {
		b.slow.Add(1)
	}
	b.rtSum.Add(rtMs)
	storeMin(&b.rtMin, rtMs)
	storeMax(&b.rtMax, rtMs)
	b.hist[HistogramSlot(rtMs)].Add(1)
}

// Differs reports whether the bucket's entries or completions differ from
// m's: what a shipper reading a bucket again checks before a Snapshot.
func (b *MetricBucket) Differs(m *Metrics) bool {
	if b.pass.Load() != m.Pass || b.block.Load() != m.Block {
		return true
	}
	var complete int64
	for i := range b.hist {
		complete += b.hist[i].Load()
	}
	return complete != m.Complete
}

// Snapshot copies the bucket's counters.
func (b *MetricBucket) Snapshot() Metrics {
	m := Metrics{
		Pass:        b.pass.Load(),
		Block:       b.block.Load(),
		Error:       b.err.Load(),
		Slow:        b.slow.Load(),
		RtSum:       b.rtSum.Load(),
		RtMin:       b.rtMin.Load(),
		RtMax:       b.rtMax.Load(),
		Concurrency: b.concurrency.Load(),
	}
	for i := range b.hist {
		m.Hist[i] = b.hist[i].Load()
		m.Complete += m.Hist[i]
	}
	if m.RtMin == math.MaxInt64 || m.Complete == 0 {
		m.RtMin = 0
	}
	return m
}

func storeMax(v *atomic.Int64, n int64) {
	for {
		cur := v.Load()
		if n <= cur || v.CompareAndSwap(cur, n) {
			return
		}
	}
}

func storeMin(v *atomic.Int64, n int64) {
	for {
		cur := v.Load()
		if n >= cur || v.CompareAndSwap(cur, n) {
			return
		}
	}
}

// Metrics is a plain copy of bucket counters: one bucket's, or a sum.
type Metrics struct {
	Pass, Block, Complete, Error, Slow int64
	RtSum, RtMin, RtMax                int64
	Concurrency                        int64
	Hist                               [HistogramSlots]int64
}

// Add folds o into m: counts add, RtMin/RtMax/Concurrency take the extreme.
func (m *Metrics) Add(o Metrics) {
	if o.Complete > 0 && (m.Complete == 0 || o.RtMin < m.RtMin) {
		m.RtMin = o.RtMin
	}
	m.Pass += o.Pass
	m.Block += o.Block
	m.Complete += o.Complete
	m.Error += o.Error
	m.Slow += o.Slow
	m.RtSum += o.RtSum
	if o.RtMax > m.RtMax {
		m.RtMax = o.RtMax
	}
	if o.Concurrency > m.Concurrency {
		m.Concurrency = o.Concurrency
	}
	for i := range m.Hist {
		m.Hist[i] += o.Hist[i]
	}
}

// Since returns what was added to a bucket between the reading o and the
// later reading m of it: counts and histogram slots subtract; RtMin and
// RtMax, extremes that do not subtract, are m's; Concurrency, a gauge and
// not an addition, is 0.
func (m *Metrics) Since(o *Metrics) Metrics {
	d := Metrics{Pass: m.Pass - o.Pass, Block: m.Block - o.Block, Complete: m.Complete - o.Complete,
		Error: m.Error - o.Error, Slow: m.Slow - o.Slow, RtSum: m.RtSum - o.RtSum,
		RtMin: m.RtMin, RtMax: m.RtMax}
	for i := range d.Hist {
		d.Hist[i] = m.Hist[i] - o.Hist[i]
	}
	return d
}

// HistogramCounted is the set of h's slots that count a call (hold more
// than 0), bit i for slot i: a bucket's histogram has calls in a few of its
// slots, so a loop that adds it over only these (bits.TrailingZeros16 to
// the next, m &= m-1 past it) skips the rest.
func HistogramCounted(h *[HistogramSlots]int64) uint16 {
	var m uint16
	for i, c := range h {
		// Branch-free: c > 0 is the sign of -c. c = math.MinInt64, its own
		// negation, sets its bit too; callers take max(c, 0) regardless.
		m |= uint16(uint64(-c)>>63) << i
	}
	return m
}

// The slots' set is 16 bits wide.
var _ [16 - HistogramSlots]struct{}

// AvgRt is the mean response time of completed entries, 0 if none.
func (m *Metrics) AvgRt() float64 {
	if m.Complete == 0 {
		return 0
	}
	return float64(m.RtSum) / float64(m.Complete)
}

// Quantile estimates the q-quantile (0..1) of response time from the
// histogram, returning the upper bound of the slot it falls in, clamped to
// RtMax when that is known. It returns 0 when the histogram is empty.
func (m *Metrics) Quantile(q float64) int64 {
	return HistogramQuantile(&m.Hist, q, m.RtMax)
}

// HistogramQuantile estimates the q-quantile of a wire v1 histogram as the
// upper bound of the slot holding it. rtMax, when positive, caps the answer
// (it is exact for the open-ended last slot and tighter for sparse data).
func HistogramQuantile(h *[HistogramSlots]int64, q float64, rtMax int64) int64 {
	var total int64
	for _, c := range h {
		total += c
	}
	if total == 0 {
		return 0
	}
	if q < 0 {
		q = 0
	}
	if q > 1 {
		q = 1
	}
	rank := int64(math.Ceil(q * float64(total)))
	if rank < 1 {
		rank = 1
	}
	var seen int64
	for i, c := range h {
		seen += c
		if seen >= rank {
			bound := rtMax
			if i < len(HistogramBounds) {
				bound = HistogramBounds[i]
				if rtMax > 0 && rtMax < bound {
					bound = rtMax
				}
			}
			return bound
		}
	}
	return rtMax
}

// MetricWindow is a Window of MetricBuckets: the per-resource statistics an
// agent keeps and ships.
type MetricWindow = Window[MetricBucket, *MetricBucket]

// NewMetricWindow returns a metric window of sampleCount buckets over
// intervalMs.
func NewMetricWindow(sampleCount int, intervalMs int64) (*MetricWindow, error) {
	return NewWindow[MetricBucket](sampleCount, intervalMs)
}

// SumWindow adds up every bucket of w valid at now.
func SumWindow(w *MetricWindow, now int64) Metrics {
	var sum Metrics
	for i := 0; i < w.SampleCount(); i++ {
		if _, b, ok := w.At(now, i); ok {
			sum.Add(b.Snapshot())
		}
	}
	return sum
}
