package collector

import (
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/collector/feed"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// TestActivityCountsSpellsAndBlocksByCause: a resource's breaker spells
// are summed from each transition into OPEN or HALF_OPEN to the next, a
// spell still running to its instance's latest message, one cut by a
// restart to the old process's last data; its blocks go to the breakers
// where its only rules are breakers or while a breaker was not CLOSED, to
// flow control where its only rules are flow rules or while its breakers
// were all CLOSED, and to neither where its rules were never read.
func TestActivityCountsSpellsAndBlocksByCause(t *testing.T) {
	clock := core.NewVirtualClock(time.UnixMilli(t0ms))
	c := New(Options{Clock: clock})
	breaker := core.BreakerRule{Resource: "both", Strategy: core.ErrorRatio, Threshold: 0.5, RetryTimeoutMs: 5000,
		MinRequestAmount: 20, StatIntervalMs: 1000}
	only := breaker
	only.Resource = "breaker"
	c.Ingest("t", &wire.Hello{Header: wire.Header{Ts: t0ms, Instance: "x-1"}, App: "x", StartedAt: t0ms - 1000, BucketMs: 500})
	c.Ingest("t", &wire.Hello{Header: wire.Header{Ts: t0ms, Instance: "y-1"}, App: "y", BucketMs: 500})
	c.Ingest("t", &wire.Rules{Header: wire.Header{Ts: t0ms, Instance: "x-1"}, Version: "1",
		Breakers: []core.BreakerRule{breaker, only},
		Flows:    []core.FlowRule{{Resource: "both", Threshold: 10}, {Resource: "flow", Threshold: 10}}})
	block := func(in string, start, n int64, resources ...string) {
		var items []wire.BucketItem
		for _, r := range resources {
			items = append(items, wire.BucketItem{Resource: r, Start: start, Metrics: core.Metrics{Pass: 1, Block: n}})
		}
		c.Ingest("t", &wire.Buckets{Header: wire.Header{Ts: start + 500, Instance: in}, BucketMs: 500, Items: items})
	}
	state := func(res string, at int64, from, to core.State) {
		c.Ingest("t", &wire.State{Header: wire.Header{Ts: at, Instance: "x-1"}, Resource: res, From: from, To: to})
	}
	block("x-1", t0ms, 3, "both", "breaker", "flow") // all CLOSED
	state("both", t0ms+600, core.Closed, core.Open)
	block("x-1", t0ms+500, 5, "both") // tripped in it
	block("x-1", t0ms+1000, 7, "both")
	state("both", t0ms+2000, core.Open, core.HalfOpen)
	state("both", t0ms+2100, core.HalfOpen, core.Closed)
	block("x-1", t0ms+2000, 11, "both") // closed in it: the breaker's
	block("x-1", t0ms+2500, 13, "both") // CLOSED all through
	state("breaker", t0ms+3000, core.Closed, core.Open)
	block("x-1", t0ms+3000, 17, "breaker", "flow")
	block("y-1", t0ms+3000, 19, "flow")                      // y's rules never read
	c.Ingest("t", bucketsAt("x-1", t0ms+4000, t0ms+3500, 1)) // x-1's latest message: data to +4000
	act := func() map[string]ResourceActivity {
		out := map[string]ResourceActivity{}
		for _, a := range c.Activity() {
			out[a.App+"/"+a.Resource] = a
		}
		return out
	}
	got := act()
	for name, w := range map[string]ResourceActivity{
		"x/both":    {Trips: 1, Closes: 1, OpenMs: 1400, HalfOpenMs: 100, Block: 39, BreakerBlock: 5 + 7 + 11, FlowBlock: 3 + 13},
		"x/breaker": {Trips: 1, OpenMs: 1000, Block: 20, BreakerBlock: 20},
		"x/flow":    {Block: 20, FlowBlock: 20},
		"y/flow":    {Block: 19},
	} {
		g := got[name]
		g.App, g.Resource = "", ""
		if g != w {
			t.Errorf("%s: %+v, want %+v", name, g, w)
		}
	}
	// A restart at +6000 ends the OPEN spell of "breaker" at the old
	// process's last data (+4000).
	c.Ingest("t", &wire.Hello{Header: wire.Header{Ts: t0ms + 6000, Instance: "x-1"}, App: "x", StartedAt: t0ms + 6000, BucketMs: 500})
	c.Ingest("t", bucketsAt("x-1", t0ms+9000, t0ms+8500, 1))
	if g := act()["x/breaker"]; g.OpenMs != 1000 || g.TimesPartial {
		t.Errorf("after a restart: %+v, want OPEN 1000 ms", g)
	}
}

// On an instance whose source cannot report breaker states (Java
// Sentinel, a metric log, Prometheus), blocks of a resource that breakers
// and flow rules both guard go to neither: no transition says its breaker
// was CLOSED. Those of a resource only flow rules guard are flow
// control's, those of one only breakers guard the breakers'.
func TestActivityBlocksUnattributedWhereStatesUnknown(t *testing.T) {
	c := New(Options{Clock: core.NewVirtualClock(time.UnixMilli(t0ms))})
	breaker := core.BreakerRule{Resource: "both", Strategy: core.ErrorRatio, Threshold: 0.5, RetryTimeoutMs: 5000,
		MinRequestAmount: 20, StatIntervalMs: 1000}
	only := breaker
	only.Resource = "breaker"
	if !c.Hello("java", &wire.Hello{Header: wire.Header{Ts: t0ms, Instance: "j-1"}, App: "j", SDK: "java-sentinel/1.8.9", BucketMs: 1000},
		feed.Origin{Polled: true, StatesUnknown: true}) {
		t.Fatal("hello refused")
	}
	c.Ingest("java", &wire.Rules{Header: wire.Header{Ts: t0ms, Instance: "j-1"}, Version: "1",
		Breakers: []core.BreakerRule{breaker, only},
		Flows:    []core.FlowRule{{Resource: "both", Threshold: 10}, {Resource: "flow", Threshold: 10}}})
	var items []wire.BucketItem
	for _, r := range []string{"both", "breaker", "flow"} {
		items = append(items, wire.BucketItem{Resource: r, Start: t0ms, Metrics: core.Metrics{Pass: 30, Block: 4}})
	}
	c.Ingest("java", &wire.Buckets{Header: wire.Header{Ts: t0ms + 1000, Instance: "j-1"}, BucketMs: 1000, Items: items})
	got := map[string]ResourceActivity{}
	for _, a := range c.Activity() {
		got[a.Resource] = a
	}
	for res, w := range map[string][2]int64{"both": {0, 0}, "breaker": {4, 0}, "flow": {0, 4}} {
		if g := got[res]; g.Block != 4 || g.BreakerBlock != w[0] || g.FlowBlock != w[1] {
			t.Errorf("%s: blocked %d, by breakers %d, by flow %d; want 4, %d, %d", res, g.Block, g.BreakerBlock, g.FlowBlock, w[0], w[1])
		}
	}
}
