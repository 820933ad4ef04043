package triage

import (
	"fmt"

	"github.com/sentinel-top/sentinel-top/collector/whatif"
	"github.com/sentinel-top/sentinel-top/core"
)

// Plans of flow rules: inert-rule origin-mismatch proposes limitApp
// "default" for a Java flow rule that names the app itself, so that the
// limit applies to every caller. The input cannot tell callers apart (Java
// Sentinel reports a resource's totals), so the current rule is replayed as
// applying to none of the calls and the proposed one to all of them,
// through core's Guard on each instance's own traffic (whatif.CompareFlow).
// A limit takes no outage from a breaker; the plan says what it would have
// blocked, and is safe once that could be replayed.

// FlowPlan is a flow rule's plan's own part.
type FlowPlan struct {
	// Current is the rule of the first instance, as it runs.
	Current core.FlowRule
	// LimitApp is the proposed limitApp.
	LimitApp string
	// RecordedBlocked are the blocks the input recorded on the plan's
	// instances (calls the rule did apply to, or other rules'): the
	// replay of the current rule has none.
	RecordedBlocked int64
	// WhatIf is the replay; nil when none could run.
	WhatIf *whatif.FlowResult
}

// flowRule is the plans' rule kind for flow rules.
const flowRule = "flow"

// flowPlans makes the plans of the origin-mismatch findings among fs:
// one per flow rule the finding names.
func (e *Engine) flowPlans(fs []Finding, o PlanOptions, spent int64) (plans []Plan, calls int64) {
	for i := range fs {
		f := &fs[i]
		x, ok := f.Facts.(*InertRuleFacts)
		if !ok || x.Reason != InertOriginMismatch || x.Suggest == nil || x.Suggest.LimitApp == "" {
			continue
		}
		for j := range x.Rule.Flows {
			p, n, ok := e.flowPlan(f, &x.Rule.Flows[j], x.Suggest.LimitApp, o.MaxCalls > 0 && spent+calls >= o.MaxCalls)
			if ok {
				plans = append(plans, p)
				calls += n
			}
		}
	}
	return plans, calls
}

// flowPlan makes the plan of one flow rule of an origin-mismatch finding;
// ok is false when none of its instances runs the rule.
func (e *Engine) flowPlan(f *Finding, rule *core.FlowRule, limitApp string, skip bool) (plan Plan, calls int64, ok bool) {
	latest := map[string]*instState{}
	for _, in := range e.instList {
		if in.app != nil && in.app.name == f.App && in.series[f.Resource] != nil {
			latest[in.id.Name] = in
		}
	}
	var names []string
	var ss []*series
	for _, name := range f.Instances {
		in := latest[name]
		if in == nil || !runsFlow(in, f.Resource, rule) {
			continue
		}
		ss = append(ss, in.series[f.Resource])
		names = append(names, name)
	}
	traces, _ := tracesOf(ss)
	var recorded int64
	for _, tr := range traces {
		for i := range tr.Buckets {
			recorded += max(tr.Buckets[i].Block, 0)
		}
	}
	if len(names) == 0 {
		return plan, 0, false
	}
	fp := &FlowPlan{Current: *rule, LimitApp: limitApp, RecordedBlocked: recorded}
	plan = Plan{App: f.App, Resource: f.Resource, Rule: flowRule, RuleID: rule.ID, Instances: names, Because: []Kind{f.Kind},
		Flow: fp, severity: f.Severity, from: f.From}
	switch {
	case skip:
		plan.Why = notChecked + ": this input proposes many changes, and each snapshot replays a bounded share of them; this one is next"
		return plan, 0, true
	case e.traces.max < 0:
		plan.Why = noSafeChange + ": the input's traffic was not kept, so no change could be checked"
		return plan, 0, true
	}
	prop := *rule
	prop.LimitApp = limitApp
	cases := make([]whatif.FlowCase, len(traces))
	for i := range traces {
		cases[i] = whatif.FlowCase{Trace: &traces[i], Proposed: prop}
	}
	res, err := whatif.CompareFlow(cases)
	if err != nil {
		plan.Why = noSafeChange + ": " + err.Error()
		return plan, 0, true
	}
	fp.WhatIf = res
	calls = 2 * res.Offered
	if res.Offered == 0 {
		plan.Why = noSafeChange + ": the input kept no traffic of the rule's instances to replay, so no change can be checked on it"
		return plan, calls, true
	}
	plan.Safe = true
	if recorded > 0 {
		plan.Why = fmt.Sprintf("the input's %d blocks (of the calls the rule did apply to, or other rules') are not told apart from its passes in the replay", recorded)
	}
	return plan, calls, true
}

// runsFlow reports whether the instance runs the flow rule on resource.
func runsFlow(in *instState, resource string, rule *core.FlowRule) bool {
	rr := in.rulesOf(resource)
	if rr == nil {
		return false
	}
	for i := range rr.Flows {
		if rr.Flows[i] == *rule {
			return true
		}
	}
	return false
}

// flowFields lists a flow rule's values with their JSON names, limitApp
// in words (it names the app: input).
func flowFields(r *core.FlowRule) []RuleField {
	out := []RuleField{{"tokenCalculateStrategy", r.TokenCalculateStrategy.String()}, {"controlBehavior", r.ControlBehavior.String()},
		{"threshold", fmtNum(r.Threshold)}}
	if r.StatIntervalInMs > 0 {
		out = append(out, RuleField{"statIntervalInMs", itoa(int64(r.StatIntervalInMs))})
	}
	if r.TokenCalculateStrategy == core.WarmUp {
		out = append(out, RuleField{"warmUpPeriodSec", itoa(int64(r.WarmUpPeriodSec))}, RuleField{"warmUpColdFactor", itoa(int64(r.WarmUpColdFactor))})
	}
	if r.ControlBehavior == core.Throttling {
		out = append(out, RuleField{"maxQueueingTimeMs", itoa(int64(r.MaxQueueingTimeMs))})
	}
	return append(out, RuleField{"limitApp", limitAppWords(r.LimitApp)})
}

// limitAppWords is a limitApp as a plan shows it: "default" and "other"
// as they are, an app's name as "the app's own name" (input, never
// printed from a plan's words).
func limitAppWords(limitApp string) string {
	if namesCaller(limitApp) {
		return "the app's own name"
	}
	if limitApp == "" {
		return limitAppDefault
	}
	return limitApp
}

// change is the plan's one change: limitApp.
func (p *FlowPlan) change() Change {
	return Change{Field: "limitApp", CurrentText: limitAppWords(p.Current.LimitApp), ProposedText: p.LimitApp}
}

// safeWhy is what a safe flow plan's replay showed.
func (p *FlowPlan) safeWhy() string {
	r := p.WhatIf
	return fmt.Sprintf("replayed on this input, the limit applied to every caller passes %d and blocks %d of the %d calls offered (%s %%), where it blocked none of them",
		r.Proposed.Passed, r.Proposed.Blocked, r.Offered, fmtFloat(100*float64(r.Proposed.Blocked)/float64(max(r.Offered, 1)), 1))
}

type flowRuleJSON struct {
	TokenCalculateStrategy core.TokenCalculateStrategy `json:"tokenCalculateStrategy"`
	ControlBehavior        core.ControlBehavior        `json:"controlBehavior"`
	Threshold              float64                     `json:"threshold"`
	MaxQueueingTimeMs      uint32                      `json:"maxQueueingTimeMs"`
	WarmUpPeriodSec        uint32                      `json:"warmUpPeriodSec"`
	WarmUpColdFactor       uint32                      `json:"warmUpColdFactor"`
	StatIntervalInMs       uint32                      `json:"statIntervalInMs"`
	LimitApp               string                      `json:"limitApp,omitempty"`
}

type flowProposedJSON struct {
	LimitApp string `json:"limitApp,omitempty"`
}

// flowJSON is a flow plan as findings-v1 revision 3 writes a plan: the
// current rule in its flow rule fields (without resource and id), and
// proposed holding limitApp.
func (p *Plan) flowJSON() kindPlanJSON[flowRuleJSON, flowProposedJSON, *whatif.FlowResult] {
	r := &p.Flow.Current
	out := kindPlanJSON[flowRuleJSON, flowProposedJSON, *whatif.FlowResult]{App: p.App, Resource: p.Resource, Rule: p.Rule,
		Instances: p.Instances, Because: p.Because, Safe: p.Safe, Why: p.Why, WhatIf: p.Flow.WhatIf,
		Current: flowRuleJSON{TokenCalculateStrategy: r.TokenCalculateStrategy, ControlBehavior: r.ControlBehavior, Threshold: r.Threshold,
			MaxQueueingTimeMs: r.MaxQueueingTimeMs, WarmUpPeriodSec: r.WarmUpPeriodSec, WarmUpColdFactor: r.WarmUpColdFactor,
			StatIntervalInMs: r.StatIntervalInMs, LimitApp: r.LimitApp}}
	if p.Safe {
		out.Proposed.LimitApp = p.Flow.LimitApp
	}
	if out.Instances == nil {
		out.Instances = []string{}
	}
	return out
}

// flowAgree brings the origin-mismatch findings in line with their plans:
// a finding whose plans are not all safe proposes nothing and says why.
func flowAgree(fs []Finding, plans []Plan) {
	for i := range fs {
		f := &fs[i]
		x, ok := f.Facts.(*InertRuleFacts)
		if !ok || x.Reason != InertOriginMismatch || x.Suggest == nil {
			continue
		}
		for j := range plans {
			p := &plans[j]
			if p.Flow == nil || p.App != f.App || p.Resource != f.Resource || p.Safe {
				continue
			}
			y := *x
			y.Suggest = nil
			f.Facts, f.Advice = &y, p.Why
			break
		}
	}
}
