package report

import (
	"strings"
	"testing"

	"github.com/sentinel-top/sentinel-top/collector/report/spectest"
	"github.com/sentinel-top/sentinel-top/collector/triage"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/fixtures/fixturetest"
)

// Java Sentinel's trips, judged from per-second counts (the fixture
// java-low-traffic-trips): the report says they were inferred, bounds
// their windows, and says that the cold starts are unknown (Java's
// transport gives no process start) rather than 0, in every format.
func TestJavaTripsReport(t *testing.T) {
	res, err := fixturetest.ReplayFixture("java-low-traffic-trips")
	if err != nil {
		t.Fatal(err)
	}
	r := FromSnapshot("fixtures/java-low-traffic-trips.ndjson", res.Collector.Snapshot(), res.Collector)
	golden(t, "java.txt.golden", render(t, text, r))
	for name, out := range map[string]string{"text": string(render(t, text, r)), "md": string(render(t, md, r))} {
		for _, want := range []string{
			"5 on fewer than 20 calls (5 inferred from Java Sentinel's per-second counts: each on at most the calls its window's seconds completed)",
			"at most 5 calls, on which Java trips with 3 bad or more, 90% lower bound 0.33",
			"unknown (the instances' process start is not known)",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: no %q in\n%s", name, want, out)
			}
		}
		if strings.Contains(out, "Cold start:** 0") || strings.Contains(out, "Cold start:             0") {
			t.Errorf("%s: an unknown cold start as 0:\n%s", name, out)
		}
	}
	rep, err := spectest.Decode(render(t, js, r))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range rep.Findings {
		if f.Kind != "low-confidence-trip" {
			continue
		}
		n++
		if f.ColdStart != nil || f.Inferred == nil || !*f.Inferred || *f.Count != 5 || *f.ClosedAtFirstProbe != 5 {
			t.Errorf("finding %+v", f)
		}
	}
	if n != 1 {
		t.Errorf("%d low-confidence-trip findings", n)
	}
}

// coldStart is judged from the process start its hello tells, not from the
// first traffic the input shows: gateway-1 started at 15:50:14, and the
// collector's data of it (a reconnect's backfill) begins at 15:51:11, its
// price calls at 15:51:20; its trip at 15:52:09 is 115 s after the start,
// no cold start, though it came 49 s after the resource's first traffic in
// the input, while the instance was serving another. gateway-2, whose hello tells
// no start, is unknown: absent from the JSON, "unknown" in the text, never
// 0.
func TestColdStartFromTheProcessStart(t *testing.T) {
	const res = "priceService:queryPrice"
	clock := func(h, m, s int64) int64 { return t0 + (h*3600+m*60+s)*1000 }
	r := rule(res)
	r.MinRequestAmount, r.StatIntervalMs = 5, 1000
	trip := func(e *storeFeeder, in string, at int64) {
		x := tr(res, core.Closed, core.Open, at)
		x.Snapshot = core.WindowSnapshot{Total: 5, Bad: 3, Value: 0.6}
		e.Transition(in, x)
		e.Transition(in, tr(res, core.Open, core.HalfOpen, at+10000))
		e.Transition(in, tr(res, core.HalfOpen, core.Closed, at+10010))
	}
	for _, c := range []struct {
		startedAt int64
		json      string // coldStart in the JSON ("" absent)
		text      string
	}{
		{clock(15, 50, 14), `"coldStart": 0,`, "Cold start:             0 within 60 s of the process start"},
		{0, "", "Cold start:             unknown (the instances' process start is not known)"},
	} {
		e := newStoreFeeder()
		e.Hello("gateway-1", "gateway", clock(15, 51, 11), c.startedAt)
		e.Rules("gateway-1", clock(15, 51, 11), "v1", []core.BreakerRule{r}, nil)
		for s := clock(15, 51, 11); s < clock(15, 52, 9); s += 500 {
			e.Bucket("gateway-1", triage.BucketStat{Resource: "GET:/member/info", Start: s, BucketMs: 500, Metrics: core.Metrics{Pass: 5, Complete: 5, RtSum: 100}})
			if s >= clock(15, 51, 20) {
				e.Bucket("gateway-1", triage.BucketStat{Resource: res, Start: s, BucketMs: 500, Metrics: core.Metrics{Pass: 5, Complete: 5, RtSum: 100}})
			}
		}
		trip(e, "gateway-1", clock(15, 52, 9))
		rep := e.report("backfill", 1, 0)
		out := string(render(t, text, rep))
		if !strings.Contains(out, c.text) {
			t.Errorf("started at %d: no %q in\n%s", c.startedAt, c.text, out)
		}
		js := string(render(t, js, rep))
		if c.json == "" && strings.Contains(js, "coldStart") || c.json != "" && !strings.Contains(js, c.json) {
			t.Errorf("started at %d: coldStart %q in\n%s", c.startedAt, c.json, js)
		}
	}
}
