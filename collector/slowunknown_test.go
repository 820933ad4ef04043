package collector

import (
	"math"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/collector/feed"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// slowFeed feeds one instance of app "svc" under origin o: seconds of
// buckets with slow calls counted, then a bye.
func slowFeed(t *testing.T, o feed.Origin) (*Collector, *core.VirtualClock, int64) {
	t.Helper()
	t0 := int64(1_796_000_000_000)
	clock := core.NewVirtualClock(time.UnixMilli(t0))
	c := New(Options{Clock: clock})
	h := &wire.Hello{Header: wire.Header{Ts: t0, Instance: "a"}, App: "svc", SDK: "x", BucketMs: 1000}
	if !c.Hello("src", h, o) {
		t.Fatal("hello refused")
	}
	for s := int64(0); s < 5; s++ {
		start := t0 + s*1000
		clock.Set(time.UnixMilli(start + 1500))
		m := &wire.Buckets{Header: wire.Header{Ts: start + 1000, Instance: "a"}, BucketMs: 1000,
			Items: []wire.BucketItem{{Resource: "r", Start: start, Metrics: core.Metrics{Pass: 10, Complete: 10, Slow: 4, RtSum: 100}}}}
		if !c.Ingest("src", m) {
			t.Fatalf("second %d refused", s)
		}
	}
	return c, clock, t0
}

func slowRow(t *testing.T, c *Collector) ResourceRow {
	t.Helper()
	for _, r := range c.Publish().Rows {
		if r.Resource == "r" {
			return r
		}
	}
	t.Fatal("no row for r")
	return ResourceRow{}
}

// TestSlowUnknownFollowsSlowCounts: SLOW% is unknown exactly when the
// source counts no slow calls, whether its instances are live or gone; a
// source with slow counts but no breaker states shows its slow ratio.
func TestSlowUnknownFollowsSlowCounts(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    feed.Origin
	}{
		{"states unknown, slow counted", feed.Origin{Polled: true, StatesUnknown: true}},
		{"slow not counted", feed.Origin{Polled: true, StatesUnknown: true, SlowUnknown: true}},
		{"agent", feed.Origin{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, clock, t0 := slowFeed(t, tc.o)
			check := func(when string) {
				r := slowRow(t, c)
				if r.SlowUnknown != tc.o.SlowUnknown {
					t.Errorf("%s: row SlowUnknown %v, want %v", when, r.SlowUnknown, tc.o.SlowUnknown)
				}
				if !tc.o.SlowUnknown && math.Abs(r.SlowRatio-0.4) > 1e-9 {
					t.Errorf("%s: row SlowRatio %v, want 0.4", when, r.SlowRatio)
				}
				d := c.Detail("svc", "r", t0, t0+5000)
				for i, v := range d.SlowRatio {
					if math.IsNaN(v) != tc.o.SlowUnknown {
						t.Errorf("%s: detail slow ratio %d is %v, unknown want %v", when, i, v, tc.o.SlowUnknown)
						break
					}
				}
			}
			check("live")
			clock.Set(time.UnixMilli(t0 + 6000))
			if !c.Ingest("src", &wire.Bye{Header: wire.Header{Ts: t0 + 6000, Instance: "a"}}) {
				t.Fatal("bye refused")
			}
			check("gone")
		})
	}
}
