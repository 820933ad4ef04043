package whatif

import (
	"container/heap"
	"math/rand/v2"
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
)

// world is an incident's ground truth: each call's response time and
// failure by its arrival time.
type world func(at int64, r *rand.Rand) (rt int64, failed bool)

// record runs a real breaker for rule on the world's calls (qps for durMs
// from 0, deterministic) and records what an input would hold: bucketMs
// buckets with the histogram, the slow count against the rule's bound,
// and the breaker's spells; trips are its CLOSED -> OPEN times.
func record(t testing.TB, inst string, rule core.BreakerRule, w world, qps float64, durMs, bucketMs int64, seed uint64) (tr *Trace, trips []int64) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	var spells []Span
	open := int64(-1)
	br, err := core.NewBreaker(rule, listenFunc(func(x core.Transition) {
		if x.From == core.Closed && x.To == core.Open {
			trips = append(trips, x.AtMs)
		}
		if x.From == core.Closed {
			open = x.AtMs
		}
		if x.To == core.Closed && open >= 0 {
			spells = append(spells, Span{open, x.AtMs})
			open = -1
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	n := durMs / bucketMs
	buckets := make([]Bucket, n)
	for i := range buckets {
		buckets[i] = Bucket{Start: int64(i) * bucketMs, Ms: bucketMs, HasHist: true}
	}
	at := func(ms int64) *Bucket {
		if i := ms / bucketMs; i < n {
			return &buckets[i]
		}
		return nil
	}
	var h pendingHeap
	done := func(until int64) {
		for len(h) > 0 && h[0].at <= until {
			x := heap.Pop(&h).(pending)
			br.OnComplete(x.at, x.rt, x.failed)
			if b := at(x.at); b != nil {
				b.Complete++
				if x.failed {
					b.Error++
				}
				if x.rt > int64(rule.MaxAllowedRtMs) && rule.Strategy == core.SlowRequestRatio {
					b.Slow++
				}
				b.Hist[slotOf(x.rt)]++
				b.RtMax = max(b.RtMax, x.rt)
				if b.Complete == 1 || x.rt < b.RtMin {
					b.RtMin = x.rt
				}
			}
		}
	}
	gap := 1000 / qps
	for ts := 0.0; int64(ts) < durMs; ts += gap * (0.5 + r.Float64()) {
		now := int64(ts)
		done(now)
		b := at(now)
		if pass, _ := br.TryPass(now); pass {
			b.Pass++
			rt, failed := w(now, r)
			heap.Push(&h, pending{at: now + rt, rt: rt, failed: failed})
		} else {
			b.Block++
		}
	}
	done(durMs * 2)
	if open >= 0 {
		spells = append(spells, Span{open, durMs * 2})
	}
	tr = &Trace{Instance: inst, Buckets: buckets, Spells: spells}
	if rule.Strategy == core.SlowRequestRatio {
		tr.SlowBoundMs = int64(rule.MaxAllowedRtMs)
	}
	return tr, trips
}

type listenFunc func(core.Transition)

func (f listenFunc) OnTransition(t core.Transition) { f(t) }

func slotOf(rt int64) int {
	for i, b := range core.HistogramBounds {
		if rt <= b {
			return i
		}
	}
	return core.HistogramSlots - 1
}

// brownout: healthy calls of 40-80 ms (a few to 135 ms); from 60 s to 200 s
// every call takes 340-390 ms.
func brownout(at int64, r *rand.Rand) (int64, bool) {
	if at >= 60_000 && at < 200_000 {
		return 340 + r.Int64N(51), false
	}
	if r.IntN(100) == 0 {
		return 100 + r.Int64N(36), false
	}
	return 40 + r.Int64N(41), false
}

// dbDown: errors for every call from 30 s to 150 s, healthy (20-60 ms)
// otherwise, with one call in 50 failing anyway.
func dbDown(at int64, r *rand.Rand) (int64, bool) {
	if at >= 30_000 && at < 150_000 {
		return 2000, true
	}
	return 20 + r.Int64N(41), r.IntN(50) == 0
}

// jittery: a healthy service whose calls are slow (over 500 ms) one time
// in ten, and no outage at all.
func jittery(at int64, r *rand.Rand) (int64, bool) {
	if r.IntN(10) == 0 {
		return 600 + r.Int64N(200), false
	}
	return 30 + r.Int64N(40), false
}
