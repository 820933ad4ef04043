package triage

import "github.com/sentinel-top/sentinel-top/collector/fleet"

// Rules: an instance's complete rule set is the fleet model's record
// (fleet.Instance.Rules, made by a fleet.RuleBook); the engine keeps none of
// its own and is told when it changes.

// resRules are an instance's breakers and flows for one resource, in
// canonical order with their comparison key.
type resRules = fleet.ResourceRules

// rulesOf is the instance's rules for resource (nil: none).
func (in *instState) rulesOf(resource string) *resRules { return in.id.Rules.Of(resource) }

// rules are the instance's rules by resource (nil: none).
func (in *instState) rules() map[string]*resRules {
	if in.id.Rules == nil {
		return nil
	}
	return in.id.Rules.Resources
}

// hasRules reports whether a rules message of the instance's process came.
func (in *instState) hasRules() bool { return in.id.Rules != nil }

// Rules tells the engine that instance h's record has a new complete rule
// set (a wire v1 "rules" message at ts), replacing prev (nil: the
// process had none). Hot-parameter rules only inform hot-value's advice:
// rule drift, unprotected traffic and lost rules judge breakers and flows.
func (e *Engine) Rules(h Instance, ts int64, prev *fleet.Rules) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.observeState(ts)
	in := h.in
	a := in.app
	rules := in.rules()
	var old map[string]*resRules
	if prev != nil {
		old = prev.Resources
	}
	// Every resource with rules is an app x resource (drift compares them).
	for r := range rules {
		e.appRes(a, r)
	}

	if in.attached {
		for r := range old {
			if _, ok := rules[r]; !ok {
				e.appRes(a, r).dropRule(ts)
			}
		}
		for r := range rules {
			if _, ok := old[r]; !ok {
				e.appRes(a, r).addRule(ts)
			}
		}
	}
	e.noteVersion(in, ts)
	e.noteRules(in, ts, prev)
	for _, s := range in.seriesList {
		s.rr = rules[s.resource]
		s.slowBound = slowBoundOf(s.rr)
		s.ratio = hasRatioBreaker(s.rr)
		s.javaRatio = hasJavaRatioBreaker(s.rr)
		s.setHold() // buckets wait out the rules' statIntervalMs
	}
	for _, o := range e.det.rules {
		o.rules(in, ts, prev)
	}
}
