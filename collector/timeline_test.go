package collector

import (
	"slices"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/collector/triage"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// historyRig is one instance with a slow-ratio breaker on "db", fed
// message by message on a virtual clock.
type historyRig struct {
	t  *testing.T
	c  *Collector
	vc *core.VirtualClock
}

func newHistoryRig(t *testing.T) *historyRig {
	vc := core.NewVirtualClock(time.UnixMilli(t0ms))
	return &historyRig{t: t, c: New(Options{Clock: vc, StaleAfter: 15 * time.Second}), vc: vc}
}

// at sets the clock to t0ms+ms and ingests m.
func (r *historyRig) at(ms int64, m wire.Message) {
	r.t.Helper()
	r.vc.Set(time.UnixMilli(t0ms + ms))
	if !r.c.Ingest("test", m) {
		r.t.Fatalf("refused %T", m)
	}
}

func (r *historyRig) hello(ms, startedAt int64) {
	r.at(ms, &wire.Hello{Header: wire.Header{Ts: t0ms + ms, Instance: "db-1"}, App: "shop", StartedAt: t0ms + startedAt, BucketMs: 500})
	r.at(ms, &wire.Rules{Header: wire.Header{Ts: t0ms + ms, Instance: "db-1"}, Version: "v1",
		Breakers: []core.BreakerRule{{Resource: "db", Strategy: core.SlowRequestRatio, Threshold: 0.5, MaxAllowedRtMs: 100,
			MinRequestAmount: 5, StatIntervalMs: 1000, RetryTimeoutMs: 10000}}})
}

func (r *historyRig) bucket(ms, start int64) {
	r.at(ms, &wire.Buckets{Header: wire.Header{Ts: t0ms + ms, Instance: "db-1"}, BucketMs: 500,
		Items: []wire.BucketItem{{Resource: "db", Start: t0ms + start, Metrics: core.Metrics{Pass: 10, Complete: 10}}}})
}

func (r *historyRig) state(ms int64, from, to core.State) {
	r.at(ms, &wire.State{Header: wire.Header{Ts: t0ms + ms, Instance: "db-1"}, Resource: "db",
		Strategy: core.SlowRequestRatio, From: from, To: to, Threshold: 0.5, RetryTimeoutMs: 10000})
}

// cells draws the instance's band and a report's timeline of it over
// [t0ms+from, t0ms+to) in 1 s cells, requiring them to agree.
func (r *historyRig) cells(from, to int64) string {
	r.t.Helper()
	r.vc.Set(time.UnixMilli(max(r.vc.UnixMilli(), t0ms+to)))
	r.c.Publish()
	d := r.c.Detail("shop", "db", t0ms+from, t0ms+to)
	if len(d.Instances) != 1 {
		r.t.Fatalf("detail has %d instances", len(d.Instances))
	}
	var edges []int64
	for at := t0ms + from; at <= t0ms+to; at += 1000 {
		edges = append(edges, at)
	}
	band := d.Instances[0].Timeline()
	if band.KnownTo == 0 {
		band.KnownTo = t0ms + to
	}
	got := band.Cells(edges)
	f := triage.Finding{App: "shop", Resource: "db", Instances: []string{"db-1"}, From: t0ms + from, To: t0ms + to}
	if tls := r.c.Timelines([]triage.Finding{f}, nil)[0].Timelines; len(tls) == 1 {
		tl := tls[0]
		if tl.KnownTo == 0 {
			tl.KnownTo = t0ms + to
		}
		if rep := tl.Cells(edges); !slices.Equal(rep, got) {
			r.t.Fatalf("the detail draws %s, a report %s", text(got), text(rep))
		}
	}
	return text(got)
}

func text(cells []core.State) string {
	var b []rune
	for _, c := range cells {
		b = append(b, map[core.State]rune{triage.StateUnknown: '·', core.Closed: '▁', core.HalfOpen: '▄', core.Open: '█'}[c])
	}
	return string(b)
}

// TestKnownFromFirstDataOrFirstTransition: a breaker's state is known from
// the instance's first data for the resource; a first transition that
// leaves another state than CLOSED (a collector that came mid-incident)
// makes it known only from that transition.
func TestKnownFromFirstDataOrFirstTransition(t *testing.T) {
	r := newHistoryRig(t)
	r.hello(0, -3_600_000)
	r.bucket(4_500, 4_000)
	r.state(6_000, core.Closed, core.Open)
	if got := r.cells(0, 10_000); got != "····▁▁████" {
		t.Errorf("from the first data: %s", got)
	}
	r = newHistoryRig(t)
	r.hello(0, -3_600_000)
	r.state(3_000, core.HalfOpen, core.Open)
	r.bucket(5_500, 5_000)
	if got := r.cells(0, 10_000); got != "···███████" {
		t.Errorf("mid incident: %s", got)
	}
}

// TestDepartedInstanceIsNotDrawnInItsLastState: an instance killed while
// its breaker was OPEN is drawn OPEN up to its last message and not known
// after it, in the detail's band and a report's timeline alike; it comes
// back with its own state.
func TestDepartedInstanceIsNotDrawnInItsLastState(t *testing.T) {
	r := newHistoryRig(t)
	r.hello(0, -60_000)
	for ms := int64(500); ms <= 3_000; ms += 500 {
		r.bucket(ms, ms-500)
	}
	r.state(3_000, core.Closed, core.Open)
	for ms := int64(3_500); ms <= 5_000; ms += 500 {
		r.bucket(ms, ms-500)
	}
	if got := r.cells(0, 40_000); got != "▁▁▁██"+"···································" {
		t.Errorf("killed at +5 s: %s", got)
	}
	d := r.c.Detail("shop", "db", t0ms, t0ms+40_000)
	if in := d.Instances[0]; !in.Gone || in.KnownTo != t0ms+5_000 {
		t.Errorf("gone %v, known to %d ms", in.Gone, in.KnownTo-t0ms)
	}
	r.hello(41_000, -60_000) // the same process reconnects: its breaker is still OPEN
	r.bucket(41_000, 40_500)
	d = r.c.Detail("shop", "db", t0ms, t0ms+42_000)
	if in := d.Instances[0]; in.Gone || in.KnownTo != 0 || in.State != core.Open {
		t.Errorf("back: gone %v, known to %d, state %s", in.Gone, in.KnownTo, in.State)
	}
}

// TestRestartIsAStepOfTheHistory: a process that restarts while its
// breaker is OPEN starts CLOSED; no process ran between its old data and
// its start, and the restart is a step of the breaker's history (marked
// Restart) that no transition count includes.
func TestRestartIsAStepOfTheHistory(t *testing.T) {
	r := newHistoryRig(t)
	r.hello(0, -60_000)
	r.bucket(1_000, 500)
	r.state(2_000, core.Closed, core.Open)
	r.bucket(3_000, 2_500) // data to +3 s
	r.hello(8_000, 6_000)  // restarted at +6 s
	r.bucket(8_500, 8_000)
	if got := r.cells(0, 10_000); got != "▁▁█···▁▁▁▁" {
		t.Errorf("restart: %s", got)
	}
	d := r.c.Detail("shop", "db", t0ms, t0ms+10_000)
	in := d.Instances[0]
	if in.State != core.Closed || len(in.Transitions) != 2 || !in.Transitions[1].Restart || in.Transitions[1].AtMs != t0ms+6_000 {
		t.Fatalf("state %s, transitions %+v", in.State, in.Transitions)
	}
	if len(in.Absent) != 1 || in.Absent[0] != (Span{From: t0ms + 3_000, To: t0ms + 6_000}) {
		t.Errorf("absent %+v", in.Absent)
	}
	for _, tot := range r.c.Publish().Totals {
		if len(tot.Transitions) != 1 || tot.Transitions[0].Count != 1 {
			t.Errorf("transition counts %+v: the restart is not a transition", tot.Transitions)
		}
	}
}

// TestReportKeepsTheTimelinesOfTheGone: a collector that keeps the gone
// (a report's) still draws, 20 minutes on, the history of an instance
// that tripped and left in the input's first minute; a live one forgets
// it after the retention, with the rest of the instance.
func TestReportKeepsTheTimelinesOfTheGone(t *testing.T) {
	for _, keep := range []bool{true, false} {
		r := newHistoryRig(t)
		r.c.opts.KeepGone = keep
		r.hello(0, -60_000)
		r.bucket(1_000, 500)
		r.state(2_000, core.Closed, core.Open)
		r.at(3_000, &wire.Bye{Header: wire.Header{Ts: t0ms + 3_000, Instance: "db-1"}, Reason: "shutdown"})
		r.vc.Set(time.UnixMilli(t0ms + 20*60_000))
		r.c.Publish()
		f := triage.Finding{App: "shop", Resource: "db", Instances: []string{"db-1"}, From: t0ms, To: t0ms + 3_000}
		tls := r.c.Timelines([]triage.Finding{f}, nil)[0].Timelines
		if keep && (len(tls) != 1 || tls[0].End() != core.Open || tls[0].KnownTo != t0ms+3_000) {
			t.Errorf("kept: timelines %+v", tls)
		}
		if !keep && len(tls) != 0 {
			t.Errorf("forgotten: timelines %+v", tls)
		}
	}
}
