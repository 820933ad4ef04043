package triage

import (
	"encoding/json"
	"strings"
	"testing"
)

// A flow rule naming the app itself, at 200 QPS offered against its
// threshold of 200 and then 300: limitApp default replayed on the traffic
// blocks what goes over, and the finding proposes what the plan does.
func TestFlowPlanForAnOriginMismatch(t *testing.T) {
	e := NewFeeder(Config{})
	limited("order-service", "order-service")(e)
	fs := e.Findings(t0 + 90000)
	plans := e.Plans(t0+90000, fs)
	if len(plans) != 1 || plans[0].Flow == nil || plans[0].Rule != "flow" {
		t.Fatalf("plans %+v", plans)
	}
	p := plans[0]
	w := p.Flow.WhatIf
	// 100 calls in each 500 ms bucket: 200 a second, the threshold: every
	// one passes, with or without the rule.
	if !p.Safe || w == nil || w.Offered != 18000 || w.Current.Passed != 18000 || w.Proposed.Passed+w.Proposed.Blocked != 18000 ||
		w.Proposed.Blocked > 200 || p.Flow.RecordedBlocked != 0 {
		t.Fatalf("plan %+v, replay %+v", p, w)
	}
	f := one(t, fs, KindInertRule)
	if x := f.Facts.(*InertRuleFacts); x.Suggest == nil || x.Suggest.LimitApp != "default" || !p.Covers(&f) {
		t.Fatalf("finding %+v", f)
	}
	ch := p.Changes()
	if len(ch) != 1 || ch[0].String() != "limitApp the app's own name -> default" || len(p.LeftOut()) != 0 {
		t.Fatalf("changes %+v", ch)
	}
	for _, fl := range p.CurrentFields() {
		if strings.Contains(fl.Value, "order-service") {
			t.Fatalf("the app's name (input) in the plan's words: %+v", fl)
		}
	}
	b, _ := json.Marshal(p)
	if !strings.Contains(string(b), `"proposed":{"limitApp":"default"}`) || !strings.Contains(string(b), `"limitApp":"order-service"`) ||
		strings.Contains(string(b), "strategy\"") {
		t.Fatalf("json %s", b)
	}
}

// At twice the threshold, the limit applied to every caller blocks half
// of the calls, and the verdict says how many.
func TestFlowPlanBlocksWhatGoesOver(t *testing.T) {
	e := NewFeeder(Config{})
	e.Hello("o-1", "order-service", t0, t0-1000)
	limited("order-service", "order-service")(e)
	traffic(e, []string{"o-1"}, "createOrder", t0+90000, t0+150000, 200)
	fs := e.Findings(t0 + 150000)
	plans := e.Plans(t0+150000, fs)
	if len(plans) != 1 || plans[0].Flow == nil {
		t.Fatalf("plans %+v", plans)
	}
	w := plans[0].Flow.WhatIf
	if w.Offered != 18000+24000 || w.Proposed.Blocked < 11800 || w.Proposed.Blocked > 12200 {
		t.Fatalf("replay %+v", w)
	}
	if v, why := plans[0].Verdict(); v != "safe" || !strings.Contains(why, "blocks "+itoa(w.Proposed.Blocked)+" of the 42000 calls") {
		t.Fatalf("verdict %q %q", v, why)
	}
}

// With no traffic kept, no change is checked: the finding proposes none.
func TestFlowPlanWithoutTraffic(t *testing.T) {
	e := NewFeeder(Config{TraceBytes: -1})
	limited("order-service", "order-service")(e)
	fs := e.Findings(t0 + 90000)
	plans := e.Plans(t0+90000, fs)
	if len(plans) != 1 || plans[0].Safe || !strings.HasPrefix(plans[0].Why, noSafeChange) {
		t.Fatalf("plans %+v", plans)
	}
	f := one(t, fs, KindInertRule)
	if f.Facts.(*InertRuleFacts).Suggest != nil || f.Advice != plans[0].Why {
		t.Fatalf("finding %+v", f)
	}
}
