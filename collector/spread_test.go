package collector

import (
	"math"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/collector/feed"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// TestLongBucketsSpreadOverTheirSeconds: a bucket longer than a second (a
// Prometheus step of 15 s) is drawn over the seconds it spans, so that
// the detail's rate is the table's, not the step's count in one second.
func TestLongBucketsSpreadOverTheirSeconds(t *testing.T) {
	clock := core.NewVirtualClock(time.UnixMilli(t0ms))
	c := New(Options{Clock: clock})
	const step = 15_000
	c.Hello("prom", &wire.Hello{Header: wire.Header{Ts: t0ms, Instance: "i"}, App: "app", BucketMs: step}, feed.Origin{Polled: true, StatesUnknown: true})
	for k := int64(0); k < 2; k++ {
		start := t0ms + k*step
		clock.Set(time.UnixMilli(start + step))
		if !c.Ingest("prom", &wire.Buckets{Header: wire.Header{Ts: start + step, Instance: "i"}, BucketMs: step,
			Items: []wire.BucketItem{{Resource: "r", Start: start, Metrics: core.Metrics{Pass: 10, Complete: 10, Error: 4}}}}) {
			t.Fatal("buckets refused")
		}
	}
	snap := c.Publish()
	var row *ResourceRow
	for i := range snap.Rows {
		if snap.Rows[i].Resource == "r" {
			row = &snap.Rows[i]
		}
	}
	if row == nil {
		t.Fatal("no row")
	}
	d := c.Detail("app", "r", t0ms, t0ms+2*step)
	var sum, peak float64
	for _, v := range d.PassQPS {
		sum += v
		peak = max(peak, v)
	}
	// 10 passes in 15 s: at most one a second, 20 over the two steps.
	if peak > 1 || math.Abs(sum-20) > 1e-9 {
		t.Errorf("detail pass/s peaks at %.2f, sums to %.2f; want at most 1 and 20 (table %.2f/s)", peak, sum, row.PassQPS)
	}
	// Whole passes in whole seconds: within one pass of the rate window.
	if math.Abs(row.PassQPS-10.0/15) > 1000/float64(DefaultRateWindow.Milliseconds())+1e-9 {
		t.Errorf("table pass/s %.3f, want %.3f", row.PassQPS, 10.0/15)
	}
	for i, e := range d.ErrorRatio {
		if !math.IsNaN(e) && (e < 0 || e > 1) {
			t.Errorf("error ratio %v at %d: out of [0, 1]", e, i)
		}
	}
}
