package collector

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// TestImpersonationRefused: once a target announced an instance, another
// target's messages naming it (a hello moving it to another app, buckets,
// a bye) are rejected as impersonation and change nothing; once the
// instance is gone, a new target may announce it.
func TestImpersonationRefused(t *testing.T) {
	vc := core.NewVirtualClock(time.UnixMilli(t0ms))
	c := New(Options{Clock: vc})
	a, evil := c.Bound("gw-1:8720"), c.Bound("evil:8720")
	hello := func(app string) *wire.Hello {
		return &wire.Hello{Header: wire.Header{Ts: t0ms, Instance: "gw-1"}, App: app, StartedAt: t0ms, BucketMs: 500}
	}
	bucket := func(pass int64, start int64) *wire.Buckets {
		return &wire.Buckets{Header: wire.Header{Ts: start + 500, Instance: "gw-1"}, BucketMs: 500,
			Items: []wire.BucketItem{{Resource: "r", Start: start, Metrics: core.Metrics{Pass: pass}}}}
	}
	if !a.Ingest("gw-1:8720", hello("gateway")) || !a.Ingest("gw-1:8720", bucket(5, t0ms)) {
		t.Fatal("the owner was refused")
	}
	for _, m := range []wire.Message{hello("evil"), bucket(1_000_000, t0ms+500),
		&wire.Bye{Header: wire.Header{Ts: t0ms, Instance: "gw-1"}}} {
		if evil.Ingest("evil:8720", m) {
			t.Fatalf("%s from another target accepted", m.Kind())
		}
	}
	s := c.Publish()
	if tm, _ := c.Totals("gw-1", "r"); tm.Pass != 5 || s.Instances != 1 || s.Rows[0].App != "gateway" {
		t.Fatalf("impersonation changed the instance: pass %d, %+v", tm.Pass, s.Rows)
	}
	rc := map[string]int64{}
	for _, r := range s.Rejects {
		rc[r.Reason] = r.Count
	}
	if rc[ReasonImpersonation] != 3 {
		t.Fatalf("rejects %v", s.Rejects)
	}
	// Gone (silent past the stale period), it may come back elsewhere.
	vc.Set(time.UnixMilli(t0ms + 60_000))
	c.Publish()
	if !evil.Ingest("evil:8720", hello("gateway")) {
		t.Fatal("a gone instance could not be announced anew")
	}
}

// TestTimePoisonAndAbsurdCounts: a live message stamped far from the
// collector's clock is rejected (reason clock_skew) and leaves the time
// range alone; counts near MaxInt64 saturate instead of wrapping.
func TestTimePoisonAndAbsurdCounts(t *testing.T) {
	vc := core.NewVirtualClock(time.UnixMilli(t0ms))
	c := New(Options{Clock: vc, MaxClockSkew: DefaultMaxClockSkew})
	year9999 := int64(253402300799000)
	if c.Bound("t").Ingest("t", &wire.Hello{Header: wire.Header{Ts: year9999, Instance: "x"}, App: "a"}) {
		t.Fatal("a year-9999 hello was accepted")
	}
	for i := range 3 {
		start := t0ms + int64(i)*500
		c.Ingest("t", &wire.Buckets{Header: wire.Header{Ts: start + 500, Instance: "x"}, BucketMs: 500,
			Items: []wire.BucketItem{{Resource: "r", Start: start, Metrics: core.Metrics{Pass: math.MaxInt64 / 2}}}})
	}
	s := c.Publish()
	if got := s.Totals[0].Pass; got != math.MaxInt64 {
		t.Fatalf("pass total %d, want it saturated at MaxInt64", got)
	}
	rc := map[string]int64{}
	for _, r := range s.Rejects {
		rc[r.Reason] = r.Count
	}
	if rc[ReasonClockSkew] != 1 {
		t.Fatalf("rejects %v", s.Rejects)
	}
	if from, to := c.Engine().Counts().From, c.Engine().Counts().To; from < t0ms || to > t0ms+2000 {
		t.Fatalf("time range %d..%d poisoned", from, to)
	}
}

// TestBucketStartsOutsideTheSkewWindowRefused: a bucket item starting at 0
// or in the year 9999 is refused as clock_skew, from a file (checked
// against its message's ts) as from a dialed target (against the
// collector's clock too), and leaves the time range alone; items within the
// window are taken.
func TestBucketStartsOutsideTheSkewWindowRefused(t *testing.T) {
	vc := core.NewVirtualClock(time.UnixMilli(t0ms))
	c := New(Options{Clock: vc, MaxClockSkew: DefaultMaxClockSkew})
	day := DefaultMaxClockSkew.Milliseconds()
	bucket := func(ts int64, starts ...int64) *wire.Buckets {
		m := &wire.Buckets{Header: wire.Header{Ts: ts, Instance: "x"}, BucketMs: 500}
		for _, s := range starts {
			m.Items = append(m.Items, wire.BucketItem{Resource: "r", Start: s, Metrics: core.Metrics{Pass: 1}})
		}
		return m
	}
	file, dialed := c, c.Bound("x:8719")
	year9999 := int64(wire.MaxTimeMs - wire.MaxTimeMs%500)
	for _, tc := range []struct {
		name string
		sink interface {
			Ingest(string, wire.Message) bool
		}
		m    *wire.Buckets
		want bool
	}{
		// A series' dedupe tells buckets apart within a span: the oldest first.
		{"file, start a day before ts", file, bucket(t0ms+1000, t0ms+1000-day), true},
		{"file, in the window", file, bucket(t0ms+500, t0ms), true},
		{"file, start 0", file, bucket(t0ms+1000, t0ms+500, 0), false},
		{"file, start in the year 9999", file, bucket(t0ms+1000, year9999), false},
		{"file, start a day and a bucket before ts", file, bucket(t0ms+1000, t0ms+500-day), false},
		{"dialed, in the window", dialed, bucket(t0ms+1000, t0ms+500), true},
		// ts 20 h behind the collector, its start a day before ts: 44 h
		// behind the collector's clock.
		{"dialed, start within a day of ts, not of the clock", dialed, bucket(t0ms-20*3_600_000, t0ms-44*3_600_000), false},
		{"dialed, start 0", dialed, bucket(t0ms+1000, 0), false},
	} {
		if got := tc.sink.Ingest("t", tc.m); got != tc.want {
			t.Errorf("%s: accepted %v, want %v", tc.name, got, tc.want)
		}
	}
	s := c.Publish()
	rc := map[string]int64{}
	for _, r := range s.Rejects {
		rc[r.Reason] = r.Count
	}
	if rc[ReasonClockSkew] != 5 || s.Rejected != 5 {
		t.Fatalf("rejects %+v, %d in all; want 5 clock_skew", s.Rejects, s.Rejected)
	}
	// Nothing of a refused message was taken: t0ms-day+1000 is the
	// earliest start accepted, t0ms+1000 the latest end.
	if tm, _ := c.Totals("x", "r"); tm.Pass != 3 {
		t.Fatalf("pass %d, want the 3 items accepted", tm.Pass)
	}
	if seen := s.Seen; seen.From != t0ms+1000-day || seen.To != t0ms+1000 {
		t.Fatalf("time range %d..%d, want %d..%d", seen.From, seen.To, t0ms+1000-day, t0ms+1000)
	}
}

// TestMemoryBudgetHolds: an instance renaming its app on every message, a
// new rule id on every transition, and resources past the budget are all
// turned away and counted by reason, and the budget's estimate never
// passes MaxMemory; what left is pruned after the retention and its bytes
// given back.
func TestMemoryBudgetHolds(t *testing.T) {
	vc := core.NewVirtualClock(time.UnixMilli(t0ms))
	moves := 0 // the app moves OnReject heard of
	c := New(Options{Clock: vc, MaxMemory: 4 << 20, Retention: time.Minute, OnReject: func(_ string, err error) {
		if strings.Contains(err.Error(), "moved to another app") {
			moves++
		}
	}})
	for i := range 200 {
		c.Ingest("t", &wire.Hello{Header: wire.Header{Ts: t0ms, Instance: "flap"}, App: fmt.Sprint("app-", i), BucketMs: 500})
		c.Ingest("t", &wire.Buckets{Header: wire.Header{Ts: t0ms + 500, Instance: "flap"}, BucketMs: 500,
			Items: []wire.BucketItem{{Resource: "r", Start: t0ms, Metrics: core.Metrics{Pass: 1}}}})
		c.Ingest("t", &wire.State{Header: wire.Header{Ts: t0ms, Instance: "flap"}, Resource: "r", RuleID: fmt.Sprint("id-", i),
			From: core.Closed, To: core.Open, Threshold: 0.5})
	}
	for i := range 2000 {
		c.Ingest("t", &wire.Buckets{Header: wire.Header{Ts: t0ms + 500, Instance: "wide"}, BucketMs: 500,
			Items: []wire.BucketItem{{Resource: fmt.Sprint("res-", i), Start: t0ms, Metrics: core.Metrics{Pass: 1}}}})
	}
	s := c.Publish()
	if s.MemoryUsed > s.MemoryBudget || s.MemoryBudget != 4<<20 {
		t.Fatalf("memory %d of %d", s.MemoryUsed, s.MemoryBudget)
	}
	got := map[string]int64{}
	for _, r := range append(s.Overflow, s.Rejects...) {
		got[r.Reason] += r.Count
	}
	if got[ReasonAppFlap] < 190 || got[ReasonMaxRuleIDs] == 0 || got[ReasonMaxMemory] == 0 {
		t.Fatalf("refusals %v", got)
	}
	if int64(moves) != got[ReasonAppFlap] {
		t.Fatalf("OnReject heard of %d app moves refused, the counters say %d", moves, got[ReasonAppFlap])
	}
	if n := len(s.Rows); n > 1000 {
		t.Fatalf("%d rows held", n)
	}
	// Everyone leaves; after the retention nothing is held.
	vc.Set(time.UnixMilli(t0ms + 3*60_000))
	c.Publish()
	if s := c.Publish(); s.MemoryUsed != 0 || len(s.Totals) != 0 {
		t.Fatalf("after the retention: %d bytes, %d app series held", s.MemoryUsed, len(s.Totals))
	}
}

// TestRulesNamingNewResourcesAreBounded: an instance whose every rules
// message names thousands of new resources (so triage would keep each) is
// held by the memory budget: the rules past it are refused and counted,
// and the resources triage keeps stop growing.
func TestRulesNamingNewResourcesAreBounded(t *testing.T) {
	c := New(Options{Clock: core.NewVirtualClock(time.UnixMilli(t0ms)), MaxMemory: 8 << 20})
	c.Ingest("t", &wire.Hello{Header: wire.Header{Ts: t0ms, Instance: "x"}, App: "a"})
	for k := range 50 {
		var rules []core.BreakerRule
		for i := range 2000 {
			rules = append(rules, core.BreakerRule{Resource: fmt.Sprintf("r-%d-%d", k, i), Strategy: core.ErrorCount,
				Threshold: 5, StatIntervalMs: 1000, RetryTimeoutMs: 1000})
		}
		c.Ingest("t", &wire.Rules{Header: wire.Header{Ts: t0ms, Instance: "x"}, Version: fmt.Sprint(k), Breakers: rules})
	}
	s := c.Publish()
	if s.MemoryUsed > 8<<20 {
		t.Fatalf("memory %d over the budget", s.MemoryUsed)
	}
	refused := int64(0)
	for _, o := range s.Overflow {
		if o.Reason == ReasonMaxMemory {
			refused = o.Count
		}
	}
	if refused == 0 {
		t.Fatalf("nothing refused: %v", s.Overflow)
	}
	if n := c.Engine().Counts().Resources; n > (8<<20)/ruleResourceBytes {
		t.Fatalf("triage keeps %d resources", n)
	}
	// Once the instance has gone for longer than the retention, its app's
	// rules' resources give their bytes back with it.
	c.Clock().(*core.VirtualClock).Set(time.UnixMilli(t0ms + 20*60_000))
	c.Publish()
	if s := c.Publish(); s.MemoryUsed != 0 {
		t.Fatalf("%d bytes still charged after the retention", s.MemoryUsed)
	}
}
