package triage

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
)

// saleGateways feeds the sale event: 8 gateways limit createOrder
// to 1000 QPS from t0 (version "v1000"), and from t0+40 s a push lowers it
// to 200 ("v200"), reaching gateway-1 to gateway-8 37 ms apart. It returns
// the gateways' names.
func saleGateways(e *Feeder) []string {
	const res = "createOrder"
	var names []string
	for i := 1; i <= 8; i++ {
		name := fmt.Sprintf("gateway-%d", i)
		names = append(names, name)
		e.Hello(name, "gateway", t0, t0-60000)
		e.Rules(name, t0, "v1000", nil, []core.FlowRule{{Resource: res, Threshold: 1000}})
	}
	for i, name := range names {
		e.Rules(name, t0+40000+int64(i)*37, "v200", nil, []core.FlowRule{{Resource: res, Threshold: 200}})
	}
	return names
}

// driftOf is the one rule-drift finding of the input feed gives, judged at
// the time feed returns.
func driftOf(t *testing.T, feed func(e *Feeder) int64) (Finding, *RuleDriftFacts) {
	t.Helper()
	f, _ := fires(t, feed, KindRuleDrift, true)
	return f, f.Facts.(*RuleDriftFacts)
}

func TestRuleDriftReverted(t *testing.T) {
	old := []core.FlowRule{{Resource: "createOrder", Threshold: 1000}}
	cases := []struct {
		name     string
		feed     func(e *Feeder) int64
		reverted []Revert
		because  string // the advice's words on why it went back
	}{
		{"a restart loads a stale local snapshot", func(e *Feeder) int64 {
			saleGateways(e)
			e.Bye("gateway-6", t0+70000)
			e.Hello("gateway-6", "gateway", t0+70000, t0+70000)
			e.Rules("gateway-6", t0+70000, "v1000", nil, old)
			return t0 + 150000
		}, []Revert{{Instance: "gateway-6", From: "v200", To: "v1000", At: t0 + 70000, Restarted: true}},
			"1 went back after a restart: make a starting process load the rule source's current rules, not a local snapshot of older ones"},
		{"a restart that first reports no rules, then the stale snapshot", func(e *Feeder) int64 {
			saleGateways(e)
			e.Bye("gateway-6", t0+70000)
			e.Hello("gateway-6", "gateway", t0+70000, t0+70000)
			e.Rules("gateway-6", t0+70000, "v0", nil, nil)
			e.Rules("gateway-6", t0+70500, "v1000", nil, old)
			return t0 + 150000
		}, []Revert{{Instance: "gateway-6", From: "v200", To: "v1000", At: t0 + 70500, Restarted: true}},
			"1 went back after a restart"},
		{"a second loadRules from an init class, no restart", func(e *Feeder) int64 {
			saleGateways(e)
			e.Rules("gateway-6", t0+70000, "v1000", nil, old)
			return t0 + 150000
		}, []Revert{{Instance: "gateway-6", From: "v200", To: "v1000", At: t0 + 70000, Restarted: false}},
			"1 went back without a restart: a second loadRules (from an init class, say) replaced the pushed rules, so load rules in one place only"},
		{"a restart that loads the pushed rules, then a second loadRules", func(e *Feeder) int64 {
			saleGateways(e)
			e.Bye("gateway-6", t0+60000)
			e.Hello("gateway-6", "gateway", t0+60000, t0+60000)
			e.Rules("gateway-6", t0+60000, "v200", nil, []core.FlowRule{{Resource: "createOrder", Threshold: 200}})
			e.Rules("gateway-6", t0+70000, "v1000", nil, old)
			return t0 + 150000
		}, []Revert{{Instance: "gateway-6", From: "v200", To: "v1000", At: t0 + 70000, Restarted: false}},
			"1 went back without a restart"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, x := driftOf(t, c.feed)
			if f.Severity != Critical || x.Newest != "v200" || !slices.Equal(x.Reverted, c.reverted) {
				t.Fatalf("severity %v newest %q reverted %+v, want critical v200 %+v", f.Severity, x.Newest, x.Reverted, c.reverted)
			}
			// The 1000 limit was first seen when the fleet first ran it,
			// not when gateway-6 went back to it.
			if len(x.Groups) != 2 || x.Groups[0].Version != "v200" || x.Groups[0].FirstSeen != t0+40000 || len(x.Groups[0].Instances) != 7 ||
				x.Groups[1].Version != "v1000" || x.Groups[1].FirstSeen != t0 || !slices.Equal(x.Groups[1].Instances, []string{"gateway-6"}) {
				t.Fatalf("groups %+v", x.Groups)
			}
			want := "push the newest version again to the 1 instance not running it (never an older one) until all 8 instances report it; " + c.because
			if !strings.HasPrefix(f.Advice, want) {
				t.Fatalf("advice %q, want it to begin %q", f.Advice, want)
			}
			if want := "8 instances are split into 2 rule versions for this resource; 7 of them run the newest version with rules for it; 1 went back to a version the app ran before the one it left"; !strings.HasPrefix(f.Summary, want) {
				t.Fatalf("summary %q, want it to begin %q", f.Summary, want)
			}
			_, js := factsJSON(t, f)
			rev, _ := json.Marshal(js["reverted"])
			wantRev := fmt.Sprintf(`[{"at":%d,"from":"v200","instance":"gateway-6","restarted":%v,"to":"v1000"}]`, c.reverted[0].At, c.reverted[0].Restarted)
			if js["newest"] != "v200" || string(rev) != wantRev {
				t.Fatalf("JSON newest %v reverted %s, want %s", js["newest"], rev, wantRev)
			}
			var push, reverted *Fact
			for i, ev := range x.Evidence() {
				switch ev.Label {
				case "Push again":
					push = &x.Evidence()[i]
				case "Reverted":
					reverted = &x.Evidence()[i]
				}
			}
			if push == nil || push.Parts[1].Input[0] != "v200" || !slices.Equal(push.Parts[3].Input, []string{"gateway-6"}) {
				t.Fatalf("push again %+v", push)
			}
			how := "without a restart"
			if c.reverted[0].Restarted {
				how = "after a restart"
			}
			if reverted == nil || reverted.Parts[0].Input[0] != "gateway-6" || reverted.Parts[2].Input[0] != "v200" || reverted.Parts[4].Input[0] != "v1000" ||
				!strings.HasSuffix(reverted.Parts[5].Text, how) {
				t.Fatalf("reverted evidence %+v", reverted)
			}
		})
	}
}

// Going to a version is a revert only when the app ran it before the one
// left, with other rules for the resource.
func TestRuleDriftNotReverted(t *testing.T) {
	cases := []struct {
		name string
		feed func(e *Feeder) int64
	}{
		{"an instance loads the app's rules after starting without them", func(e *Feeder) int64 {
			saleGateways(e)
			e.Hello("gateway-9", "gateway", t0+60000, t0+60000)
			e.Rules("gateway-9", t0+60000, "v0", nil, nil)
			e.Rules("gateway-9", t0+90000, "v1000", nil, []core.FlowRule{{Resource: "createOrder", Threshold: 1000}})
			return t0 + 150000
		}},
		{"a push that reaches only some instances", func(e *Feeder) int64 {
			saleGateways(e)
			for _, in := range []string{"gateway-1", "gateway-2"} {
				e.Rules(in, t0+80000, "v100", nil, []core.FlowRule{{Resource: "createOrder", Threshold: 100}})
			}
			return t0 + 150000
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, x := driftOf(t, c.feed)
			_, js := factsJSON(t, f)
			if len(x.Reverted) != 0 || js["reverted"] != nil || strings.Contains(f.Summary, "went back") || strings.Contains(f.Advice, "went back") {
				t.Fatalf("reverted %+v, summary %q, advice %q", x.Reverted, f.Summary, f.Advice)
			}
		})
	}
}

// When the newest version cannot be told, the finding says so and advises
// no push at all.
func TestRuleDriftNewestNotTold(t *testing.T) {
	const res = "createOrder"
	flow := func(qps float64) []core.FlowRule { return []core.FlowRule{{Resource: res, Threshold: qps}} }
	cases := []struct {
		name     string
		feed     func(e *Feeder) int64
		why      NewestUnknown
		at       int64
		reverted int
	}{
		{"two versions first seen at the same instant", func(e *Feeder) int64 {
			e.Hello("gateway-1", "gateway", t0, t0)
			e.Rules("gateway-1", t0, "va", nil, flow(1000))
			e.Hello("gateway-2", "gateway", t0, t0)
			e.Rules("gateway-2", t0, "vb", nil, flow(200))
			return t0 + 60000
		}, NewestTie, t0, 0},
		{"every version still run was run before a later one", func(e *Feeder) int64 {
			saleGateways(e)
			for i, name := range []string{"gateway-1", "gateway-2", "gateway-3"} {
				e.Rules(name, t0+50000+int64(i), "v100", nil, flow(100))
			}
			for i := 1; i <= 8; i++ { // every gateway restarts, each from a snapshot of its own age
				name, at := fmt.Sprintf("gateway-%d", i), t0+90000+int64(i)*1000
				version, qps := "v1000", 1000.0
				if i%2 == 0 {
					version, qps = "v200", 200
				}
				e.Bye(name, at)
				e.Hello(name, "gateway", at, at)
				e.Rules(name, at, version, nil, flow(qps))
			}
			return t0 + 150000
		}, NewestLeft, t0 + 50000, 5}, // gateway-1, 3, 5 and 7 to v1000, gateway-2 to v200
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, x := driftOf(t, c.feed)
			if x.Newest != "" || x.Unknown != c.why || x.LatestAt != c.at || len(x.Reverted) != c.reverted {
				t.Fatalf("newest %q unknown %q at %d, %d reverted; want none, %q at %d, %d reverted", x.Newest, x.Unknown, x.LatestAt-t0, len(x.Reverted), c.why, c.at-t0, c.reverted)
			}
			for _, r := range x.Reverted {
				if !r.Restarted || r.From == r.To {
					t.Fatalf("revert %+v", r)
				}
			}
			if !strings.HasPrefix(f.Advice, "push no version until the rule source says which one is meant") || strings.Contains(f.Advice, "push the newest") {
				t.Fatalf("advice %q", f.Advice)
			}
			if !strings.Contains(f.Summary, "which version is the newest cannot be told: "+newestUnknownWords(c.why, c.at)) {
				t.Fatalf("summary %q", f.Summary)
			}
			_, js := factsJSON(t, f)
			if _, ok := js["newest"]; ok {
				t.Fatalf("JSON has newest: %v", js)
			}
			for _, ev := range x.Evidence() {
				if ev.Label == "Push again" || (ev.Label == "Newest" && !strings.HasPrefix(ev.Parts[0].Text, "cannot be told (")) {
					t.Fatalf("evidence %+v", ev)
				}
			}
		})
	}
}

// An episode that ended before the input did is told in the past tense,
// with nothing to push: the fleet already runs the newest version.
func TestEndedEpisodesInThePastTense(t *testing.T) {
	const res = "queryPrice"
	t.Run("rule-drift, a lagging instance", func(t *testing.T) {
		f, x := driftOf(t, func(e *Feeder) int64 {
			in := appFleet(e, "price", 3, t0, "v1", slowRule(res))
			pushed := slowRule(res)
			pushed.Threshold = 0.8
			for i, name := range in {
				e.Rules(name, t0+10000+int64(i)*20000, "v2", []core.BreakerRule{pushed}, nil)
			}
			return t0 + 100000
		})
		if f.Severity != Warning || x.Newest != "v2" || f.From != t0+10000 || f.To != t0+50000 {
			t.Fatalf("severity %v newest %q from %d to %d", f.Severity, x.Newest, f.From-t0, f.To-t0)
		}
		wantSummary := "3 instances were split into 2 rule versions for this resource for 40.0 s; 2 of them ran the newest version with rules for it"
		wantAdvice := "nothing to push now: when the split ended, all 3 instances present ran the newest version's rules; " +
			"to catch the next split sooner, compare the rule versions the instances report after each push"
		if f.Summary != wantSummary || f.Advice != wantAdvice {
			t.Fatalf("summary %q\nadvice %q", f.Summary, f.Advice)
		}
	})
	t.Run("rule-drift, a reverted gateway pushed again", func(t *testing.T) {
		f, x := driftOf(t, func(e *Feeder) int64 {
			saleGateways(e)
			e.Bye("gateway-6", t0+70000)
			e.Hello("gateway-6", "gateway", t0+70000, t0+70000)
			e.Rules("gateway-6", t0+70000, "v1000", nil, []core.FlowRule{{Resource: "createOrder", Threshold: 1000}})
			e.Rules("gateway-6", t0+100000, "v200", nil, []core.FlowRule{{Resource: "createOrder", Threshold: 200}})
			return t0 + 150000
		})
		if f.Severity != Warning || x.Newest != "v200" || len(x.Reverted) != 1 || !x.Reverted[0].Restarted {
			t.Fatalf("severity %v newest %q reverted %+v", f.Severity, x.Newest, x.Reverted)
		}
		wantSummary := "8 instances were split into 2 rule versions for this resource for 30.0 s; 7 of them ran the newest version with rules for it; " +
			"1 went back to a version the app ran before the one it left (1 after a process restart)"
		wantAdvice := "nothing to push now: when the split ended, all 8 instances present ran the newest version's rules; " +
			"1 went back after a restart: make a starting process load the rule source's current rules, not a local snapshot of older ones, or its next restart reverts it again"
		if f.Summary != wantSummary || f.Advice != wantAdvice {
			t.Fatalf("summary %q\nadvice %q", f.Summary, f.Advice)
		}
		for _, ev := range x.Evidence() {
			if ev.Label == "Push again" {
				t.Fatalf("evidence %+v", ev)
			}
		}
	})
	t.Run("rule-drift, the instance on the newest left", func(t *testing.T) {
		f, x := driftOf(t, func(e *Feeder) int64 {
			appFleet(e, "price", 3, t0, "v1", slowRule(res))
			pushed := slowRule(res)
			pushed.Threshold = 0.8
			e.Rules("price-3", t0+10000, "v2", []core.BreakerRule{pushed}, nil)
			e.Bye("price-3", t0+30000)
			return t0 + 80000
		})
		want := "push no version before the rule source says which one is meant: when the split ended, the 2 instances present agreed on other rules than the newest version's"
		if f.Severity != Warning || x.Newest != "v2" || f.Advice != want {
			t.Fatalf("severity %v newest %q advice %q", f.Severity, x.Newest, f.Advice)
		}
	})
	t.Run("unprotected, an instance that missed a push and got it later", func(t *testing.T) {
		f, _ := fires(t, func(e *Feeder) int64 {
			in := appFleet(e, "price", 3, t0, "v1")
			e.Rules("price-1", t0+20000, "v2", []core.BreakerRule{slowRule(res)}, nil)
			e.Rules("price-2", t0+20010, "v2", []core.BreakerRule{slowRule(res)}, nil)
			traffic(e, in, res, t0+20000, t0+40000, 5)
			e.Rules("price-3", t0+40000, "v2", []core.BreakerRule{slowRule(res)}, nil)
			traffic(e, in, res, t0+40000, t0+80000, 5)
			return t0 + 80000
		}, KindUnprotected, true)
		want := "check the subscription to the rule source of the 1 instance, which missed a push (its traffic without a rule for this resource ended before the input did), " +
			"and after each push compare the rule versions every instance reports"
		if f.Severity != Warning || f.Facts.(*UnprotectedFacts).Cause != CauseMissedPush || f.Facts.(*UnprotectedFacts).Passed != 200 || f.Advice != want {
			t.Fatalf("severity %v facts %+v advice %q", f.Severity, f.Facts, f.Advice)
		}
	})
}

// Rules are dated by content: a version of an instance's own (its
// retryTimeoutMs jittered) carrying old rules neither makes them the
// newest nor hides a revert to them.
func TestRuleDriftDatesRulesNotVersions(t *testing.T) {
	const res = "createOrder"
	old, pushed := slowRule(res), slowRule(res)
	pushed.Threshold = 0.8
	own := func(r core.BreakerRule, retry uint32) []core.BreakerRule {
		r.RetryTimeoutMs = retry
		return []core.BreakerRule{r}
	}
	f, x := driftOf(t, func(e *Feeder) int64 {
		appFleet(e, "order", 3, t0, "v1", old)
		for i, in := range []string{"order-1", "order-2", "order-3"} {
			e.Rules(in, t0+10000+int64(i), "v2", []core.BreakerRule{pushed}, nil)
		}
		// A scale-out instance starts from an old image, its own retry.
		e.Hello("order-4", "order", t0+30000, t0+30000)
		e.Rules("order-4", t0+30000, "v1-4", own(old, 12345), nil)
		// order-2 restarts from a stale snapshot with its own retry.
		e.Bye("order-2", t0+40000)
		e.Hello("order-2", "order", t0+40000, t0+40000)
		e.Rules("order-2", t0+40000, "v1-2", own(old, 23456), nil)
		return t0 + 60000
	})
	want := []Revert{{Instance: "order-2", From: "v2", To: "v1-2", At: t0 + 40000, Restarted: true}}
	if x.Newest != "v2" || !slices.Equal(x.Reverted, want) {
		t.Fatalf("newest %q reverted %+v, want v2 %+v", x.Newest, x.Reverted, want)
	}
	// Each group's firstSeen is its version's: the instances' own ones
	// were first seen when they were sent.
	var seen []string
	for _, g := range x.Groups {
		seen = append(seen, fmt.Sprintf("%s@%d", g.Version, g.FirstSeen-t0))
	}
	if !slices.Equal(seen, []string{"v2@10000", "v1-2@40000", "v1-4@30000"}) {
		t.Fatalf("groups %v", seen)
	}
	if !strings.HasPrefix(f.Advice, "push the newest version again to the 2 instances not running it") {
		t.Fatalf("advice %q", f.Advice)
	}
}
