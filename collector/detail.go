package collector

import (
	"cmp"
	"slices"
	"sort"

	"github.com/sentinel-top/sentinel-top/collector/fleet"
	"github.com/sentinel-top/sentinel-top/collector/triage"
	"github.com/sentinel-top/sentinel-top/core"
)

// Detail describes one app x resource over [from, to). Its findings are
// those of the latest published snapshot, and its drift marks are those of
// the rule-drift finding there, so the detail never contradicts the alerts.
func (c *Collector) Detail(app, resource string, from, to int64) *Detail {
	snap := c.snap.Load()
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.UnixMilli()
	d := &Detail{App: app, Resource: resource, From: from, To: to, StepMs: fineStepMs}
	a := c.apps[arKey{app, resource}]
	if a == nil || to <= from {
		return d
	}
	c.detailSeries(d, a, now)
	var drifting map[string]bool // instances outside the largest group of an ongoing drift
	for _, f := range snap.Findings {
		if f.App != app || f.Resource != resource {
			continue
		}
		d.Findings = append(d.Findings, f)
		if x, ok := f.Facts.(*triage.RuleDriftFacts); ok && f.Severity == triage.Critical && len(x.Groups) > 1 {
			drifting = map[string]bool{}
			for _, g := range x.Groups[1:] {
				for _, n := range g.Instances {
					drifting[n] = true
				}
			}
		}
	}
	var names []string
	for name, in := range c.insts {
		if in.App == app && in.series[resource] != nil {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	// The rules most live instances have (compared as drift compares them)
	// decide the threshold lines; ties go to the first instance by name.
	// With no instance live, the departed ones' last known rules do: they
	// still say what guarded the resource.
	rules := make([]fleet.ResourceRules, len(names))
	live := 0
	for i, name := range names {
		in := c.insts[name]
		if rr := in.Rules.Of(resource); rr != nil {
			rules[i] = *rr
		}
		if !in.Gone {
			live++
		}
	}
	votes := map[string]int{}
	best := 0
	var majorityRules []core.BreakerRule
	for i, name := range names {
		if c.insts[name].Gone && live > 0 {
			continue
		}
		key := rules[i].Key
		votes[key]++
		if votes[key] > best {
			best, majorityRules = votes[key], rules[i].Breakers
		}
	}
	if len(majorityRules) > 0 {
		r := majorityRules[0]
		d.HasBreaker, d.Strategy, d.Threshold, d.MaxAllowedRtMs = true, r.Strategy, r.Threshold, r.MaxAllowedRtMs
		d.RulesOfGone = live == 0
	}
	c.detailHot(d, names)
	for i, name := range names {
		id := c.instanceDetail(c.insts[name], resource, &rules[i], from, to)
		id.Drift = drifting[name]
		d.Instances = append(d.Instances, id)
	}
	return d
}

// instanceDetail is one instance's part of a detail over [from, to): its
// state, rules (r), rates, and its breaker history with what is not known
// of it (timeline.go). c.mu is held.
func (c *Collector) instanceDetail(in *instance, resource string, r *fleet.ResourceRules, from, to int64) InstanceDetail {
	se := in.series[resource]
	id := InstanceDetail{Instance: in.Name, State: worstState(se.tracks), HasBreaker: len(r.Breakers) > 0,
		Breakers: r.Breakers, Flows: r.Flows, Params: in.Rules.ParamsOf(resource), RulesVersion: in.Rules.VersionOf(),
		RulesUnknown: in.Rules == nil, ClockOffsetMs: in.offset, Gone: in.Gone, Start: core.Closed, Provenance: se.provenance(in),
		Unreceived: spansIn(in.Unreceived, from, to), Absent: spansIn(in.Absent, from, to)}
	for _, t := range se.tracks {
		if t.State == id.State {
			id.StateSince = max(id.StateSince, t.Since)
		}
		for _, st := range t.Steps {
			switch {
			case st.AtMs < from:
				id.Start = st.To
			case st.AtMs < to:
				id.Transitions = append(id.Transitions, st)
			}
		}
	}
	slices.SortStableFunc(id.Transitions, func(x, y Transition) int { return cmp.Compare(x.AtMs, y.AtMs) })
	id.KnownFrom, id.KnownTo, _ = in.known(se, id.Transitions, id.Start, from, to)
	id.Silent = in.silent(se, id.Start, id.Transitions, from, to)
	rateMs := c.opts.RateWindow.Milliseconds()
	end := in.dataEndSecond()
	sum := se.fine.sum(end-rateMs, end)
	id.PassQPS = float64(sum.pass) * 1000 / float64(rateMs)
	id.BlockQPS = float64(sum.block) * 1000 / float64(rateMs)
	if sum.complete > 0 {
		id.SlowRatio = float64(sum.slow) / float64(sum.complete)
		id.ErrorRatio = float64(sum.err) / float64(sum.complete)
	}
	return id
}

// detailSeries fills the per-step series of d from the app's ring that
// covers the range: the fine one, or the coarse one read with the seconds
// the fine one still holds (appRings.coarseAt). c.mu is held.
func (c *Collector) detailSeries(d *Detail, a *appSeries, now int64) {
	r, coarse := &a.fine, false
	if now-d.From > a.fine.span() || d.To-d.From > a.fine.span() {
		r, coarse = &a.coarse, true
	}
	d.StepMs = r.stepMs
	perSec := 1000 / float64(r.stepMs)
	for t := r.align(d.From); t < d.To; t += r.stepMs {
		var cnt counts
		var hist [histLen]uint32
		if coarse {
			if c, ok := a.coarseAt(t); ok {
				cnt, hist = c.c, c.hist
			}
		} else if c := r.at(t); c != nil {
			cnt, hist = c.c, c.hist
		}
		d.PassQPS = append(d.PassQPS, float64(cnt.pass)*perSec)
		d.BlockQPS = append(d.BlockQPS, float64(cnt.block)*perSec)
		if cnt.complete > 0 {
			slow := float64(cnt.slow) / float64(cnt.complete)
			if a.someSlowUnknown {
				slow = nan // the source counts no slow calls
			}
			d.SlowRatio = append(d.SlowRatio, slow)
			d.ErrorRatio = append(d.ErrorRatio, float64(cnt.err)/float64(cnt.complete))
			p99 := nan // no histogram: only averages were reported
			if hist != ([histLen]uint32{}) {
				_, q := quantiles(&hist, int64(cnt.rtMax))
				p99 = float64(q)
			}
			d.P99Ms = append(d.P99Ms, p99)
		} else {
			d.SlowRatio = append(d.SlowRatio, nan)
			d.ErrorRatio = append(d.ErrorRatio, nan)
			d.P99Ms = append(d.P99Ms, nan)
		}
	}
}
