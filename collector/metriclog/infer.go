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

// cannotTrip reports whether no breaker of the resource could trip in a
// second with complete completions: Java 1.8's breakers count in one
// tumbling bucket of statIntervalMs (whole seconds when it is 1000) and
// need minRequestAmount completions in it.
func (r inferRules) cannotTrip(complete int64) bool {
	for _, b := range r.breakers {
		if b.Semantics != core.SemanticsJava || b.StatIntervalMs != BucketMs || complete >= int64(max(b.MinRequestAmount, 1)) {
			return false
		}
	}
	return len(r.breakers) > 0
}

// couldTrip reports whether a breaker of the resource could trip on the
// completions of one second, it, alone: Java 1.8's, counting in one
// bucket of whole seconds, with at least minRequestAmount of them, and,
// for the exception rules, more errors than they allow (the counts tell
// no slow calls: a slow-ratio breaker could).
func (r inferRules) couldTrip(it *wire.BucketItem) bool {
	for _, b := range r.breakers {
		if b.Semantics != core.SemanticsJava || b.StatIntervalMs != BucketMs || it.Complete < int64(max(b.MinRequestAmount, 1)) {
			continue
		}
		switch b.Strategy {
		case core.ErrorRatio:
			if float64(it.Error) > b.Threshold*float64(it.Complete) {
				return true
			}
		case core.ErrorCount:
			if float64(it.Error) > b.Threshold {
				return true
			}
		default:
			return true
		}
	}
	return false
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
	lastBlock int64 // the last second with blocks
	lastLine  int64 // the last second with a line
	lastDone  int64 // the last second with completions
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
			if x.known && !x.rules[it.Resource].eligible() {
				continue
			}
			st = &inferState{}
			x.res[it.Resource] = st
		}
		out = x.step(out, start, it.Resource, st, it)
		st.lastLine = start
		if it.Block > 0 {
			st.lastBlock = start
		}
		if it.Complete > 0 {
			st.lastDone = start
		}
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

// step moves one resource's inferred breaker over second s. A state
// decided from an earlier second (the probe's completion) leaves the rest
// of s to the new state.
func (x *Inference) step(out []*wire.State, s int64, name string, st *inferState, it *wire.BucketItem) []*wire.State {
	rules := x.rules[name]
	emit := func(at int64, to core.State, probe *wire.Probe) {
		out = append(out, x.state(at, name, st.state, to, rules, probe))
		st.state = to
	}
	for {
		switch st.state {
		case core.Closed:
			if it.Block == 0 || !x.known && it.Pass > 1 {
				return out
			}
			at := x.tripAt(s, st, rules, it)
			// A trip needs minRequestAmount completions in its window:
			// with too few in s, it came before, and a pass in s after
			// the retry time is the probe. Without rules, a trip dated
			// before s makes s's one pass the probe.
			earlier := at < s
			if at == s && x.known && rules.cannotTrip(it.Complete) && st.lastDone > 0 &&
				s-st.lastDone < rules.minRetry()+BucketMs && (it.Pass == 0 || s >= st.lastDone+rules.minRetry()-BucketMs) {
				at, earlier = st.lastDone, true
			}
			emit(at, core.Open, nil)
			st.openAt = at
			if !earlier || it.Pass == 0 {
				return out
			}
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
		default: // HALF_OPEN
			to, again := x.judge(s, st, rules, it)
			if to == core.HalfOpen {
				return out
			}
			var probe *wire.Probe
			if st.clean {
				p := st.probe
				probe = &p
			}
			emit(st.doneAt, to, probe)
			st.openAt = st.doneAt
			if !again {
				return out
			}
		}
	}
}

// tripAt dates a trip whose first blocks are in second s. A Java breaker
// trips at a completion: when the seconds just before s had no line, the
// trip came at the last completion before them (no request arrived after
// it), if that was recent enough for s's requests to be blocked (within the
// shortest timeWindow). Without rules, when the second before s already had
// blocks (the trip is confirmed by a second of blocks and no pass), the
// blocks began there.
func (x *Inference) tripAt(s int64, st *inferState, rules inferRules, it *wire.BucketItem) int64 {
	window := rules.minRetry()
	if !x.known {
		window = idleSeconds * BucketMs
	}
	switch {
	case !x.known && st.lastBlock == s-BucketMs:
		return st.lastBlock
	case x.known && it.Pass > 1 && rules.couldTrip(it):
		// Calls passed, and s's own completions can trip a breaker: the
		// trip is s's (an earlier one would have let one probe at most).
		return s
	case st.lastLine < s-BucketMs && st.lastDone > 0 && s-st.lastDone < window+BucketMs:
		return st.lastDone
	}
	return s
}

// judge tells what a HALF_OPEN breaker's probe led to, as second s shows
// it: HALF_OPEN while that is not known yet, else the state the probe's
// completion (st.doneAt) left, and whether s is to be read again in it
// (s came after the completion). A probe that completed alone in its
// second is judged as the rules would; otherwise the traffic tells: a pass
// beyond the probe, by its completion's second, means it closed; after
// that second, passes without blocks mean CLOSED and blocks without passes
// OPEN; both at once mean a trip after a close, unless a new probe could be
// due (one pass, no earlier than the shortest timeWindow after the
// completion).
func (x *Inference) judge(s int64, st *inferState, rules inferRules, it *wire.BucketItem) (to core.State, again bool) {
	others := it.Pass
	if s == st.probeAt {
		others-- // the probe itself
	}
	if st.doneAt == 0 {
		if it.Complete == 0 && others == 0 {
			return core.HalfOpen, false
		}
		st.doneAt, st.clean = s, it.Complete == 1
		if st.clean {
			st.probe = wire.Probe{RtMs: it.RtSum, Error: it.Error > 0}
		}
	}
	after := s > st.doneAt
	switch {
	case st.clean && x.known && len(rules.breakers) > 0:
		if failed(rules, st.probe) {
			return core.Open, after
		}
		return core.Closed, after
	case !after && others > 0, after && it.Pass > 0 && it.Block == 0:
		return core.Closed, after
	case after && it.Pass == 0 && it.Block > 0:
		return core.Open, after
	case after && it.Pass > 0:
		if it.Pass == 1 && (!x.known || s >= st.doneAt+rules.minRetry()-BucketMs) {
			return core.Open, true
		}
		return core.Closed, true
	}
	return core.HalfOpen, false
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
