package metriclog

import (
	"cmp"
	"slices"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// Inference derives one Java Sentinel instance's breaker states from its
// per-second counts, which is all Java exposes (its transport API and its
// metric logs): wire v1 state messages marked Inferred, timed to the second
// (the start of the second in which the transition happened).
//
// It reads a resource's pass and block counts as Java 1.8's circuit
// breakers shape them (see docs/JAVA.md for the rule as measured against
// Java's own transitions):
//
//   - CLOSED -> OPEN: blocks begin. With the rules known, the resource's
//     only rules are degrade rules, so any block is an open breaker's; with
//     the rules unknown (a metric log), a second of blocks and no pass
//     confirms it, and the trip is dated to the second before when that one
//     already had blocks.
//   - OPEN -> HALF_OPEN: the first pass after the trip is the probe. With the
//     rules known it must come no earlier than the shortest timeWindow
//     (retryTimeoutMs) after the trip, less the second the trip is dated to;
//     an earlier pass means the breaker was not what blocked, and the spell
//     ends (OPEN -> CLOSED).
//   - HALF_OPEN -> CLOSED or OPEN: the probe's completion (the first second
//     with a completion from the probe's second on) decides, dated to that
//     second; which way is told by the traffic after it: another pass means
//     CLOSED, blocks and no pass after the completion second mean OPEN. When
//     no traffic follows, a probe that completed alone in its second is
//     judged by the rules (slower than maxAllowedRtMs, or failed: OPEN).
//
// Java Sentinel before 1.8 (core.SemanticsJava16) has no probe: a cut-off
// resource is OPEN while it blocks everything and CLOSED again at its first
// pass. Resources with flow rules, or without degrade rules, get no states
// when the rules are known: their blocks cannot be told apart.
type Inference struct {
	instance string
	known    bool
	rules    map[string]inferRules
	res      map[string]*inferState
	last     int64 // the last second fed, Unix ms; 0 before the first
}

// inferRules is what the inference needs of a resource's rules.
type inferRules struct {
	breakers []core.BreakerRule
	flows    int
}

// eligible: the resource's blocks can only be its breakers'.
func (r inferRules) eligible() bool { return len(r.breakers) > 0 && r.flows == 0 }

// legacy: a Java service before 1.8, whose degrade rules have no probe.
func (r inferRules) legacy() bool {
	return len(r.breakers) > 0 && r.breakers[0].Semantics == core.SemanticsJava16
}

// minRetry is the shortest retry timeout of the resource's breakers, ms.
func (r inferRules) minRetry() int64 {
	m := int64(0)
	for i, b := range r.breakers {
		if i == 0 || int64(b.RetryTimeoutMs) < m {
			m = int64(b.RetryTimeoutMs)
		}
	}
	return m
}

// inferState is one resource's inferred breaker.
type inferState struct {
	state     core.State
	openAt    int64 // the second the current OPEN began
	probeAt   int64 // the probe's second (HALF_OPEN)
	doneAt    int64 // the probe's completion second; 0 until seen
	probe     wire.Probe
	clean     bool  // probe is the probe's own: it completed alone in its second
	lastBlock int64 // the last second with blocks (unknown rules)
}

// NewInference returns the inference of one instance, whose rules are
// unknown until SetRules.
func NewInference(instance string) *Inference {
	return &Inference{instance: instance, res: map[string]*inferState{}}
}

// SetRules gives the instance's complete rule set (a wire rules message's
// lists, regex rules listed per resource). A resource whose rules changed
// while it was not CLOSED is CLOSED from at: Java builds a new breaker
// for a changed rule. The first rules describe the states held (see
// Restore).
func (x *Inference) SetRules(at int64, breakers []core.BreakerRule, flows []core.FlowRule) []*wire.State {
	rules := map[string]inferRules{}
	for _, b := range breakers {
		r := rules[b.Resource]
		r.breakers = append(r.breakers, b)
		rules[b.Resource] = r
	}
	for _, f := range flows {
		r := rules[f.Resource]
		r.flows++
		rules[f.Resource] = r
	}
	var out []*wire.State
	for name, st := range x.res {
		old, now := x.rules[name], rules[name]
		if !x.known || slices.Equal(old.breakers, now.breakers) && old.flows == now.flows {
			continue // the first rules describe the states held
		}
		if st.state != core.Closed {
			out = append(out, x.state(at, name, st.state, core.Closed, now, nil))
		}
		delete(x.res, name)
	}
	x.rules, x.known = rules, true
	return out
}

// Restore sets a resource's state as a previous inference left it (a
// poller reconnecting goes on from what the collector holds).
func (x *Inference) Restore(resource string, state core.State, since int64) {
	st := &inferState{state: state}
	switch state {
	case core.Open:
		st.openAt = since
	case core.HalfOpen:
		st.probeAt = since
	}
	x.res[resource] = st
}

// Last is the last second fed, Unix ms (0 before the first).
func (x *Inference) Last() int64 { return x.last }

// Second feeds one complete second of the instance: every resource's item
// of the second starting at start (a resource without one had no traffic),
// with one item per resource. Seconds must come in order; one at or before
// the last is ignored. It returns the transitions decided, oldest first
// (they may be dated to earlier seconds).
func (x *Inference) Second(start int64, items []wire.BucketItem) []*wire.State {
	if start <= x.last && x.last != 0 {
		return nil
	}
	x.last = start
	var out []*wire.State
	seen := make(map[string]bool, len(items))
	for i := range items {
		it := &items[i]
		seen[it.Resource] = true
		st := x.res[it.Resource]
		if st == nil {
			if it.Block == 0 || x.known && !x.rules[it.Resource].eligible() {
				continue // nothing to tell until something blocks
			}
			st = &inferState{}
			x.res[it.Resource] = st
		}
		out = x.step(out, start, it.Resource, st, it)
	}
	for name, st := range x.res {
		if !seen[name] && st.state != core.Closed {
			out = x.step(out, start, name, st, &wire.BucketItem{Resource: name, Start: start})
		}
	}
	slices.SortStableFunc(out, func(a, b *wire.State) int {
		return cmp.Or(cmp.Compare(a.Ts, b.Ts), cmp.Compare(a.Resource, b.Resource))
	})
	return out
}

// step moves one resource's inferred breaker over second s.
func (x *Inference) step(out []*wire.State, s int64, name string, st *inferState, it *wire.BucketItem) []*wire.State {
	rules := x.rules[name]
	emit := func(at int64, to core.State, probe *wire.Probe) {
		out = append(out, x.state(at, name, st.state, to, rules, probe))
		st.state = to
	}
	switch st.state {
	case core.Closed:
		switch {
		case x.known && it.Block > 0:
			emit(s, core.Open, nil)
			st.openAt = s
		case !x.known && it.Block > 0 && it.Pass == 0:
			at := s
			if st.lastBlock == s-BucketMs {
				at = st.lastBlock
			}
			emit(at, core.Open, nil)
			st.openAt = at
		}
		if it.Block > 0 {
			st.lastBlock = s
		}
		return out
	case core.Open:
		if it.Pass == 0 {
			return out
		}
		if rules.legacy() || x.known && s < st.openAt+rules.minRetry()-BucketMs {
			emit(s, core.Closed, nil)
			return out
		}
		emit(s, core.HalfOpen, nil)
		st.probeAt, st.doneAt, st.clean = s, 0, false
	}
	// HALF_OPEN: wait for the probe's completion and what follows it.
	others := it.Pass
	if s == st.probeAt {
		others-- // the probe itself
	}
	if st.doneAt == 0 && it.Complete > 0 {
		st.doneAt = s
		st.clean = it.Complete == 1
		if st.clean {
			st.probe = wire.Probe{RtMs: it.RtSum, Error: it.Error > 0}
		}
	}
	var probe *wire.Probe
	if st.clean {
		p := st.probe
		probe = &p
	}
	switch {
	case others > 0:
		emit(cmp.Or(st.doneAt, s), core.Closed, probe)
	case st.doneAt != 0 && s > st.doneAt && it.Block > 0:
		emit(st.doneAt, core.Open, probe)
		st.openAt = st.doneAt
	case st.doneAt != 0 && s > st.doneAt && it.Block == 0 && st.clean && x.known:
		// No traffic after the probe: judge it as the breakers would.
		if failed(rules, st.probe) {
			emit(st.doneAt, core.Open, probe)
			st.openAt = st.doneAt
		} else {
			emit(st.doneAt, core.Closed, probe)
		}
	}
	return out
}

// failed judges a probe by the resource's rules: too slow for a slow-ratio
// breaker, or an error for the others.
func failed(r inferRules, p wire.Probe) bool {
	for _, b := range r.breakers {
		if b.Strategy == core.SlowRequestRatio && uint64(p.RtMs) > b.MaxAllowedRtMs || b.Strategy != core.SlowRequestRatio && p.Error {
			return true
		}
	}
	return false
}

// state builds one inferred transition. The rule's strategy, threshold and
// retry timeout are the resource's first breaker's (an average-RT rule
// says its grade, 0); ruleId is empty: counts tell the resource's state,
// not which of its breakers is open.
func (x *Inference) state(at int64, name string, from, to core.State, r inferRules, probe *wire.Probe) *wire.State {
	m := &wire.State{Header: wire.Header{Ts: at, Instance: x.instance}, Resource: name, From: from, To: to,
		Inferred: true}
	if from == core.HalfOpen {
		m.Probe = probe
	}
	if len(r.breakers) > 0 {
		b := r.breakers[0]
		m.Strategy, m.Threshold, m.RetryTimeoutMs = b.Strategy, b.Threshold, int64(b.RetryTimeoutMs)
		if b.Strategy == core.AverageRT {
			m.Strategy = core.SlowRequestRatio
		}
	}
	return m
}
