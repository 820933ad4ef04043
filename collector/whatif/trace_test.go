package whatif

import (
	"math/rand/v2"
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
)

// A bucket's calls keep its counts exactly: completions, errors, slow
// calls against its bound, each histogram slot, and refused calls.
func TestCallsKeepCounts(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		var b Bucket
		b.Start, b.Ms, b.HasHist = 1000, 500, true
		for i := range b.Hist {
			if r.IntN(3) == 0 {
				b.Hist[i] = r.Int64N(40)
			}
			b.Complete += b.Hist[i]
		}
		b.RtMax = 20_000
		b.Error = r.Int64N(b.Complete + 1)
		b.Block = r.Int64N(30)
		bound := []int64{0, 150, 300, 500, 1}[r.IntN(5)]
		tr := Trace{SlowBoundMs: bound}
		for i, c := range b.Hist {
			if lo, _ := slotRange(i, b.RtMax); lo > bound {
				b.Slow += c
			} else if _, hi := slotRange(i, b.RtMax); hi > bound {
				b.Slow += r.Int64N(c + 1)
			}
		}
		if bound == 0 {
			b.Slow = 0
		}
		calls, _ := tr.calls(&b, true, nil)
		var known, errs, slow, refused int64
		var slots [core.HistogramSlots]int64
		for _, c := range calls {
			if c.at < b.Start || c.at >= b.Start+b.Ms {
				t.Fatalf("call at %d outside the bucket [%d, %d)", c.at, b.Start, b.Start+b.Ms)
			}
			if !c.known {
				refused++
				continue
			}
			known++
			if c.err {
				errs++
			}
			if c.slowKnown == 1 {
				slow++
			}
			if c.rtLo > c.rtHi {
				t.Fatalf("response time [%d, %d]", c.rtLo, c.rtHi)
			}
			if bound > 0 && (c.slowKnown == 1) != (c.rtLo > bound) {
				t.Fatalf("slow %d but response time [%d, %d] against %d", c.slowKnown, c.rtLo, c.rtHi, bound)
			}
			slots[core.HistogramSlot(c.rtHi)]++
		}
		if known != b.Complete || errs != b.Error || refused != b.Block || (bound > 0 && slow != b.Slow) {
			t.Fatalf("bucket %+v (bound %d): calls %d, errors %d, refused %d, slow %d", b, bound, known, errs, refused, slow)
		}
		if slots != b.Hist {
			t.Fatalf("histogram %v, calls dealt %v", b.Hist, slots)
		}
	}
}

// A bucket claiming an absurd count is replayed at a bounded cost.
func TestHugeBucketIsScaled(t *testing.T) {
	tr := Trace{Buckets: []Bucket{{Start: 0, Ms: 1000, Pass: 1 << 40, Complete: 1 << 40, Error: 1 << 39}}}
	rule := core.BreakerRule{Resource: "r", Strategy: core.ErrorRatio, Threshold: 0.5, MinRequestAmount: 5, StatIntervalMs: 1000, RetryTimeoutMs: 1000}
	res, err := Compare([]Case{{Trace: &tr, Current: rule, Proposed: rule}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Estimated || res.Current.Trips != 1 {
		t.Fatalf("estimated %v, trips %d", res.Estimated, res.Current.Trips)
	}
}

// Outage episodes: failing buckets with only empty ones between form one
// episode; a few bad calls in a quiet bucket are an episode, but not a
// sound one.
func TestEpisodes(t *testing.T) {
	b := func(start, complete, errs int64) Bucket {
		return Bucket{Start: start, Ms: 1000, Pass: complete, Complete: complete, Error: errs}
	}
	tr := Trace{Buckets: []Bucket{
		b(0, 10, 0), b(1000, 5, 3), b(2000, 10, 0), // a quiet blip: 3 of 5
		b(3000, 10, 6), b(4000, 0, 0), b(5000, 10, 10), b(6000, 10, 9), // 35 of 40, an empty bucket between
		b(7000, 10, 1), b(8000, 10, 0),
	}}
	rule := core.BreakerRule{Resource: "r", Strategy: core.ErrorRatio, Threshold: 0.5, MinRequestAmount: 5, StatIntervalMs: 1000, RetryTimeoutMs: 1000}
	p, err := prepare(&tr, &rule)
	if err != nil {
		t.Fatal(err)
	}
	want := []episode{
		{from: 1000, to: 2000, firstMs: 1000, known: 5, bad: 3},
		{from: 3000, to: 7000, firstMs: 1000, known: 30, bad: 25, sound: true},
	}
	if len(p.episodes) != len(want) {
		t.Fatalf("episodes %+v, want %+v", p.episodes, want)
	}
	for i := range want {
		if p.episodes[i] != want[i] {
			t.Errorf("episode %d: %+v, want %+v", i, p.episodes[i], want[i])
		}
	}
}
