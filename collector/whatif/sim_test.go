package whatif

import (
	"math/rand/v2"
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/internal/worlds"
)

type world = worlds.World

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
			x := h.pop()
			br.OnComplete(x.at, x.rt, x.failed)
			if b := at(x.at); b != nil {
				b.Complete++
				if x.failed {
					b.Error++
				}
				if x.rt > int64(rule.MaxAllowedRtMs) && rule.Strategy == core.SlowRequestRatio {
					b.Slow++
				}
				b.Hist[core.HistogramSlot(x.rt)]++
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
			h.push(pending{at: now + rt, rt: rt, failed: failed})
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

// The incidents of these tests.
var (
	brownout = worlds.Brownout(60_000, 200_000)
	dbDown   = worlds.Down(30_000, 150_000, 50)
	jittery  = worlds.Jittery()
)
