package triage

import (
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
)

// hist is a histogram with n completions in each given slot.
func hist(n int64, slots ...int) [core.HistogramSlots]int64 {
	var h [core.HistogramSlots]int64
	for _, s := range slots {
		h[s] += n
	}
	return h
}

// bucketAt is a 500 ms bucket of res starting at start, whose completions
// are h's.
func bucketAt(res string, start int64, h [core.HistogramSlots]int64, rtMax int64) BucketStat {
	var n int64
	for _, c := range h {
		n += c
	}
	return BucketStat{Resource: res, Start: start, BucketMs: 500, Metrics: core.Metrics{Pass: n, Complete: n, RtMax: rtMax, Hist: h}, HasHist: true}
}

// slowest is the upper bound of h's slowest non-empty slot (12 s for the
// open-ended one): a bucket's rtMax.
func slowest(h [core.HistogramSlots]int64) int64 {
	for i := len(h) - 1; i >= 0; i-- {
		switch {
		case h[i] == 0:
		case i < len(core.HistogramBounds):
			return core.HistogramBounds[i]
		default:
			return 12000
		}
	}
	return 0
}

// steady is the same calls in every bucket.
func steady(h [core.HistogramSlots]int64) func(int64) [core.HistogramSlots]int64 {
	return func(int64) [core.HistogramSlots]int64 { return h }
}

// feed sends each instance a 500 ms bucket of res every 500 ms over [from,
// to), with the calls hists gives for its start; the transitions at[start]
// arrive before the bucket starting at start, that is right after the one
// ending then (a transition at 10.2 s arrives at 10.5 s at the latest).
func feed(e *Feeder, insts []string, res string, from, to int64, hists func(start int64) [core.HistogramSlots]int64, at map[int64][]core.Transition) {
	for start := from; start < to; start += 500 {
		for _, in := range insts {
			for _, tr := range at[start] {
				e.Transition(in, tr)
			}
			h := hists(start)
			e.Bucket(in, bucketAt(res, start, h, slowest(h)))
		}
	}
}

// arrivals keys transitions by the start of the first bucket they arrive
// before: the first bucket boundary at or after their time plus lateMs.
func arrivals(lateMs int64, trs ...core.Transition) map[int64][]core.Transition {
	at := map[int64][]core.Transition{}
	for _, tr := range trs {
		k := t0 + (tr.AtMs+lateMs-t0+499)/500*500
		at[k] = append(at[k], tr)
	}
	return at
}

// withRule sets the transitions' rule id.
func withRule(id string, trs ...core.Transition) []core.Transition {
	for i := range trs {
		trs[i].RuleID = id
	}
	return trs
}

// healthyN is the series' healthy completions, held ones included.
func healthyN(e *Feeder, inst, res string) int64 {
	return e.inst(inst).series[res].hz.n
}

func healthyP99Of(e *Feeder, inst, res string) (int64, bool) {
	return e.inst(inst).series[res].healthyP99()
}

// incident feeds one instance of a slow-ratio rule (statIntervalMs 10 s):
// healthy traffic for 60 s, slow calls in the 5 s before a trip at 60 s, an
// OPEN spell with a failed probe and a close at 80.01 s, then healthy
// traffic again to 100 s. The transitions arrive at their time, or lateMs
// after it (a source that infers them from counts).
//
// Each healthy bucket holds 10 completions: 9 of at most 10 ms (slot 3)
// and 1 of at most 100 ms (slot 6). The incident's buckets hold 10 of at
// most 5000 ms (slot 11).
func incident(e *Feeder, lateMs int64) {
	const res = "db"
	appFleet(e, "order", 1, t0, "v1", slowRule(res))
	good := hist(9, 3)
	good[6] = 1
	hists := func(start int64) [core.HistogramSlots]int64 {
		if start >= t0+55000 && start < t0+80500 {
			return hist(10, 11)
		}
		return good
	}
	feed(e, []string{"order-1"}, res, t0, t0+100000, hists, arrivals(lateMs,
		trans(res, core.Closed, core.Open, t0+60000),
		trans(res, core.Open, core.HalfOpen, t0+70000),
		trans(res, core.HalfOpen, core.Open, t0+70005),
		trans(res, core.Open, core.HalfOpen, t0+80000),
		trans(res, core.HalfOpen, core.Closed, t0+80010)))
}

// The healthy p99 leaves out the statIntervalMs before the trip and the
// spell.
//
// Healthy buckets: those starting at 0 .. 49.5 s (100 buckets: the one
// starting at 49.5 s ends at 50 s, the start of the 10 s before the trip,
// and stays) and at 80.5 .. 99.5 s (39 buckets: the one starting at 80 s
// overlaps the spell, which ends at 80.01 s). 139 x 10 = 1390 completions,
// 1251 of at most 10 ms and 139 of at most 100 ms. p99 is completion
// ceil(0.99 x 1390) = 1377 in order, past the 1251 fast ones: at most
// 100 ms. Over the whole input it would have been at most 5000 ms.
//
// Buckets are held back statIntervalMs, no longer: transitions arriving
// 2 s after the buckets that follow them let the first 2 s of the trip's
// window count (4 good buckets ending at 50.5 .. 52 s, released before the
// trip arrives), and keep the first 2 s after the spell out (4 buckets from
// 80.5 s, which arrive before the close): 1390 again, p99 the same.
func TestHealthyP99LeavesOutTheIncident(t *testing.T) {
	for _, late := range []int64{0, 2000} {
		e := NewFeeder(Config{})
		incident(e, late)
		if n := healthyN(e, "order-1", "db"); n != 1390 {
			t.Errorf("transitions %d ms late: %d healthy completions, want 1390", late, n)
		}
		if p99, ok := healthyP99Of(e, "order-1", "db"); !ok || p99 != 100 {
			t.Errorf("transitions %d ms late: healthy p99 %d (%v), want 100", late, p99, ok)
		}
	}
}

// 200 healthy completions give a p99; 199 do not. The p99 is the upper
// bound of its slot (at most 200 ms), not the slowest call seen (150 ms);
// in the open-ended last slot it is the slowest healthy call.
func TestHealthyP99Bounds(t *testing.T) {
	cases := []struct {
		name  string
		n     int64 // completions, 10 per bucket and the rest in one more
		slot  int
		rtMax int64
		p99   int64
		ok    bool
	}{
		{"199 completions: no p99", 199, 7, 150, 0, false},
		{"200 completions: at most 200 ms", 200, 7, 150, 200, true},
		{"the open-ended slot: the slowest call", 400, 13, 12500, 12500, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := NewFeeder(Config{})
			appFleet(e, "order", 1, t0, "v1", slowRule("db"))
			start := t0
			for left := c.n; left > 0; left -= 10 {
				e.Bucket("order-1", bucketAt("db", start, hist(min(left, 10), c.slot), c.rtMax))
				start += 500
			}
			if p99, ok := healthyP99Of(e, "order-1", "db"); p99 != c.p99 || ok != c.ok {
				t.Fatalf("healthy p99 %d (%v), want %d (%v)", p99, ok, c.p99, c.ok)
			}
		})
	}
}

// Buckets are held back for the longest statIntervalMs of the resource's
// breakers, at most 120 s: ring length hold / bucketMs + 2.
func TestHealthyHoldBounds(t *testing.T) {
	long := slowRule("db")
	long.StatIntervalMs = 300_000
	errs := core.BreakerRule{Resource: "db", ID: "errors", Strategy: core.ErrorRatio, Threshold: 0.5,
		MinRequestAmount: 20, StatIntervalMs: 20_000, RetryTimeoutMs: 10_000}
	cases := []struct {
		name     string
		rules    []core.BreakerRule
		trip     bool // a transition of a breaker with no rule
		hold     int64
		ringSize int
	}{
		{"10 s window: 20 buckets and 2 spare", []core.BreakerRule{slowRule("db")}, false, 10_000, 22},
		{"the longest of two breakers", []core.BreakerRule{slowRule("db"), errs}, false, 20_000, 42},
		{"a 300 s window: at most 120 s", []core.BreakerRule{long}, false, 120_000, 242},
		{"no breaker: nothing held", nil, false, 0, 0},
		{"a breaker of unknown rule: 120 s", nil, true, 120_000, 242},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := NewFeeder(Config{})
			appFleet(e, "order", 1, t0, "v1", c.rules...)
			e.Bucket("order-1", bucketAt("db", t0, hist(10, 3), 8))
			if c.trip {
				e.Transition("order-1", trans("db", core.Closed, core.Open, t0+500))
			}
			h := &e.inst("order-1").series["db"].hz
			if h.holdMs != c.hold || int(h.held.max) != c.ringSize {
				t.Fatalf("hold %d ms, at most %d held; want %d, %d", h.holdMs, h.held.max, c.hold, c.ringSize)
			}
		})
	}
}

// A peer declaring 1 ms buckets under a 300 s window: at most
// maxHeldBuckets are held, in bytes that grow with what is held (none
// before the first bucket), not with the window.
func TestHealthyHeldBoundedForShortBuckets(t *testing.T) {
	long := slowRule("db")
	long.StatIntervalMs = 300_000
	e := NewFeeder(Config{})
	appFleet(e, "order", 1, t0, "v1", long)
	b := bucketAt("db", t0, hist(10, 3, 12), 8)
	b.BucketMs = 1
	e.Bucket("order-1", b)
	h := &e.inst("order-1").series["db"].hz
	if h.held.max != maxHeldBuckets || h.held.n != 1 || cap(h.held.buf) > 2*maxHeldBytes {
		t.Fatalf("at most %d held, %d held in %d bytes; want %d, 1 in at most %d", h.held.max, h.held.n, cap(h.held.buf), maxHeldBuckets, 2*maxHeldBytes)
	}
	for k := range int64(5000) {
		b.Start = t0 + 1 + k
		e.Bucket("order-1", b)
	}
	if got, want := healthyN(e, "order-1", "db"), int64(5001*20); h.held.n != maxHeldBuckets || got != want {
		t.Fatalf("%d held, healthy %d; want %d, %d", h.held.n, got, maxHeldBuckets, want)
	}
	if limit := maxHeldBuckets * 8 * 5 / 4; cap(h.held.buf) > limit { // 8 bytes a bucket here
		t.Fatalf("%d bytes held, over %d", cap(h.held.buf), limit)
	}
}

// Two breakers on one resource: healthy traffic needs both CLOSED, and a
// trip reaches back its own breaker's statIntervalMs.
//
// The slow breaker (5 s window) trips at 30 s and closes at 40 s; the error
// breaker (20 s window) stays CLOSED. Left out: the 30 buckets ending after
// 25 s and starting before 40 s; 120 - 30 = 90 healthy buckets of 10.
func TestHealthyTwoBreakers(t *testing.T) {
	slow := slowRule("db")
	slow.ID, slow.StatIntervalMs = "slow", 5_000
	errs := core.BreakerRule{Resource: "db", ID: "errors", Strategy: core.ErrorRatio, Threshold: 0.5,
		MinRequestAmount: 20, StatIntervalMs: 20_000, RetryTimeoutMs: 10_000}
	e := NewFeeder(Config{})
	appFleet(e, "order", 1, t0, "v1", slow, errs)
	feed(e, []string{"order-1"}, "db", t0, t0+60000, steady(hist(10, 3)), arrivals(0, withRule("slow",
		trans("db", core.Closed, core.Open, t0+30000),
		trans("db", core.Open, core.HalfOpen, t0+39990),
		trans("db", core.HalfOpen, core.Closed, t0+40000))...))
	if n := healthyN(e, "order-1", "db"); n != 900 {
		t.Fatalf("%d healthy completions, want 900", n)
	}
}

// A restart ends a spell: the new process's breakers are CLOSED.
func TestHealthyRestartEndsTheSpell(t *testing.T) {
	e := NewFeeder(Config{})
	appFleet(e, "order", 1, t0, "v1", slowRule("db"))
	e.Transition("order-1", trans("db", core.Closed, core.Open, t0+1000))
	e.Hello("order-1", "order", t0+5000, t0+4000)
	// 20 buckets from 5 s: all healthy, 200 completions.
	feed(e, []string{"order-1"}, "db", t0+5000, t0+15000, steady(hist(10, 4)), nil)
	if p99, ok := healthyP99Of(e, "order-1", "db"); !ok || p99 != 20 {
		t.Fatalf("healthy p99 %d (%v), want 20", p99, ok)
	}
}

// A breaker found OPEN, HALF_OPEN or back to CLOSED without its trip
// having been seen: the last hold (10 s) before it is left out.
//
// 20 buckets to 10 s, then OPEN -> HALF_OPEN at 10 s and HALF_OPEN ->
// CLOSED at 10.01 s: those 20 buckets (ending after 0 s) and the one
// overlapping 10.01 s are out; 20 more from 10.5 s count: 200.
func TestHealthyJoinedMidSpell(t *testing.T) {
	e := NewFeeder(Config{})
	appFleet(e, "order", 1, t0, "v1", slowRule("db"))
	feed(e, []string{"order-1"}, "db", t0, t0+20500, steady(hist(10, 3)), map[int64][]core.Transition{t0 + 10000: {
		trans("db", core.Open, core.HalfOpen, t0+10000),
		trans("db", core.HalfOpen, core.Closed, t0+10010),
	}})
	if n := healthyN(e, "order-1", "db"); n != 200 {
		t.Fatalf("%d healthy completions, want 200", n)
	}
}

// Holding buckets back costs no allocation in steady state.
func TestHealthyDoesNotAllocate(t *testing.T) {
	e := NewFeeder(Config{})
	appFleet(e, "order", 1, t0, "v1", slowRule("db"))
	start := t0
	b := bucketAt("db", start, hist(10, 3), 8)
	e.Bucket("order-1", b)
	e.Transition("order-1", trans("db", core.Closed, core.Open, t0+100))
	e.Transition("order-1", trans("db", core.Open, core.HalfOpen, t0+200))
	e.Transition("order-1", trans("db", core.HalfOpen, core.Closed, t0+300))
	allocs := testing.AllocsPerRun(1000, func() {
		start += 500
		b.Start = start
		e.Bucket("order-1", b)
		if (start-t0)%20000 == 0 {
			e.Transition("order-1", trans("db", core.Closed, core.Open, start+100))
			e.Transition("order-1", trans("db", core.Open, core.HalfOpen, start+200))
			e.Transition("order-1", trans("db", core.HalfOpen, core.Closed, start+300))
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per bucket", allocs)
	}
}

// Held buckets of small and large counts: a trip takes back exactly what
// they added.
func TestHealthyHeldWide(t *testing.T) {
	e := NewFeeder(Config{})
	appFleet(e, "order", 1, t0, "v1", slowRule("db"))
	narrow, wide := hist(10, 3), hist(70_000, 3, 4)
	e.Bucket("order-1", bucketAt("db", t0, narrow, 40))
	e.Bucket("order-1", bucketAt("db", t0+500, wide, 40))
	e.Bucket("order-1", bucketAt("db", t0+1000, narrow, 40))
	h := &e.inst("order-1").series["db"].hz
	if got, want := healthyN(e, "order-1", "db"), int64(10+140_000+10); got != want || h.held.n != 3 {
		t.Fatalf("healthy %d (%d held), want %d in 3 held", got, h.held.n, want)
	}
	// The trip reaches back 10 s: every held bucket is dropped.
	e.Transition("order-1", trans("db", core.Closed, core.Open, t0+2000))
	if got := healthyN(e, "order-1", "db"); got != 0 || h.hist != ([core.HistogramSlots]int64{}) {
		t.Fatalf("after the trip: healthy %d, hist %v; want nothing", got, h.hist)
	}
}
