package ui

import (
	"strings"
	"testing"

	"github.com/sentinel-top/sentinel-top/collector/triage"
	"github.com/sentinel-top/sentinel-top/collector/whatif"
	"github.com/sentinel-top/sentinel-top/core"
)

// planScreen runs the dashboard over src until ready is drawn, opens a
// detail with the keys open, waits for opened, scrolls to its end until
// shown is drawn, and returns the last frame, the spaces at its lines'
// ends removed.
func planScreen(t *testing.T, src flowSource, ready, open, opened string, shown ...string) string {
	t.Helper()
	tm := startFlow(t, src)
	waitText(t, tm, ready)
	typeKeys(tm, open)
	waitText(t, tm, opened)
	typeKeys(tm, "<pgdown><pgdown><pgdown><pgdown>")
	waitText(t, tm, shown...)
	lines := strings.Split(finalScreen(t, tm), "\n")
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], " ")
	}
	return strings.Join(lines, "\n")
}

// screenHas requires every text in the screen.
func screenHas(t *testing.T, screen string, texts ...string) {
	t.Helper()
	for _, want := range texts {
		if !strings.Contains(screen, want) {
			t.Errorf("the detail lacks\n%s\nin\n%s", want, screen)
		}
	}
}

// TestFlowDetailShowsPlan: a recorded incident replayed through the real
// collector, as the binary does. Its alert says a plan was found safe;
// the detail it opens ends with the plan: the change, the instances' own
// values and the replay of both rules side by side.
func TestFlowDetailShowsPlan(t *testing.T) {
	fr := replayFixture(t, "sawtooth-db-slow", -2)
	if len(fr.c.Snapshot().Plans) != 1 {
		t.Fatalf("plans %+v", fr.c.Snapshot().Plans)
	}
	screen := planScreen(t, fr, "WARN sawtooth order/member-service…user/info ✓ plan up to 9 failed", "a<enter>", "FINDINGS",
		"PLAN  breaker rule · ✓ safe · because sawtooth · order-1, order-2", "WHAT IF")
	screenHas(t, screen,
		"PLAN  breaker rule · ✓ safe · because sawtooth · order-1, order-2\n"+
			"  replayed on this input, it loses no outage the current rule caught and catches none more than one statIntervalMs later\n"+
			"                                    CURRENT     PROPOSED\n"+
			"  retryTimeoutMs                      10000  30000-40000\n"+
			"    per instance: order-1 30000, order-2 40000\n"+
			"  WHAT IF\n"+
			"  replayed in 500 ms steps; estimated:",
		"  trips                                   2            2\n"+
			"  trips on fewer than 20 calls            0            0\n"+
			"  outages caught                     2 of 2       2 of 2\n"+
			"  detected after (ms)              620, 669     620, 669\n"+
			"  probes                              18-20            7\n"+
			"  calls passed during outages       278-307      265-298\n"+
			"  healthy calls blocked             664-893    1105-1342\n",
	)
}

// notSafePlan is a plan for the golden source's GET:/member/info that no
// change passed, over instances with hostile names.
func notSafePlan() triage.Plan {
	return triage.Plan{App: "order", Resource: "GET:/member/info", Rule: "breaker", RuleID: hostile[2],
		Instances: []string{hostile[0], "order-2"},
		Current: triage.PlanRule{Strategy: core.SlowRequestRatio, MaxAllowedRtMs: 200, Threshold: 0.5, MinRequestAmount: 5,
			StatIntervalMs: 1000, RetryTimeoutMs: 10000},
		Rejected: triage.RuleValues{MaxAllowedRtMs: 400, RetryTimeoutMs: 30000},
		Because:  []triage.Kind{triage.KindSawtooth},
		Why:      "no safe change found: with maxAllowedRtMs 200 -> 400 and retryTimeoutMs 10000 -> 30000 the breaker would have missed 2 of the 2 outages the current rule caught",
		WhatIf: &whatif.Result{StepMs: 1000, Outages: 2,
			Current:  whatif.Metrics{Trips: 7, OutagesCaught: 2, DetectMs: []int64{900, 1100}, Probes: 12},
			Proposed: whatif.Metrics{Trips: 1, Probes: 2, PassedDuringOutage: whatif.Range{400, 520}}},
	}
}

// TestFlowDetailPlanNotSafe: a plan no change passed says so and why, and
// its alert has no mark; the values it considered stand beside the
// current ones with their replay; the names in it are escaped.
func TestFlowDetailPlanNotSafe(t *testing.T) {
	snap := testSnapshot()
	snap.Plans = []triage.Plan{notSafePlan()}
	src := goldenSource()
	src.set(snap)
	screen := planScreen(t, src, "GET:/member/info", "<enter>", "TIMELINE", "no safe change found", "CONSIDERED")
	screenHas(t, screen,
		"PLAN  breaker rule id title\\x1…x1b\\end · no safe change found · because sawtooth · clear\\x1b[2Jscreen, order-2\n"+
			"  with maxAllowedRtMs 200 -> 400 and retryTimeoutMs 10000 -> 30000 the breaker would have missed 2 of the 2 outages the\n"+
			"  current rule caught\n"+
			"                                   CURRENT  CONSIDERED\n"+
			"  maxAllowedRtMs                       200         400\n"+
			"  retryTimeoutMs                     10000       30000\n"+
			"  WHAT IF\n"+
			"  replayed in 1000 ms steps\n"+
			"  trips                                  7           1\n",
		"  outages caught                    2 of 2      0 of 2\n"+
			"  detected after (ms)            900, 1100        none\n",
		"  calls passed during outages            0     400-520\n",
	)
	if main := screenText(newTestModel(src, 120, 40)); strings.Contains(main, glyphPlan) || !strings.Contains(main, "CRIT sawtooth") {
		t.Errorf("the alert of a plan that is not safe is marked:\n%s", main)
	}
}
