package ui

import (
	"cmp"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/collector/triage"
)

// TestSeverityKeyOrdersAsCompareRows: the keys the severity and numeric
// orders take once per sort compare every pair of rows as compareRows does, on rows
// with and without findings, OPEN, HALF_OPEN and unknown breakers, and
// block rates missing (NaN) or equal.
func TestSeverityKeyOrdersAsCompareRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	rows := make([]collector.ResourceRow, 400)
	for i := range rows {
		r := &rows[i]
		r.HasFinding = rng.IntN(2) == 0
		r.Worst = triage.Severity(rng.IntN(3))
		r.Breakers.Open, r.Breakers.HalfOpen, r.Breakers.Unknown = rng.IntN(3), rng.IntN(3), rng.IntN(3)
		for _, v := range []*float64{&r.PassQPS, &r.BlockQPS, &r.SlowRatio, &r.ErrorRatio} {
			*v = float64(rng.IntN(4))
			if rng.IntN(5) == 0 {
				*v = math.NaN()
			}
		}
	}
	sign := func(c int) int { return min(max(c, -1), 1) }
	for i := range rows {
		ki := newSeverityKey(&rows[i])
		for j := range rows {
			kj := newSeverityKey(&rows[j])
			if got, want := sign(ki.compare(&kj)), sign(compareRows(&rows[i], &rows[j], sortSeverity)); got != want {
				t.Fatalf("rows %+v and %+v: key order %d, compareRows %d", rows[i], rows[j], got, want)
			}
			for _, k := range []sortKey{sortPass, sortBlock, sortSlow, sortError} {
				got := sign(cmp.Compare(numericKey(&rows[j], k), numericKey(&rows[i], k)))
				if want := sign(compareRows(&rows[i], &rows[j], k)); got != want {
					t.Fatalf("%s: rows %+v and %+v: key order %d, compareRows %d", k, rows[i], rows[j], got, want)
				}
			}
		}
	}
}
