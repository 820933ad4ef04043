package triage

import (
	"maps"
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

// InstanceRules are an instance's rules for one resource as the engine
// holds them, the one copy every view reads: breakers and flows in their
// canonical order (sorted by content, so equal sets compare equal whatever
// the order they were sent in), hot-parameter rules as sent.
type InstanceRules struct {
	// Version is the version of the instance's latest rules message.
	Version  string
	Breakers []core.BreakerRule
	Flows    []core.FlowRule
	Params   []core.HotParamRule
	// Key is the canonical content of Breakers and Flows that rule drift
	// compares (retryTimeoutMs left out); "" for none.
	Key string
}

// RulesOf returns instance h's rules for resource. The slices are the
// engine's and must not be modified; a later Rules replaces them rather
// than changing them, so they stay as they were.
func (e *Engine) RulesOf(h Instance, resource string) InstanceRules {
	e.mu.Lock()
	defer e.mu.Unlock()
	in := h.in
	r := InstanceRules{Version: in.version, Params: in.hotRules[resource]}
	if rr := in.rules[resource]; rr != nil {
		r.Breakers, r.Flows, r.Key = rr.breakers, rr.flows, rr.key
	}
	return r
}

// HasBreaker reports whether instance h has a breaker rule for resource.
func (e *Engine) HasBreaker(h Instance, resource string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	rr := h.in.rules[resource]
	return rr != nil && len(rr.breakers) > 0
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

	// Every resource with rules is an app x resource (drift compares
	// them): the rules name it by the app x resource's copy of its name,
	// one for all instances of the app.
	rules := map[string]*resRules{}
	get := func(res string) *resRules {
		rr := rules[res]
		if rr == nil {
			rr = &resRules{}
			rules[res] = rr
		}
		return rr
	}
	for _, b := range breakers {
		b.Resource = e.appRes(a, b.Resource).resource
		b.ID = strings.Clone(b.ID)
		rr := get(b.Resource)
		rr.breakers = append(rr.breakers, b)
	}
	for _, f := range flows {
		f.Resource = e.appRes(a, f.Resource).resource
		f.ID = strings.Clone(f.ID)
		rr := get(f.Resource)
		rr.flows = append(rr.flows, f)
	}
	for res, rr := range rules {
		rr.canonicalize()
		rules[res] = e.shareRules(rr)
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
		s.ratio = hasRatioBreaker(s.rr)
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

// shareRules returns the one copy of rules equal to rr kept for all
// instances (those of an app mostly have the same rules), or rr, which
// becomes that copy when none has its comparison key yet. Rules are not
// changed once recorded. A copy of the same key but other content (a
// retryTimeoutMs jittered per instance) shares its key string only.
func (e *Engine) shareRules(rr *resRules) *resRules {
	if x, ok := e.keys[rr.key]; ok {
		if slices.Equal(x.breakers, rr.breakers) && slices.Equal(x.flows, rr.flows) {
			return x
		}
		rr.key = x.key
		return rr
	}
	if len(e.keys) >= maxInterned || e.keyBytes+len(rr.key) > maxSharedBytes {
		// Sharing only saves memory and time: start over rather than
		// keep the rules of every content ever sent.
		clear(e.keys)
		e.keyBytes = 0
	}
	e.keys[rr.key] = rr
	e.keyBytes += len(rr.key)
	return rr
}

// maxSharedBytes bounds the comparison keys kept for sharing, and with
// them about as many bytes of rules no instance may hold any more: a peer
// sending rules of new contents in every message makes the engine start
// over, not keep them all.
const maxSharedBytes = 8 << 20
