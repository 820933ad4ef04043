package triage

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/sentinel-top/sentinel-top/collector/whatif"
	"github.com/sentinel-top/sentinel-top/core"
)

// Plans (findings-v1 revision 3, "Rule plans"): the rule values that
// findings propose for one breaker rule (an app, a resource and a rule
// id) are merged into one proposed rule, checked by replaying the
// input's own traffic through core's breakers with the current rule and
// with the proposal (package whatif), and gated: a plan that loses an
// outage the current rule caught, or catches it more than one
// statIntervalMs later, is not proposed. docs/TRIAGE.md writes down the
// precedence; planFields is it.

// RuleValues are the fields of a breaker rule a plan may change, with the
// rule's JSON names; 0 is "not changed" (left out).
type RuleValues struct {
	MinRequestAmount uint64 `json:"minRequestAmount,omitempty"`
	StatIntervalMs   uint32 `json:"statIntervalMs,omitempty"`
	MaxAllowedRtMs   uint64 `json:"maxAllowedRtMs,omitempty"`
	RetryTimeoutMs   uint32 `json:"retryTimeoutMs,omitempty"`
	// Threshold is the ratio (strategies 0 and 1) or error count
	// (strategy 2) at which the breaker trips.
	Threshold float64 `json:"threshold,omitempty"`
}

// IsZero reports whether no field is set.
func (v RuleValues) IsZero() bool { return v == RuleValues{} }

// Apply returns r with v's fields set.
func (v RuleValues) Apply(r core.BreakerRule) core.BreakerRule {
	if v.MinRequestAmount > 0 {
		r.MinRequestAmount = v.MinRequestAmount
	}
	if v.StatIntervalMs > 0 {
		r.StatIntervalMs = v.StatIntervalMs
	}
	if v.MaxAllowedRtMs > 0 {
		r.MaxAllowedRtMs = v.MaxAllowedRtMs
	}
	if v.RetryTimeoutMs > 0 {
		r.RetryTimeoutMs = v.RetryTimeoutMs
	}
	if v.Threshold > 0 {
		r.Threshold = v.Threshold
	}
	return r
}

// field is one field of RuleValues, in the order a plan gives fields up
// when its whole is not safe: first what makes the breaker see less (a
// higher RT bound, a higher threshold, a longer window), last what only
// makes it wait longer.
type field int

const (
	fieldMaxAllowedRt field = iota
	fieldThreshold
	fieldStatInterval
	fieldMinRequest
	fieldRetryTimeout
	nFields
)

func (f field) name() string {
	return [...]string{"maxAllowedRtMs", "threshold", "statIntervalMs", "minRequestAmount", "retryTimeoutMs"}[f]
}

// get is the field's value (0: not set); a whole number but for a
// ratio threshold.
func (v *RuleValues) get(f field) float64 {
	switch f {
	case fieldMaxAllowedRt:
		return float64(v.MaxAllowedRtMs)
	case fieldThreshold:
		return v.Threshold
	case fieldStatInterval:
		return float64(v.StatIntervalMs)
	case fieldMinRequest:
		return float64(v.MinRequestAmount)
	default:
		return float64(v.RetryTimeoutMs)
	}
}

func (v *RuleValues) clear(f field) {
	switch f {
	case fieldMaxAllowedRt:
		v.MaxAllowedRtMs = 0
	case fieldThreshold:
		v.Threshold = 0
	case fieldStatInterval:
		v.StatIntervalMs = 0
	case fieldMinRequest:
		v.MinRequestAmount = 0
	default:
		v.RetryTimeoutMs = 0
	}
}

// PlanRule is a breaker rule as a plan shows it (its current values).
type PlanRule struct {
	Strategy                     core.Strategy  `json:"strategy"`
	MaxAllowedRtMs               uint64         `json:"maxAllowedRtMs,omitempty"`
	Threshold                    float64        `json:"threshold"`
	MinRequestAmount             uint64         `json:"minRequestAmount"`
	StatIntervalMs               uint32         `json:"statIntervalMs"`
	StatSlidingWindowBucketCount uint32         `json:"statSlidingWindowBucketCount,omitempty"`
	RetryTimeoutMs               uint32         `json:"retryTimeoutMs"`
	Semantics                    core.Semantics `json:"-"`
}

func planRule(r *core.BreakerRule) PlanRule {
	return PlanRule{Strategy: r.Strategy, MaxAllowedRtMs: r.MaxAllowedRtMs, Threshold: r.Threshold, MinRequestAmount: r.MinRequestAmount,
		StatIntervalMs: r.StatIntervalMs, StatSlidingWindowBucketCount: r.StatSlidingWindowBucketCount, RetryTimeoutMs: r.RetryTimeoutMs,
		Semantics: r.Semantics}
}

// Plan is one rule's proposed change, checked on the input's traffic.
type Plan struct {
	App      string `json:"app"`
	Resource string `json:"resource"`
	// Rule is the kind of rule: "breaker", "param" for a hot-parameter
	// rule (whose plan is Param's) or "flow" (Flow's).
	Rule   string `json:"rule"`
	RuleID string `json:"-"`
	// Instances are those running the rule, replayed, sorted.
	Instances []string `json:"instances"`
	Current   PlanRule `json:"current"`
	// Proposed holds only the fields that change (empty when no change is
	// safe); PerInstance the values instances should each have their own
	// of (Sentinel has no jitter setting).
	Proposed    RuleValues            `json:"proposed"`
	PerInstance map[string]RuleValues `json:"perInstance,omitempty"`
	// Because lists the kinds of the findings the proposal merges.
	Because []Kind `json:"because"`
	// Safe: the replay loses no outage the current rule caught; Why says
	// why not, or what was left out to make it so.
	Safe bool   `json:"safe"`
	Why  string `json:"why"`
	// Rejected are the values considered and left out by the gate.
	Rejected RuleValues `json:"-"`
	// WhatIf is the replay of the plan as proposed (of the whole proposal
	// when no part is safe); nil when none could run.
	WhatIf *whatif.Result `json:"whatIf,omitempty"`
	// Param is a hot-parameter rule's plan (Rule "param"), and Flow a
	// flow rule's (Rule "flow"): each has its own current rule, proposal
	// and replay; nil for a breaker's.
	Param *ParamPlan `json:"-"`
	Flow  *FlowPlan  `json:"-"`

	severity Severity
	from     int64
	java     bool
}

// planKey names one rule.
type planKey struct{ app, resource, ruleID string }

// proposal is what the findings propose for one rule, before the merge.
type proposal struct {
	key      planKey
	severity Severity
	from     int64
	because  []Kind
	insts    []string // the findings' instances
	// Each field's candidates by kind.
	minReq, inertMinReq, interval, maxRt, retry []int64
	threshold                                   []float64
	spread                                      *RetryRange
	// cannotTrip: an inert-rule cannot-trip finding proposes for the rule.
	cannotTrip bool
}

// proposals collects the breaker rule values the findings propose, by
// rule, in the findings' order.
func proposals(fs []Finding) []*proposal {
	var out []*proposal
	by := map[planKey]*proposal{}
	get := func(f *Finding, ruleID string) *proposal {
		k := planKey{f.App, f.Resource, ruleID}
		p := by[k]
		if p == nil {
			p = &proposal{key: k, severity: f.Severity, from: f.From}
			by[k] = p
			out = append(out, p)
		}
		if !slices.Contains(p.because, f.Kind) {
			p.because = append(p.because, f.Kind)
		}
		p.insts = mergeNames(p.insts, f.Instances)
		return p
	}
	for i := range fs {
		f := &fs[i]
		switch x := f.Facts.(type) {
		case *SawtoothFacts:
			if s := x.Suggest; s.MaxAllowedRtMs > 0 || s.RetryTimeoutMs > 0 {
				p := get(f, x.RuleID)
				if s.MaxAllowedRtMs > 0 {
					p.maxRt = append(p.maxRt, int64(s.MaxAllowedRtMs))
				}
				if s.RetryTimeoutMs > 0 {
					p.retry = append(p.retry, int64(s.RetryTimeoutMs))
				}
			}
		case *SyncHalfOpenFacts:
			if x.Suggest != nil {
				p := get(f, "")
				r := x.Suggest.RetryTimeoutMs
				p.spread = &r
			}
		case *LowConfidenceFacts:
			id := ""
			if x.Rule != nil {
				id = x.Rule.ID
			}
			p := get(f, id)
			p.minReq = append(p.minReq, int64(x.Suggest.MinRequestAmount))
			if x.Suggest.StatIntervalMs > 0 {
				p.interval = append(p.interval, int64(x.Suggest.StatIntervalMs))
			}
		case *RuleAdviceFacts:
			s := x.Suggest
			if s == (RuleAdviceSuggest{}) {
				continue
			}
			p := get(f, x.Rule.ID)
			if s.MinRequestAmount > 0 {
				p.minReq = append(p.minReq, int64(s.MinRequestAmount))
			}
			if s.StatIntervalMs > 0 {
				p.interval = append(p.interval, int64(s.StatIntervalMs))
			}
			if s.MaxAllowedRtMs > 0 {
				p.maxRt = append(p.maxRt, int64(s.MaxAllowedRtMs))
			}
		case *InertRuleFacts:
			s := x.Suggest
			if x.Reason != InertCannotTrip || s == nil || s.MinRequestAmount == 0 && s.Threshold == 0 || len(x.Rule.Breakers) == 0 {
				continue
			}
			p := get(f, x.Rule.Breakers[0].ID)
			p.cannotTrip = true
			if s.MinRequestAmount > 0 {
				p.inertMinReq = append(p.inertMinReq, int64(s.MinRequestAmount))
			}
			if s.Threshold > 0 {
				p.threshold = append(p.threshold, s.Threshold)
			}
		case *SelfInflictedFacts:
			s := x.Suggest
			if s == nil {
				continue
			}
			p := get(f, x.Rule.ID)
			if s.MaxAllowedRtMs > 0 {
				p.maxRt = append(p.maxRt, int64(s.MaxAllowedRtMs))
			}
			if s.Threshold > 0 {
				p.threshold = append(p.threshold, s.Threshold)
			}
		}
	}
	return foldUnnamed(out)
}

// foldUnnamed merges a proposal that names no rule id (a recovery flood
// is judged over all of a resource's breakers) into the one proposal of
// its app and resource that names one, so that one rule gets one plan.
func foldUnnamed(ps []*proposal) []*proposal {
	named := map[[2]string][]*proposal{}
	for _, p := range ps {
		if p.key.ruleID != "" {
			k := [2]string{p.key.app, p.key.resource}
			named[k] = append(named[k], p)
		}
	}
	out := ps[:0]
	for _, p := range ps {
		into := named[[2]string{p.key.app, p.key.resource}]
		if p.key.ruleID != "" || len(into) != 1 {
			out = append(out, p)
			continue
		}
		q := into[0]
		for _, k := range p.because {
			if !slices.Contains(q.because, k) {
				q.because = append(q.because, k)
			}
		}
		q.insts = mergeNames(q.insts, p.insts)
		q.minReq = append(q.minReq, p.minReq...)
		q.inertMinReq = append(q.inertMinReq, p.inertMinReq...)
		q.interval = append(q.interval, p.interval...)
		q.maxRt = append(q.maxRt, p.maxRt...)
		q.retry = append(q.retry, p.retry...)
		q.threshold = append(q.threshold, p.threshold...)
		q.cannotTrip = q.cannotTrip || p.cannotTrip
		if q.spread == nil {
			q.spread = p.spread
		}
		q.severity, q.from = max(q.severity, p.severity), min(q.from, p.from)
	}
	return out
}

// merge decides each field from its candidates against the current rule
// r (docs/TRIAGE.md, "Plans"): a breaker that cannot trip takes the
// minRequestAmount that lets it; otherwise the highest minRequestAmount
// and statIntervalMs proposed (each proposal asks for at least that much
// evidence), the lowest maxAllowedRtMs and threshold (the ones that keep
// the breaker most sensitive; a breaker that cannot trip gets no higher
// bound) and the sawtooth's retry timeout, spread per instance over the
// flood's range. A value equal to the rule's is no
// change, and a field the rule's SDK does not have is never proposed.
func (p *proposal) merge(r *core.BreakerRule) (v RuleValues, spread *RetryRange) {
	if len(p.inertMinReq) > 0 {
		v.MinRequestAmount = uint64(slices.Min(p.inertMinReq))
	} else if len(p.minReq) > 0 {
		v.MinRequestAmount = uint64(slices.Max(p.minReq))
	}
	if len(p.interval) > 0 {
		v.StatIntervalMs = uint32(min(slices.Max(p.interval), math.MaxUint32))
	}
	// A breaker that cannot trip caught nothing the replay's gate could
	// keep, while its windows showed a failure at its bound: a higher bound
	// could hide that failure (the healthy p99 of a breaker that never
	// opens counts it), so it is never raised.
	if m := uint64(slices.Min(append(p.maxRt, math.MaxInt64))); len(p.maxRt) > 0 && r.Strategy == core.SlowRequestRatio &&
		(!p.cannotTrip || m < r.MaxAllowedRtMs) {
		v.MaxAllowedRtMs = m
	}
	if len(p.retry) > 0 {
		v.RetryTimeoutMs = uint32(min(slices.Max(p.retry), math.MaxUint32))
	}
	if len(p.threshold) > 0 {
		v.Threshold = slices.Min(p.threshold)
	}
	if p.spread != nil {
		s := *p.spread
		if v.RetryTimeoutMs > 0 && int64(v.RetryTimeoutMs) != s.Min {
			s = RetryRange{Min: int64(v.RetryTimeoutMs), Max: int64(retrySpreadTo(v.RetryTimeoutMs))}
		}
		v.RetryTimeoutMs = uint32(s.Min)
		spread = &s
	} else if v.RetryTimeoutMs > 0 {
		spread = &RetryRange{Min: int64(v.RetryTimeoutMs), Max: int64(retrySpreadTo(v.RetryTimeoutMs))}
	}
	if r.Semantics == core.SemanticsJava16 {
		v.MinRequestAmount, v.StatIntervalMs = 0, 0
	}
	if v.MinRequestAmount == r.MinRequestAmount {
		v.MinRequestAmount = 0
	}
	if v.StatIntervalMs == r.StatIntervalMs {
		v.StatIntervalMs = 0
	}
	if v.MaxAllowedRtMs == r.MaxAllowedRtMs {
		v.MaxAllowedRtMs = 0
	}
	if v.Threshold == r.Threshold {
		v.Threshold = 0
	}
	if v.RetryTimeoutMs == 0 {
		spread = nil
	}
	return v, spread
}

// perInstance spreads the retry timeout over the instances, sorted by
// name, evenly from the range's start to its end (whole seconds for Java
// rules); nil for one instance or no spread.
func perInstance(names []string, spread *RetryRange, java bool) map[string]RuleValues {
	if spread == nil || len(names) < 2 {
		return nil
	}
	out := make(map[string]RuleValues, len(names))
	n := int64(len(names) - 1)
	for i, name := range names {
		ms := spread.Min + (spread.Max-spread.Min)*int64(i)/n
		if java {
			ms = ms / 1000 * 1000
		} else {
			ms = ms / 100 * 100
		}
		out[name] = RuleValues{RetryTimeoutMs: uint32(min(ms, math.MaxUint32))}
	}
	return out
}

// planInst is an instance a plan replays: its rule and its traffic.
type planInst struct {
	in   *instState
	s    *series
	rule core.BreakerRule
}

// planInstances are the instances of the proposal's app that run the
// rule as the first of the findings' instances does (leaving out
// retryTimeoutMs), the latest process of each name, sorted by name; ok
// is false when none of the findings' instances has the rule.
func (e *Engine) planInstances(p *proposal) (out []planInst, ok bool) {
	latest := map[string]*instState{}
	for _, in := range e.instList {
		if in.app != nil && in.app.name == p.key.app && in.series[p.key.resource] != nil {
			latest[in.id.Name] = in
		}
	}
	var ref *core.BreakerRule
	for _, name := range p.insts {
		if in := latest[name]; in != nil {
			if r, has := breakerRule(in, p.key.resource, p.key.ruleID); has {
				ref = &r
				break
			}
		}
	}
	if ref == nil {
		return nil, false
	}
	for _, in := range latest {
		r, has := breakerRule(in, p.key.resource, p.key.ruleID)
		if !has {
			continue
		}
		a, b := r, *ref
		a.RetryTimeoutMs, b.RetryTimeoutMs = 0, 0
		if a != b {
			continue
		}
		out = append(out, planInst{in: in, s: in.series[p.key.resource], rule: r})
	}
	slices.SortFunc(out, func(a, b planInst) int { return strings.Compare(a.in.id.Name, b.in.id.Name) })
	return out, true
}

// Plans makes the plans of findings fs (from Findings at the same now)
// and brings the findings' suggest and advice in line with them: a
// finding whose proposal the plan changed or left out says the plan's
// values instead, or that no safe change was found. fs is changed in
// place (its facts replaced by copies, never modified).
func (e *Engine) Plans(now int64, fs []Finding) []Plan {
	return e.PlansWith(now, fs, PlanOptions{})
}

// PlanOptions bound what making plans may cost: a dashboard makes them
// again while data flows in, over a fleet whose proposals can be many.
type PlanOptions struct {
	// ReuseMs: a plan made less than ReuseMs before now, of the same
	// proposal over the same instances and rules, is reused rather than
	// replayed again, though traffic came since: its numbers are at most
	// ReuseMs old. 0: none is. The plans of the last planMemoSigs
	// proposals of a rule are kept: a proposal whose numbers move back
	// and forth between two values (a QPS at the edge between two
	// windows' sizes) is not replayed at each move.
	ReuseMs int64
	// MaxCalls bounds the calls one making replays in all. The plans past
	// it are not checked yet, and say so (no value is shown unchecked);
	// the next making checks them first, those never checked before those
	// checked longest ago. 0: no bound (a report).
	MaxCalls int64
}

// planMemo is a plan as last made, with what it was made of.
type planMemo struct {
	sig  string
	at   int64
	plan Plan
}

// planMemos are a rule's plans as last made, the latest first, one per
// proposal (sig), at most planMemoSigs.
type planMemos []planMemo

// planMemoSigs is how many proposals of one rule keep their plans.
const planMemoSigs = 4

// of is the plan made of sig, nil when none is kept.
func (ms planMemos) of(sig string) *planMemo {
	for i := range ms {
		if ms[i].sig == sig {
			return &ms[i]
		}
	}
	return nil
}

// put keeps m first, in place of the one of its sig, the oldest past
// planMemoSigs going.
func (ms *planMemos) put(m planMemo) {
	l := *ms
	i := slices.IndexFunc(l, func(x planMemo) bool { return x.sig == m.sig })
	if i < 0 {
		if len(l) < planMemoSigs {
			l = append(l, planMemo{})
		}
		i = len(l) - 1
	}
	copy(l[1:i+1], l[:i])
	l[0] = m
	*ms = l
}

// PlansWith is Plans within o's bounds.
func (e *Engine) PlansWith(now int64, fs []Finding, o PlanOptions) []Plan {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.planMemo == nil {
		e.planMemo = map[planKey]*planMemos{}
	}
	type todo struct {
		d   *planDraft
		age int64 // how long ago it was last made; MaxInt64: never
	}
	var plans []Plan
	var work []todo
	for _, p := range proposals(fs) {
		d, done, ok := e.draft(p)
		if !ok {
			continue
		}
		if done {
			plans = append(plans, d.plan)
			continue
		}
		ms := e.planMemo[p.key]
		if ms == nil {
			ms = &planMemos{}
			e.planMemo[p.key] = ms
		}
		if m := ms.of(d.sig); m != nil && o.ReuseMs > 0 && now >= m.at && now-m.at < o.ReuseMs {
			pl := m.plan
			pl.severity, pl.from, pl.Because = d.plan.severity, d.plan.from, d.plan.Because
			plans = append(plans, pl)
			continue
		}
		age := int64(math.MaxInt64)
		if len(*ms) > 0 {
			age = now - (*ms)[0].at // the rule's latest plan, whatever its proposal
		}
		work = append(work, todo{d, age})
	}
	slices.SortStableFunc(work, func(a, b todo) int { return cmp.Compare(b.age, a.age) })
	var spent int64
	for _, w := range work {
		if o.MaxCalls > 0 && spent >= o.MaxCalls {
			pl := w.d.plan
			pl.Rejected, pl.Why = w.d.v, notChecked+": this input proposes many changes, and each snapshot replays a bounded share of them; this one is next"
			plans = append(plans, pl)
			continue
		}
		pl, calls := e.check(w.d)
		spent += calls
		e.planMemo[w.d.key].put(planMemo{sig: w.d.sig, at: now, plan: pl})
		plans = append(plans, pl)
	}
	pp, n := e.paramPlans(fs, o, spent)
	fp, _ := e.flowPlans(fs, o, spent+n)
	plans = append(append(plans, pp...), fp...)
	slices.SortStableFunc(plans, func(a, b Plan) int {
		return cmp.Or(cmp.Compare(b.severity, a.severity), cmp.Compare(a.from, b.from),
			strings.Compare(a.App, b.App), strings.Compare(a.Resource, b.Resource), strings.Compare(a.RuleID, b.RuleID))
	})
	AgreeWithPlans(fs, plans)
	return plans
}

// planDraft is a proposal merged against its rule, before its replay.
type planDraft struct {
	key    planKey
	plan   Plan
	v      RuleValues
	spread *RetryRange
	insts  []planInst
	names  []string
	java   bool
	// byProposal: outages are judged by the proposal's criterion, not the
	// current rule's (judgedByProposal).
	byProposal bool
	sig        string // what the plan is made of: values, instances, rules (not their traffic)
}

// judgedByProposal reports whether a proposal's outages are judged by its
// own criterion rather than the current rule's: when the current rule
// counts healthy calls bad (self-inflicted), its criterion would make the
// healthy traffic an outage to keep catching; when it cannot trip and the
// proposal lowers its threshold (inert-rule cannot-trip), its criterion
// calls the failure it missed healthy traffic, and the calls the proposal
// blocks in it healthy calls blocked.
func judgedByProposal(p *proposal, v RuleValues) bool {
	return slices.Contains(p.because, KindSelfInflicted) || p.cannotTrip && v.Threshold > 0
}

// draft merges one proposal against the rule its instances run. done
// says the plan is whole already (no replay can check it); ok is false
// when there is no plan to make.
func (e *Engine) draft(p *proposal) (d *planDraft, done, ok bool) {
	insts, ok := e.planInstances(p)
	if !ok || len(insts) == 0 {
		return nil, false, false
	}
	ref := &insts[0].rule
	v, spread := p.merge(ref)
	java := ref.Semantics == core.SemanticsJava
	names := make([]string, len(insts))
	for i := range insts {
		names[i] = insts[i].in.id.Name
	}
	plan := Plan{App: p.key.app, Resource: p.key.resource, Rule: "breaker", RuleID: p.key.ruleID, Instances: names,
		Current: planRule(ref), Because: p.because, severity: p.severity, from: p.from, java: java}
	slices.SortFunc(plan.Because, func(a, b Kind) int { return cmp.Compare(a.rank(), b.rank()) })
	if v.IsZero() {
		return nil, false, false
	}
	d = &planDraft{key: p.key, v: v, spread: spread, insts: insts, names: names, java: java, byProposal: judgedByProposal(p, v)}
	if per := d.spreadOf(v); v.RetryTimeoutMs > 0 && per != nil && len(per) == 0 {
		v.RetryTimeoutMs = 0 // every instance runs as long a retry timeout already
		if v.IsZero() {
			return nil, false, false
		}
		d.v = v
	}
	if ref.Semantics == core.SemanticsJava16 {
		plan.Rejected, plan.Why = v, "no safe change found: rules of Sentinel before 1.8 cannot be replayed"
		d.plan = plan
		return d, true, true
	}
	if e.traces.max < 0 {
		plan.Rejected, plan.Why = v, "no safe change found: the input's traffic was not kept, so no change could be checked"
		d.plan = plan
		return d, true, true
	}
	d.plan = plan
	var sig strings.Builder
	fmt.Fprint(&sig, v, spread, d.byProposal)
	for i := range insts {
		fmt.Fprint(&sig, "|", names[i], insts[i].rule)
	}
	d.sig = sig.String()
	return d, false, true
}

// spreadOf is each instance's retry timeout under values v: its share of
// the spread, never shorter than the one it runs (instances already spread
// keep theirs); an empty map when none changes; nil for no retry timeout,
// or one instance (proposed says it).
func (d *planDraft) spreadOf(v RuleValues) map[string]RuleValues {
	if v.RetryTimeoutMs == 0 {
		return nil
	}
	per := perInstance(d.names, d.spread, d.java)
	if per == nil {
		per = map[string]RuleValues{d.names[0]: {RetryTimeoutMs: v.RetryTimeoutMs}}
	}
	changed := false
	for i, n := range d.names {
		pv := per[n]
		pv.RetryTimeoutMs = max(pv.RetryTimeoutMs, d.insts[i].rule.RetryTimeoutMs)
		per[n] = pv
		changed = changed || pv.RetryTimeoutMs != d.insts[i].rule.RetryTimeoutMs
	}
	if !changed {
		return map[string]RuleValues{}
	}
	if len(d.names) == 1 {
		return nil
	}
	return per
}

// check replays and gates a draft; calls is how many calls it replayed.
func (e *Engine) check(d *planDraft) (plan Plan, calls int64) {
	plan, v, insts, names := d.plan, d.v, d.insts, d.names
	ref := &insts[0].rule
	ss := make([]*series, len(insts))
	for i := range insts {
		ss[i] = insts[i].s
	}
	traces, froms := tracesOf(ss)
	var keptFrom int64 // the latest start of a trace the budget cut
	for i, s := range ss {
		if s.logTrimmed() {
			keptFrom = max(keptFrom, froms[i])
		}
	}
	if keptFrom > 0 {
		defer func() {
			note := "replayed on the traffic kept since " + time.UnixMilli(keptFrom).UTC().Format("2006-01-02 15:04:05") +
				" UTC (older traffic went for the memory budget)"
			if plan.Why == "" {
				plan.Why = note
			} else {
				plan.Why += "; " + note
			}
		}()
	}
	if ref.Strategy == core.SlowRequestRatio && (v.MaxAllowedRtMs > 0 || v.Threshold > 0) && !anyHist(traces) {
		// Without histograms (Java Sentinel) the replay knows no call's
		// response time, so it cannot tell which calls another bound or
		// ratio counts slow.
		what := "maxAllowedRtMs"
		switch {
		case v.MaxAllowedRtMs > 0 && v.Threshold > 0:
			what = "maxAllowedRtMs and threshold"
		case v.Threshold > 0:
			what = "threshold of a slow-ratio rule"
		}
		plan.Rejected, plan.Why = v, "no safe change found: the input has no response-time histogram, so a new "+what+" cannot be checked on it"
		return plan, calls
	}
	spreadOf := d.spreadOf
	// Outages judged by the whole proposal's criterion (judgedByProposal).
	var criteria []core.BreakerRule
	if d.byProposal {
		criteria = make([]core.BreakerRule, len(insts))
		for i := range insts {
			criteria[i] = v.Apply(insts[i].rule)
		}
	}
	try := func(v RuleValues) (*whatif.Result, map[string]RuleValues, error) {
		per := spreadOf(v)
		cases := make([]whatif.Case, len(insts))
		for i := range insts {
			prop := v.Apply(insts[i].rule)
			if pv, ok := per[names[i]]; ok {
				prop.RetryTimeoutMs = pv.RetryTimeoutMs
			}
			cases[i] = whatif.Case{Trace: &traces[i], Current: insts[i].rule, Proposed: prop}
			if criteria != nil {
				cases[i].Criterion = &criteria[i]
			}
		}
		res, err := whatif.Compare(cases)
		if err == nil {
			calls += 4 * res.Calls // two rules, two readings
		}
		return res, per, err
	}
	full, per, err := try(v)
	if err != nil {
		plan.Rejected, plan.Why = v, "no safe change found: the replay failed: "+err.Error()
		return plan, calls
	}
	plan.WhatIf = full
	if why, faithful := faithfulReplay(traces, full, ref.Strategy); !faithful {
		plan.Rejected, plan.Why = v, "no safe change found: "+why
		return plan, calls
	}
	if full.Safe() {
		plan.Proposed, plan.PerInstance, plan.Safe = v, per, true
		plan.settle()
		return plan, calls
	}
	if len(full.Lost) == 0 { // only an outage not over yet: no change is judged before it ends
		o := full.Ongoing[0]
		plan.Rejected = v
		plan.Why = fmt.Sprintf("no safe change found: the input ends during an outage the current rule has not caught yet (for %s so far); a change is judged once it is over",
			fmtDur(o.To-o.From))
		return plan, calls
	}
	// Give fields up, the least safe first, until what is left is safe.
	left := v
	var dropped []string
	firstLoss := full.Lost[0]
	for f := range nFields {
		if left.get(f) == 0 {
			continue
		}
		dropped = append(dropped, f.name()+" "+fmtNum(left.get(f)))
		left.clear(f)
		if left.IsZero() {
			break
		}
		res, per, err := try(left)
		if err == nil && res.Safe() {
			plan.Proposed, plan.PerInstance, plan.Safe, plan.WhatIf = left, per, true, res
			plan.Rejected = v
			for g := range nFields {
				if left.get(g) != 0 {
					plan.Rejected.clear(g)
				}
			}
			plan.Why = fmt.Sprintf("left out %s: with it the breaker %s", joinAnd(dropped), lossWords(full, firstLoss))
			plan.settle()
			return plan, calls
		}
	}
	plan.Rejected = v
	plan.Why = fmt.Sprintf("no safe change found: with %s the breaker %s", proposedWords(v, plan.Current), lossWords(full, firstLoss))
	return plan, calls
}

// settle leaves out of Proposed a retry timeout that only PerInstance
// changes: the first instance keeps the rule's, the others get longer
// ones.
func (p *Plan) settle() {
	if len(p.PerInstance) > 0 && p.Proposed.RetryTimeoutMs == p.Current.RetryTimeoutMs {
		p.Proposed.RetryTimeoutMs = 0
	}
}

// faithfulReplay reports whether the replay of the current rule trips
// where the recorded breakers did: a rule whose real breakers tripped
// (spells) but whose replay never does is not replayed faithfully (an
// input without the counts a breaker judges by), and nothing can be
// proven with it.
func faithfulReplay(traces []whatif.Trace, res *whatif.Result, strategy core.Strategy) (why string, ok bool) {
	if res.Calls == 0 {
		return "the input kept no traffic of the rule's instances to replay, so no change can be checked on it", false
	}
	var spells int
	for i := range traces {
		spells += len(traces[i].Spells)
	}
	if spells > 0 && res.Current.Trips == 0 && strategy == core.SlowRequestRatio && !slowKnown(traces) {
		return "the input does not tell which calls were slow (no response-time histogram and no slow count: Java Sentinel's metric lines give a second's mean response time), " +
			"so a slow-ratio rule cannot be replayed on it and no change can be checked", false
	}
	if spells > 0 && res.Current.Trips == 0 {
		return fmt.Sprintf("the replay of the current rule never trips, while the recorded breakers opened %d %s, so no change can be checked on this input",
			spells, plural(int64(spells), "time", "times")), false
	}
	return "", true
}

// slowKnown reports whether any bucket of the traces says which calls
// were slow: a slow count or a histogram.
func slowKnown(traces []whatif.Trace) bool {
	for i := range traces {
		for j := range traces[i].Buckets {
			if b := &traces[i].Buckets[j]; b.Slow > 0 || b.HasHist {
				return true
			}
		}
	}
	return false
}

// lossWords says what the proposal loses: "would have missed 3 of the 3
// outages the current rule caught (the first from ... on instance ...)"
// without names (renderers show the plan's instances).
func lossWords(res *whatif.Result, first whatif.Loss) string {
	n := int64(len(res.Lost))
	if first.ProposedMs < 0 {
		return fmt.Sprintf("would have missed %d of the %d outages the current rule caught (the first lasted %s; the current rule tripped %d ms into it)",
			n, res.Current.OutagesCaught, fmtDur(first.To-first.From), first.CurrentMs)
	}
	return fmt.Sprintf("would have caught %d of the %d outages the current rule caught later than one statIntervalMs after it (%d ms into the first instead of %d ms)",
		n, res.Current.OutagesCaught, first.ProposedMs, first.CurrentMs)
}

// proposedWords lists the proposal's fields with the current values:
// "maxAllowedRtMs 300 -> 400".
func proposedWords(v RuleValues, cur PlanRule) string {
	var out []string
	add := func(name string, from, to int64) {
		if to > 0 {
			out = append(out, fmt.Sprintf("%s %d -> %d", name, from, to))
		}
	}
	if v.Threshold > 0 {
		out = append(out, "threshold "+fmtNum(cur.Threshold)+" -> "+fmtNum(v.Threshold))
	}
	add("minRequestAmount", int64(cur.MinRequestAmount), int64(v.MinRequestAmount))
	add("statIntervalMs", int64(cur.StatIntervalMs), int64(v.StatIntervalMs))
	add("maxAllowedRtMs", int64(cur.MaxAllowedRtMs), int64(v.MaxAllowedRtMs))
	add("retryTimeoutMs", int64(cur.RetryTimeoutMs), int64(v.RetryTimeoutMs))
	return joinAnd(out)
}

// fmtDur words a duration of ms, never negative (an end before its start
// lasts 0 ms).
func fmtDur(ms int64) string {
	ms = max(ms, 0)
	if ms < 1000 {
		return fmt.Sprintf("%d ms", ms)
	}
	return fmtNum(math.Round(float64(ms)/100)/10) + " s"
}
