package triage

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/sentinel-top/sentinel-top/core"
)

// Findings returns the findings of everything fed so far, judged at now (the
// end of the input for a report, the current time when live), in report
// order: severity, critical first, then From, then kind, app and resource.
// Its cost grows with the number of findings and of slow-ratio rules, not
// with the history fed. The result belongs to the caller.
func (e *Engine) Findings(now int64) []Finding {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []Finding
	out = e.sawtoothFindings(now, out)
	out = e.herdFindings(now, out)
	out = e.lowFindings(out)
	out = e.driftFindings(now, out)
	out = e.unprotectedFindings(now, out)
	out = e.sharedFindings(out)
	out = e.misalignedFindings(now, out)
	out = e.adviceFindings(out)
	slices.SortFunc(out, func(a, b Finding) int { return compareFindings(&a, &b) })
	return out
}

func severity(ongoing bool) Severity {
	if ongoing {
		return Critical
	}
	return Warning
}

// sortInsts sorts instances by name (then age) without duplicates.
func sortInsts(insts []*instState) []*instState {
	slices.SortFunc(insts, func(a, b *instState) int {
		return cmp.Or(strings.Compare(a.name, b.name), cmp.Compare(a.seq, b.seq))
	})
	return slices.Compact(insts)
}

func setInsts(set map[*instState]struct{}) []*instState {
	insts := make([]*instState, 0, len(set))
	for in := range set {
		insts = append(insts, in)
	}
	return sortInsts(insts)
}

// names returns the sorted, distinct names of sorted instances.
func names(insts []*instState) []string {
	out := make([]string, 0, len(insts))
	for _, in := range insts {
		if len(out) == 0 || out[len(out)-1] != in.name {
			out = append(out, in.name)
		}
	}
	return out
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func fmtFloat(x float64, decimals int) string { return strconv.FormatFloat(x, 'f', decimals, 64) }

func fmtNum(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// timelines collects the state changes over [from, to] of up to
// MaxTimelines instances (sorted), preferring breakers for which prefer
// returns true.
func (e *Engine) timelines(insts []*instState, resource string, from, to int64, prefer func(*breaker) bool) []Timeline {
	var out []Timeline
	for _, in := range insts {
		if len(out) == MaxTimelines {
			break
		}
		s := in.series[resource]
		if s == nil {
			continue
		}
		var b *breaker
		for _, c := range s.breakers {
			if c.nring > 0 && (b == nil || (prefer != nil && prefer(c) && !prefer(b))) {
				b = c
			}
		}
		if b == nil {
			continue
		}
		tl := Timeline{Instance: in.name, RuleID: b.ruleID}
		known := false
		b.steps(func(st step) {
			switch {
			case st.at < from:
				tl.Start, known = st.to, true
			case st.at <= to:
				if !known {
					tl.Start, known = st.from, true
				}
				tl.Steps = append(tl.Steps, Step{AtMs: st.at, To: st.to})
			}
		})
		if known {
			out = append(out, tl)
		}
	}
	return out
}

// ruleRetry is the retryTimeoutMs of the instance's breaker for a resource
// and rule id, 0 if unknown.
func ruleRetry(in *instState, resource, ruleID string) uint32 {
	if rr := in.rules[resource]; rr != nil {
		for _, b := range rr.breakers {
			if b.ID == ruleID || ruleID == "" {
				return b.RetryTimeoutMs
			}
		}
	}
	return 0
}

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
			f.Count = max(f.Count, b.maxRun)
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
		f.PeriodMs = medianInt(spacings)

		var sb strings.Builder
		if len(f.Instances) > 1 {
			fmt.Fprintf(&sb, "up to %d failed half-open probes in a row on %d instances", f.Count, len(f.Instances))
		} else {
			fmt.Fprintf(&sb, "%d failed half-open probes in a row", f.Count)
		}
		if f.PeriodMs > 0 {
			fmt.Fprintf(&sb, ", every %s s", fmtFloat(float64(f.PeriodMs)/1000, 1))
		}
		f.Summary = sb.String()
		retryText := "retryTimeoutMs"
		if retry > 0 {
			retryText = fmt.Sprintf("retryTimeoutMs %d", retry)
		}
		f.Advice = fmt.Sprintf("%s is shorter than the downstream outage (>= %d s): raise it, or back off exponentially", retryText, max(dur, 0)/1000)
		f.Timelines = e.timelines(insts, ar.resource, f.From, f.To, func(b *breaker) bool { return b.listed })
		out = append(out, f)
	}
	return out
}

// sync-half-open: count is the occasions, spreadMs the largest spread of
// one, From the first entry of the first occasion and To the last entry of
// the last; the instances are every participant of an occasion. An occasion
// is a cluster of HALF_OPEN entries no more than HerdWindowMs apart from its
// first to its last, counted once it holds HerdSize distinct instances and
// at least half of the app's instances reporting the resource at that
// moment. It is critical while HerdSize or more participants of the latest
// occasion, still there, have a breaker of the resource not CLOSED (they
// will probe together again).
func (e *Engine) herdFindings(now int64, out []Finding) []Finding {
	for _, ar := range e.herds {
		h := &ar.herd
		insts := setInsts(h.ever)
		f := Finding{
			Kind: KindSyncHalfOpen, App: ar.app.name, Resource: ar.resource,
			Instances: names(insts), From: h.from, To: h.to,
			Count: h.occasions, SpreadMs: h.spread,
		}
		open := 0
		for _, in := range h.last {
			if s := in.series[ar.resource]; s != nil && s.open() && e.alive(in, now) {
				open++
			}
		}
		f.Severity = severity(open >= HerdSize)
		f.Summary = fmt.Sprintf("%d instances entered HALF_OPEN within %d ms of each other, on %d occasions", h.maxSize, h.spread, h.occasions)
		if h.retry > 0 {
			f.Advice = fmt.Sprintf("give the instances different retryTimeoutMs (for example %d to %d ms) so that they do not all probe the recovering downstream at once",
				h.retry, int64(h.retry)+int64(h.retry)*3/10)
		} else {
			f.Advice = fmt.Sprintf("give the %d instances different retryTimeoutMs so that they do not all probe the recovering downstream at once", len(f.Instances))
		}
		f.Timelines = e.timelines(insts, ar.resource, f.From, f.To, nil)
		out = append(out, f)
	}
	return out
}

// low-confidence-trip: count is the trips, worst the one whose lower bound
// sits furthest under its threshold (then the smaller window, then the
// earliest). Always a warning.
func (e *Engine) lowFindings(out []Finding) []Finding {
	for _, ar := range e.lows {
		l := &ar.low
		insts := setInsts(l.insts)
		w := l.worst
		f := Finding{
			Kind: KindLowConfidenceTrip, Severity: Warning, App: ar.app.name, Resource: ar.resource,
			Instances: names(insts), From: l.from, To: l.to, Count: l.count, Worst: w,
		}
		evidence := fmt.Sprintf("%d bad of %d has a 90%% lower bound of %s, not above the threshold %s",
			w.K, w.N, fmtFloat(w.Lower, 2), fmtNum(l.worstThr))
		if l.count == 1 {
			f.Summary = "1 trip rested on too few requests: " + evidence
		} else {
			f.Summary = fmt.Sprintf("%d trips rested on too few requests; the weakest, %s", l.count, evidence)
		}
		if need := requestsForSignificance(float64(w.K)/float64(w.N), l.worstThr); need > 0 {
			f.Advice = fmt.Sprintf("raise minRequestAmount to at least %d (or lengthen statIntervalMs) so that a trip at this ratio rests on enough requests", need)
		} else {
			f.Advice = fmt.Sprintf("a ratio of %d/%d is no evidence of being above the threshold %s: raise minRequestAmount or the threshold", w.K, w.N, fmtNum(l.worstThr))
		}
		f.Timelines = e.timelines(insts, ar.resource, f.From, f.To, nil)
		out = append(out, f)
	}
	return out
}

// rule-drift: an episode starts when the present instances of the app (those
// with rules that have not left: see Bye) first disagree on the resource's
// rules, and ends when they agree again or the disagreeing ones leave.
// Episodes shorter than GraceMs (a push reaching the instances a moment
// apart) are not reported. It is critical while an episode lasting GraceMs
// is still open at now, with To = now and its current groups, or ended at
// now; else a warning spanning the reported episodes, with the groups of the
// latest at its widest.
func (e *Engine) driftFindings(now int64, out []Finding) []Finding {
	for _, ar := range e.drifts {
		d := &ar.drift
		f := Finding{Kind: KindRuleDrift, App: ar.app.name, Resource: ar.resource}
		switch {
		case d.active && now-d.since >= e.cfg.GraceMs:
			f.Severity, f.Groups = Critical, d.groups
			f.From, f.To = d.since, max(now, d.since)
			if d.reported {
				f.From = min(d.from, d.since)
			}
		case d.reported:
			// Still critical when it ended at now: the instances left at
			// the very end of the input (a fleet stopped after the
			// recording), not because they came to agree.
			f.Severity, f.Groups = severity(d.to >= now), d.repGroups
			f.From, f.To = d.from, d.to
		default:
			continue
		}
		f.Groups = cloneGroups(f.Groups)
		var all []string
		for _, g := range f.Groups {
			all = append(all, g.Instances...)
		}
		slices.Sort(all)
		f.Instances = slices.Compact(all)
		largest := 0
		if len(f.Groups) > 0 {
			largest = len(f.Groups[0].Instances)
		}
		f.Summary = fmt.Sprintf("%d instances are split into %d rule versions for this resource, the largest group holding %d",
			len(f.Instances), len(f.Groups), largest)
		f.Advice = fmt.Sprintf("push the rules again until all %d instances report the same version", len(f.Instances))
		var insts []*instState
		for _, n := range f.Instances {
			if in := e.insts[n]; in != nil {
				insts = append(insts, in)
			}
		}
		f.Timelines = e.timelines(insts, ar.resource, f.From, f.To, nil)
		out = append(out, f)
	}
	return out
}

func cloneGroups(gs []RuleGroup) []RuleGroup {
	out := make([]RuleGroup, len(gs))
	for i, g := range gs {
		out[i] = RuleGroup{
			Version:   g.Version,
			Rule:      RuleSet{Breakers: slices.Clone(g.Rule.Breakers), Flows: slices.Clone(g.Rule.Flows)},
			Instances: slices.Clone(g.Instances),
		}
	}
	return out
}

// unprotected: passed counts every entry admitted without a rule, From and
// To bound those buckets. Reported once an instance passed traffic without a
// rule for GraceMs in a row. It is critical when, on an instance still
// there, the latest bucket with traffic passed without a rule, ended within
// StaleMs of the instance's end (now, or its bye), and the instance still
// has no rule while others of the app do.
func (e *Engine) unprotectedFindings(now int64, out []Finding) []Finding {
	byAR := map[*appRes][]*series{}
	var order []*appRes
	for _, s := range e.unprot {
		if _, ok := byAR[s.ar]; !ok {
			order = append(order, s.ar)
		}
		byAR[s.ar] = append(byAR[s.ar], s)
	}
	for _, ar := range order {
		f := Finding{Kind: KindUnprotected, App: ar.app.name, Resource: ar.resource, From: math.MaxInt64}
		var insts []*instState
		ongoing := false
		for _, s := range byAR[ar] {
			in, u := s.inst, &s.up
			insts = append(insts, in)
			f.Passed += u.passed
			f.From, f.To = min(f.From, u.from), max(f.To, u.to)
			_, has := in.rules[ar.resource]
			if u.on && !has && ar.ruled(now) && e.alive(in, now) && u.to >= in.end(now)-e.cfg.StaleMs {
				ongoing = true
			}
		}
		insts = sortInsts(insts)
		f.Instances = names(insts)
		f.Severity = severity(ongoing)
		n := int64(len(f.Instances))
		f.Summary = fmt.Sprintf("%d entries passed on %d %s with no rule for this resource, while other instances of the app had one",
			f.Passed, n, plural(n, "instance", "instances"))
		f.Advice = fmt.Sprintf("load the app's current rules on the %d %s (%s a rule push), or remove the rule from the others",
			n, plural(n, "instance", "instances"), plural(n, "it missed", "they missed"))
		f.Timelines = e.timelines(insts, ar.resource, f.From, f.To, nil)
		out = append(out, f)
	}
	return out
}

// shared-resource: one finding per resource, whose app is the first of its
// apps in name order (so the finding does not depend on which app connected
// first); instances are those of all its apps. From is when a second app
// reported the resource, To the latest report. Always a warning.
func (e *Engine) sharedFindings(out []Finding) []Finding {
	for _, r := range e.shared {
		apps := make([]string, 0, len(r.apps))
		for a := range r.apps {
			apps = append(apps, a)
		}
		slices.Sort(apps)
		var insts []*instState
		for _, in := range r.insts {
			if _, ok := r.apps[in.app.name]; ok {
				insts = append(insts, in)
			}
		}
		insts = sortInsts(insts)
		f := Finding{
			Kind: KindSharedResource, Severity: Warning, App: apps[0], Resource: r.name,
			Instances: names(insts), From: r.since, To: max(r.last, r.since), Apps: apps,
		}
		f.Summary = fmt.Sprintf("%d apps report this resource name, so Sentinel conflates their statistics and breakers", len(apps))
		f.Advice = fmt.Sprintf("give each of the %d apps its own resource name, for example prefixed with the app's name", len(apps))
		f.Timelines = e.timelines(insts, r.name, f.From, f.To, nil)
		out = append(out, f)
	}
	return out
}

// window-misaligned: rule is the first misaligned rule seen for the app and
// resource; From is when it was first loaded, To now while an instance still
// has one, else when the last one was replaced. Always a warning.
func (e *Engine) misalignedFindings(now int64, out []Finding) []Finding {
	for _, ar := range e.misalign {
		m := &ar.mis
		insts := setInsts(m.ever)
		f := Finding{
			Kind: KindWindowMisaligned, Severity: Warning, App: ar.app.name, Resource: ar.resource,
			Instances: names(insts), From: m.from, To: m.to, Rule: m.rule,
		}
		if len(m.cur) > 0 {
			f.To = max(now, m.to)
		}
		iv, n := m.rule.StatIntervalMs, m.rule.StatSlidingWindowBucketCount
		f.Summary = fmt.Sprintf("statIntervalMs %d is not divisible by statSlidingWindowBucketCount %d, so Sentinel silently uses 1 bucket", iv, n)
		multiple := (iv/n + 1) * n
		if d := nearestDivisor(iv, n); d > 1 {
			f.Advice = fmt.Sprintf("set statSlidingWindowBucketCount to a divisor of %d such as %d, or statIntervalMs to a multiple of %d such as %d", iv, d, n, multiple)
		} else {
			f.Advice = fmt.Sprintf("set statIntervalMs to a multiple of %d such as %d", n, multiple)
		}
		f.Timelines = e.timelines(insts, ar.resource, f.From, f.To, nil)
		out = append(out, f)
	}
	return out
}

// nearestDivisor is the divisor of iv closest to n (the smaller on a tie),
// other than 1 and iv itself; 0 when there is none near.
func nearestDivisor(iv, n uint32) uint32 {
	var best, bestDist uint32
	limit := min(uint64(iv)-1, 2*uint64(n)+16)
	for d := uint32(2); uint64(d) <= limit; d++ {
		if iv%d != 0 {
			continue
		}
		dist := max(d, n) - min(d, n)
		if best == 0 || dist < bestDist {
			best, bestDist = d, dist
		}
	}
	return best
}

// rule-advice: for every app and resource with a slow-ratio breaker (on
// each instance, its breaker with the smallest maxAllowedRtMs, as the wire's
// slow count uses), the instances running it that passed traffic are judged
// together. qps is the median over those instances of each one's median QPS
// (its buckets' pass counts, silences between buckets up to a minute counted
// as idle buckets); windowRequests is qps x statIntervalMs / 1000; p99Ms is
// the p99 of all their rtHist counts pooled (0 without histograms);
// rtOverP99 is maxAllowedRtMs / p99Ms. The rule judged is that of the first
// instance by name. It fires when minRequestAmount < 20, windowRequests < 20
// or maxAllowedRtMs < 2 x p99Ms, and is always info.
func (e *Engine) adviceFindings(out []Finding) []Finding {
	type acc struct {
		ar       *appRes
		insts    []*instState
		qps      []float64
		rt       [core.HistogramSlots]int64
		rtMax    int64
		hasHist  bool
		from, to int64
		rule     core.BreakerRule
		ruleOf   *instState
	}
	byAR := map[*appRes]*acc{}
	var order []*acc
	for _, in := range e.instList {
		for _, sr := range in.slow {
			s := in.series[sr.resource]
			if s == nil || !s.traffic {
				continue
			}
			a := byAR[s.ar]
			if a == nil {
				a = &acc{ar: s.ar, from: math.MaxInt64}
				byAR[s.ar] = a
				order = append(order, a)
			}
			a.insts = append(a.insts, in)
			a.qps = append(a.qps, s.pass.median()*1000/float64(s.bucketMs))
			for i, c := range s.rt {
				a.rt[i] += c
			}
			a.rtMax = max(a.rtMax, s.rtMax)
			a.hasHist = a.hasHist || s.hasHist
			a.from, a.to = min(a.from, s.firstAt), max(a.to, s.endAt)
			if a.ruleOf == nil || in.name < a.ruleOf.name {
				a.rule, a.ruleOf = sr.rule, in
			}
		}
	}
	for _, a := range order {
		r := a.rule
		qps := round(medianOf(a.qps), 1)
		wr := round(qps*float64(r.StatIntervalMs)/1000, 1)
		var p99 int64
		if a.hasHist {
			p99 = core.HistogramQuantile(&a.rt, 0.99, a.rtMax)
		}
		var over float64
		if p99 > 0 {
			over = round(float64(r.MaxAllowedRtMs)/float64(p99), 2)
		}
		var why, fix []string
		if r.MinRequestAmount < AdviceMinRequests {
			why = append(why, fmt.Sprintf("minRequestAmount %d is under %d", r.MinRequestAmount, AdviceMinRequests))
			fix = append(fix, fmt.Sprintf("raise minRequestAmount to at least %d", AdviceMinRequests))
		}
		if wr < AdviceMinRequests {
			why = append(why, fmt.Sprintf("a %d ms window holds only %s requests at %s QPS", r.StatIntervalMs, fmtFloat(wr, 1), fmtFloat(qps, 1)))
			if qps > 0 {
				need := int64(math.Ceil(AdviceMinRequests*1000/qps/1000)) * 1000
				fix = append(fix, fmt.Sprintf("lengthen statIntervalMs to at least %d ms", need))
			} else {
				fix = append(fix, "use an error-count breaker, as the traffic is too sparse for a ratio")
			}
		}
		if p99 > 0 && r.MaxAllowedRtMs < uint64(AdviceRtFactor*p99) {
			why = append(why, fmt.Sprintf("maxAllowedRtMs %d is only %sx the p99 response time of %d ms", r.MaxAllowedRtMs, fmtFloat(over, 2), p99))
			fix = append(fix, fmt.Sprintf("raise maxAllowedRtMs to at least %d ms (%dx p99)", AdviceRtFactor*p99, AdviceRtFactor))
		}
		if len(why) == 0 {
			continue
		}
		insts := sortInsts(a.insts)
		f := Finding{
			Kind: KindRuleAdvice, Severity: Info, App: a.ar.app.name, Resource: a.ar.resource,
			Instances: names(insts), From: a.from, To: a.to,
			QPS: qps, WindowRequests: wr, P99Ms: p99, RtOverP99: over,
			Summary: joinAnd(why), Advice: joinAnd(fix),
		}
		f.Timelines = e.timelines(insts, a.ar.resource, f.From, f.To, nil)
		out = append(out, f)
	}
	return out
}

// joinAnd joins clauses as "a, b and c".
func joinAnd(xs []string) string {
	switch len(xs) {
	case 0:
		return ""
	case 1:
		return xs[0]
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}
