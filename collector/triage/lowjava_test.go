package triage

import (
	"encoding/json"
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
)

// javaRule is a Java Sentinel 1.8 slow-ratio degrade rule as the poller
// reads it: 0.5 over 100 ms, minRequestAmount 3, a 1 s window, timeWindow
// 3 s.
func javaRule(res string) core.BreakerRule {
	return core.BreakerRule{Resource: res, Strategy: core.SlowRequestRatio, Threshold: 0.5, MaxAllowedRtMs: 100,
		MinRequestAmount: 3, StatIntervalMs: 1000, RetryTimeoutMs: 3000, Semantics: core.SemanticsJava}
}

// javaFeed is an engine with one Java instance, price-1 of app price,
// whose hello tells no process start (Java's poller has none), with
// breakers (no rules message when nil).
func javaFeed(breakers ...core.BreakerRule) *Feeder {
	e := NewFeeder(Config{})
	e.Hello("price-1", "price", t0, 0)
	if breakers != nil {
		e.Rules("price-1", t0, "j1", breakers, nil)
	}
	return e
}

// javaSecond feeds one second of price-1's resource: passes, blocks and
// completions.
func javaSecond(e *Feeder, res string, start, pass, block, done int64) {
	e.Bucket("price-1", BucketStat{Resource: res, Start: start, BucketMs: 1000,
		Metrics: core.Metrics{Pass: pass, Block: block, Complete: done, RtSum: done * 30}})
}

// javaSteady feeds seconds [from, to) of pass passes and completions.
func javaSteady(e *Feeder, res string, from, to, pass int64) {
	for s := from; s < to; s += 1000 {
		javaSecond(e, res, s, pass, 0, pass)
	}
}

// javaTransition feeds an inferred transition, dated to its second.
func javaTransition(e *Feeder, r core.BreakerRule, from, to core.State, at int64) {
	e.Transition("price-1", core.Transition{Resource: r.Resource, Strategy: r.Strategy, From: from, To: to, AtMs: at,
		Threshold: r.Threshold, RetryTimeoutMs: r.RetryTimeoutMs, Inferred: true})
}

// javaProbe: the probe passes at at, and its completion second decides.
func javaProbe(e *Feeder, r core.BreakerRule, at int64, closes bool) {
	to := core.Open
	if closes {
		to = core.Closed
	}
	javaTransition(e, r, core.Open, core.HalfOpen, at)
	javaTransition(e, r, core.HalfOpen, to, at)
}

func javaFacts(t *testing.T, e *Feeder, now int64) *LowConfidenceFacts {
	t.Helper()
	return one(t, e.Findings(now), KindLowConfidenceTrip).Facts.(*LowConfidenceFacts)
}

// A Java trip has no snapshot: its window (one tumbling bucket of
// statIntervalMs, whole seconds here) held at most the completions of the
// trip's second. 5 completions in a second with 4 passes (the breaker was
// CLOSED in it: the trip came in it): at most 5 calls, on which Java trips
// a 0.5 slow ratio with 3 slow or more: bound 0.33. Whether the counts
// come before the trip (a metric log, the poller) or after (a recording
// ordered by time), the judgment is the same.
func TestLowConfidenceJavaTripJudged(t *testing.T) {
	r := javaRule("queryPrice")
	for _, countsFirst := range []bool{true, false} {
		e := javaFeed(r)
		javaSteady(e, r.Resource, t0, t0+10000, 6)
		trip := t0 + 10000
		if countsFirst {
			javaSecond(e, r.Resource, trip, 4, 2, 5)
			javaTransition(e, r, core.Closed, core.Open, trip)
		} else {
			javaTransition(e, r, core.Closed, core.Open, trip)
			if got := only(t, e.Findings(trip+500), KindLowConfidenceTrip); len(got) != 0 {
				t.Fatalf("judged before its second came: %+v", got)
			}
			if u := e.Unjudged(trip + 500); len(u) != 0 {
				t.Fatalf("not judged before its second came: %+v", u)
			}
			javaSecond(e, r.Resource, trip, 4, 2, 5)
		}
		javaSecond(e, r.Resource, trip+1000, 0, 6, 0)
		javaSecond(e, r.Resource, trip+2000, 0, 6, 0)
		javaSecond(e, r.Resource, trip+3000, 6, 0, 6)
		javaProbe(e, r, trip+3000, true)
		x := javaFacts(t, e, trip+4000)
		if x.Count != 1 || x.ClosedAtFirstProbe != 1 || x.Worst != (Evidence{K: 3, N: 5, Lower: 0.33}) || !x.Inferred ||
			x.InferredTrips != 1 || !x.WorstInferred || x.AtThreshold != 0 || x.ColdStart != nil {
			t.Fatalf("counts first %v: %+v", countsFirst, x)
		}
		b, err := json.Marshal(x)
		if err != nil {
			t.Fatal(err)
		}
		// 6 calls a second: a 5000 ms window holds 20 or more 19 times
		// in 20 (30 on average).
		want := `{"count":1,"worst":{"k":3,"n":5,"lower":0.33},"atThreshold":0,"closedAtFirstProbe":1,"inferred":true,` +
			`"suggest":{"minRequestAmount":20,"statIntervalMs":5000}}`
		if string(b) != want {
			t.Fatalf("json\n got %s\nwant %s", b, want)
		}
		f := one(t, e.Findings(trip+4000), KindLowConfidenceTrip)
		wantSummary := "1 trip inferred from Java Sentinel's per-second counts rested on fewer than 20 calls: at most 5 calls, " +
			"on which Java trips with 3 slow or more (90% lower bound 0.33, threshold 0.5); it closed at the first probe"
		if f.Summary != wantSummary {
			t.Fatalf("summary\n got %q\nwant %q", f.Summary, wantSummary)
		}
	}
}

// The window's bound, case by case: statIntervalMs, the trip's second,
// the counts around it.
func TestLowConfidenceJavaWindow(t *testing.T) {
	cases := []struct {
		name     string
		interval uint32
		// seconds from t0+10000, each {pass, block, completions}; the
		// trip is dated to the first of them.
		seconds [][3]int64
		want    *Evidence   // counted with this evidence, or
		why     UnjudgedWhy // not judged (0 with want nil: not counted)
	}{
		{"passes in its second: that second alone", 1000, [][3]int64{{4, 2, 5}, {0, 6, 0}}, &Evidence{K: 3, N: 5, Lower: 0.33}, 0},
		// No pass in it: the trip may have come at the end of the second
		// before, whose 9 completions bound it.
		{"no pass in its second: the one before may hold it", 1000, [][3]int64{{0, 6, 3}, {0, 6, 0}}, &Evidence{K: 5, N: 9, Lower: 0.35}, 0},
		// 1 pass, and timeWindow 3 s: no probe of a trip in the second
		// before could pass in it.
		{"one pass, no probe possible: its second", 1000, [][3]int64{{1, 6, 4}, {0, 6, 0}}, &Evidence{K: 3, N: 4, Lower: 0.43}, 0},
		{"20 completions in a 1 s window: it may have held 20", 1000, [][3]int64{{18, 4, 20}, {0, 20, 0}}, nil, 0},
		// A 10 s window: Java's bucket [t0+10000, t0+20000) holds the
		// trip's second t0+12000 and the two before it, 3 + 4 + 5.
		{"10 s window: the bucket's seconds up to the trip", 10000, [][3]int64{{4, 2, 3}}, &Evidence{K: 7, N: 12, Lower: 0.4}, 0},
		// 1500 ms: the windows are not whole seconds. The one holding the
		// trip began at t0+9000 (a multiple of 1500), in the second
		// before: 9 + 5 completions still bound it, 9 + 20 do not.
		{"1500 ms window, 14 completions around it", 1500, [][3]int64{{4, 2, 5}}, &Evidence{K: 8, N: 14, Lower: 0.4}, 0},
		{"1500 ms window, 29 completions around it", 1500, [][3]int64{{18, 2, 20}}, nil, UnjudgedResolution},
		{"fewer completions than minRequestAmount", 1000, [][3]int64{{2, 2, 2}}, nil, UnjudgedCounts},
		{"a window longer than the counts kept", 120000, [][3]int64{{4, 2, 5}}, nil, UnjudgedLong},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := javaRule("queryPrice")
			r.StatIntervalMs = c.interval
			e := javaFeed(r)
			trip := t0 + 10000
			if c.interval == 10000 {
				// t0+10000 and t0+11000 with 4 and 5 completions, the trip
				// in t0+12000 (the case's first second, 3 more); the
				// second before the bucket is not in it.
				javaSecond(e, r.Resource, t0+9000, 9, 0, 9)
				javaSecond(e, r.Resource, t0+10000, 3, 0, 4)
				javaSecond(e, r.Resource, t0+11000, 5, 0, 5)
				trip = t0 + 12000
			} else {
				javaSteady(e, r.Resource, t0, trip-1000, 6)
				javaSecond(e, r.Resource, trip-1000, 9, 0, 9)
			}
			for i, s := range c.seconds {
				javaSecond(e, r.Resource, trip+int64(i)*1000, s[0], s[1], s[2])
			}
			javaTransition(e, r, core.Closed, core.Open, trip)
			now := trip + 5000
			got := only(t, e.Findings(now), KindLowConfidenceTrip)
			u := e.Unjudged(now)
			switch {
			case c.want != nil:
				if len(got) != 1 || got[0].worst() != *c.want || len(u) != 0 {
					t.Fatalf("findings %+v unjudged %+v, want worst %+v", got, u, *c.want)
				}
			case c.why != 0:
				if len(got) != 0 || len(u) != 1 || u[0].Why != c.why || u[0].Trips != 1 {
					t.Fatalf("findings %+v unjudged %+v, want unjudged %v", got, u, c.why)
				}
			default:
				if len(got) != 0 || len(u) != 0 {
					t.Fatalf("findings %+v unjudged %+v, want neither", got, u)
				}
			}
		})
	}
}

// When the window cannot be told, the trip is not counted and Unjudged
// says so, per resource, with why and how many; a trip whose first probe
// failed is judged (the downstream was failing) whatever its window.
func TestLowConfidenceJavaUnjudged(t *testing.T) {
	r := javaRule("queryPrice")
	count := core.BreakerRule{Resource: r.Resource, Strategy: core.ErrorCount, Threshold: 3, StatIntervalMs: 1000,
		RetryTimeoutMs: 3000, Semantics: core.SemanticsJava}
	legacy := core.BreakerRule{Resource: r.Resource, Strategy: core.ErrorRatio, Threshold: 0.5, StatIntervalMs: 1000,
		RetryTimeoutMs: 3000, Semantics: core.SemanticsJava16}
	cases := []struct {
		name     string
		breakers []core.BreakerRule
		lost     bool // the trip's second never arrived
		why      UnjudgedWhy
	}{
		{"no rules (a metric log)", nil, false, UnjudgedNoRules},
		{"a ratio and an error-count breaker", []core.BreakerRule{r, count}, false, UnjudgedSeveral},
		{"Java before 1.8", []core.BreakerRule{legacy}, false, UnjudgedLegacy},
		{"its second never received", []core.BreakerRule{r}, true, UnjudgedMissing},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := javaFeed(c.breakers...)
			javaSteady(e, r.Resource, t0, t0+10000, 6)
			// Three trips: the first probe closes the first and the
			// third; the second's fails.
			for i, closes := range []bool{true, false, true} {
				trip := t0 + 10000 + int64(i)*10000
				if c.lost {
					e.Unreceived("price-1", trip, trip+1000)
				} else {
					javaSecond(e, r.Resource, trip, 4, 2, 5)
				}
				javaTransition(e, r, core.Closed, core.Open, trip)
				javaSecond(e, r.Resource, trip+1000, 0, 6, 0)
				javaSteady(e, r.Resource, trip+3000, trip+10000, 6)
				javaProbe(e, r, trip+3000, closes)
			}
			now := t0 + 45000
			if got := only(t, e.Findings(now), KindLowConfidenceTrip); len(got) != 0 {
				t.Fatalf("findings %+v", got)
			}
			u := e.Unjudged(now)
			want := Unjudged{Kind: KindLowConfidenceTrip, App: "price", Resource: r.Resource, Instances: []string{"price-1"},
				Trips: 2, ClosedAtFirstProbe: 2, Why: c.why, From: t0 + 10000, To: t0 + 33000}
			if len(u) != 1 || u[0].Kind != want.Kind || u[0].App != want.App || u[0].Resource != want.Resource ||
				u[0].Trips != want.Trips || u[0].ClosedAtFirstProbe != want.ClosedAtFirstProbe || u[0].Why != want.Why ||
				u[0].From != want.From || u[0].To != want.To || len(u[0].Instances) != 1 || u[0].Instances[0] != "price-1" {
				t.Fatalf("unjudged %+v, want %+v", u, want)
			}
		})
	}
}

// A trip whose second has not come is waited for: until StaleMs has
// passed it is neither counted nor listed; then it is listed as missing.
func TestLowConfidenceJavaWaitsForItsSecond(t *testing.T) {
	r := javaRule("queryPrice")
	e := javaFeed(r)
	javaSteady(e, r.Resource, t0, t0+10000, 6)
	trip := t0 + 10000
	javaTransition(e, r, core.Closed, core.Open, trip)
	javaProbe(e, r, trip+3000, true)
	if u := e.Unjudged(trip + DefaultStaleMs); len(u) != 0 {
		t.Fatalf("listed before StaleMs: %+v", u)
	}
	u := e.Unjudged(trip + DefaultStaleMs + 1)
	if len(u) != 1 || u[0].Why != UnjudgedMissing || u[0].Trips != 1 || u[0].ClosedAtFirstProbe != 1 {
		t.Fatalf("unjudged %+v", u)
	}
	if got := only(t, e.Findings(trip+DefaultStaleMs+1), KindLowConfidenceTrip); len(got) != 0 {
		t.Fatalf("findings %+v", got)
	}
}

// Revision 3's trip again, on inferred times (dated to their seconds): a
// trip dated to the second of the close or the one after may have come
// within the 1 s statIntervalMs of it, and drops the trip before; two
// seconds after, it cannot have.
func TestLowConfidenceJavaTripAgain(t *testing.T) {
	r := javaRule("queryPrice")
	for _, c := range []struct {
		after        int64 // the next trip's second after the close's
		count, close int64
	}{{0, 1, 0}, {1000, 1, 0}, {2000, 2, 1}} {
		e := javaFeed(r)
		javaSteady(e, r.Resource, t0, t0+10000, 6)
		trip := t0 + 10000
		javaSecond(e, r.Resource, trip, 4, 2, 5)
		javaTransition(e, r, core.Closed, core.Open, trip)
		javaSecond(e, r.Resource, trip+1000, 0, 6, 0)
		javaSecond(e, r.Resource, trip+2000, 0, 6, 0)
		javaSecond(e, r.Resource, trip+3000, 4, 2, 4)
		closed := trip + 3000
		javaProbe(e, r, closed, true)
		again := closed + c.after
		for s := closed + 1000; s <= again; s += 1000 {
			javaSecond(e, r.Resource, s, 4, 2, 4)
		}
		javaTransition(e, r, core.Closed, core.Open, again)
		x := javaFacts(t, e, again+5000)
		if x.Count != c.count || x.ClosedAtFirstProbe != c.close {
			t.Errorf("again %d ms after: count %d closedAtFirstProbe %d, want %d %d", c.after, x.Count, x.ClosedAtFirstProbe, c.count, c.close)
		}
	}
}

// A resource with trips judged and one not: the finding counts the first,
// and its evidence says how many were not judged and why.
func TestLowConfidenceJavaFindingSaysWhatItCouldNotJudge(t *testing.T) {
	r := javaRule("queryPrice")
	e := javaFeed(r)
	javaSteady(e, r.Resource, t0, t0+10000, 6)
	for i, lost := range []bool{false, true} {
		trip := t0 + 10000 + int64(i)*10000
		if lost {
			e.Unreceived("price-1", trip, trip+1000)
		} else {
			javaSecond(e, r.Resource, trip, 4, 2, 5)
		}
		javaTransition(e, r, core.Closed, core.Open, trip)
		javaSecond(e, r.Resource, trip+1000, 0, 6, 0)
		javaSteady(e, r.Resource, trip+3000, trip+10000, 6)
		javaProbe(e, r, trip+3000, true)
	}
	x := javaFacts(t, e, t0+30000)
	if x.Count != 1 || x.Unjudged != 1 || x.UnjudgedWhy != UnjudgedMissing {
		t.Fatalf("%+v", x)
	}
	var got string
	for _, f := range x.Evidence() {
		if f.Label == "Not judged" {
			got = f.Parts[0].Text
		}
	}
	if want := "1 more trip: the per-second counts of the window's seconds never arrived, or lie before the data begins"; got != want {
		t.Fatalf("not judged %q, want %q", got, want)
	}
}

// Seconds before a resource's first line are no traffic when the instance
// was reporting others (Java writes no line for a second without traffic);
// seconds before its rules came, when the series was not kept, are not
// known.
func TestLowConfidenceJavaSecondsBeforeTheFirst(t *testing.T) {
	r := javaRule("queryPrice")
	// The trip's second has no pass: the second before may hold it.
	e := javaFeed(r)
	javaSteady(e, "listOrders", t0, t0+11000, 8)
	javaSecond(e, r.Resource, t0+10000, 0, 2, 5)
	javaTransition(e, r, core.Closed, core.Open, t0+10000)
	javaSecond(e, r.Resource, t0+11000, 0, 6, 0)
	if x := javaFacts(t, e, t0+12000); x.Worst != (Evidence{K: 3, N: 5, Lower: 0.33}) {
		t.Fatalf("first line: %+v", x)
	}

	e = javaFeed()
	javaSteady(e, r.Resource, t0, t0+10000, 9)
	e.Rules("price-1", t0+10000, "j1", []core.BreakerRule{r}, nil)
	javaSecond(e, r.Resource, t0+10000, 0, 2, 5)
	javaTransition(e, r, core.Closed, core.Open, t0+10000)
	javaSecond(e, r.Resource, t0+11000, 0, 6, 0)
	if u := e.Unjudged(t0 + 12000); len(u) != 1 || u[0].Why != UnjudgedMissing {
		t.Fatalf("rules late: unjudged %+v, findings %+v", u, only(t, e.Findings(t0+12000), KindLowConfidenceTrip))
	}
}
