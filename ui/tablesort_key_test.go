package ui

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/collector/triage"
)

// TestOrderKeyOrdersAsCompareRows: the keys the table sorts by, taken once
// per snapshot, compare every pair of rows as compareRows does for every
// sort but the name sorts (which compare names), on rows with and without
// findings, OPEN, HALF_OPEN and unknown breakers, values missing (NaN) or
// equal, and latencies of each kind.
func TestOrderKeyOrdersAsCompareRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	rows := make([]collector.ResourceRow, 300)
	for i := range rows {
		r := &rows[i]
		r.HasFinding = rng.IntN(2) == 0
		r.Worst = triage.Severity(rng.IntN(3))
		r.Breakers.Open, r.Breakers.HalfOpen, r.Breakers.Unknown = rng.IntN(3), rng.IntN(3), rng.IntN(3)
		r.Instances, r.Completed, r.HasP99 = rng.IntN(4), int64(rng.IntN(2)), rng.IntN(2) == 0
		r.SlowUnknown = rng.IntN(4) == 0
		r.P99Ms, r.AvgRtMs = int64(rng.IntN(4)), float64(rng.IntN(4))
		for _, v := range []*float64{&r.PassQPS, &r.BlockQPS, &r.SlowRatio, &r.ErrorRatio} {
			*v = float64(rng.IntN(4))
			if rng.IntN(5) == 0 {
				*v = math.NaN()
			}
		}
	}
	sign := func(c int) int { return min(max(c, -1), 1) }
	for k := range numSortKeys {
		if k.ascending() {
			continue
		}
		for i := range rows {
			ki := newOrderKey(&rows[i], k)
			for j := range rows {
				kj := newOrderKey(&rows[j], k)
				if got, want := sign(ki.compare(&kj)), sign(compareRows(&rows[i], &rows[j], k)); got != want {
					t.Fatalf("%s: rows %+v and %+v: key order %d, compareRows %d", k, rows[i], rows[j], got, want)
				}
			}
		}
	}
}

// TestUnknownRatiosSortLast: by SLOW% or ERR%, a row showing "–" (nothing
// completed, or slow calls not counted) sorts after every row showing a
// ratio, 0 % included, live and by the held keys, as P99's unknown does.
func TestUnknownRatiosSortLast(t *testing.T) {
	zero := collector.ResourceRow{App: "a", Resource: "zero", Completed: 5}
	idle := collector.ResourceRow{App: "a", Resource: "idle", SlowRatio: 0.5, ErrorRatio: 0.5}
	uncounted := collector.ResourceRow{App: "a", Resource: "uncounted", Completed: 5, SlowRatio: 0.5, SlowUnknown: true}
	for _, k := range []sortKey{sortSlow, sortError} {
		dashes := []collector.ResourceRow{idle}
		if k == sortSlow {
			dashes = append(dashes, uncounted)
		}
		for _, d := range dashes {
			if c := compareRows(&zero, &d, k); c >= 0 {
				t.Errorf("%s: compareRows(0 %%, %s) = %d, want the 0 %% row first", k, d.Resource, c)
			}
			kz, kd := newOrderKey(&zero, k), newOrderKey(&d, k)
			if c := kz.compare(&kd); c >= 0 {
				t.Errorf("%s: held keys of 0 %% and %s compare %d, want the 0 %% row first", k, d.Resource, c)
			}
		}
	}
}
