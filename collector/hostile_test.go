package collector

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// TestSameNameFromTwoTargetsIsTwoInstances: an instance is its target and
// its name. A second target announcing a name the first announced gets an
// instance of its own, NAME@TARGET, with a conflict notice; neither's
// messages (a hello moving it to another app, buckets, a bye) reach the
// other's, and neither is refused. A name squatted on purpose
// (NAME@TARGET announced by a third target) moves it to NAME@TARGET#2.
func TestSameNameFromTwoTargetsIsTwoInstances(t *testing.T) {
	vc := core.NewVirtualClock(time.UnixMilli(t0ms))
	c := New(Options{Clock: vc})
	a, evil := c.Bound("gw-1:8720"), c.Bound("evil:8720")
	hello := func(name, app string) *wire.Hello {
		return &wire.Hello{Header: wire.Header{Ts: t0ms, Instance: name}, App: app, StartedAt: t0ms, BucketMs: 500}
	}
	bucket := func(name string, pass int64, start int64) *wire.Buckets {
		return &wire.Buckets{Header: wire.Header{Ts: start + 500, Instance: name}, BucketMs: 500,
			Items: []wire.BucketItem{{Resource: "r", Start: start, Metrics: core.Metrics{Pass: pass}}}}
	}
	if !a.Ingest("gw-1:8720", hello("gw-1", "gateway")) || !a.Ingest("gw-1:8720", bucket("gw-1", 5, t0ms)) {
		t.Fatal("the first target was refused")
	}
	for _, m := range []wire.Message{hello("gw-1", "evil"), bucket("gw-1", 1_000_000, t0ms+500),
		&wire.Bye{Header: wire.Header{Ts: t0ms + 1000, Instance: "gw-1"}}} {
		if !evil.Ingest("evil:8720", m) {
			t.Fatalf("%s from the second target refused", m.Kind())
		}
	}
	if !a.Ingest("gw-1:8720", bucket("gw-1", 7, t0ms+500)) {
		t.Fatal("the first target's next bucket was refused")
	}
	s := c.Publish()
	first, _ := c.Totals("gw-1", "r")
	second, _ := c.Totals("gw-1@evil:8720", "r")
	if first.Pass != 12 || second.Pass != 1_000_000 {
		t.Fatalf("pass gw-1 %d (want 12), gw-1@evil:8720 %d (want 1000000)", first.Pass, second.Pass)
	}
	apps := map[string]int64{}
	for _, r := range s.Totals {
		apps[r.App] += r.Pass
	}
	if apps["gateway"] != 12 || apps["evil"] != 1_000_000 || s.Instances != 1 {
		t.Fatalf("pass by app %v, %d live instances (the second said bye)", apps, s.Instances)
	}
	for _, r := range s.Rejects {
		t.Errorf("rejected: %+v", r)
	}
	var conflicts []string
	for _, w := range s.Warnings {
		if n, ok := w.(Notice); ok && n.Kind == NoticeInstanceConflict {
			conflicts = append(conflicts, WarningText(n))
		}
	}
	want := `targets gw-1:8720 and evil:8720 both announce instance "gw-1": kept apart as two instances, evil:8720's shown as gw-1@evil:8720 (one may be impersonating the other)`
	if len(conflicts) != 1 || conflicts[0] != want {
		t.Fatalf("conflict warnings %q", conflicts)
	}

	// A third target squats the name the second's would take: the
	// second's new instance takes the next.
	if !c.Bound("squat:1").Ingest("squat:1", hello("web@evil:8720", "web")) {
		t.Fatal("squatter refused")
	}
	if !a.Ingest("gw-1:8720", hello("web", "web")) || !evil.Ingest("evil:8720", bucket("web", 3, t0ms)) {
		t.Fatal("web refused")
	}
	if tm, ok := c.Totals("web@evil:8720#2", "r"); !ok || tm.Pass != 3 {
		t.Fatalf("web@evil:8720#2: %v %v", tm, ok)
	}
	if tm, ok := c.Totals("web@evil:8720", "r"); ok {
		t.Fatalf("the squatted name got the data: %v", tm)
	}
	// Every name taken: refused as impersonation, counted.
	sq := c.Bound("squat:1")
	sq.Ingest("squat:1", hello("db", "db"))
	for k := 1; k <= maxQualified; k++ {
		sq.Ingest("squat:1", hello(qualified("db", "gw-1:8720", k), "db"))
	}
	if a.Ingest("gw-1:8720", hello("db", "db")) {
		t.Fatal("accepted with every name taken")
	}
	rc := map[string]int64{}
	for _, r := range c.Publish().Rejects {
		rc[r.Reason] = r.Count
	}
	if rc[ReasonImpersonation] != 1 {
		t.Fatalf("rejects %v", rc)
	}
}

// TestSquattedNameRestartAndFacts: the second target's instance, kept
// apart, is found again by its restart (a hello with a later start) and
// by the facts its connection tells (data never received), and is
// recorded under its own name.
func TestSquattedNameRestartAndFacts(t *testing.T) {
	vc := core.NewVirtualClock(time.UnixMilli(t0ms))
	var buf bytes.Buffer
	c := New(Options{Clock: vc, Record: wire.NewWriter(&buf)})
	evil, honest := c.Bound("evil:1"), c.Bound("honest:1")
	hello := func(start int64) *wire.Hello {
		return &wire.Hello{Header: wire.Header{Ts: start, Instance: "gw-1"}, App: "gateway", StartedAt: start, BucketMs: 500}
	}
	evil.Ingest("evil:1", hello(t0ms))
	honest.Ingest("honest:1", hello(t0ms))
	honest.Unreceived("gw-1", t0ms-2000, t0ms)
	if !honest.Ingest("honest:1", hello(t0ms+5000)) {
		t.Fatal("the restart was refused")
	}
	s := c.Publish()
	if s.Instances != 2 {
		t.Fatalf("%d instances, want 2", s.Instances)
	}
	if len(s.Unreceived) != 1 || s.Unreceived[0].Instance != "gw-1@honest:1" {
		t.Fatalf("unreceived %+v", s.Unreceived)
	}
	if err := c.opts.Record.Flush(); err != nil {
		t.Fatal(err)
	}
	names := map[string]int{}
	d := wire.NewDecoder(wire.Limits{})
	for _, line := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
		m, err := d.Decode(line)
		if err != nil {
			t.Fatal(err)
		}
		names[m.Head().Instance]++
	}
	if names["gw-1"] != 1 || names["gw-1@honest:1"] != 2 {
		t.Fatalf("recorded %v", names)
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
