package collector

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sentinel-top/sentinel-top/collector/triage"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/fixtures"
	"github.com/sentinel-top/sentinel-top/internal/racetest"
)

// readMessages reads every message of a recording (meta lines left out);
// any line that cannot be read fails the test.
func readMessages(t *testing.T, r io.Reader, name string) []wire.Message {
	t.Helper()
	var out []wire.Message
	rd := wire.NewReader(r, name)
	for {
		m, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := m.(*wire.Meta); !ok {
			out = append(out, wire.Clone(m))
		}
	}
}

// readFile is readMessages of a file.
func readFile(t *testing.T, path string) []wire.Message {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return readMessages(t, f, path)
}

// feedFixture ingests a fixture message by message on a virtual clock and
// calls check every stepMs of fixture time (and at the end).
func feedFixture(t *testing.T, name string, stepMs int64, check func(c *Collector, now int64)) {
	t.Helper()
	f, err := fixtures.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var vc *core.VirtualClock
	var c *Collector
	next := int64(0)
	for _, m := range readMessages(t, f, name) {
		ts := m.Head().Ts
		if c == nil {
			vc = core.NewVirtualClock(time.UnixMilli(ts))
			c = New(Options{Clock: vc, Mode: ModeReplay, Source: name})
			next = ts + stepMs
		}
		for ts >= next {
			vc.Set(time.UnixMilli(next))
			check(c, next)
			next += stepMs
		}
		if ts > vc.UnixMilli() {
			vc.Set(time.UnixMilli(ts))
		}
		c.Ingest(name, m)
	}
	check(c, vc.UnixMilli())
}

// TestDetailDriftMarksAgreeWithFindings replays every fixture and, every
// 5 s, requires the detail's drift marks to be exactly the instances an
// ongoing rule-drift finding puts outside its largest group, and none
// without one (the detail once marked 7 of 8 gateways of recovery-herd as
// drifting, comparing retryTimeoutMs and rule order, while triage rightly
// found no drift).
func TestDetailDriftMarksAgreeWithFindings(t *testing.T) {
	for i, name := range fixtures.Names() {
		if !racetest.Played(i, 5) {
			continue // one goroutine's replays: every fifth fixture under -race, all in .ci/run's run without it
		}
		t.Run(name, func(t *testing.T) {
			checks, marked := 0, 0
			feedFixture(t, name, 5000, func(c *Collector, now int64) {
				s := c.Publish()
				for _, row := range s.Rows {
					want := map[string]bool{}
					for _, f := range s.Findings {
						if x, ok := f.Facts.(*triage.RuleDriftFacts); ok && f.App == row.App && f.Resource == row.Resource &&
							f.Severity == triage.Critical {
							for _, g := range x.Groups[1:] {
								for _, n := range g.Instances {
									want[n] = true
								}
							}
						}
					}
					d := c.Detail(row.App, row.Resource, now-60_000, now)
					for _, id := range d.Instances {
						checks++
						if id.Drift != want[id.Instance] {
							t.Fatalf("at +%ds %s/%s: detail marks %s drift=%v, the findings say %v",
								(now-s.Replay.From)/1000, row.App, row.Resource, id.Instance, id.Drift, want[id.Instance])
						}
						if id.Drift {
							marked++
						}
					}
				}
			})
			if checks == 0 {
				t.Fatal("no instance checked")
			}
			if name == "recovery-herd" && marked != 0 {
				t.Fatalf("recovery-herd: %d drift marks without drift", marked)
			}
			if name == "rule-push-partial" && marked == 0 {
				t.Fatal("rule-push-partial: the drifting gateways are never marked")
			}
		})
	}
}

// scrape gathers the collector's Prometheus metrics as name{labels} -> value.
func scrape(t *testing.T, c *Collector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c.PrometheusCollector())
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			v := m.GetGauge().GetValue() + m.GetCounter().GetValue()
			out[mf.GetName()+"{"+strings.Join(labels, ",")+"}"] = v
		}
	}
	return out
}

// TestSilentInstanceLeavesEveryViewAtOnce: three instances of one app, the
// third with another rule; the third goes silent without a bye. Until the
// stale period has passed it counts everywhere; from the moment it has, it
// is gone from the header, the row, the breaker states, /metrics and the
// detail, and the rule drift it caused is no longer critical (it once
// stayed critical for minutes after the instance left the table).
// driftFleet is app a's instances a-1, a-2 and a-3 on a virtual clock at
// t0ms, stale after 15 s, a-3 with another rule (driftRules).
func driftFleet() (*Collector, *core.VirtualClock, []string) {
	vc := core.NewVirtualClock(time.UnixMilli(t0ms))
	c := New(Options{Clock: vc, StaleAfter: 15 * time.Second})
	names := []string{"a-1", "a-2", "a-3"}
	for _, n := range names {
		c.Ingest("t", &wire.Hello{Header: wire.Header{Ts: t0ms, Instance: n}, App: "a", StartedAt: t0ms, BucketMs: 500})
		c.Ingest("t", driftRules(n, t0ms))
	}
	return c, vc, names
}

// driftRules is the rules message of an instance of driftFleet.
func driftRules(n string, ts int64) *wire.Rules {
	r := core.BreakerRule{Resource: "r", Strategy: core.ErrorRatio, Threshold: 0.5, MinRequestAmount: 20,
		StatIntervalMs: 1000, RetryTimeoutMs: 5000}
	if n == "a-3" {
		r.Threshold = 0.8
	}
	return &wire.Rules{Header: wire.Header{Ts: ts, Instance: n}, Version: fmt.Sprint(n == "a-3"), Breakers: []core.BreakerRule{r}}
}

func TestSilentInstanceLeavesEveryViewAtOnce(t *testing.T) {
	c, vc, names := driftFleet()
	silentFrom := t0ms + 30_000
	for ts := t0ms; ts < t0ms+120_000; ts += 500 {
		vc.Set(time.UnixMilli(ts + 500))
		for _, n := range names {
			if n == "a-3" && ts >= silentFrom {
				continue
			}
			c.Ingest("t", &wire.Buckets{Header: wire.Header{Ts: ts + 500, Instance: n}, BucketMs: 500,
				Items: []wire.BucketItem{{Resource: "r", Start: ts, Metrics: core.Metrics{Pass: 10, Complete: 10}}}})
		}
		now := ts + 500
		s := c.Publish()
		wantLive := 3
		if now-(silentFrom) > 15_000 { // a-3's last message arrived at silentFrom
			wantLive = 2
		}
		m := scrape(t, c)
		d := c.Detail("a", "r", now-60_000, now)
		var driftCrit bool
		for _, f := range s.Findings {
			if f.Kind == triage.KindRuleDrift && f.Severity == triage.Critical {
				driftCrit = true
			}
		}
		gone := 0
		for _, id := range d.Instances {
			if id.Gone {
				gone++
			}
		}
		row := s.Rows[0]
		got := []int{s.Instances, row.Instances, row.Breakers.Total(), len(s.Breakers), int(m["sentinel_top_instances{}"]),
			countPrefix(m, "sentinel_top_breaker_state{") / 3, 3 - gone}
		for i, v := range got {
			if v != wantLive {
				t.Fatalf("at +%d ms: live instances %v (header, row, row breakers, snapshot breakers, /metrics instances, /metrics states, detail), want all %d",
					now-t0ms, got, wantLive)
				_ = i
			}
		}
		if now >= t0ms+10_000 && wantLive == 3 && !driftCrit {
			t.Fatalf("at +%d ms: a-3's other rule is not a critical drift", now-t0ms)
		}
		if wantLive == 2 && driftCrit {
			t.Fatalf("at +%d ms: a-3 left the table, yet its rule drift is still critical", now-t0ms)
		}
	}
}

func countPrefix(m map[string]float64, prefix string) int {
	n := 0
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if strings.HasPrefix(k, prefix) {
			n++
		}
	}
	return n
}

// TestUnknownStatesAreNotClosed: an instance whose source cannot tell
// breaker states (Java Sentinel's transport, a metric log) is counted as
// unknown in its row, has provenance unknown in the snapshot and the
// detail, and exports no state to Prometheus; an inferred transition makes
// it inferred.
func TestUnknownStatesAreNotClosed(t *testing.T) {
	vc := core.NewVirtualClock(time.UnixMilli(t0ms))
	c := New(Options{Clock: vc})
	rule := core.BreakerRule{Resource: "r", Strategy: core.SlowRequestRatio, MaxAllowedRtMs: 100, Threshold: 0.5,
		MinRequestAmount: 5, StatIntervalMs: 1000, RetryTimeoutMs: 10000, Semantics: core.SemanticsJava}
	for _, sdk := range []string{"java-sentinel/1.8.9", "sentinel-metric-log"} {
		name := "j-" + sdk[:4]
		readIngest(c, "t", &wire.Hello{Header: wire.Header{Ts: t0ms, Instance: name}, App: "a", SDK: sdk, BucketMs: 1000})
		c.Ingest("t", &wire.Rules{Header: wire.Header{Ts: t0ms, Instance: name}, Version: "v", Breakers: []core.BreakerRule{rule}})
		c.Ingest("t", &wire.Buckets{Header: wire.Header{Ts: t0ms + 1000, Instance: name}, BucketMs: 1000,
			Items: []wire.BucketItem{{Resource: "r", Start: t0ms, Metrics: core.Metrics{Pass: 5, Complete: 5}}}})
	}
	vc.Set(time.UnixMilli(t0ms + 1000))
	s := c.Publish()
	if len(s.Rows) != 1 || s.Rows[0].Breakers != (StateCounts{Unknown: 2}) {
		t.Fatalf("rows %+v", s.Rows)
	}
	for _, b := range s.Breakers {
		if b.Provenance != ProvenanceUnknown {
			t.Fatalf("breaker %+v", b)
		}
	}
	if n := countPrefix(scrape(t, c), "sentinel_top_breaker_state{"); n != 0 {
		t.Fatalf("%d state series exported for unknown states", n)
	}
	c.Ingest("t", &wire.State{Header: wire.Header{Ts: t0ms + 2000, Instance: "j-java"}, Resource: "r",
		From: core.Closed, To: core.Open, Threshold: 0.5, RetryTimeoutMs: 10000, Inferred: true})
	s = c.Publish()
	if s.Rows[0].Breakers != (StateCounts{Open: 1, Unknown: 1}) {
		t.Fatalf("after an inferred trip: %+v", s.Rows[0].Breakers)
	}
	d := c.Detail("a", "r", t0ms, t0ms+3000)
	got := map[string]Provenance{}
	for _, id := range d.Instances {
		got[id.Instance] = id.Provenance
	}
	if got["j-java"] != ProvenanceInferred || got["j-sent"] != ProvenanceUnknown {
		t.Fatalf("detail provenance %v", got)
	}
	m := scrape(t, c)
	if m["sentinel_top_breaker_state{app=a,instance=j-java,provenance=inferred,resource=r,state=OPEN}"] != 1 {
		t.Fatalf("the inferred state is not exported as such: %v", m)
	}
}

// TestReturnedInstanceCountsAgain: an instance the liveness rule found gone
// is back for triage with its next message, whichever kind, at the same
// moment it is back in the table: its other rule is a drift again.
func TestReturnedInstanceCountsAgain(t *testing.T) {
	for _, back := range []string{"buckets", "rules", "state"} {
		t.Run(back, func(t *testing.T) {
			c, vc, names := driftFleet()
			drift := func() bool {
				for _, f := range c.Publish().Findings {
					if f.Kind == triage.KindRuleDrift && f.Severity == triage.Critical {
						return true
					}
				}
				return false
			}
			silent, returns := t0ms+10_000, t0ms+60_000
			for ts := t0ms; ts < t0ms+90_000; ts += 500 {
				vc.Set(time.UnixMilli(ts + 500))
				for _, n := range names {
					switch {
					case n == "a-3" && ts >= silent && ts < returns:
						continue
					case n == "a-3" && ts == returns && back == "rules":
						c.Ingest("t", driftRules(n, ts+500))
						continue
					case n == "a-3" && ts == returns && back == "state":
						c.Ingest("t", &wire.State{Header: wire.Header{Ts: ts + 500, Instance: n}, Resource: "r",
							Strategy: core.ErrorRatio, From: core.Closed, To: core.Open})
						continue
					}
					c.Ingest("t", &wire.Buckets{Header: wire.Header{Ts: ts + 500, Instance: n}, BucketMs: 500,
						Items: []wire.BucketItem{{Resource: "r", Start: ts, Metrics: core.Metrics{Pass: 10, Complete: 10}}}})
				}
				now := ts + 500
				switch got := drift(); {
				case now == returns-1000 && got:
					t.Fatalf("at +%d ms: a-3 is gone, yet its drift is critical", now-t0ms)
				case now == returns+10_000 && !got:
					t.Fatalf("at +%d ms: a-3 came back by %s 10 s ago, its drift is not critical", now-t0ms, back)
				}
			}
		})
	}
}

// TestDetailShowsTheRulesDriftCompares: two instances sent the same rules in
// another order and with another retryTimeoutMs; the detail shows both in
// one order, as rule drift sees them.
func TestDetailShowsTheRulesDriftCompares(t *testing.T) {
	c, _, _ := driftFleet()
	slow := core.BreakerRule{Resource: "r", Strategy: core.SlowRequestRatio, Threshold: 0.5, MaxAllowedRtMs: 200,
		MinRequestAmount: 20, StatIntervalMs: 1000, RetryTimeoutMs: 5000}
	errs := driftRules("a-1", t0ms).Breakers[0]
	for i, rules := range [][]core.BreakerRule{{slow, errs}, {errs, slow}} {
		rules = slices.Clone(rules)
		rules[0].RetryTimeoutMs += uint32(i) * 1000
		n := fmt.Sprintf("a-%d", i+1)
		c.Ingest("t", &wire.Rules{Header: wire.Header{Ts: t0ms, Instance: n}, Version: "v", Breakers: rules})
		c.Ingest("t", &wire.Buckets{Header: wire.Header{Ts: t0ms + 500, Instance: n}, BucketMs: 500,
			Items: []wire.BucketItem{{Resource: "r", Start: t0ms, Metrics: core.Metrics{Pass: 1}}}})
	}
	d := c.Detail("a", "r", t0ms, t0ms+1000)
	if len(d.Instances) != 2 {
		t.Fatalf("detail instances %+v", d.Instances)
	}
	a, b := d.Instances[0].Breakers, d.Instances[1].Breakers
	if len(a) != 2 || len(b) != 2 || a[0].Strategy != b[0].Strategy || a[1].Strategy != b[1].Strategy {
		t.Errorf("the same rules shown in two orders: %+v and %+v", a, b)
	}
}

// An instance pruned before any snapshot saw it stop being listed leaves
// the app count with it: the header's apps are the apps of the listed
// instances, whenever snapshots are taken.
func TestPrunedInstanceLeavesTheAppCount(t *testing.T) {
	vc := core.NewVirtualClock(time.UnixMilli(t0ms))
	c := New(Options{Clock: vc, StaleAfter: 15 * time.Second, Retention: time.Minute})
	hello := func(name, app string) {
		now := vc.Now().UnixMilli()
		c.Ingest(name, &wire.Hello{Header: wire.Header{Ts: now, Instance: name}, App: app, StartedAt: now, BucketMs: 500})
	}
	hello("gw-1", "gateway")
	hello("order-1", "order")
	if s := c.Publish(); s.Apps != 2 || s.Instances != 2 {
		t.Fatalf("apps %d, instances %d, want 2 and 2", s.Apps, s.Instances)
	}
	vc.Set(time.UnixMilli(t0ms + 120_000)) // silent past the retention, no snapshot between
	hello("order-1", "order")
	if s := c.Publish(); s.Apps != 1 || s.Instances != 1 {
		t.Fatalf("after gw-1 was pruned: apps %d, instances %d, want 1 and 1", s.Apps, s.Instances)
	}
	hello("gw-2", "gateway")
	if s := c.Publish(); s.Apps != 2 {
		t.Fatalf("a new gateway: apps %d, want 2", s.Apps)
	}
}

// TestSweepLooksWhenOneMayBeStale: snapshots skip the look at each
// instance until one may have been silent for StaleAfter, and the look
// for those to let go until one may have been gone for Retention; whatever
// the arrivals, byes and clock (which may jump back, as a wall clock
// does), every instance is gone exactly when and since a look at each at
// every snapshot finds it, and let go as that look would.
func TestSweepLooksWhenOneMayBeStale(t *testing.T) {
	const stale, keep = 15_000, 40_000
	for seed := range uint64(30) {
		rng := rand.New(rand.NewPCG(seed, 3))
		vc := core.NewVirtualClock(time.UnixMilli(t0ms))
		c := New(Options{Clock: vc, StaleAfter: stale * time.Millisecond, Retention: keep * time.Millisecond})
		type model struct {
			last, goneAt int64
			gone         bool
		}
		want := map[string]*model{}
		prunes := 0
		for step := range 600 {
			now := vc.UnixMilli()
			switch r := rng.IntN(100); {
			case r < 3: // the wall clock jumps back
				vc.Set(time.UnixMilli(now - int64(rng.IntN(60_000))))
			case r < 45:
				vc.Advance(time.Duration(rng.IntN(5_000)) * time.Millisecond)
			case r < 52:
				name := fmt.Sprint("i-", rng.IntN(12))
				if m := want[name]; m != nil && !m.gone {
					c.Ingest("t", &wire.Bye{Header: wire.Header{Ts: now, Instance: name}})
					m.last, m.gone, m.goneAt = now, true, now
				}
			case r < 85:
				name := fmt.Sprint("i-", rng.IntN(12))
				m := want[name]
				if m == nil {
					m = &model{}
					want[name] = m
					c.Ingest("t", &wire.Hello{Header: wire.Header{Ts: now, Instance: name}, App: "a", StartedAt: t0ms, BucketMs: 500})
				} else {
					c.Ingest("t", &wire.Buckets{Header: wire.Header{Ts: now, Instance: name}, BucketMs: 500})
				}
				m.last, m.gone = now, false
			default:
				c.Publish()
				for name, m := range want {
					if !m.gone && now-m.last > stale {
						m.gone, m.goneAt = true, m.last+stale
					}
					if m.gone && now-m.goneAt > keep {
						delete(want, name)
						prunes++
					}
				}
				c.mu.Lock()
				if len(c.insts) != len(want) {
					t.Fatalf("seed %d step %d at %d: %d instances kept, want %d", seed, step, now-t0ms, len(c.insts), len(want))
				}
				for name, m := range want {
					in := c.insts[name]
					if in == nil {
						t.Fatalf("seed %d step %d at %d: %s let go; gone %v since %d", seed, step, now-t0ms, name, m.gone, m.goneAt-t0ms)
					}
					if in.Gone != m.gone || m.gone && in.goneAt != m.goneAt {
						t.Fatalf("seed %d step %d at %d: %s gone %v since %d; want %v since %d (last arrived %d)",
							seed, step, now-t0ms, name, in.Gone, in.goneAt-t0ms, m.gone, m.goneAt-t0ms, m.last-t0ms)
					}
				}
				c.mu.Unlock()
			}
		}
		if prunes == 0 {
			t.Fatalf("seed %d: no instance let go", seed)
		}
	}
}
