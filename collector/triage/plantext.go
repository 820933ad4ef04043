package triage

import (
	"slices"
	"strings"

	"github.com/sentinel-top/sentinel-top/collector/whatif"
	"github.com/sentinel-top/sentinel-top/core"
)

// A plan as the report and the dashboard show it: its rule's current
// values, the changes it proposes (or considered and left out) and its
// verdict, in the engine's words and numbers. Instance names stay strings
// for the renderers to sanitize.

// noSafeChange is the verdict of a plan that is not safe, which its Why
// begins with.
const noSafeChange = "no safe change found"

// notChecked is the verdict of a plan a live snapshot had no replay left
// for (PlanOptions.MaxCalls), which its Why begins with.
const notChecked = "not checked yet"

// showOrder is the order in which a plan's fields are shown: the rule's.
var showOrder = [...]field{fieldThreshold, fieldMinRequest, fieldStatInterval, fieldMaxAllowedRt, fieldRetryTimeout}

// RuleField is one field of a rule: its JSON name and its value.
type RuleField struct{ Name, Value string }

// CurrentFields lists the values of the plan's current rule (see
// PlanRule.Fields), in Java's words for a Java Sentinel rule.
func (p *Plan) CurrentFields() []RuleField {
	switch {
	case p.Param != nil:
		return paramFields(&p.Param.Current)
	case p.Flow != nil:
		return flowFields(&p.Flow.Current)
	}
	return p.Current.fields(p.java)
}

// Fields lists the rule's values with their JSON names, the strategy by
// name, maxAllowedRtMs only where the strategy reads it. A Java Sentinel
// rule's are its DegradeRule's: grade, count (the RT bound of a slow
// ratio, else the threshold), slowRatioThreshold, timeWindow in seconds.
func (r *PlanRule) Fields() []RuleField { return r.fields(r.Semantics == core.SemanticsJava) }

func (r *PlanRule) fields(java bool) []RuleField {
	if java {
		out := []RuleField{{"grade", r.Strategy.String()}}
		if r.Strategy == core.SlowRequestRatio {
			out = append(out, RuleField{"count", itoa(int64(r.MaxAllowedRtMs))}, RuleField{"slowRatioThreshold", fmtNum(r.Threshold)})
		} else {
			out = append(out, RuleField{"count", fmtNum(r.Threshold)})
		}
		return append(out, RuleField{"minRequestAmount", itoa(int64(r.MinRequestAmount))},
			RuleField{"statIntervalMs", itoa(int64(r.StatIntervalMs))}, RuleField{"timeWindow", itoa(int64(r.RetryTimeoutMs / 1000))})
	}
	out := []RuleField{{"strategy", r.Strategy.String()}, {"threshold", fmtNum(r.Threshold)}}
	if r.Strategy == core.SlowRequestRatio || r.MaxAllowedRtMs > 0 {
		out = append(out, RuleField{"maxAllowedRtMs", itoa(int64(r.MaxAllowedRtMs))})
	}
	out = append(out, RuleField{"minRequestAmount", itoa(int64(r.MinRequestAmount))}, RuleField{"statIntervalMs", itoa(int64(r.StatIntervalMs))})
	if r.StatSlidingWindowBucketCount > 0 {
		out = append(out, RuleField{"statSlidingWindowBucketCount", itoa(int64(r.StatSlidingWindowBucketCount))})
	}
	return append(out, RuleField{"retryTimeoutMs", itoa(int64(r.RetryTimeoutMs))})
}

// values are the rule's values a plan may change.
func (r *PlanRule) values() RuleValues {
	return RuleValues{MinRequestAmount: r.MinRequestAmount, StatIntervalMs: r.StatIntervalMs,
		MaxAllowedRtMs: r.MaxAllowedRtMs, RetryTimeoutMs: r.RetryTimeoutMs, Threshold: r.Threshold}
}

// Change is one field a plan changes: its current value and the proposed
// one, or the range of the values instances each get.
type Change struct {
	Field string
	// Key is the entry of a map field the change is to (specificItems'
	// parameter value): input, for renderers to sanitize; "" for others.
	Key string
	// CurrentText and ProposedText are the values of a field that is not
	// a number (limitApp), in words; "" for a number's.
	CurrentText, ProposedText string
	Current                   int64
	// Lowest and Highest bound the proposed values: equal unless the
	// instances each get their own.
	Lowest, Highest int64
	// PerInstance are the instances' own values, in the plan's instance
	// order; nil when they all take the same.
	PerInstance []InstanceValue
}

// InstanceValue is the value one instance gets.
type InstanceValue struct {
	Instance string
	Value    int64
}

// Proposed is the proposed value: "30000", or "30000 to 40000, one per
// instance".
func (c *Change) Proposed() string {
	if c.ProposedText != "" {
		return c.ProposedText
	}
	if c.PerInstance == nil {
		return itoa(c.Lowest)
	}
	return itoa(c.Lowest) + " to " + itoa(c.Highest) + ", one per instance"
}

// CurrentValue is the current value: "10000".
func (c *Change) CurrentValue() string {
	if c.CurrentText != "" {
		return c.CurrentText
	}
	return itoa(c.Current)
}

// ProposedRange is the proposed value, or the range of the instances'
// own: "30000-40000".
func (c *Change) ProposedRange() string {
	if c.ProposedText != "" {
		return c.ProposedText
	}
	if c.Lowest != c.Highest {
		return itoa(c.Lowest) + "-" + itoa(c.Highest)
	}
	return itoa(c.Lowest)
}

// String is the change in words: "retryTimeoutMs 10000 -> 30000".
func (c *Change) String() string { return c.Field + " " + c.CurrentValue() + " -> " + c.Proposed() }

// changes lists the fields v sets (with per, the instances' own values)
// against the current rule cur, in the rule's order; a value equal to
// the current one is no change, unless instances get others.
func changes(v RuleValues, per map[string]RuleValues, names []string, cur *PlanRule, java bool) []Change {
	now := cur.values()
	var out []Change
	for _, f := range showOrder {
		if f == fieldThreshold {
			// A ratio is no whole number: shown in words, never per instance.
			if v.Threshold > 0 && v.Threshold != now.Threshold {
				out = append(out, Change{Field: f.name(), CurrentText: fmtNum(now.Threshold), ProposedText: fmtNum(v.Threshold)})
			}
			continue
		}
		c := Change{Field: f.name(), Current: int64(now.get(f)), Lowest: int64(v.get(f)), Highest: int64(v.get(f))}
		for _, name := range names {
			pv, ok := per[name]
			if !ok || pv.get(f) == 0 {
				continue
			}
			x := int64(pv.get(f))
			if c.PerInstance == nil {
				c.Lowest, c.Highest = x, x
			}
			c.Lowest, c.Highest = min(c.Lowest, x), max(c.Highest, x)
			c.PerInstance = append(c.PerInstance, InstanceValue{name, x})
		}
		if c.Lowest == 0 || (c.PerInstance == nil && c.Lowest == c.Current) {
			continue
		}
		out = append(out, c)
	}
	if java {
		for i := range out {
			javaChange(&out[i], cur.Strategy)
		}
	}
	return out
}

// javaChange names a change as Java's DegradeRule does: count for the RT
// bound of a slow ratio and for the threshold of the others,
// slowRatioThreshold for a slow ratio's, timeWindow in seconds for the
// retry timeout.
func javaChange(c *Change, strategy core.Strategy) {
	switch c.Field {
	case "threshold":
		if strategy == core.SlowRequestRatio {
			c.Field = "slowRatioThreshold"
		} else {
			c.Field = "count"
		}
	case "maxAllowedRtMs":
		c.Field = "count"
	case "retryTimeoutMs":
		c.Field = "timeWindow"
		c.Current, c.Lowest, c.Highest = c.Current/1000, c.Lowest/1000, c.Highest/1000
		for i := range c.PerInstance {
			c.PerInstance[i].Value /= 1000
		}
	}
}

// Changes lists what the plan changes, in the rule's order: Proposed,
// with the values of PerInstance. Empty when no change is safe.
func (p *Plan) Changes() []Change {
	switch {
	case p.Param != nil && p.Safe:
		return []Change{p.Param.change()}
	case p.Flow != nil && p.Safe:
		return []Change{p.Flow.change()}
	case p.Param != nil || p.Flow != nil:
		return nil
	}
	return changes(p.Proposed, p.PerInstance, p.Instances, &p.Current, p.java)
}

// LeftOut lists what the plan considered and did not propose: all it
// considered when no change is safe, else what was left out to make it
// so (Why says why).
func (p *Plan) LeftOut() []Change {
	switch {
	case (p.Param != nil || p.Flow != nil) && p.Safe:
		return nil
	case p.Param != nil:
		return []Change{p.Param.change()}
	case p.Flow != nil:
		return []Change{p.Flow.change()}
	}
	return changes(p.Rejected, nil, nil, &p.Current, p.java)
}

// Replay is what the plan's replay shows: its measures side by side and
// what they rest on; ok is false when none ran.
func (p *Plan) Replay() (rows []whatif.Row, basis string, ok bool) {
	switch {
	case p.Param != nil && p.Param.WhatIf != nil:
		return p.Param.WhatIf.Rows(), p.Param.WhatIf.Basis(), true
	case p.Flow != nil && p.Flow.WhatIf != nil:
		return p.Flow.WhatIf.Rows(), p.Flow.WhatIf.Basis(), true
	case p.Param == nil && p.Flow == nil && p.WhatIf != nil:
		return p.WhatIf.Rows(), p.WhatIf.Basis(), true
	}
	return nil, "", false
}

// safeWhy is what a safe plan's replay showed.
const safeWhy = "replayed on this input, it loses no outage the current rule caught and catches none more than one statIntervalMs later"

// Verdict is "safe" or "no safe change found", and why: for a safe plan,
// what its replay showed and what was left out to make it so; for one
// that is not, why not.
func (p *Plan) Verdict() (verdict, why string) {
	if p.Safe {
		why := safeWhy
		switch {
		case p.Param != nil:
			why = p.Param.safeWhy()
		case p.Flow != nil:
			why = p.Flow.safeWhy()
		}
		if p.Why != "" {
			return "safe", why + "; " + p.Why
		}
		return "safe", why
	}
	if why, ok := strings.CutPrefix(p.Why, notChecked+": "); ok {
		return notChecked, why
	}
	why, _ = strings.CutPrefix(p.Why, noSafeChange+": ")
	return noSafeChange, why
}

// Covers reports whether the plan merges f's proposal: f's app and
// resource, and its kind among Because.
func (p *Plan) Covers(f *Finding) bool {
	return p.App == f.App && p.Resource == f.Resource && slices.Contains(p.Because, f.Kind)
}
