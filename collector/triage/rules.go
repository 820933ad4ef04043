package triage

import (
	"maps"
	"strings"

	"github.com/sentinel-top/sentinel-top/core"
)

// Rules: an instance's complete rule set, as the engine keeps and compares it.

type resRules struct {
	breakers []core.BreakerRule
	flows    []core.FlowRule
	key      string // canonical content, for comparing instances
}

// Rules records the complete rule set of instance h (a wire v1 "rules"
// message): its breakers, flows and hot-parameter rules (params). The
// slices are copied. Hot-parameter rules only inform hot-value's advice:
// rule drift, unprotected traffic and lost rules judge breakers and flows.
func (e *Engine) Rules(h Instance, ts int64, version string, breakers []core.BreakerRule, flows []core.FlowRule, params ...core.HotParamRule) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.observeState(ts)
	in := h.in
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
	}

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
	in.hotRules = nil
	for _, p := range params {
		if in.hotRules == nil {
			in.hotRules = map[string][]core.HotParamRule{}
		}
		p.Resource = strings.Clone(p.Resource)
		p.SpecificItems = maps.Clone(p.SpecificItems)
		in.hotRules[p.Resource] = append(in.hotRules[p.Resource], p)
	}
	in.rules, in.hasRules, in.version = rules, true, strings.Clone(version)
	for _, s := range in.seriesList {
		s.rr = rules[s.resource]
		e.adviceChanged(s)
	}
	e.inertRules(in)
	for _, s := range in.seriesList {
		s.setHold() // buckets wait out the rules' statIntervalMs
	}

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
