package collector

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/collector/feed"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// After a Reset (a replay seeking backwards), what snapshots keep between
// them starts over with the store: the instances counted, the clocks off,
// the breakers listed and the memory shares are those of what came since,
// as a collector that saw only that shows them; and a connection's sink,
// which keeps its owner's share, charges the share the collector has now.
func TestResetStartsTheKeptCountsOver(t *testing.T) {
	feedFleet := func(c *Collector, sinks []feed.BoundSink, n int, skew int64) {
		for i := range n {
			name := fmt.Sprintf("gw-%d", i)
			sinks[i].Hello("t", &wire.Hello{Header: wire.Header{Ts: t0ms + skew, Instance: name}, App: "gw", StartedAt: t0ms, BucketMs: 500}, feed.Origin{})
			sinks[i].Ingest("t", &wire.Rules{Header: wire.Header{Ts: t0ms + skew, Instance: name}, Version: "v1", Breakers: []core.BreakerRule{{
				Resource: "db", Strategy: core.ErrorRatio, Threshold: 0.5, MinRequestAmount: 5, StatIntervalMs: 1000, RetryTimeoutMs: 1000}}})
			sinks[i].Ingest("t", &wire.Buckets{Header: wire.Header{Ts: t0ms + 500 + skew, Instance: name}, BucketMs: 500,
				Items: []wire.BucketItem{{Resource: "db", Start: t0ms + skew, Metrics: core.Metrics{Pass: 3, Complete: 3}}}})
		}
	}
	newSinks := func(c *Collector, n int) []feed.BoundSink {
		var out []feed.BoundSink
		for i := range n {
			out = append(out, c.Bound(fmt.Sprintf("t%d", i)))
		}
		return out
	}
	clock := func() *core.VirtualClock { return core.NewVirtualClock(time.UnixMilli(t0ms + 1000)) }
	c := New(Options{Clock: clock()})
	sinks := newSinks(c, 6)
	feedFleet(c, sinks, 6, 3000) // every clock 3 s ahead
	if s := c.Publish(); s.Instances != 6 || len(s.Breakers) != 6 {
		t.Fatalf("before the reset: %d instances, %d breakers", s.Instances, len(s.Breakers))
	}
	c.Reset()
	feedFleet(c, sinks, 2, 0)
	got := c.Publish()
	fresh := New(Options{Clock: clock()})
	feedFleet(fresh, newSinks(fresh, 2), 2, 0)
	want := fresh.Publish()
	if got.Instances != want.Instances || !reflect.DeepEqual(got.Breakers, want.Breakers) ||
		!reflect.DeepEqual(clockWarningsOf(got), clockWarningsOf(want)) || !reflect.DeepEqual(got.Rows, want.Rows) {
		t.Fatalf("after the reset: %d instances, breakers %v, clocks %v; a fresh collector: %d, %v, %v",
			got.Instances, got.Breakers, clockWarningsOf(got), want.Instances, want.Breakers, clockWarningsOf(want))
	}
	if !reflect.DeepEqual(got.MemoryShares, want.MemoryShares) || len(got.MemoryShares) != 2 || got.MemoryShares[0].Used == 0 {
		t.Fatalf("after the reset, shares %+v; a fresh collector's %+v", got.MemoryShares, want.MemoryShares)
	}
}
