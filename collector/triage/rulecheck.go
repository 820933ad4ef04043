package triage

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	"github.com/sentinel-top/sentinel-top/collector/whatif"
	"github.com/sentinel-top/sentinel-top/core"
)

// RuleCheck is a proposed breaker rule replayed on one app's instances
// that report its resource, against the rule each of them runs (the
// `whatif` command's check).
type RuleCheck struct {
	App      string `json:"app"`
	Resource string `json:"resource"`
	// Instances replayed, sorted.
	Instances []string `json:"instances"`
	// Current is the rule the first of them runs (nil: none); Mixed says
	// that not all of them run it (rule drift).
	Current *PlanRule `json:"current"`
	Mixed   bool      `json:"mixed,omitempty"`
	// Proposed is the rule checked.
	Proposed PlanRule `json:"proposed"`
	// WhatIf is the replay; nil when it could not run (Error says why).
	WhatIf *whatif.Result `json:"whatIf,omitempty"`
	Error  string         `json:"error,omitempty"`
	// LosesOutage: the proposal loses an outage the current rule caught
	// (or catches it more than one statIntervalMs later), or the input
	// ends in one not caught yet; AddsLowConfidence: it trips on fewer
	// than whatif.SoundCalls calls more often than the current rule.
	LosesOutage       bool `json:"losesOutage"`
	AddsLowConfidence bool `json:"addsLowConfidenceTrips"`
}

// FlowCheck is a proposed flow rule replayed on one app's instances that
// report its resource, against the flow rule each of them runs.
type FlowCheck struct {
	App       string             `json:"app"`
	Resource  string             `json:"resource"`
	Instances []string           `json:"instances"`
	Current   *core.FlowRule     `json:"current"`
	Mixed     bool               `json:"mixed,omitempty"`
	Proposed  core.FlowRule      `json:"proposed"`
	WhatIf    *whatif.FlowResult `json:"whatIf,omitempty"`
	Error     string             `json:"error,omitempty"`
}

// Unchecked is a proposed rule the input cannot check: no instance
// reported its resource.
type Unchecked struct {
	Rule     string `json:"rule"`
	Resource string `json:"resource"`
	Why      string `json:"why"`
}

// RuleChecks are the checks of a proposed rule set.
type RuleChecks struct {
	Breakers  []RuleCheck `json:"breakers"`
	Flows     []FlowCheck `json:"flows"`
	Unchecked []Unchecked `json:"unchecked"`
}

// CheckRules replays each proposed rule on the instances that reported its
// resource (the latest process of each name), one check per app. A
// breaker is checked against the breaker each instance runs for the
// resource: the one with the proposed rule's id when it has one, else the
// one of the same strategy, else its first; none when it has no breaker
// for it. A flow rule against the instance's first flow rule of the
// resource.
func (e *Engine) CheckRules(breakers []core.BreakerRule, flows []core.FlowRule) RuleChecks {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out RuleChecks
	for _, rule := range breakers {
		gs := e.reporters(rule.Resource)
		for _, g := range gs {
			out.Breakers = append(out.Breakers, e.checkRule(g.app, rule, g.insts))
		}
		if len(gs) == 0 {
			out.Unchecked = append(out.Unchecked, Unchecked{Rule: "breaker", Resource: rule.Resource, Why: noTraffic})
		}
	}
	for _, rule := range flows {
		if strings.HasPrefix(rule.ID, "java:") {
			out.Unchecked = append(out.Unchecked, Unchecked{Rule: "flow", Resource: rule.Resource,
				Why: "a Java flow rule of thread grade, relate or chain strategy, or cluster mode: the project's flow code enforces none of them as written"})
			continue
		}
		gs := e.reporters(rule.Resource)
		for _, g := range gs {
			out.Flows = append(out.Flows, e.checkFlow(g.app, rule, g.insts))
		}
		if len(gs) == 0 {
			out.Unchecked = append(out.Unchecked, Unchecked{Rule: "flow", Resource: rule.Resource, Why: noTraffic})
		}
	}
	slices.SortStableFunc(out.Breakers, func(a, b RuleCheck) int {
		return cmp.Or(strings.Compare(a.App, b.App), strings.Compare(a.Resource, b.Resource))
	})
	slices.SortStableFunc(out.Flows, func(a, b FlowCheck) int {
		return cmp.Or(strings.Compare(a.App, b.App), strings.Compare(a.Resource, b.Resource))
	})
	return out
}

const noTraffic = "no instance reported traffic for this resource in the input"

// appInsts are the instances of one app.
type appInsts struct {
	app   string
	insts []*instState
}

// reporters are the latest process of each instance name that sent buckets
// for resource, by app (sorted), each app's sorted by name.
func (e *Engine) reporters(resource string) []appInsts {
	latest := map[string]*instState{}
	for _, in := range e.instList {
		latest[in.id.Name] = in
	}
	byApp := map[string][]*instState{}
	for _, in := range latest {
		if s := in.series[resource]; s != nil && s.hasBucket {
			app := ""
			if in.app != nil {
				app = in.app.name
			}
			byApp[app] = append(byApp[app], in)
		}
	}
	var out []appInsts
	for _, app := range slices.Sorted(maps.Keys(byApp)) {
		insts := byApp[app]
		slices.SortFunc(insts, func(a, b *instState) int { return strings.Compare(a.id.Name, b.id.Name) })
		out = append(out, appInsts{app, insts})
	}
	return out
}

func (e *Engine) checkFlow(app string, rule core.FlowRule, insts []*instState) FlowCheck {
	c := FlowCheck{App: app, Resource: rule.Resource, Proposed: rule}
	traces := tracesOfResource(insts, rule.Resource)
	cases := make([]whatif.FlowCase, len(insts))
	for i, in := range insts {
		c.Instances = append(c.Instances, in.id.Name)
		var cur *core.FlowRule
		if rr := in.rulesOf(rule.Resource); rr != nil && len(rr.Flows) > 0 {
			f := rr.Flows[0]
			cur = &f
		}
		if i == 0 {
			c.Current = cur
		} else if (cur == nil) != (c.Current == nil) || cur != nil && *cur != *c.Current {
			c.Mixed = true
		}
		cases[i] = whatif.FlowCase{Trace: &traces[i], Current: cur, Proposed: rule}
	}
	res, err := whatif.CompareFlow(cases)
	if err != nil {
		c.Error = err.Error()
		return c
	}
	c.WhatIf = res
	return c
}

func (e *Engine) checkRule(app string, rule core.BreakerRule, insts []*instState) RuleCheck {
	c := RuleCheck{App: app, Resource: rule.Resource, Proposed: planRule(&rule)}
	traces := tracesOfResource(insts, rule.Resource)
	cases := make([]whatif.Case, len(insts))
	for i, in := range insts {
		c.Instances = append(c.Instances, in.id.Name)
		cur, has := currentFor(in, &rule)
		if i == 0 && has {
			pr := planRule(&cur)
			c.Current = &pr
		}
		if i > 0 && (has != (c.Current != nil) || has && planRule(&cur) != *c.Current) {
			c.Mixed = true
		}
		if !has {
			cur = core.BreakerRule{}
		}
		cases[i] = whatif.Case{Trace: &traces[i], Current: cur, Proposed: rule}
	}
	if rule.Strategy == core.SlowRequestRatio && !anyHist(traces) {
		c.Error = "the input has no response-time histogram (Java Sentinel and its metric logs give an average a second): a slow-ratio rule cannot be judged on it"
		return c
	}
	res, err := whatif.Compare(cases)
	if err != nil {
		c.Error = err.Error()
		return c
	}
	c.WhatIf = res
	c.LosesOutage = !res.Safe()
	c.AddsLowConfidence = res.AddsLowConfidence()
	return c
}

// anyHist reports whether a bucket of the traces has a response-time
// histogram.
func anyHist(traces []whatif.Trace) bool {
	for i := range traces {
		for j := range traces[i].Buckets {
			if traces[i].Buckets[j].HasHist {
				return true
			}
		}
	}
	return false
}

// currentFor is the instance's breaker for the proposed rule's resource
// that the proposal would replace (see CheckRules).
func currentFor(in *instState, proposed *core.BreakerRule) (core.BreakerRule, bool) {
	rr := in.rulesOf(proposed.Resource)
	if rr == nil || len(rr.Breakers) == 0 {
		return core.BreakerRule{}, false
	}
	if proposed.ID != "" {
		for _, b := range rr.Breakers {
			if b.ID == proposed.ID {
				return b, true
			}
		}
	}
	for _, b := range rr.Breakers {
		if b.Strategy == proposed.Strategy {
			return b, true
		}
	}
	return rr.Breakers[0], true
}

// tracesOfResource is the trace of each instance's series of resource,
// each of its apps' logs read once.
func tracesOfResource(insts []*instState, resource string) []whatif.Trace {
	ss := make([]*series, len(insts))
	for i, in := range insts {
		ss[i] = in.series[resource]
	}
	trs, _ := tracesOf(ss)
	return trs
}
