package triage

import (
	"math"
	"slices"

	"github.com/sentinel-top/sentinel-top/core"
)

// The sawtooth detector: runs of failed half-open probes on one breaker
// (the avalanche restart).

// SawtoothRetryMs is the least retryTimeoutMs a sawtooth's advice proposes
// when the downstream is still down; each instance gets its own value in
// [SawtoothRetryMs, 4/3 of it].
const SawtoothRetryMs = 30_000

// transition follows the breaker's runs of failed probes.
func (d *sawtoothDetector) transition(b *breaker, t *core.Transition) {
	switch {
	case t.To == core.Open && t.From == core.Closed:
		b.startRun(t.AtMs)
	case t.To == core.Open && t.From == core.HalfOpen:
		d.failedProbe(b, t.AtMs, t.Probe)
	case t.To == core.Closed:
		b.endRun(t.AtMs)
	}
}

func (d *sawtoothDetector) failedProbe(b *breaker, at int64, p *core.Probe) {
	b.run++
	if b.runStart == 0 {
		b.runStart = at // joined mid-run: the run starts with this probe
	}
	spacing := int64(-1)
	if b.lastOpen != 0 && at >= b.lastOpen {
		spacing = at - b.lastOpen
	}
	b.lastOpen = at
	switch {
	case b.run < SawtoothRun:
		if spacing >= 0 {
			b.pending[b.npending] = spacing
			b.npending++
		}
		if p != nil {
			b.pendRt[b.npendRt] = p.RtMs
			b.npendRt++
		}
		return
	case b.run == SawtoothRun:
		for _, d := range b.pending[:b.npending] {
			b.spacings.add(d)
		}
		for _, rt := range b.pendRt[:b.npendRt] {
			b.probeRts.add(rt)
		}
		b.npending, b.npendRt = 0, 0
		if !b.listed {
			b.listed, b.qualFrom = true, b.runStart
			d.breakers = append(d.breakers, b)
		}
		b.qualFrom = min(b.qualFrom, b.runStart)
	}
	if spacing >= 0 {
		b.spacings.add(spacing)
	}
	if p != nil {
		b.probeRts.add(p.RtMs)
	}
	b.qualTo = max(b.qualTo, at)
	b.maxRun = max(b.maxRun, b.run)
	if d := at - b.runStart; d >= b.maxRunDur {
		b.maxRunDur, b.maxRunRetry = d, b.retry
	}
}

// ongoing reports whether the breaker is still in a qualifying run.
func (b *breaker) ongoing() bool { return b.run >= SawtoothRun && b.state() != core.Closed }

// sawtoothDetector is the sawtooth detector's own state: the engine it
// observes, and its breakers: breakers that had a run of SawtoothRun failed
// probes.
type sawtoothDetector struct {
	e        *Engine
	breakers []*breaker
}

func (d *sawtoothDetector) init(e *Engine) detector { d.e = e; return d }
func (*sawtoothDetector) kind() Kind                { return KindSawtooth }

// sawtooth: count is the longest qualifying run on any instance, periodMs
// the median of the OPEN->OPEN spacings kept (the last spacingLen per
// breaker) of qualifying runs, probeRtMs the median response time of their
// failed probes (the last spacingLen per breaker; absent when no probe said
// it), From the start (the trip) of the first qualifying run and To its
// latest failed probe. It is critical while a breaker is in a qualifying
// run (no CLOSED since) on an instance that is still there, and for HoldMs
// after such a run ended (a CLOSED, a restart); an instance that left takes
// its breakers' part with it at once, as it leaves every other view.
//
// The advice judges the rule of the breaker with the longest run: when it
// is a slow-ratio rule, the failed probes took under 2 x maxAllowedRtMs and
// the highest healthy p99 among the instances is above half of
// maxAllowedRtMs, the probe criterion is too strict (suggest maxAllowedRtMs
// 2 x that p99); otherwise the downstream is still down (suggest a
// retryTimeoutMs of at least SawtoothRetryMs, per instance up to 4/3 of it).
func (d *sawtoothDetector) findings(now int64, out []Finding) []Finding {
	e := d.e
	byAR := map[*appRes][]*breaker{}
	var order []*appRes
	for _, b := range e.sawtooth.breakers {
		ar := b.s.ar
		if _, ok := byAR[ar]; !ok {
			order = append(order, ar)
		}
		byAR[ar] = append(byAR[ar], b)
	}
	for _, ar := range order {
		bs := byAR[ar]
		f := Finding{Kind: KindSawtooth, App: ar.app.name, Resource: ar.resource, From: math.MaxInt64}
		x := &SawtoothFacts{}
		f.Facts = x
		var insts []*instState
		var spacings, rts []int64
		ongoing := false
		var dur int64 = -1
		var longest *breaker
		for _, b := range bs {
			in := b.s.inst
			insts = append(insts, in)
			spacings = b.spacings.appendTo(spacings)
			rts = b.probeRts.appendTo(rts)
			f.From, f.To = min(f.From, b.qualFrom), max(f.To, b.qualTo)
			x.Count = max(x.Count, b.maxRun)
			if b.maxRunDur > dur {
				dur, longest = b.maxRunDur, b
			}
			if e.alive(in, now) {
				ongoing = ongoing || b.ongoing() || held(b.qualEnd, now, e.cfg.HoldMs)
			}
		}
		insts = sortInsts(insts)
		f.Instances = names(insts)
		f.Severity = severity(ongoing)
		x.PeriodMs = medianInt(spacings)
		if len(rts) > 0 {
			x.ProbesAlike = slices.Min(rts) == slices.Max(rts)
			m := medianInt(rts)
			x.ProbeRtMs = &m
		}
		x.OutageMs = max(dur, 0)
		rule, hasRule := breakerRule(longest.s.inst, ar.resource, longest.ruleID)
		x.RetryTimeoutMs = longest.maxRunRetry
		x.RuleID = longest.ruleID
		if x.RetryTimeoutMs == 0 {
			x.RetryTimeoutMs = rule.RetryTimeoutMs
		}
		p99, ok := highestHealthyP99(insts, ar.resource)
		maxRt := int64(rule.MaxAllowedRtMs)
		// Judged on the least the healthy p99 can be, so that an advice to
		// raise maxAllowedRtMs never rests on a histogram slot's upper
		// bound (a brownout whose probes take 1.2x the bound, with healthy
		// calls at half of it, is the downstream failing: no RT advice).
		floor := p99Floor(p99)
		if hasRule && rule.Strategy == core.SlowRequestRatio && x.ProbeRtMs != nil && *x.ProbeRtMs < 2*maxRt && ok && 2*floor > maxRt {
			x.MaxAllowedRtMs, x.P99Ms = rule.MaxAllowedRtMs, p99
			x.Suggest.MaxAllowedRtMs = uint64(AdviceRtFactor * floor)
		} else {
			x.Suggest.RetryTimeoutMs = max(SawtoothRetryMs, x.RetryTimeoutMs)
		}
		words(&f)
		out = append(out, f)
	}
	return out
}

// highestHealthyP99 is the highest healthy p99 of the instances' series of
// a resource; ok is false when none has one.
func highestHealthyP99(insts []*instState, resource string) (p99 int64, ok bool) {
	for _, in := range insts {
		if s := in.series[resource]; s != nil {
			if ms, has := s.healthyP99(); has {
				p99, ok = max(p99, ms), true
			}
		}
	}
	return p99, ok
}

// retrySpreadTo is the top of the per-instance range of retry timeouts
// starting at from: 4/3 of it, in whole seconds (Java's timeWindow).
func retrySpreadTo(from uint32) uint32 {
	return uint32(int64(from) * 4 / 3 / 1000 * 1000)
}

// SawtoothFacts: a run of failed half-open probes.
type SawtoothFacts struct {
	// Count is the longest run of failed probes on any instance.
	Count int64 `json:"count"`
	// PeriodMs is the median OPEN->OPEN spacing within runs.
	PeriodMs int64 `json:"periodMs"`
	// ProbeRtMs is the median response time of the failed probes, nil when
	// no probe said it; ProbesAlike tells that they all took that long.
	ProbeRtMs   *int64 `json:"probeRtMs,omitempty"`
	ProbesAlike bool   `json:"-"`
	// Suggest is the rule values the advice proposes: MaxAllowedRtMs when
	// the probe criterion is too strict, else RetryTimeoutMs; none when the
	// rule is the cause.
	Suggest SawtoothSuggest `json:"suggest"`
	// Cause is KindSelfInflicted when the breaker's rule counts healthy
	// calls bad (a self-inflicted finding of the same rule): the rule, not
	// the downstream, keeps it open.
	Cause Kind `json:"cause,omitempty"`

	// RetryTimeoutMs is the breaker's retry timeout during the longest run
	// (0 when unknown), and OutageMs how long that run lasted. When the
	// probe criterion is too strict, MaxAllowedRtMs is the rule's and
	// P99Ms the healthy p99 the suggestion comes from.
	RetryTimeoutMs uint32 `json:"-"`
	OutageMs       int64  `json:"-"`
	MaxAllowedRtMs uint64 `json:"-"`
	P99Ms          int64  `json:"-"`
	// RuleID is the id of the longest run's breaker rule.
	RuleID string `json:"-"`
}

// SawtoothSuggest is sawtooth's suggest: one of its fields is set.
type SawtoothSuggest struct {
	MaxAllowedRtMs uint64 `json:"maxAllowedRtMs,omitempty"`
	RetryTimeoutMs uint32 `json:"retryTimeoutMs,omitempty"`
}

// Kind is KindSawtooth.
func (*SawtoothFacts) Kind() Kind { return KindSawtooth }

// Evidence lists the run, its period, the probes and the values proposed.
func (f *SawtoothFacts) Evidence() []Fact {
	out := []Fact{
		text("Longest run", itoa(f.Count)+" failed probes"),
		text("Period", itoa(f.PeriodMs)+" ms (median OPEN to OPEN)"),
	}
	if f.ProbeRtMs != nil {
		out = append(out, text("Failed probes", itoa(*f.ProbeRtMs)+" ms (median response time)"))
	}
	switch s := f.Suggest; {
	case s.MaxAllowedRtMs > 0:
		out = append(out, text("Proposed", "maxAllowedRtMs "+itoa(int64(s.MaxAllowedRtMs))))
	case s.RetryTimeoutMs > 0:
		out = append(out, text("Proposed", "retryTimeoutMs "+itoa(int64(s.RetryTimeoutMs))+" to "+itoa(int64(retrySpreadTo(s.RetryTimeoutMs)))+", one per instance"))
	}
	return out
}
