package triage

import (
	"slices"

	"github.com/sentinel-top/sentinel-top/core"
)

// inert-rule's origin-mismatch check: a Java flow rule whose limitApp is
// the app's own name. Java Sentinel applies such a rule only to entries
// whose origin (the caller's name, ContextUtil.enter's origin) is that
// name: the calls the app makes to itself, never its callers'. Only rules
// read from Java Sentinel carry limitApp (wire-v1), so a rule with one is a
// Java rule. Java's degrade rules carry limitApp too, but no version checks
// it (DegradeSlot, and DegradeRuleManager.checkDegrade before 1.8, try every
// breaker of the resource on every entry): a breaker naming the app itself
// acts on every caller, and is never inert for it
// (testdata/java/paramflow-1.8.9 records one blocking entries of no origin).

// The limitApp values that are not an app's name.
const (
	limitAppDefault = "default" // every caller
	limitAppOther   = "other"   // callers no other rule of the resource names
)

// originCand is an instance and a resource whose rules name a caller in
// limitApp: judged against the instance's app when findings are asked,
// since the app may be told after the rules.
type originCand struct {
	in       *instState
	resource string
}

// namesCaller reports whether limitApp names one caller's app.
func namesCaller(limitApp string) bool {
	return limitApp != "" && limitApp != limitAppDefault && limitApp != limitAppOther
}

// originRules notes the resources of an instance's new flow rules whose
// limitApp names a caller.
func (e *Engine) originRules(in *instState) {
	for res, rr := range in.rules() {
		if slices.ContainsFunc(rr.Flows, func(f core.FlowRule) bool { return namesCaller(f.LimitApp) }) {
			if e.inert.origins == nil {
				e.inert.origins = map[originCand]struct{}{}
			}
			e.inert.origins[originCand{in: in, resource: res}] = struct{}{}
		}
	}
}

// originMismatch judges a candidate: flow rules of the resource still
// loaded name the instance's own app as limitApp, and the resource's
// traffic was reported for InertMinReportMs. A candidate whose flow rules
// no longer name a caller is reported as gone.
func originMismatch(c originCand) (hit inertHit, ok, gone bool) {
	rr := c.in.rulesOf(c.resource)
	if rr == nil {
		return inertHit{}, false, true
	}
	app := c.in.app.name
	own := func(limitApp string) bool { return app != "" && limitApp == app }
	var set RuleSet
	named := false
	for _, f := range rr.Flows {
		named = named || namesCaller(f.LimitApp)
		if own(f.LimitApp) {
			set.Flows = append(set.Flows, f)
		}
	}
	if !named {
		return inertHit{}, false, true
	}
	s := c.in.series[c.resource]
	if len(set.Breakers)+len(set.Flows) == 0 || !hasTraffic(s) || s.reportedMs < InertMinReportMs {
		return inertHit{}, false, false
	}
	x := InertRuleFacts{Reason: InertOriginMismatch, Rule: set, Offered: s.offered, QPS: s.qps()}
	return inertHit{in: c.in, resource: c.resource, facts: x, from: s.firstAt, to: s.endAt}, true, false
}
