package collector

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// The latencies the table and the detail screen show are the quantiles of
// every histogram slot the buckets counted calls in, the slowest included:
// checked against the buckets' histograms summed here, per row (the rate
// window), per second (the fine ring) and per 15 s (the coarse ring).
func TestQuantilesCountEveryHistogramSlot(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 31))
	for round := range 40 {
		start := t0ms + 60_000 // a whole coarse step: its slot holds every bucket
		clock := core.NewVirtualClock(time.UnixMilli(start))
		c := New(Options{Clock: clock})
		instances := []string{"a", "b", "c"}
		for _, in := range instances {
			c.Ingest(in, &wire.Hello{Header: wire.Header{Ts: start, Instance: in}, App: "x", BucketMs: 500})
		}
		type sum struct {
			hist  [core.HistogramSlots]int64
			rtMax int64
		}
		perSec := map[int64]*sum{}
		var all sum
		for b := range int64(8) { // 4 s of 500 ms buckets
			at := start + b*500
			for _, in := range instances {
				var m core.Metrics
				for range 1 + rng.IntN(4) {
					k := rng.IntN(core.HistogramSlots)
					if round%2 == 0 {
						k = core.HistogramSlots - 1 - rng.IntN(4) // the slow slots only
					}
					n := 1 + rng.Int64N(50)
					rt := int64(20_000)
					if k < len(core.HistogramBounds) {
						rt = core.HistogramBounds[k]
					}
					m.Hist[k] += n
					m.Complete += n
					m.Pass += n
					m.RtSum += n * rt
					m.RtMax = max(m.RtMax, rt)
					if m.RtMin == 0 || rt < m.RtMin {
						m.RtMin = rt
					}
				}
				c.Ingest(in, &wire.Buckets{Header: wire.Header{Ts: at + 500, Instance: in}, BucketMs: 500,
					Items: []wire.BucketItem{{Resource: "r", Start: at, Metrics: m, HasHist: true}}})
				sec := at - at%1000
				if perSec[sec] == nil {
					perSec[sec] = &sum{}
				}
				for _, s := range []*sum{perSec[sec], &all} {
					for k, v := range m.Hist {
						s.hist[k] += v
					}
					s.rtMax = max(s.rtMax, m.RtMax)
				}
			}
		}
		clock.Set(time.UnixMilli(start + 4000))
		row := c.Publish().Rows[0]
		p50, p99 := core.HistogramQuantile(&all.hist, 0.5, all.rtMax), core.HistogramQuantile(&all.hist, 0.99, all.rtMax)
		if !row.HasP99 || row.P50Ms != p50 || row.P99Ms != p99 {
			t.Fatalf("round %d: row p50 %d p99 %d (has %v), want %d and %d of %v", round, row.P50Ms, row.P99Ms, row.HasP99, p50, p99, all.hist)
		}
		fine := c.Detail("x", "r", start, start+4000)
		if fine.StepMs != 1000 || len(fine.P99Ms) != 4 {
			t.Fatalf("round %d: fine detail step %d, %d points", round, fine.StepMs, len(fine.P99Ms))
		}
		for i, got := range fine.P99Ms {
			s := perSec[start+int64(i)*1000]
			if want := core.HistogramQuantile(&s.hist, 0.99, s.rtMax); got != float64(want) {
				t.Fatalf("round %d: second %d p99 %v, want %d of %v", round, i, got, want, s.hist)
			}
		}
		coarse := c.Detail("x", "r", start-30*60_000, start+4000)
		if coarse.StepMs != coarseStepMs {
			t.Fatalf("round %d: coarse detail step %d", round, coarse.StepMs)
		}
		got := coarse.P99Ms[len(coarse.P99Ms)-1]
		if want := core.HistogramQuantile(&all.hist, 0.99, all.rtMax); got != float64(want) {
			t.Fatalf("round %d: coarse p99 %v, want %d of %v", round, got, want, all.hist)
		}
	}
}

// The detail screen's coarse steps count every call of their 15 s, after
// the fine ring has turned over (the buckets folded into the coarse ring
// as it reuses their seconds) as well as before (read from the fine
// ring): 15 minutes of three instances' buckets, some sent seconds late
// and a few more than the fine ring's reach (400 s) late.
func TestCoarseDetailCountsEveryCall(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 9))
	start := t0ms + 60_000 // a whole coarse step
	clock := core.NewVirtualClock(time.UnixMilli(start))
	c := New(Options{Clock: clock})
	const span, n = 15 * 60_000, 15 * 60 * 2
	perStep := map[int64]int64{}
	for _, in := range []string{"a", "b", "c"} {
		c.Ingest(in, &wire.Hello{Header: wire.Header{Ts: start, Instance: in}, App: "x", BucketMs: 500})
		order := make([]int64, n) // bucket indexes in the order sent: some late, none early
		sendAt := make([]int64, n)
		for i := range order {
			order[i], sendAt[i] = int64(i), int64(i)
			switch r := rng.IntN(100); {
			case r == 0:
				sendAt[i] += 800 // 400 s late: past the fine ring's reach
			case r < 10:
				sendAt[i] += 1 + rng.Int64N(20) // seconds late
			}
		}
		slices.SortStableFunc(order, func(x, y int64) int { return cmp.Compare(sendAt[x], sendAt[y]) })
		for i, b := range order {
			at := start + b*500
			calls := 1 + rng.Int64N(30)
			m := core.Metrics{Pass: calls, Complete: calls}
			c.Ingest(in, &wire.Buckets{Header: wire.Header{Ts: start + int64(i)*500 + 500, Instance: in}, BucketMs: 500,
				Items: []wire.BucketItem{{Resource: "r", Start: at, Metrics: m}}})
			perStep[at-at%coarseStepMs] += calls
		}
	}
	clock.Set(time.UnixMilli(start + span))
	if s := c.Publish(); len(s.Overflow) > 0 {
		t.Fatalf("buckets refused: %+v", s.Overflow)
	}
	d := c.Detail("x", "r", start, start+span)
	if d.StepMs != coarseStepMs || len(d.PassQPS) != span/coarseStepMs {
		t.Fatalf("detail step %d, %d points; want %d, %d", d.StepMs, len(d.PassQPS), coarseStepMs, span/coarseStepMs)
	}
	for i, qps := range d.PassQPS {
		at := start + int64(i)*coarseStepMs
		if got := int64(math.Round(qps * coarseStepMs / 1000)); got != perStep[at] {
			t.Fatalf("step %d (%d s in): %d calls, want %d", i, i*15, got, perStep[at])
		}
	}
}
