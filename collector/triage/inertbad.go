package triage

import (
	"slices"

	"github.com/sentinel-top/sentinel-top/core"
)

// The bad calls a breaker that cannot trip let through (inert-rule
// cannot-trip, badPassed): per breaker rule of a series, its statistic
// windows of statIntervalMs, tumbling and aligned to the epoch as Java's
// are (a sentinel-golang window slides over these), each judged when it
// ends. A window that shows the failure the breaker misses is one of at
// least AdviceMinRequests completions (a few calls are no evidence) whose
// bad calls, as the rule counts them, reach its threshold (for an error
// count, half of them, as whatif's outages count it), or, for a ratio
// threshold of 1.0, are more than half of them but not all. Its bad calls
// are badPassed.
//
// Bad calls: errors (error ratio and count); for a slow ratio, the
// bucket's slow count when it is against the rule's bound (the
// resource's smallest), else the completions its histogram places surely
// over the bound; a bucket without a histogram (Java Sentinel, which
// sends a second's mean response time) counts all its completions bad
// when the mean is over the bound, none otherwise, and the count is
// inferred.

// ruleWindows follows one breaker rule's windows on a series. rule is
// the rule in the series' rules (shared by the instances that have equal
// ones, never changed), not a copy: every series with a breaker has one.
type ruleWindows struct {
	rule  *core.BreakerRule
	start int64 // the current window's start
	total int64 // the current window's completions
	bad   int64 // and its bad ones
	has   bool  // a window began
	means bool  // the current window's bad calls are judged from means

	failing failingWindows // the windows ended that showed the failure
}

// failingWindows sums the windows that showed the failure.
type failingWindows struct {
	n, calls, bad int64
	means         bool
	from, to      int64
}

// add sums one failing window [from, to).
func (f *failingWindows) add(from, to, calls, bad int64, means bool) {
	if f.n == 0 {
		f.from = from
	}
	f.n++
	f.calls += calls
	f.bad += bad
	f.means = f.means || means
	f.to = to
}

// ratioOne reports whether a ratio breaker's threshold is 1.0 (or
// above): it trips only on a window of bad calls alone.
func ratioOne(r *core.BreakerRule) bool { return r.Strategy.IsRatio() && r.Threshold >= 1 }

// shows reports whether a window of total completions, bad of them bad,
// shows the failure the rule misses.
func shows(r *core.BreakerRule, total, bad int64, means bool) bool {
	if total < AdviceMinRequests || bad == 0 {
		return false
	}
	switch {
	case ratioOne(r):
		// A majority but not all: with means, all of a second's calls are
		// counted bad, and the breaker not tripping tells that not all were.
		return 2*bad > total && (bad < total || means)
	case r.Strategy == core.ErrorCount:
		// Half the calls failing, as the replay's outages count it: an
		// error count that cannot trip is out of a window's reach.
		return 2*bad >= total
	}
	return float64(bad) >= r.Threshold*float64(total)
}

// syncRuleWindows follows the series' breaker rules (rr, nil for none),
// keeping what it summed for a rule that did not change.
func (s *series) syncRuleWindows(rr *resRules) {
	old := s.rw
	s.rw = nil
	if rr == nil {
		return
	}
	for k := range rr.Breakers {
		b := &rr.Breakers[k]
		if b.StatIntervalMs == 0 || b.Strategy == core.AverageRT || len(s.rw) == maxWindows {
			continue
		}
		if i := slices.IndexFunc(old, func(w *ruleWindows) bool { return *w.rule == *b }); i >= 0 {
			s.rw = append(s.rw, old[i])
			continue
		}
		s.rw = append(s.rw, &ruleWindows{rule: b})
	}
}

// add counts a bucket in the rule's window, judging the window it ends.
func (w *ruleWindows) add(s *series, b *takenBucket) {
	iv := int64(w.rule.StatIntervalMs)
	start := b.Start - b.Start%iv
	if !w.has || start != w.start {
		w.judge()
		w.has, w.start, w.total, w.bad, w.means = true, start, 0, 0, false
	}
	n := max(b.Complete, 0)
	if n == 0 {
		return
	}
	w.total += n
	r := w.rule
	switch {
	case r.Strategy != core.SlowRequestRatio:
		w.bad += min(max(b.Error, 0), n)
	case b.HasHist && int64(s.slowBound) == int64(r.MaxAllowedRtMs):
		w.bad += min(max(b.Slow, 0), n)
	case b.HasHist:
		w.bad += min(slowerThan(&b.Hist, r.MaxAllowedRtMs), n)
	default:
		w.means = true
		if uint64(max(b.RtSum, 0)/n) > r.MaxAllowedRtMs {
			w.bad += n
		}
	}
}

// judge sums the current window if it shows the failure.
func (w *ruleWindows) judge() {
	if w.has && shows(w.rule, w.total, w.bad, w.means) {
		w.failing.add(w.start, w.start+int64(w.rule.StatIntervalMs), w.total, w.bad, w.means)
	}
}

// failingNow is the windows that showed the failure, the current one
// judged as it stands.
func (w *ruleWindows) failingNow() failingWindows {
	f := w.failing
	if w.has && shows(w.rule, w.total, w.bad, w.means) {
		f.add(w.start, w.start+int64(w.rule.StatIntervalMs), w.total, w.bad, w.means)
	}
	return f
}

// ruleWindowsOf is the series' windows of a breaker rule, nil if it does
// not follow it.
func (s *series) ruleWindowsOf(r *core.BreakerRule) *ruleWindows {
	for _, w := range s.rw {
		if *w.rule == *r {
			return w
		}
	}
	return nil
}
