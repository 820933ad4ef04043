package triage

import (
	"slices"
	"strings"

	"github.com/sentinel-top/sentinel-top/core"
)

// Rules: an instance's complete rule set, as the engine keeps and compares it.

type resRules struct {
	breakers []core.BreakerRule
	flows    []core.FlowRule
	key      string // canonical content, for comparing instances
}

type slowRef struct {
	resource string
	rule     core.BreakerRule
}

// Rules records an instance's complete rule set (a wire v1 "rules"
// message). The slices are copied.
func (e *Engine) Rules(instance string, ts int64, version string, breakers []core.BreakerRule, flows []core.FlowRule) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.observeState(ts)
	in := e.instance(instance, ts)
	a := in.app

	rules := map[string]*resRules{}
	get := func(res string) *resRules {
		rr := rules[res]
		if rr == nil {
			rr = &resRules{}
			rules[strings.Clone(res)] = rr
		}
		return rr
	}
	for _, b := range breakers {
		b.Resource = strings.Clone(b.Resource)
		b.ID = strings.Clone(b.ID)
		rr := get(b.Resource)
		rr.breakers = append(rr.breakers, b)
	}
	for _, f := range flows {
		f.Resource = strings.Clone(f.Resource)
		f.ID = strings.Clone(f.ID)
		rr := get(f.Resource)
		rr.flows = append(rr.flows, f)
	}
	var slow []slowRef
	for res, rr := range rules {
		rr.canonicalize()
		if k, ok := e.keys[rr.key]; ok {
			rr.key = k
		} else {
			if len(e.keys) >= maxInterned {
				clear(e.keys) // interning only saves time: start over
			}
			e.keys[rr.key] = rr.key
		}
		e.resNames[res] = struct{}{}
		e.appRes(a, res) // drift compares every resource with rules
		best := -1
		for i, b := range rr.breakers {
			if b.Strategy == core.SlowRequestRatio && (best < 0 || b.MaxAllowedRtMs < rr.breakers[best].MaxAllowedRtMs) {
				best = i
			}
		}
		if best >= 0 {
			slow = append(slow, slowRef{resource: res, rule: rr.breakers[best]})
		}
	}
	slices.SortFunc(slow, func(x, y slowRef) int { return strings.Compare(x.resource, y.resource) })

	var changed map[string]struct{} // resources whose comparison may change; nil: all
	if in.hasRules && in.attached {
		changed = map[string]struct{}{}
		for r := range in.rules {
			changed[r] = struct{}{}
		}
		for r := range rules {
			changed[r] = struct{}{}
		}
	}
	if in.attached {
		if in.hasRules {
			for r := range in.rules {
				if _, ok := rules[r]; !ok {
					e.appRes(a, r).dropRule(ts)
				}
			}
		}
		for r := range rules {
			if _, ok := in.rules[r]; !ok || !in.hasRules {
				e.appRes(a, r).addRule(ts)
			}
		}
	}
	e.noteRules(in, ts, version, rules)
	in.rules, in.hasRules, in.version, in.slow = rules, true, strings.Clone(version), slow
	e.inertRules(in)

	// Traffic of a resource that now has a rule is protected from here on.
	for r := range rules {
		if s := in.series[r]; s != nil {
			s.up.on = false
		}
	}
	e.updateMisaligned(in, ts)
	if in.attached {
		e.recomputeDrift(a, ts, in, changed)
	}
}
