package triage

import (
	"math"
	"math/bits"

	"github.com/sentinel-top/sentinel-top/core"
)

// Healthy traffic (spec/findings-v1.md): the buckets of a series during
// which every breaker of the resource on that instance was CLOSED, leaving
// out the statIntervalMs before each CLOSED -> OPEN and every OPEN or
// HALF_OPEN spell. Advice is computed from it, never from an incident.

const (
	// HealthyMinCompletions is the fewest healthy completions a healthy p99
	// rests on: with fewer there is no healthy p99 and no RT advice.
	HealthyMinCompletions = 200
	// maxHoldMs bounds how long buckets are held back waiting for a trip: a
	// statIntervalMs longer than that excludes only the last maxHoldMs
	// before a trip from buckets already counted.
	maxHoldMs = 120_000
	// maxHeldBuckets bounds how many buckets a series holds back: 120 s of
	// 100 ms buckets. Buckets shorter than that under a long window are
	// released before their hold is over (a trip reaching back further
	// leaves them counted), so that a peer declaring 1 ms buckets cannot
	// make each series hold 120,000 (9 MB).
	maxHeldBuckets = maxHoldMs/100 + 2
)

// healthy is a series' healthy traffic. Buckets arrive interleaved with
// transitions and roughly in time order, a bucket after its end and a
// transition at its time: a bucket is held back for holdMs, until no trip
// can reach back to it any more, and dropped if one does. Held buckets
// count as healthy until then, as far as the input tells.
type healthy struct {
	// holdMs is the longest statIntervalMs of the series' breakers (a
	// breaker of unknown rule counts maxHoldMs), at most maxHoldMs.
	holdMs int64
	// held are the buckets held back, packed (held.go).
	held heldQueue

	// The latest excluded span [exFrom, exTo): from statIntervalMs before a
	// trip to the end of the spell; exTo is math.MaxInt64 while a breaker
	// is not CLOSED. prevTo is where the span before it ended.
	hasEx        bool
	exFrom, exTo int64
	prevTo       int64

	// hist and n sum up every healthy bucket, held or released (a dropped
	// one is taken out again); rtMax is the slowest call of those released.
	n     int64
	rtMax int64
	hist  [core.HistogramSlots]int64
}

// spell reports whether a breaker of the series is not CLOSED.
func (h *healthy) spell() bool { return h.hasEx && h.exTo == math.MaxInt64 }

// setHold sets how long buckets of bucketMs are held back, keeping those
// held. How many may be held only grows.
func (h *healthy) setHold(holdMs, bucketMs int64) {
	h.holdMs = min(max(holdMs, 0), maxHoldMs)
	if h.holdMs == 0 || bucketMs <= 0 {
		return
	}
	h.held.max = max(h.held.max, int32(min(h.holdMs/bucketMs+2, maxHeldBuckets)))
}

// bucket takes one bucket of the series over [start, end).
func (h *healthy) bucket(start, end int64, b *BucketStat) {
	h.release(end - h.holdMs)
	if !b.HasHist || h.excluded(start, end) {
		return
	}
	if h.holdMs == 0 || h.held.max == 0 {
		for m := b.counted; m != 0; m &= m - 1 {
			i := bits.TrailingZeros16(m)
			c := max(b.Hist[i], 0)
			h.hist[i] += c
			h.n += c
		}
		h.rtMax = max(h.rtMax, b.RtMax)
		return
	}
	if h.held.n == h.held.max {
		h.releaseOldest() // buckets in order never fill it: keep the bound all the same
	}
	var hb heldBucket
	for m := b.counted; m != 0; m &= m - 1 {
		i := bits.TrailingZeros16(m)
		c := min(max(b.Hist[i], 0), maxHeldCount)
		hb.hist[i] = c
		h.hist[i] += c
		hb.n += c
	}
	if hb.n == 0 {
		return
	}
	hb.end, hb.rtMax = end, min(max(b.RtMax, 0), math.MaxInt32)
	h.held.push(&hb)
	h.n += hb.n
}

func (h *healthy) excluded(start, end int64) bool {
	return h.hasEx && ((end > h.exFrom && start < h.exTo) || start < h.prevTo)
}

// release counts the held buckets ending at or before until for good.
func (h *healthy) release(until int64) {
	for h.held.n > 0 && h.held.oldestEnd() <= until {
		h.releaseOldest()
	}
}

// releaseOldest counts the oldest held bucket for good: its calls are in
// hist already.
func (h *healthy) releaseOldest() {
	var b heldBucket
	h.held.pop(&b)
	h.rtMax = max(h.rtMax, b.rtMax)
}

// trip excludes from from on, until the spell ends: a breaker tripped (from
// is statIntervalMs before the trip) or was found not CLOSED. Held buckets
// ending after from are dropped.
func (h *healthy) trip(from int64) {
	switch {
	case h.spell():
		h.exFrom = min(h.exFrom, from)
	case h.hasEx && h.exTo > from: // the windows overlap: one span
		h.exFrom = min(h.exFrom, from)
	default:
		if h.hasEx {
			h.prevTo = h.exTo
		}
		h.exFrom = from
	}
	h.hasEx, h.exTo = true, math.MaxInt64
	d := h.held.dropAfter(h.exFrom)
	for i, c := range d.hist {
		h.hist[i] -= c
	}
	h.n -= d.n
}

// close ends the spell at at: every breaker of the series is CLOSED again.
func (h *healthy) close(at int64) {
	if h.spell() {
		h.exTo = max(at, h.exFrom)
	}
}

// healthyP99 is the p99 response time of the series' healthy traffic: the
// upper bound of the histogram slot it falls in (200 means "at most 200
// ms"; in the open-ended last slot, the slowest healthy completion). ok is
// false with fewer than HealthyMinCompletions healthy completions.
func (s *series) healthyP99() (ms int64, ok bool) {
	h := &s.hz
	if h.n < HealthyMinCompletions {
		return 0, false
	}
	ms = core.HistogramQuantile(&h.hist, 0.99, 0)
	if ms == 0 { // the open-ended slot: rare enough to look at the held buckets
		ms = h.rtMax
		h.held.each(func(b *heldBucket) { ms = max(ms, b.rtMax) })
	}
	return ms, ms > 0
}

// p99Floor is the least a healthy p99 reported as ms ("at most ms": the
// upper bound of its histogram slot) can be: the slot's lower bound, 0 for
// the first slot, the last bound for the open-ended slot. An RT bound
// judged against it keeps the breaker sensitive (findings-v1 revision 3):
// a p99 "at most 200" may be 101, and a maxAllowedRtMs of 2x200 would
// not see calls of 300 that healthy ones never took.
func p99Floor(ms int64) int64 {
	var floor int64
	for _, b := range core.HistogramBounds {
		if b >= ms {
			break
		}
		floor = b
	}
	return floor
}

// statInterval is the longest statIntervalMs among the instance's breaker
// rules for the series' resource with that rule id (all of them when the id
// is empty), 0 when none is known.
func (s *series) statInterval(ruleID string) int64 {
	rr := s.rr
	if rr == nil {
		return 0
	}
	var ms int64
	for _, b := range rr.Breakers {
		if ruleID == "" || b.ID == ruleID {
			ms = max(ms, int64(b.StatIntervalMs))
		}
	}
	return ms
}

// setHold sets the series' hold from its rules and breakers: called when
// they or the bucket length change.
func (s *series) setHold() {
	hold := s.statInterval("")
	for _, b := range s.breakers {
		if s.statInterval(b.ruleID) == 0 {
			hold = maxHoldMs
		}
	}
	s.hz.setHold(hold, int64(s.bucketMs))
}

// healthyTransition follows the series into and out of spells: the state
// of breaker b changes by t; wasOpen tells whether a breaker of the series
// was not CLOSED before, and open whether one is after.
func (s *series) healthyTransition(b *breaker, t *core.Transition, wasOpen, open bool) {
	switch {
	case t.From == core.Closed && t.To == core.Open:
		w := s.statInterval(b.ruleID)
		if w == 0 {
			w = s.hz.holdMs
		}
		s.hz.trip(t.AtMs - w)
	case open && !wasOpen:
		// Not CLOSED without a trip seen: the spell began earlier.
		s.hz.trip(t.AtMs - s.hz.holdMs)
	case !open && wasOpen:
		s.hz.close(t.AtMs)
	case !open && t.From != core.Closed:
		// Back to CLOSED from a spell never seen beginning.
		s.hz.trip(t.AtMs - s.hz.holdMs)
		s.hz.close(t.AtMs)
	}
}
