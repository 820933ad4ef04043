package report

import (
	"strings"
	"testing"

	"github.com/sentinel-top/sentinel-top/collector/report/spectest"
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
