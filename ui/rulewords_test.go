package ui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/core"
)

// ruleWordsSnapshot has a row guarded by flow rules only, one by flow and
// hot-parameter rules, one by hot-parameter rules only, one by a breaker
// (and a flow rule), one by none, and one whose rules were never read.
func ruleWordsSnapshot() *collector.Snapshot {
	row := func(res string) collector.ResourceRow {
		return collector.ResourceRow{App: "shop", Resource: res, Instances: 2, PassQPS: 10, Completed: 100,
			AvgRtMs: 20, P99Ms: 50, HasP99: true}
	}
	rows := []collector.ResourceRow{row("flowonly"), row("flowparam"), row("paramonly"), row("breaker"), row("bare"), row("unread")}
	rows[0].HasFlow = true
	rows[1].HasFlow, rows[1].HasParam = true, true
	rows[2].HasParam = true
	rows[3].HasBreaker, rows[3].HasFlow, rows[3].Breakers = true, true, collector.StateCounts{Open: 1, Closed: 1}
	rows[5].RulesUnknown = true
	return &collector.Snapshot{At: t0, Seq: 1, Mode: collector.ModeLive, Apps: 1, Instances: 2, Resources: len(rows),
		Messages: 100, Rows: rows}
}

// TestBreakersSayWhichRulesGuard: a row no breaker guards says in
// BREAKERS which rules do ("flow", "flow+param", "param"), "no rule" only
// when every instance's rules were read and none guards it, "rules
// unknown" when some were never read; a row with a breaker shows its
// counts. The words fit whole, and the next column lines up after them.
func TestBreakersSayWhichRulesGuard(t *testing.T) {
	for _, size := range [][2]int{{120, 40}, {80, 24}} {
		m := newTestModel(newStaticSource(ruleWordsSnapshot()), size[0], size[1])
		rows := rowLines(t, m, "flowonly", "flowparam", "paramonly", "breaker", "bare", "unread")
		cell := func(res string) string {
			l := rows[res]
			i := strings.Index(l, "50ms")
			if i < 0 {
				t.Fatalf("%dx%d %s: no P99 in %q", size[0], size[1], res, l)
			}
			return strings.Fields(l[i+len("50ms"):] + " |")[0]
		}
		for res, want := range map[string]string{
			"flowonly": "flow", "flowparam": "flow+param", "paramonly": "param", "breaker": "✖1", "bare": "no", "unread": "rules",
		} {
			if got := cell(res); got != want {
				t.Errorf("%dx%d %s: BREAKERS begins %q, want %q (%q)", size[0], size[1], res, got, want, rows[res])
			}
		}
		if !strings.Contains(rows["bare"]+" ", " no rule ") || !strings.Contains(rows["unread"]+" ", " rules unknown ") {
			t.Errorf("%dx%d: %q, %q", size[0], size[1], rows["bare"], rows["unread"])
		}
		// The trend begins at the same cell on every row: the widest word
		// took its room.
		trend := -1
		for res, l := range rows {
			i := strings.Index(l, "█")
			if i < 0 {
				continue
			}
			if at := ansi.StringWidth(l[:i]); trend < 0 {
				trend = at
			} else if at != trend {
				t.Errorf("%dx%d %s: trend at cell %d, another row's at %d", size[0], size[1], res, at, trend)
			}
		}
	}
}

// TestDetailSaysWhichRulesGuard: the detail screen of a resource no
// breaker guards says what does, in its header, on each instance's band
// and in its rules, as the row does.
func TestDetailSaysWhichRulesGuard(t *testing.T) {
	for _, c := range []struct {
		res  string
		in   collector.InstanceDetail
		head string // the rule line
		band string
		rule string // the rules section's line of the instance
	}{
		{"flowonly", collector.InstanceDetail{Flows: []core.FlowRule{{Resource: "flowonly", Threshold: 100}}},
			"flow rules, no breaker rule", "flow rules, no breaker rule", "flow 100/s reject"},
		{"flowparam", collector.InstanceDetail{Flows: []core.FlowRule{{Resource: "flowparam", Threshold: 100}},
			Params: []core.HotParamRule{{Resource: "flowparam", MetricType: core.HotParamQPS, Threshold: 10, DurationInSec: 1}}},
			"flow+param rules, no breaker rule", "flow+param rules, no breaker rule", "flow 100/s reject"},
		{"bare", collector.InstanceDetail{}, "no breaker rule", "no breaker rule", "no rule"},
		{"unread", collector.InstanceDetail{RulesUnknown: true, Provenance: collector.ProvenanceUnknown},
			"rules unknown", "rules unknown", "rules unknown"},
	} {
		t.Run(c.res, func(t *testing.T) {
			src := newStaticSource(ruleWordsSnapshot())
			in := c.in
			in.Instance, in.RulesVersion, in.KnownFrom = "shop-1", "v1", t0-300_000
			src.details["shop\x00"+c.res] = &collector.Detail{App: "shop", Resource: c.res, StepMs: 1000,
				Instances: []collector.InstanceDetail{in}}
			m := newTestModel(src, 120, 60)
			press(m, "/"+c.res+"<enter><enter>")
			screen := screenText(m)
			lines := strings.Split(screen, "\n")
			if len(lines) < 4 || !strings.HasPrefix(lines[3], c.head+" · 1 instance") {
				t.Fatalf("rule line %q, want %q first:\n%s", lines[min(3, len(lines)-1)], c.head, screen)
			}
			var band, rule bool
			for _, l := range lines {
				f := strings.Join(strings.Fields(l), " ")
				band = band || strings.HasSuffix(f, "shop-1 "+c.band)
				rule = rule || strings.Contains(f, "shop-1 v1 "+c.rule)
			}
			if !band || !rule {
				t.Errorf("band %q shown %v, rule %q shown %v:\n%s", c.band, band, c.rule, rule, screen)
			}
		})
	}
}

// TestDetailOfDepartedFleetSaysSo: when every instance of a resource is
// gone, the detail's header gives their last known breaker rule as theirs
// and counts them as the table's INST does: none live, the departed
// apart.
func TestDetailOfDepartedFleetSaysSo(t *testing.T) {
	snap := ruleWordsSnapshot()
	snap.Rows[3].Instances, snap.Rows[3].Breakers = 0, collector.StateCounts{}
	src := newStaticSource(snap)
	rule := core.BreakerRule{Resource: "breaker", Strategy: core.ErrorRatio, Threshold: 0.5, RetryTimeoutMs: 5000}
	d := &collector.Detail{App: "shop", Resource: "breaker", StepMs: 1000, HasBreaker: true, RulesOfGone: true,
		Strategy: core.ErrorRatio, Threshold: 0.5}
	for _, name := range []string{"shop-1", "shop-2", "shop-3", "shop-4"} {
		d.Instances = append(d.Instances, collector.InstanceDetail{Instance: name, Gone: true, HasBreaker: true,
			Breakers: []core.BreakerRule{rule}, RulesVersion: "v1", KnownFrom: t0 - 300_000})
	}
	src.details["shop\x00breaker"] = d
	m := newTestModel(src, 120, 60)
	press(m, "/breaker<enter><enter>")
	screen := screenText(m)
	lines := strings.Split(screen, "\n")
	if len(lines) < 4 || !strings.HasPrefix(lines[3], "error-ratio 50% (last known: every instance gone) · 0 instances live, 4 gone") {
		t.Fatalf("header %q:\n%s", lines[min(3, len(lines)-1)], screen)
	}
}
