package whatif

import (
	"encoding/binary"
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
)

// FuzzCompare: whatever a peer claims in its buckets (negative or huge
// counts, histograms that disagree with them, buckets out of order,
// spells and restarts anywhere), a replay neither panics nor runs away,
// and what it reports holds together.
func FuzzCompare(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20})
	f.Add(make([]byte, 200))
	f.Fuzz(func(t *testing.T, data []byte) {
		next := func() int64 {
			if len(data) < 2 {
				return 0
			}
			v := int64(int16(binary.LittleEndian.Uint16(data)))
			data = data[2:]
			return v
		}
		tr := &Trace{Instance: "f", SlowBoundMs: next() & 1023}
		for i := range 40 {
			if len(data) < 2 {
				break
			}
			b := Bucket{Start: int64(i)*500 + next()%700, Ms: next() % 2000, Pass: next() % 500, Block: next() % 500, Complete: next() % 700,
				Error: next() % 500, Slow: next() % 500, RtMin: next(), RtMax: next() * 7, HasHist: next()%2 == 0, SlowBoundMs: next() % 600}
			for k := range b.Hist {
				b.Hist[k] = next() % 50
			}
			tr.Buckets = append(tr.Buckets, b)
		}
		for range 3 {
			if from := next() * 100; from >= 0 {
				tr.Spells = append(tr.Spells, Span{From: from, To: from + next()*50})
			}
		}
		if r := next(); r > 0 {
			tr.Restarts = []int64{r * 10}
		}
		rule := core.BreakerRule{Resource: "r", Strategy: core.Strategy(uint16(next()) % 3), MaxAllowedRtMs: uint64(next() & 1023),
			Threshold: 0.5, MinRequestAmount: uint64(next() & 63), StatIntervalMs: uint32(1 + next()&4095),
			StatSlidingWindowBucketCount: uint32(next() & 7), RetryTimeoutMs: uint32(1 + next()&16383)}
		if rule.Strategy == core.ErrorCount {
			rule.Threshold = 3
		}
		prop := rule
		prop.MinRequestAmount, prop.RetryTimeoutMs = 20, 30_000
		res, err := Compare([]Case{{Trace: tr, Current: rule, Proposed: prop}})
		if err != nil {
			return // an invalid rule, or too many calls: said, not replayed
		}
		for _, m := range []Metrics{res.Current, res.Proposed} {
			if m.PassedDuringOutage[0] > m.PassedDuringOutage[1] || m.BlockedHealthy[0] > m.BlockedHealthy[1] ||
				m.TripsRange[0] > m.TripsRange[1] || m.OutagesCaught > res.Outages || int64(len(m.DetectMs)) != m.OutagesCaught ||
				m.Trips < 0 || m.Probes < 0 {
				t.Fatalf("metrics %+v of %d outages", m, res.Outages)
			}
		}
		if res.Calls > int64(len(tr.Buckets))*MaxCallsPerBucket {
			t.Fatalf("%d calls from %d buckets", res.Calls, len(tr.Buckets))
		}
	})
}
