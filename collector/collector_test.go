package collector

import (
	"strings"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

const t0ms = int64(1764460800000)

func bucketsAt(instance string, ts, start int64, pass int64) *wire.Buckets {
	return &wire.Buckets{Header: wire.Header{Ts: ts, Instance: instance}, BucketMs: 500,
		Items: []wire.BucketItem{{Resource: "r", Start: start, Metrics: core.Metrics{Pass: pass}}}}
}

func TestClockOffsetWarning(t *testing.T) {
	clock := core.NewVirtualClock(time.UnixMilli(t0ms))
	c := New(Options{Clock: clock, Mode: ModeLive})
	c.Ingest("a", &wire.Hello{Header: wire.Header{Ts: t0ms, Instance: "ok"}, App: "x", BucketMs: 500})
	c.Ingest("b", &wire.Hello{Header: wire.Header{Ts: t0ms - 5000, Instance: "behind"}, App: "x", BucketMs: 500})
	for i := int64(0); i < 4; i++ {
		clock.Advance(500 * time.Millisecond)
		now := clock.UnixMilli()
		c.Ingest("a", bucketsAt("ok", now+20, now-500, 1))        // 20 ms of network
		c.Ingest("b", bucketsAt("behind", now-5000, now-5500, 1)) // a clock 5 s behind
	}
	w := warningTexts(c.Publish().Warnings)
	if len(w) != 1 || !strings.Contains(w[0], "behind") || !strings.Contains(w[0], "5.0 s behind") {
		t.Fatalf("warnings %q", w)
	}
}

func TestRestartKeepsCountsAndResetsStates(t *testing.T) {
	clock := core.NewVirtualClock(time.UnixMilli(t0ms))
	c := New(Options{Clock: clock})
	c.Ingest("a", &wire.Hello{Header: wire.Header{Ts: t0ms, Instance: "i"}, App: "x", StartedAt: t0ms - 1000, BucketMs: 500})
	c.Ingest("a", &wire.Rules{Header: wire.Header{Ts: t0ms, Instance: "i"}, Version: "v",
		Breakers: []core.BreakerRule{{Resource: "r", RetryTimeoutMs: 1000, StatIntervalMs: 1000}}})
	c.Ingest("a", bucketsAt("i", t0ms+500, t0ms, 5))
	c.Ingest("a", &wire.State{Header: wire.Header{Ts: t0ms + 600, Instance: "i"}, Resource: "r", From: core.Closed, To: core.Open})
	// The same bucket again (a reconnect's backlog) is not counted twice.
	c.Ingest("a", bucketsAt("i", t0ms+500, t0ms, 5))
	// A restarted process sends a bucket with the same start: it counts.
	c.Ingest("a", &wire.Hello{Header: wire.Header{Ts: t0ms + 700, Instance: "i"}, App: "x", StartedAt: t0ms + 650, BucketMs: 500})
	c.Ingest("a", bucketsAt("i", t0ms+1000, t0ms+500, 2))
	c.Ingest("a", bucketsAt("i", t0ms+1000, t0ms, 3))
	tpass, _ := c.Totals("i", "r")
	pass := tpass.Pass
	if pass != 10 {
		t.Fatalf("pass %d, want 5 + 2 + 3", pass)
	}
	if _, _, dups := c.Counters(); dups != 1 {
		t.Fatalf("duplicates %d", dups)
	}
	row := c.Publish().Rows[0]
	if row.Breakers.Closed != 1 || row.Breakers.Open != 0 {
		t.Fatalf("after a restart the breaker should read CLOSED: %+v", row.Breakers)
	}
}

func TestLimitsCountOverflow(t *testing.T) {
	c := New(Options{MaxInstances: 2, MaxResourcesPerInstance: 1})
	for _, name := range []string{"a", "b", "c"} {
		c.Ingest("t", &wire.Hello{Header: wire.Header{Ts: t0ms, Instance: name}, BucketMs: 500})
	}
	c.Ingest("t", &wire.Buckets{Header: wire.Header{Ts: t0ms, Instance: "a"}, BucketMs: 500,
		Items: []wire.BucketItem{{Resource: "r1", Start: t0ms - 500, Metrics: core.Metrics{Pass: 1}}, {Resource: "r2", Start: t0ms - 500, Metrics: core.Metrics{Pass: 1}}}})
	s := c.Publish()
	got := map[string]int64{}
	for _, o := range s.Overflow {
		got[o.Reason] = o.Count
	}
	if got["max_instances"] != 1 || got["max_resources"] != 1 || s.Resources != 1 {
		t.Fatalf("overflow %+v resources %d", s.Overflow, s.Resources)
	}
}
