package ui

import (
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/core"
)

// provenanceSnapshot has a row of each kind of breaker states: exact (a Go
// fleet), unknown everywhere, inferred on some instances and unknown on
// another, and two rows without a breaker rule, one whose rules were
// never read (a source that may not report them).
func provenanceSnapshot() *collector.Snapshot {
	row := func(res string, n int, c collector.StateCounts, hasBreaker bool) collector.ResourceRow {
		return collector.ResourceRow{App: "shop", Resource: res, Instances: n, PassQPS: 10, Completed: 100,
			AvgRtMs: 34.6, P99Ms: 120, HasP99: true, Breakers: c, HasBreaker: hasBreaker}
	}
	rows := []collector.ResourceRow{
		row("exact", 4, collector.StateCounts{Open: 1, HalfOpen: 1, Closed: 2}, true),
		row("inferred", 3, collector.StateCounts{Open: 1, Closed: 1, Unknown: 1}, true),
		row("norule-exact", 2, collector.StateCounts{}, false),
		row("norule-java", 2, collector.StateCounts{}, false),
		row("unknown", 2, collector.StateCounts{Unknown: 2}, true),
	}
	rows[3].RulesUnknown = true
	for _, i := range []int{1, 3, 4} { // Java: averages only
		rows[i].HasP99, rows[i].P99Ms = false, 0
	}
	b := func(res, inst string, s core.State, p collector.Provenance) collector.BreakerState {
		return collector.BreakerState{App: "shop", Resource: res, Instance: inst, State: s, Provenance: p}
	}
	breakers := []collector.BreakerState{
		b("exact", "go-1", core.Open, collector.ProvenanceExact), b("exact", "go-2", core.HalfOpen, collector.ProvenanceExact),
		b("exact", "go-3", core.Closed, collector.ProvenanceExact), b("exact", "go-4", core.Closed, collector.ProvenanceExact),
		b("inferred", "java-1", core.Open, collector.ProvenanceInferred), b("inferred", "java-2", core.Closed, collector.ProvenanceInferred),
		b("inferred", "java-3", core.Closed, collector.ProvenanceUnknown),
		b("unknown", "java-1", core.Closed, collector.ProvenanceUnknown), b("unknown", "java-2", core.Closed, collector.ProvenanceUnknown),
	}
	totals := []collector.ResourceTotals{
		{App: "shop", Resource: "exact"}, {App: "shop", Resource: "inferred", States: collector.ProvenanceUnknown},
		{App: "shop", Resource: "norule-exact"}, {App: "shop", Resource: "norule-java", States: collector.ProvenanceUnknown},
		{App: "shop", Resource: "unknown", States: collector.ProvenanceUnknown},
	}
	return &collector.Snapshot{At: t0, Seq: 1, Mode: collector.ModeLive, Apps: 1, Instances: 9, Resources: len(rows),
		Messages: 100, Rows: rows, Breakers: breakers, Totals: totals}
}

// rowLines are the table's lines by resource name.
func rowLines(t *testing.T, m *Model, names ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, l := range strings.Split(screenText(m), "\n") {
		for _, n := range names {
			// The name, then a figure (INST or PASS/S): not a word of
			// the BREAKERS column ("rules unknown").
			if regexp.MustCompile(`\s` + regexp.QuoteMeta(n) + `\s+[0-9]`).MatchString(l) {
				out[n] = l
			}
		}
	}
	if len(out) != len(names) {
		t.Fatalf("rows %v not all shown:\n%s", names, screenText(m))
	}
	return out
}

// TestBreakersSayUnknownAndInferred: an instance whose source cannot tell
// its breaker state counts as "?", never as CLOSED; states inferred from
// counts are marked "~"; exact ones are not marked; the counts line up;
// a row whose rules were never read says they are unknown, never "no rule".
func TestBreakersSayUnknownAndInferred(t *testing.T) {
	m := newTestModel(newStaticSource(provenanceSnapshot()), 120, 40)
	rows := rowLines(t, m, "exact", "inferred", "unknown", "norule-exact", "norule-java")
	has := func(res string, want []string, not []string) {
		t.Helper()
		for _, w := range want {
			if !strings.Contains(rows[res], w) {
				t.Errorf("%s: no %q in %q", res, w, rows[res])
			}
		}
		for _, n := range not {
			if strings.Contains(rows[res], n) {
				t.Errorf("%s: %q in %q", res, n, rows[res])
			}
		}
	}
	has("exact", []string{"✖1 ", "◐1 ", "●2 ", "120ms"}, []string{"~", "?", "avg"})
	has("unknown", []string{"?2", "avg 35ms"}, []string{"●", "✖", "~", " 0ms"})
	has("inferred", []string{"✖1~", "●1~", "?1"}, []string{"◐"})
	has("norule-java", []string{"rules unknown"}, []string{"no rule"})
	has("norule-exact", []string{"no rule "}, []string{"unknown"})
	col := func(res, glyph string) int {
		i := strings.Index(rows[res], glyph)
		if i < 0 {
			t.Fatalf("%s: no %s", res, glyph)
		}
		return ansi.StringWidth(rows[res][:i])
	}
	if a, b := col("unknown", "?"), col("inferred", "?"); a != b {
		t.Errorf("? at cells %d and %d: the counts do not line up", a, b)
	}
	if a, b := col("exact", "●"), col("inferred", "●"); a != b {
		t.Errorf("● at cells %d and %d: the counts do not line up", a, b)
	}
}

// TestBreakersSortUnknownAfterOpen: sorted by breakers, OPEN comes first,
// then HALF_OPEN, then the states not known (any may be OPEN).
func TestBreakersSortUnknownAfterOpen(t *testing.T) {
	s := provenanceSnapshot()
	a, b := &s.Rows[4], &s.Rows[2] // unknown x2, no rule
	if compareRows(a, b, sortBreakers) >= 0 {
		t.Error("2 unknown states do not come before none")
	}
	if compareRows(&s.Rows[1], a, sortBreakers) >= 0 {
		t.Error("an OPEN does not come before unknown states")
	}
}

// TestLatencyCellNeverZeroWhenUnknown: the P99 column shows the p99 where
// a histogram measured it, the average RT (said so) where the source has
// averages only, and "–" where nothing completed or no response time is
// read (the Prometheus source); sorted, p99s come
// first, then averages, then nothing.
func TestLatencyCellNeverZeroWhenUnknown(t *testing.T) {
	for _, c := range []struct {
		row  collector.ResourceRow
		want string
	}{
		{collector.ResourceRow{Completed: 10, HasP99: true, P99Ms: 812, AvgRtMs: 90}, "812ms"},
		{collector.ResourceRow{Completed: 10, AvgRtMs: 34.6}, "avg 35ms"},
		{collector.ResourceRow{Completed: 0, PassQPS: 5, AvgRtMs: 0}, "–"},
		{collector.ResourceRow{Completed: 0, HasP99: true}, "–"},
		{collector.ResourceRow{Completed: 10, RTUnknown: true}, "–"}, // Prometheus: no RT read
	} {
		if got := latencyCell(&c.row); got != c.want {
			t.Errorf("%+v: %q, want %q", c.row, got, c.want)
		}
	}
	p99 := collector.ResourceRow{Completed: 1, HasP99: true, P99Ms: 5}
	avg := collector.ResourceRow{Completed: 1, AvgRtMs: 900}
	none := collector.ResourceRow{PassQPS: 100}
	if compareRows(&p99, &avg, sortP99) >= 0 || compareRows(&avg, &none, sortP99) >= 0 {
		t.Error("sorted by p99: not p99s, then averages, then nothing")
	}
	if got := ifCompleted(&none, "0%"); got != noData {
		t.Errorf("nothing completed: %q", got)
	}
}

// TestP99SeriesWithoutHistogram: a step whose calls completed without an
// RT histogram has no p99 (NaN, a gap), not 0; a range of such steps only
// is said to have averages only.
func TestP99SeriesWithoutHistogram(t *testing.T) {
	nan := math.NaN()
	d := &collector.Detail{ErrorRatio: []float64{nan, 0, 0.1}, P99Ms: []float64{nan, nan, nan}}
	p99, avgOnly := p99Series(d)
	if !avgOnly || !math.IsNaN(p99[0]) || !math.IsNaN(p99[1]) || !math.IsNaN(p99[2]) {
		t.Errorf("averages only: %v %v", p99, avgOnly)
	}
	d.P99Ms[2] = 200
	p99, avgOnly = p99Series(d)
	if avgOnly || p99[2] != 200 || !math.IsNaN(p99[1]) {
		t.Errorf("one step measured: %v %v", p99, avgOnly)
	}
	d = &collector.Detail{ErrorRatio: []float64{nan, nan}, P99Ms: []float64{nan, nan}}
	if _, avgOnly = p99Series(d); avgOnly {
		t.Error("nothing completed is not averages only")
	}
}

// provenanceDetail is shop/inferred with an instance of each provenance.
func provenanceDetail() *collector.Detail {
	d := testDetail()
	d.App, d.Resource = "shop", "inferred"
	d.Findings = nil
	rule := d.Instances[0].Breakers
	d.Instances = []collector.InstanceDetail{
		{Instance: "go-1", State: core.Open, StateSince: t0 - 30_000, HasBreaker: true, Start: core.Closed,
			KnownFrom: t0 - 120_000, Breakers: rule, Provenance: collector.ProvenanceExact,
			Transitions: []collector.Transition{{AtMs: t0 - 30_000, From: core.Closed, To: core.Open}}},
		{Instance: "java-1", State: core.Open, StateSince: t0 - 60_000, HasBreaker: true, Start: core.Closed,
			KnownFrom: t0 - 3_600_000, Breakers: rule, Provenance: collector.ProvenanceInferred,
			Transitions: []collector.Transition{{AtMs: t0 - 60_000, From: core.Closed, To: core.Open, Inferred: true}}},
		{Instance: "java-2", State: core.Closed, HasBreaker: true, Start: core.Closed,
			KnownFrom: t0 - 3_600_000, Breakers: rule, Provenance: collector.ProvenanceUnknown},
	}
	return d
}

// TestTimelineSaysUnknownAndInferred: the band of an instance whose source
// cannot tell states says why instead of drawing CLOSED, and its state is
// "? unknown"; an inferred state and its transitions are marked; the
// legend names both; nothing is drawn before an instance's first data.
func TestTimelineSaysUnknownAndInferred(t *testing.T) {
	src := newStaticSource(provenanceSnapshot())
	d := provenanceDetail()
	src.details["shop\x00inferred"] = d
	m := newTestModel(src, 120, 40)
	press(m, "/inferred<enter><enter>")
	lines := map[string]string{}
	for _, l := range strings.Split(screenText(m), "\n") {
		for _, k := range []string{"TIMELINE", "go-1", "java-1", "java-2", "→"} {
			if strings.Contains(l, k) && lines[k] == "" {
				lines[k] = l
			}
		}
	}
	for k, want := range map[string][]string{
		"TIMELINE": {"· no data", "? unknown", "~ inferred"},
		"java-2":   {"? breaker states unknown", "Java Sentinel", "? unknown"},
		"java-1":   {"✖ OPEN~", "█"},
		"go-1":     {"·▁", "✖ OPEN "},
	} {
		for _, w := range want {
			if !strings.Contains(lines[k], w) {
				t.Errorf("%s: no %q in %q", k, w, lines[k])
			}
		}
	}
	if strings.ContainsAny(lines["java-2"], bandClosed+bandHalf+bandOpen) || strings.Contains(lines["java-2"], "CLOSED") {
		t.Errorf("an unknown state is drawn: %q", lines["java-2"])
	}
	if strings.Contains(lines["go-1"], "~") {
		t.Errorf("an exact state is marked inferred: %q", lines["go-1"])
	}
	press(m, "<down>") // java-1: its transitions
	text := screenText(m)
	if !strings.Contains(text, "java-1: 1 transition in range (inferred from counts, ±1 s)") ||
		!strings.Contains(text, "● CLOSED → ✖ OPEN  ~ inferred, ±1 s") {
		t.Errorf("inferred transitions not marked:\n%s", text)
	}
	press(m, "<down>") // java-2: why nothing is listed
	if text := screenText(m); !strings.Contains(text, "java-2: states unknown: not reported, and none inferred from counts") {
		t.Errorf("an unknown instance does not say why:\n%s", text)
	}
}

// TestInferredBoundIsTheInputStep: from an input coarser than per-second
// counts (the Prometheus source's step, said by the snapshot's
// CoarseInput warning) an inferred transition is said to be within that
// step, not ±1 s.
func TestInferredBoundIsTheInputStep(t *testing.T) {
	for _, step := range []int64{15_000, 60_000} {
		snap := provenanceSnapshot()
		snap.Warnings = append(snap.Warnings, collector.CoarseInput{StepMs: step, NoRules: true})
		src := newStaticSource(snap)
		src.details["shop\x00inferred"] = provenanceDetail()
		m := newTestModel(src, 120, 40)
		press(m, "/inferred<enter><enter>")
		press(m, "<down>") // java-1: its transitions
		text := screenText(m)
		bound := "within " + fmtSpanMs(step)
		if !strings.Contains(text, "java-1: 1 transition in range (inferred from counts, "+bound+")") ||
			!strings.Contains(text, "● CLOSED → ✖ OPEN  ~ inferred, "+bound) || strings.Contains(text, "±1 s") {
			t.Errorf("step %d ms: inferred transitions not said %q:\n%s", step, bound, text)
		}
	}
}

// TestHelpListsStateGlyphs: the help's GLYPHS name the unknown and
// inferred marks, and the average shown for p99.
func TestHelpListsStateGlyphs(t *testing.T) {
	m := newTestModel(newStaticSource(provenanceSnapshot()), 120, 40)
	press(m, "?")
	text := screenText(m)
	for _, w := range []string{"? unknown ?2: Java Sentinel and metric logs do not report states",
		"✖ OPEN~ ✖1~: inferred from counts, ±1 s (Prometheus: within its step)", "· no data  ? unknown  ~ inferred",
		"avg 35ms: no p99, the source has averages only"} {
		if !strings.Contains(text, w) {
			t.Errorf("the help does not say %q:\n%s", w, text)
		}
	}
}

// TestJavaFleetNeverShowsUnknownAsClosed replays the Java fleet through the
// collector: no row counts an instance CLOSED that the collector did not
// count CLOSED, and no p99 is 0.
func TestJavaFleetNeverShowsUnknownAsClosed(t *testing.T) {
	fr := replayMessages(t, "java-fleet", javaFleet(), -1)
	m := newTestModel(fr, 120, 40)
	snap := fr.Snapshot()
	var names []string
	for _, r := range snap.Rows {
		names = append(names, r.Resource)
		if r.HasP99 {
			t.Errorf("%s: a p99 without a histogram", r.Resource)
		}
	}
	rows := rowLines(t, m, names...)
	for _, r := range snap.Rows {
		line := rows[r.Resource]
		if r.Breakers.Closed == 0 && strings.Contains(line, glyphClosed) {
			t.Errorf("%s: CLOSED shown, the collector counts %+v: %q", r.Resource, r.Breakers, line)
		}
		if strings.Contains(line, " 0ms") {
			t.Errorf("%s: a p99 of 0: %q", r.Resource, line)
		}
	}
	if line := rows["queryPrice"]; !strings.Contains(line, "?3") {
		t.Errorf("queryPrice: %q", line)
	}
}

// TestRuleTextSaysRegexAndAverageRT: a Java regex rule shows its pattern,
// and a pre-1.8 average-RT rule says what it is, never a slow ratio.
func TestRuleTextSaysRegexAndAverageRT(t *testing.T) {
	r := core.BreakerRule{Resource: "GET:/api/x", Pattern: "GET:/api/.*", Strategy: core.ErrorCount, Threshold: 5}
	if s := breakerText(&r); !strings.Contains(s, "regex GET:/api/.*") {
		t.Errorf("regex rule: %q", s)
	}
	avg := core.BreakerRule{Resource: "db", Strategy: core.AverageRT, Threshold: 100, MinRequestAmount: 5}
	if s := breakerText(&avg); !strings.Contains(s, "average-rt 100ms avg") || strings.Contains(s, "maxRt") {
		t.Errorf("average-RT rule: %q", s)
	}
	f := core.FlowRule{Resource: "GET:/api/x", Pattern: "GET:/api/.*", Threshold: 10}
	if s := flowText(&f); !strings.Contains(s, "regex GET:/api/.*") {
		t.Errorf("regex flow rule: %q", s)
	}
}
