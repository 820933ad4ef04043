package triage

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/sentinel-top/sentinel-top/collector/whatif"
	"github.com/sentinel-top/sentinel-top/core"
)

// Plans of hot-parameter rules: hot-value proposes a specificItems
// exception for the value a limit written for everyone throttles. Its plan
// replays that value's entries, bucket by bucket, through core's
// hot-parameter rule with the current rule and with the exception, on
// every instance the finding names (package whatif, CompareParam). An
// exception takes no outage from a breaker; what it can do is send more
// calls to a downstream that was failing: a plan that adds calls while the
// resource's breaker was not CLOSED on their instance is not proposed.

// ParamPlan is a hot-parameter rule's plan's own part.
type ParamPlan struct {
	// Current is the rule of the first instance.
	Current core.HotParamRule
	// Value is the parameter value the exception is for: input, for
	// renderers to sanitize.
	Value string
	// Exception is the proposed specificItems threshold for Value; Was
	// what the value had before (the rule's threshold without an
	// exception).
	Exception, Was int64
	// WhatIf is the replay; nil when none could run.
	WhatIf *whatif.ParamResult
}

// paramRule is the plans' rule kind for hot-parameter rules.
const paramRule = "param"

// paramPlans makes the plans of the hot-value findings among fs; calls
// is how many calls their replays took. With o.MaxCalls spent (by spent
// before them), the rest are not checked yet.
func (e *Engine) paramPlans(fs []Finding, o PlanOptions, spent int64) (plans []Plan, calls int64) {
	for i := range fs {
		f := &fs[i]
		x, ok := f.Facts.(*HotValueFacts)
		if !ok || x.Rule == nil || x.Suggest == nil {
			continue
		}
		p, n, ok := e.paramPlan(f, x, o.MaxCalls > 0 && spent+calls >= o.MaxCalls)
		if ok {
			plans = append(plans, p)
			calls += n
		}
	}
	return plans, calls
}

// paramPlan makes the plan of one hot-value finding; ok is false when
// none of its instances still runs the rule.
func (e *Engine) paramPlan(f *Finding, x *HotValueFacts, skip bool) (plan Plan, calls int64, ok bool) {
	latest := map[string]*instState{}
	for _, in := range e.instList {
		if in.app != nil && in.app.name == f.App && in.series[f.Resource] != nil {
			latest[in.id.Name] = in
		}
	}
	exception := x.Suggest.SpecificItems[x.Value]
	var cases []whatif.ParamCase
	var names []string
	var ss []*series
	for _, name := range f.Instances {
		in := latest[name]
		if in == nil {
			continue
		}
		s := in.series[f.Resource]
		r := hotRule(s, x.Param)
		if r == nil {
			continue
		}
		ss = append(ss, s)
		prop := *r
		prop.SpecificItems = maps.Clone(r.SpecificItems)
		if prop.SpecificItems == nil {
			prop.SpecificItems = map[string]int64{}
		}
		prop.SpecificItems[x.Value] = exception
		cases = append(cases, whatif.ParamCase{Current: *r, Proposed: prop})
		names = append(names, name)
	}
	if len(cases) == 0 {
		return plan, 0, false
	}
	keep := paramTracesOf(ss, x.Param, x.Value)
	for i := range cases {
		cases[i].Trace = &keep[i]
	}
	cur := cases[0].Current
	was := cur.Threshold
	if v, has := cur.SpecificItems[x.Value]; has {
		was = v
	}
	pp := &ParamPlan{Current: cur, Value: x.Value, Exception: exception, Was: was}
	plan = Plan{App: f.App, Resource: f.Resource, Rule: paramRule, Instances: names, Because: []Kind{KindHotValue},
		Param: pp, severity: f.Severity, from: f.From}
	switch {
	case skip:
		plan.Why = notChecked + ": this input proposes many changes, and each snapshot replays a bounded share of them; this one is next"
		return plan, 0, true
	case e.traces.max < 0:
		plan.Why = noSafeChange + ": the input's traffic was not kept, so no change could be checked"
		return plan, 0, true
	}
	res, err := whatif.CompareParam(cases)
	if err != nil {
		plan.Why = noSafeChange + ": " + err.Error()
		return plan, 0, true
	}
	calls = 2 * res.Offered
	pp.WhatIf = res
	switch {
	case res.Offered == 0:
		plan.Why = noSafeChange + ": the input kept no traffic of the value to replay, so no change can be checked on it"
	case x.Blocked > 0 && res.Current.Blocked == 0:
		plan.Why = fmt.Sprintf("%s: the replay of the current rule blocks none of the value's calls, while the instances blocked %d, so no change can be checked on this input",
			noSafeChange, x.Blocked)
	case res.AddedInSpells > 0:
		plan.Why = fmt.Sprintf("%s: with the exception the resource would have served %d more of the value's calls while its breaker was open (the downstream was failing: the limit was protecting it)",
			noSafeChange, res.AddedInSpells)
	case res.Proposed.Blocked >= res.Current.Blocked:
		plan.Why = noSafeChange + ": replayed, the exception admits none more of the value's calls"
	default:
		plan.Safe = true
	}
	return plan, calls, true
}

// paramFields lists a hot-parameter rule's values with their JSON names
// (sentinel-golang's hotspot.Rule; Java's ParamFlowRule maps onto them),
// the exceptions by their number.
func paramFields(r *core.HotParamRule) []RuleField {
	out := []RuleField{{"metricType", r.MetricType.String()}, {"controlBehavior", r.ControlBehavior.String()}}
	if r.ParamKey != "" {
		out = append(out, RuleField{"paramKey", r.ParamKey})
	} else {
		out = append(out, RuleField{"paramIndex", itoa(int64(r.ParamIndex))})
	}
	out = append(out, RuleField{"threshold", itoa(r.Threshold)})
	if r.MetricType != core.HotParamConcurrency {
		out = append(out, RuleField{"durationInSec", itoa(max(r.DurationInSec, 1))})
	}
	if r.BurstCount > 0 {
		out = append(out, RuleField{"burstCount", itoa(r.BurstCount)})
	}
	return append(out, RuleField{"specificItems", itoa(int64(len(r.SpecificItems))) + " " + plural(int64(len(r.SpecificItems)), "exception", "exceptions")})
}

// paramChange is the plan's one change: the value's exception.
func (p *ParamPlan) change() Change {
	return Change{Field: "specificItems", Key: p.Value, Current: p.Was, Lowest: p.Exception, Highest: p.Exception}
}

// paramSafeWhy is what a safe hot-parameter plan's replay showed.
func (p *ParamPlan) safeWhy() string {
	r := p.WhatIf
	return fmt.Sprintf("replayed on this input, the exception admits %d more of the value's calls (at most %d more in one second on one instance), none of them while the resource's breaker was open",
		r.Proposed.Passed-r.Current.Passed, r.AddedPeak)
}

// kindPlanJSON is a plan of a rule kind with fields of its own (Plan's
// Param or Flow) as findings-v1 revision 3 writes a plan: C is the kind's
// current rule, P its proposal, W its replay.
type kindPlanJSON[C, P, W any] struct {
	App       string   `json:"app"`
	Resource  string   `json:"resource"`
	Rule      string   `json:"rule"`
	Instances []string `json:"instances"`
	Current   C        `json:"current"`
	Proposed  P        `json:"proposed"`
	Because   []Kind   `json:"because"`
	Safe      bool     `json:"safe"`
	Why       string   `json:"why"`
	WhatIf    W        `json:"whatIf,omitempty"`
}

type paramRuleJSON struct {
	MetricType      core.HotParamMetric  `json:"metricType"`
	ControlBehavior core.ControlBehavior `json:"controlBehavior"`
	ParamIndex      int                  `json:"paramIndex"`
	ParamKey        string               `json:"paramKey,omitempty"`
	Threshold       int64                `json:"threshold"`
	DurationInSec   int64                `json:"durationInSec"`
	BurstCount      int64                `json:"burstCount,omitempty"`
	SpecificItems   map[string]int64     `json:"specificItems"`
}

type paramProposedJSON struct {
	SpecificItems map[string]int64 `json:"specificItems,omitempty"`
}

// planJSON is Plan's own encoding, for MarshalJSON.
type planJSON Plan

// MarshalJSON writes a breaker plan as its fields say, and a
// hot-parameter or flow plan in its rule's fields (kindPlanJSON).
func (p Plan) MarshalJSON() ([]byte, error) {
	if p.Flow != nil {
		return json.Marshal(p.flowJSON())
	}
	if p.Param == nil {
		return json.Marshal(planJSON(p))
	}
	// A hot-parameter plan: the current rule in sentinel-golang's
	// hotspot.Rule fields, proposed holding the one exception.
	r := &p.Param.Current
	out := kindPlanJSON[paramRuleJSON, paramProposedJSON, *whatif.ParamResult]{App: p.App, Resource: p.Resource, Rule: p.Rule,
		Instances: p.Instances, Because: p.Because, Safe: p.Safe, Why: p.Why, WhatIf: p.Param.WhatIf,
		Current: paramRuleJSON{MetricType: r.MetricType, ControlBehavior: r.ControlBehavior, ParamIndex: r.ParamIndex, ParamKey: r.ParamKey,
			Threshold: r.Threshold, DurationInSec: r.DurationInSec, BurstCount: r.BurstCount, SpecificItems: r.SpecificItems}}
	if out.Current.SpecificItems == nil {
		out.Current.SpecificItems = map[string]int64{}
	}
	if p.Safe {
		out.Proposed.SpecificItems = map[string]int64{p.Param.Value: p.Param.Exception}
	}
	if out.Instances == nil {
		out.Instances = []string{}
	}
	return json.Marshal(out)
}

// hotAgree brings the hot-value findings in line with their plans: a
// finding whose plan is not safe proposes nothing and says why.
func hotAgree(fs []Finding, plans []Plan) {
	for i := range fs {
		f := &fs[i]
		x, ok := f.Facts.(*HotValueFacts)
		if !ok || x.Suggest == nil {
			continue
		}
		j := slices.IndexFunc(plans, func(p Plan) bool { return p.Param != nil && p.App == f.App && p.Resource == f.Resource })
		if j < 0 || plans[j].Safe {
			continue
		}
		y := *x
		y.Suggest = nil
		f.Facts, f.Advice = &y, plans[j].Why
	}
}
