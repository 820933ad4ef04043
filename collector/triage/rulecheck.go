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

// Unchecked is a proposed rule the input cannot check: no instance
// reported its resource.
type Unchecked struct {
	Resource string `json:"resource"`
	Why      string `json:"why"`
}

// CheckRules replays each proposed breaker rule on the instances that
// reported its resource (the latest process of each name), one check per
// app, against the breaker each runs for it: the one with the proposed
// rule's id when it has one, else the one of the same strategy, else its
// first; none when it has no breaker for the resource.
func (e *Engine) CheckRules(proposed []core.BreakerRule) (checks []RuleCheck, unchecked []Unchecked) {
	e.mu.Lock()
	defer e.mu.Unlock()
	latest := map[string]*instState{}
	for _, in := range e.instList {
		latest[in.id.Name] = in
	}
	for _, rule := range proposed {
		byApp := map[string][]*instState{}
		for _, in := range latest {
			if in.series[rule.Resource] != nil && in.series[rule.Resource].hasBucket {
				app := ""
				if in.app != nil {
					app = in.app.name
				}
				byApp[app] = append(byApp[app], in)
			}
		}
		if len(byApp) == 0 {
			unchecked = append(unchecked, Unchecked{Resource: rule.Resource, Why: "no instance reported traffic for this resource in the input"})
			continue
		}
		for _, app := range slices.Sorted(maps.Keys(byApp)) {
			insts := byApp[app]
			slices.SortFunc(insts, func(a, b *instState) int { return strings.Compare(a.id.Name, b.id.Name) })
			checks = append(checks, e.checkRule(app, rule, insts))
		}
	}
	slices.SortStableFunc(checks, func(a, b RuleCheck) int {
		return cmp.Or(strings.Compare(a.App, b.App), strings.Compare(a.Resource, b.Resource))
	})
	return checks, unchecked
}

func (e *Engine) checkRule(app string, rule core.BreakerRule, insts []*instState) RuleCheck {
	c := RuleCheck{App: app, Resource: rule.Resource, Proposed: planRule(&rule)}
	traces := make([]whatif.Trace, len(insts))
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
		traces[i], _ = in.series[rule.Resource].trace()
		cases[i] = whatif.Case{Trace: &traces[i], Current: cur, Proposed: rule}
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
