package triage

import "fmt"

// A finding's proposal and its plan: every finding that proposes values
// for a rule says what the rule's plan proposes, never a value of its own
// that the plan changed or left out (findings-v1 revision 3).

// findingValues are the rule values a finding proposes and the rule
// they are for; ok is false for a finding that proposes none.
func findingValues(f *Finding) (k planKey, v RuleValues, ok bool) {
	k = planKey{f.App, f.Resource, ""}
	switch x := f.Facts.(type) {
	case *SawtoothFacts:
		k.ruleID = x.RuleID
		v = RuleValues{MaxAllowedRtMs: x.Suggest.MaxAllowedRtMs, RetryTimeoutMs: x.Suggest.RetryTimeoutMs}
	case *SyncHalfOpenFacts:
		if x.Suggest != nil {
			v.RetryTimeoutMs = uint32(x.Suggest.RetryTimeoutMs.Min)
		}
	case *LowConfidenceFacts:
		if x.Rule != nil {
			k.ruleID = x.Rule.ID
		}
		v = RuleValues{MinRequestAmount: x.Suggest.MinRequestAmount, StatIntervalMs: x.Suggest.StatIntervalMs}
	case *RuleAdviceFacts:
		k.ruleID = x.Rule.ID
		v = RuleValues{MinRequestAmount: x.Suggest.MinRequestAmount, StatIntervalMs: x.Suggest.StatIntervalMs, MaxAllowedRtMs: x.Suggest.MaxAllowedRtMs}
	case *InertRuleFacts:
		if x.Reason != InertCannotTrip || x.Suggest == nil || len(x.Rule.Breakers) == 0 {
			return k, v, false
		}
		k.ruleID = x.Rule.Breakers[0].ID
		v.MinRequestAmount, v.Threshold = x.Suggest.MinRequestAmount, x.Suggest.Threshold
	case *SelfInflictedFacts:
		if x.Suggest == nil {
			return k, v, false
		}
		k.ruleID = x.Rule.ID
		v.MaxAllowedRtMs, v.Threshold = x.Suggest.MaxAllowedRtMs, x.Suggest.Threshold
	default:
		return k, v, false
	}
	return k, v, !v.IsZero()
}

// agrees reports whether the plan proposes every value v does (a value
// equal to the current rule's is no change: the plan leaves it out).
func agrees(v RuleValues, p *Plan) bool {
	if !p.Safe {
		return false
	}
	cur := p.Current.values()
	for f := range nFields {
		if want := v.get(f); want != 0 && want != p.Proposed.get(f) && want != cur.get(f) {
			return false
		}
	}
	return true
}

// Proposal is one finding's proposed rule values: what a plan is made
// from.
type Proposal struct {
	Kind                  Kind
	App, Resource, RuleID string
	Values                RuleValues
}

// Proposals lists the proposals of findings, in their order: findings
// proposing the same values give the same plans.
func Proposals(fs []Finding) []Proposal {
	var out []Proposal
	for i := range fs {
		if k, v, ok := findingValues(&fs[i]); ok {
			out = append(out, Proposal{Kind: fs[i].Kind, App: k.app, Resource: k.resource, RuleID: k.ruleID, Values: v})
		}
	}
	return out
}

// AgreeWithPlans brings findings made after plans (by an Engine's Plans)
// in line with them, as Plans does its own: for callers that keep the
// plans of findings proposing the same values.
func AgreeWithPlans(fs []Finding, plans []Plan) {
	agreeWithPlans(fs, plans)
	hotAgree(fs, plans)
	flowAgree(fs, plans)
}

// agreeWithPlans rewrites the findings whose proposal its plan does not
// make as proposed: their suggest takes the plan's values (none when no
// change is safe) and their advice says the plan's.
func agreeWithPlans(fs []Finding, plans []Plan) {
	if len(plans) == 0 {
		return
	}
	by := make(map[planKey]*Plan, len(plans))
	byRes := map[[2]string][]*Plan{}
	for i := range plans {
		p := &plans[i]
		if p.Param != nil || p.Flow != nil {
			continue // hotAgree's, flowAgree's
		}
		by[planKey{p.App, p.Resource, p.RuleID}] = p
		byRes[[2]string{p.App, p.Resource}] = append(byRes[[2]string{p.App, p.Resource}], p)
	}
	for i := range fs {
		f := &fs[i]
		k, v, ok := findingValues(f)
		if !ok {
			continue
		}
		// The plan of its rule; a finding naming no rule id (a recovery
		// flood), or whose rule's plan names none, takes the one plan of its
		// app and resource (foldUnnamed).
		p := by[k]
		if p == nil {
			if rp := byRes[[2]string{k.app, k.resource}]; len(rp) == 1 && (k.ruleID == "" || rp[0].RuleID == "") {
				p = rp[0]
			} else {
				continue
			}
		}
		if agrees(v, p) {
			continue
		}
		f.Facts = withValues(f.Facts, p)
		f.Advice = planAdvice(p)
	}
}

// withValues is a copy of facts whose suggest holds the plan's proposal
// for the fields the facts propose (none when the plan is not safe).
func withValues(facts Facts, p *Plan) Facts {
	v := p.Proposed
	if !p.Safe {
		v = RuleValues{}
	}
	switch x := facts.(type) {
	case *SawtoothFacts:
		y := *x
		y.Suggest = SawtoothSuggest{MaxAllowedRtMs: pick(x.Suggest.MaxAllowedRtMs, v.MaxAllowedRtMs), RetryTimeoutMs: pick(x.Suggest.RetryTimeoutMs, v.RetryTimeoutMs)}
		return &y
	case *SyncHalfOpenFacts:
		y := *x
		y.Suggest = nil
		if v.RetryTimeoutMs > 0 {
			lo, hi := int64(v.RetryTimeoutMs), int64(v.RetryTimeoutMs)
			for _, pv := range p.PerInstance {
				lo, hi = min(lo, int64(pv.RetryTimeoutMs)), max(hi, int64(pv.RetryTimeoutMs))
			}
			y.Suggest = &SyncHalfOpenSuggest{RetryTimeoutMs: RetryRange{Min: lo, Max: hi}}
		}
		return &y
	case *LowConfidenceFacts:
		y := *x
		y.Suggest = LowConfidenceSuggest{MinRequestAmount: pick(x.Suggest.MinRequestAmount, v.MinRequestAmount), StatIntervalMs: pick(x.Suggest.StatIntervalMs, v.StatIntervalMs)}
		return &y
	case *RuleAdviceFacts:
		y := *x
		y.Suggest = RuleAdviceSuggest{MinRequestAmount: pick(x.Suggest.MinRequestAmount, v.MinRequestAmount),
			StatIntervalMs: pick(x.Suggest.StatIntervalMs, v.StatIntervalMs), MaxAllowedRtMs: pick(x.Suggest.MaxAllowedRtMs, v.MaxAllowedRtMs)}
		return &y
	case *InertRuleFacts:
		y := *x
		y.Suggest = nil
		if x.Suggest != nil {
			s := InertSuggest{MinRequestAmount: pick(x.Suggest.MinRequestAmount, v.MinRequestAmount), Threshold: pick(x.Suggest.Threshold, v.Threshold)}
			if s != (InertSuggest{}) {
				y.Suggest = &s
			}
		}
		return &y
	case *SelfInflictedFacts:
		y := *x
		y.Suggest = nil
		if x.Suggest != nil {
			s := SelfInflictedSuggest{MaxAllowedRtMs: pick(x.Suggest.MaxAllowedRtMs, v.MaxAllowedRtMs), Threshold: pick(x.Suggest.Threshold, v.Threshold)}
			if s != (SelfInflictedSuggest{}) {
				y.Suggest = &s
			}
		}
		return &y
	}
	return facts
}

// pick is the plan's value for a field the finding proposed, 0 for one
// it did not.
func pick[T comparable](finding, plan T) T {
	var zero T
	if finding == zero {
		return zero
	}
	return plan
}

// planAdvice is the advice of a finding whose own proposal the plan
// changed or left out: the plan's, in one sentence.
func planAdvice(p *Plan) string {
	if !p.Safe {
		return p.Why
	}
	s := "the plan for this rule, replayed on this input's traffic: " + proposedWords(p.Proposed, p.Current)
	if len(p.PerInstance) > 0 {
		lo, hi := p.Proposed.RetryTimeoutMs, p.Proposed.RetryTimeoutMs
		for _, v := range p.PerInstance {
			lo, hi = min(lo, v.RetryTimeoutMs), max(hi, v.RetryTimeoutMs)
		}
		s += fmt.Sprintf(", each of the %d instances its own retryTimeoutMs from %d to %d ms (%s)", len(p.PerInstance), lo, hi, noJitter)
	}
	if p.Why != "" {
		s += "; " + p.Why
	}
	return s
}
