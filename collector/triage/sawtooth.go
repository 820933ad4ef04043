package triage

import (
	"math"

	"github.com/sentinel-top/sentinel-top/core"
)

// The sawtooth detector: runs of failed half-open probes on one breaker
// (the avalanche restart).

func (b *breaker) addSpacing(d int64) {
	b.spacings[b.spacingHead] = d
	b.spacingHead = (b.spacingHead + 1) % spacingLen
	b.nspacing = min(b.nspacing+1, spacingLen)
}

func (e *Engine) failedProbe(b *breaker, at int64) {
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
		return
	case b.run == SawtoothRun:
		for _, d := range b.pending[:b.npending] {
			b.addSpacing(d)
		}
		b.npending = 0
		if !b.listed {
			b.listed, b.qualFrom = true, b.runStart
			e.sawtooth = append(e.sawtooth, b)
		}
		b.qualFrom = min(b.qualFrom, b.runStart)
	}
	if spacing >= 0 {
		b.addSpacing(spacing)
	}
	b.qualTo = max(b.qualTo, at)
	b.maxRun = max(b.maxRun, b.run)
	if d := at - b.runStart; d >= b.maxRunDur {
		b.maxRunDur, b.maxRunRetry = d, b.retry
	}
}

// ongoing reports whether the breaker is still in a qualifying run.
func (b *breaker) ongoing() bool { return b.run >= SawtoothRun && b.state != core.Closed }

// sawtooth: count is the longest qualifying run on any instance, periodMs
// the median of the OPEN->OPEN spacings kept (the last spacingLen per
// breaker) of qualifying runs, From the start (the trip) of the first
// qualifying run and To its latest failed probe. It is critical when a
// breaker is still in a qualifying run (no CLOSED since) on an instance that
// is still there.
func (e *Engine) sawtoothFindings(now int64, out []Finding) []Finding {
	byAR := map[*appRes][]*breaker{}
	var order []*appRes
	for _, b := range e.sawtooth {
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
		var spacings []int64
		ongoing := false
		var dur int64 = -1
		var retry uint32
		for _, b := range bs {
			in := b.s.inst
			insts = append(insts, in)
			start := (b.spacingHead - b.nspacing + spacingLen) % spacingLen
			for i := range b.nspacing {
				spacings = append(spacings, b.spacings[(start+i)%spacingLen])
			}
			f.From, f.To = min(f.From, b.qualFrom), max(f.To, b.qualTo)
			x.Count = max(x.Count, b.maxRun)
			if b.maxRunDur > dur {
				dur, retry = b.maxRunDur, b.maxRunRetry
				if retry == 0 {
					retry = ruleRetry(in, ar.resource, b.ruleID)
				}
			}
			ongoing = ongoing || (b.ongoing() && e.alive(in, now))
		}
		insts = sortInsts(insts)
		f.Instances = names(insts)
		f.Severity = severity(ongoing)
		x.PeriodMs = medianInt(spacings)
		x.RetryTimeoutMs, x.OutageMs = retry, max(dur, 0)
		words(&f)
		f.Timelines = e.timelines(insts, ar.resource, f.From, f.To, func(b *breaker) bool { return b.listed })
		out = append(out, f)
	}
	return out
}
