package triage

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
)

// paramPlanOf makes the plans of the feed's findings and returns its one
// hot-parameter plan and its hot-value finding.
func paramPlanOf(t *testing.T, e *Feeder, now int64) (Plan, Finding) {
	t.Helper()
	fs := e.Findings(now)
	plans := e.Plans(now, fs)
	if len(plans) != 1 || plans[0].Param == nil || plans[0].Rule != "param" {
		t.Fatalf("plans %+v", plans)
	}
	return plans[0], one(t, fs, KindHotValue)
}

// The exception for a VIP at 250 a second against 200, replayed on its
// own entries: it admits the 50 a second the limit blocked, and the
// finding proposes what the plan does.
func TestParamPlanForAVIP(t *testing.T) {
	e := NewFeeder(Config{})
	hotApp(e, "o-1")
	hotBuckets(e, "o-1", t0, t0+60000, vip("vip-123"))
	p, f := paramPlanOf(t, e, t0+60000)
	w := p.Param.WhatIf
	if !p.Safe || p.Param.Exception != 300 || p.Param.Was != 200 || w == nil || w.Offered != 15000 ||
		w.Current.Blocked < 2900 || w.Current.Blocked > 3100 || w.Proposed.Blocked != 0 || w.Estimated || w.AddedInSpells != 0 {
		t.Fatalf("plan %+v, replay %+v", p, w)
	}
	if f.Facts.(*HotValueFacts).Suggest == nil || !p.Covers(&f) {
		t.Fatalf("finding %+v", f)
	}
	ch := p.Changes()
	if len(ch) != 1 || ch[0].Field != "specificItems" || ch[0].Key != "vip-123" || ch[0].Current != 200 || ch[0].Lowest != 300 || len(p.LeftOut()) != 0 {
		t.Fatalf("changes %+v", ch)
	}
	if v, why := p.Verdict(); v != "safe" || !strings.Contains(why, "admits "+itoa(w.Current.Blocked)+" more of the value's calls") {
		t.Fatalf("verdict %q: %q", v, why)
	}
	b, err := json.Marshal(p)
	if err != nil || !strings.Contains(string(b), `"rule":"param"`) || !strings.Contains(string(b), `"proposed":{"specificItems":{"vip-123":300}}`) ||
		!strings.Contains(string(b), `"threshold":200`) || strings.Contains(string(b), "strategy") {
		t.Fatalf("json %s %v", b, err)
	}
}

// While the resource's breaker was open, the limit was protecting a
// failing downstream: an exception adding calls then is no safe change,
// and the finding proposes none.
func TestParamPlanRefusedWhileTheBreakerWasOpen(t *testing.T) {
	e := NewFeeder(Config{})
	hotApp(e, "o-1")
	hotBuckets(e, "o-1", t0, t0+30000, vip("vip-123"))
	e.Transition("o-1", core.Transition{Resource: hotRes, RuleID: "b", From: core.Closed, To: core.Open, AtMs: t0 + 30000})
	hotBuckets(e, "o-1", t0+30000, t0+40000, vip("vip-123"))
	e.Transition("o-1", core.Transition{Resource: hotRes, RuleID: "b", From: core.Open, To: core.HalfOpen, AtMs: t0 + 40000})
	e.Transition("o-1", core.Transition{Resource: hotRes, RuleID: "b", From: core.HalfOpen, To: core.Closed, AtMs: t0 + 40100})
	hotBuckets(e, "o-1", t0+40000, t0+60000, vip("vip-123"))
	p, f := paramPlanOf(t, e, t0+60000)
	if p.Safe || p.Param.WhatIf == nil || p.Param.WhatIf.AddedInSpells < 400 || !strings.HasPrefix(p.Why, noSafeChange) ||
		!strings.Contains(p.Why, "while its breaker was open") || len(p.Changes()) != 0 || len(p.LeftOut()) != 1 {
		t.Fatalf("plan %+v", p)
	}
	if x := f.Facts.(*HotValueFacts); x.Suggest != nil || f.Advice != p.Why {
		t.Fatalf("finding proposes %+v, advice %q", x.Suggest, f.Advice)
	}
	b, _ := json.Marshal(p)
	if !strings.Contains(string(b), `"proposed":{}`) {
		t.Fatalf("json %s", b)
	}
}

// A concurrency limit cannot be replayed: no change is proposed, and the
// plan says why.
func TestParamPlanConcurrency(t *testing.T) {
	e := NewFeeder(Config{})
	e.Hello("o-1", "orders", t0, t0-1000)
	r := vipRule()
	r.MetricType, r.Threshold = core.HotParamConcurrency, 20
	e.Rules("o-1", t0, "v1", nil, nil, r)
	hotBuckets(e, "o-1", t0, t0+60000, blocking("v", 50, 0))
	p, f := paramPlanOf(t, e, t0+60000)
	if p.Safe || p.Param.WhatIf != nil || !strings.Contains(p.Why, "concurrency") || f.Facts.(*HotValueFacts).Suggest != nil {
		t.Fatalf("plan %+v", p)
	}
	if _, _, ok := p.Replay(); ok {
		t.Fatal("a replay shown")
	}
}
