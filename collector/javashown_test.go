package collector

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sentinel-top/sentinel-top/collector/metriclog"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// TestJavaInferredClosedNotShownWhileOpenFromMetricLog replays each
// recording's metric log into a collector, without the rules (a silence of
// a whole second leaves an inferred CLOSED unknown), and compares what the
// detail shows of each resource's breaker with what Java's breaker was
// (javaCheckShown); each recording bounds what is left, as measured
// (logShown, ms). TestJavaInferenceFromTransport's
// closed-not-shown-while-open does the same over the transport, with none
// allowed.
func TestJavaInferredClosedNotShownWhileOpenFromMetricLog(t *testing.T) {
	for _, rec := range javaRecordings {
		t.Run(filepath.Base(rec.dir), func(t *testing.T) {
			r := metriclog.Convert(javaOpenGzip(t, rec.dir, rec.log+".gz"), rec.log, "", "")
			if len(r.Errors) != 0 {
				t.Fatal(r.Errors)
			}
			app := ""
			for _, m := range r.Messages {
				if h, ok := m.(*wire.Hello); ok {
					app = h.App
					break
				}
			}
			rp, err := newReplayMessages("log", r.Messages, r.Errors, 0, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := rp.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			real := javaRealTransitions(t, rec.dir)
			javaCheckShown(t, rp.Collector(), app, real, real[0].at-60000, real[len(real)-1].at+5000, rec.logShown)
		})
	}
}

// javaCheckShown measures, over [from, to], every 10 ms, the time app's
// detail shows CLOSED~ (its inferred history, less the spans it says are
// unknown) while Java's breaker was OPEN, beyond 1 s of its transitions
// (real), and requires at most allow ms of it. Without the silences
// (collector/silence.go), a breaker that tripped at a completion and was
// probed and closed after a silence longer than its timeWindow showed
// CLOSED~ all through; it logs that figure too, and the time the silences
// leave unknown.
func javaCheckShown(t *testing.T, c *Collector, app string, real []javaTransition, from, to, allow int64) {
	t.Helper()
	byRes := map[string][]javaTransition{}
	for _, x := range real {
		byRes[x.resource] = append(byRes[x.resource], x)
	}
	var wrong, before javaShownWrong
	var silentMs, spanMs int64
	for _, res := range javaResources {
		rs := byRes[res]
		if len(rs) == 0 {
			continue
		}
		d := c.Detail(app, res, from, to)
		if len(d.Instances) != 1 {
			t.Fatalf("%s: %d instances", res, len(d.Instances))
		}
		in := d.Instances[0]
		for _, sp := range in.Silent {
			silentMs += sp.To - sp.From
		}
		spanMs += to - max(from, in.KnownFrom)
		wrong.add(res, rs, &in, in.Silent, from, to)
		before.add(res, rs, &in, nil, from, to)
	}
	t.Logf("CLOSED~ shown while Java's breaker was OPEN, beyond 1 s of its transitions: %d ms in %d stretches, the longest %d ms (%s at %d); without the silences %d ms in %d, the longest %d ms",
		wrong.ms, wrong.stretches, wrong.longest, wrong.where, wrong.at, before.ms, before.stretches, before.longest)
	t.Logf("unknown for silences: %d ms of %d (%.1f %%)", silentMs, spanMs, 100*float64(silentMs)/float64(max(spanMs, 1)))
	if wrong.ms > allow {
		t.Errorf("CLOSED~ shown for %d ms while Java's breaker was OPEN, more than %d (the longest %d ms, %s at %d)", wrong.ms, allow, wrong.longest, wrong.where, wrong.at)
	}
}

// javaShownWrong sums the time CLOSED~ was shown while Java's breaker was
// OPEN, beyond 1 s of its transitions.
type javaShownWrong struct {
	ms, stretches, longest int64
	where                  string
	at                     int64
}

// add measures one resource: rs are its real transitions (in time order),
// in its detail, silent the spans taken as unknown for silences; every
// 10 ms of [from, to].
func (w *javaShownWrong) add(res string, rs []javaTransition, in *InstanceDetail, silent []Span, from, to int64) {
	const step = 10
	run := int64(0)
	for at := from; at <= to; at += step {
		bad := false
		if javaRealState(rs, at) == core.Open && !javaNear(rs, at, 1000) {
			st, known := javaShownState(in, silent, at)
			bad = known && st == core.Closed
		}
		if bad {
			w.ms += step
			run += step
			if run > w.longest {
				w.longest, w.where, w.at = run, res, at-run+step
			}
			continue
		}
		if run > 0 {
			w.stretches++
		}
		run = 0
	}
	if run > 0 {
		w.stretches++
	}
}

// javaRealState is Java's breaker's state at at: CLOSED before its first
// transition.
func javaRealState(rs []javaTransition, at int64) core.State {
	st := core.Closed
	for _, x := range rs {
		if x.at > at {
			break
		}
		st = x.to
	}
	return st
}

// javaNear reports whether a real transition is within tol ms of at.
func javaNear(rs []javaTransition, at, tol int64) bool {
	i, _ := slices.BinarySearchFunc(rs, at-tol, func(x javaTransition, t int64) int {
		switch {
		case x.at < t:
			return -1
		case x.at > t:
			return 1
		}
		return 0
	})
	return i < len(rs) && rs[i].at <= at+tol
}

// javaShownState is the state the detail shows at at, and whether it
// shows one: not before it is known, nor in the unknown spans (those the
// timeline draws as unknown, less its silences, plus silent).
func javaShownState(in *InstanceDetail, silent []Span, at int64) (core.State, bool) {
	if at < in.KnownFrom || in.KnownTo > 0 && at >= in.KnownTo {
		return 0, false
	}
	for _, spans := range [][]Span{in.Absent, in.Unreceived, silent} {
		for _, sp := range spans {
			if at >= sp.From && at < sp.To {
				return 0, false
			}
		}
	}
	st := in.Start
	for _, x := range in.Transitions {
		if x.AtMs > at {
			break
		}
		st = x.To
	}
	return st, true
}
