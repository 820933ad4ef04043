package triage

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/sentinel-top/sentinel-top/core"
)

// The words of every finding, made from its facts: the one place where the
// engine writes sentences. They never quote input strings (names,
// versions): renderers print those from the facts, where they can sanitize
// them.

// words sets f's Summary and Advice from its facts.
func words(f *Finding) {
	n := int64(len(f.Instances))
	switch x := f.Facts.(type) {
	case *SawtoothFacts:
		f.Summary, f.Advice = sawtoothWords(x, n)
	case *SyncHalfOpenFacts:
		f.Summary = fmt.Sprintf("%d instances entered HALF_OPEN within %d ms of each other, on %d occasions", x.MaxSize, x.SpreadMs, x.Count)
		f.Advice = herdAdvice(x, n)
	case *LowConfidenceFacts:
		f.Summary, f.Advice = lowConfidenceWords(x)
	case *RuleDriftFacts:
		f.Summary, f.Advice = driftWords(x, n, max(f.To-f.From, 0))
	case *UnprotectedFacts:
		f.Summary, f.Advice = unprotectedWords(x, n, f.Severity == Critical)
	case *RulesLostFacts:
		f.Summary, f.Advice = rulesLostWords(x, n, max(f.To-f.From, 0), f.Severity == Critical)
	case *InertRuleFacts:
		f.Summary, f.Advice = inertWords(x)
	case *WarmUpFacts:
		f.Summary, f.Advice = warmUpWords(x, f.Severity == Warning)
	case *SelfInflictedFacts:
		f.Summary, f.Advice = selfWords(x)
	case *HotValueFacts:
		f.Summary, f.Advice = hotWords(x, max(f.To-f.From, 0))
	case *SharedResourceFacts:
		// Each process has its own statistics and breakers: what one name
		// conflates is what is keyed by name alone.
		f.Summary = fmt.Sprintf("%d apps report this resource name: their statistics and breakers are separate, each process keeping its own, "+
			"but rules pushed by resource name and dashboards or alerts keyed by it conflate them", len(x.Apps))
		f.Advice = fmt.Sprintf("give each of the %d apps its own resource name (for example prefixed with the app's name), "+
			"or key every rule push, dashboard and alert by app as well as resource", len(x.Apps))
	case *WindowMisalignedFacts:
		iv, k := x.Rule.StatIntervalMs, x.Rule.StatSlidingWindowBucketCount
		f.Summary = fmt.Sprintf("statIntervalMs %d is not divisible by statSlidingWindowBucketCount %d, so Sentinel silently uses 1 bucket", iv, k)
		multiple := (iv/k + 1) * k
		if d := nearestDivisor(iv, k); d > 1 {
			f.Advice = fmt.Sprintf("set statSlidingWindowBucketCount to a divisor of %d such as %d, or statIntervalMs to a multiple of %d such as %d", iv, d, k, multiple)
		} else {
			f.Advice = fmt.Sprintf("set statIntervalMs to a multiple of %d such as %d", k, multiple)
		}
	case *RuleAdviceFacts:
		f.Summary, f.Advice = adviceWords(x)
	}
}

// noJitter says how instances get retry timeouts of their own: Sentinel
// (Java 1.8, sentinel-golang 1.0) has no jitter setting.
const noJitter = "Sentinel has no jitter setting: one rule per instance, or an offset its datasource's converter adds"

// herdAdvice spreads the n instances' retry timeouts over the suggested
// range: timeWindow in whole seconds for Java rules.
func herdAdvice(x *SyncHalfOpenFacts, n int64) string {
	const why = "so that they do not all probe the recovering downstream at once (" + noJitter + ")"
	if x.Suggest == nil {
		return fmt.Sprintf("give each of the %d instances its own retryTimeoutMs, spread over at least %d %% of its value, %s", n, HerdSpreadPercent, why)
	}
	r := x.Suggest.RetryTimeoutMs
	if x.AfterSawtooth {
		return fmt.Sprintf("the instances probe %d ms after they open, and the downstream needs longer (sawtooth): give each of the %d its own retryTimeoutMs from %d to %d ms, the sawtooth's, %s",
			x.RetryTimeoutMs, n, r.Min, r.Max, why)
	}
	if x.Java {
		return fmt.Sprintf("the instances probe %s s after they open: give each of the %d its own timeWindow from %d to %d s (a spread of %d %%) %s",
			fmtNum(float64(x.RetryTimeoutMs)/1000), n, r.Min/1000, r.Max/1000, HerdSpreadPercent, why)
	}
	return fmt.Sprintf("the instances probe %d ms after they open: give each of the %d its own retryTimeoutMs from %d to %d ms (a spread of %d %%) %s",
		x.RetryTimeoutMs, n, r.Min, r.Max, HerdSpreadPercent, why)
}

// lowConfidenceWords: the trips, the weakest, how they ended and began;
// and the rule values that make a trip rest on AdviceMinRequests calls, in
// seconds of the traffic seen. Trips inferred from Java Sentinel's counts
// are said to be, and their weakest window is a bound.
func lowConfidenceWords(x *LowConfidenceFacts) (summary, advice string) {
	w := x.Worst
	bad := "slow"
	if x.Strategy == core.ErrorRatio {
		bad = "failed"
	}
	weakest := fmt.Sprintf("%d %s of %d (90%% lower bound %s, threshold %s)", w.K, bad, w.N, fmtFloat(w.Lower, 2), fmtNum(x.Threshold))
	if x.WorstInferred {
		weakest = fmt.Sprintf("at most %d calls, on which Java trips with %d %s or more (90%% lower bound %s, threshold %s)",
			w.N, w.K, bad, fmtFloat(w.Lower, 2), fmtNum(x.Threshold))
	}
	trips := fmt.Sprintf("%d trips", x.Count)
	switch {
	case x.InferredTrips == 0:
	case x.InferredTrips == x.Count:
		trips += " inferred from Java Sentinel's per-second counts"
		if x.Count == 1 {
			trips = "1 trip inferred from Java Sentinel's per-second counts"
		}
	default:
		trips += fmt.Sprintf(" (%d inferred from Java Sentinel's per-second counts)", x.InferredTrips)
	}
	if x.Count == 1 {
		if x.InferredTrips == 0 {
			trips = "1 trip"
		}
		summary = fmt.Sprintf("%s rested on fewer than %d calls: %s", trips, AdviceMinRequests, weakest)
	} else {
		summary = fmt.Sprintf("%s rested on fewer than %d calls, the weakest on %s", trips, AdviceMinRequests, weakest)
	}
	var also []string
	clause := func(k int64, verb string) {
		switch {
		case k == 0:
		case x.Count == 1:
			also = append(also, verb)
		default:
			also = append(also, fmt.Sprintf("%d %s", k, verb))
		}
	}
	clause(x.ClosedAtFirstProbe, "closed at the first probe")
	clause(x.AtThreshold, "tripped at the threshold exactly (Java Sentinel 1.8 trips only above it)")
	if x.ColdStart != nil {
		clause(*x.ColdStart, fmt.Sprintf("came within %d s of the instance's process start", ColdStartMs/1000))
	}
	if len(also) > 0 {
		sep := "; "
		if x.Count == 1 {
			sep = "; it "
		}
		summary += sep + joinAnd(also)
	}

	s := x.Suggest
	raise := []string{fmt.Sprintf("minRequestAmount to %d", s.MinRequestAmount)}
	if x.Rule != nil {
		raise[0] = fmt.Sprintf("minRequestAmount from %d to %d", x.Rule.MinRequestAmount, s.MinRequestAmount)
	}
	if s.StatIntervalMs > 0 {
		if x.Rule != nil {
			raise = append(raise, fmt.Sprintf("statIntervalMs from %d to %d ms", x.Rule.StatIntervalMs, s.StatIntervalMs))
		} else {
			raise = append(raise, fmt.Sprintf("statIntervalMs to %d ms", s.StatIntervalMs))
		}
	}
	advice = fmt.Sprintf("raise %s so that a trip rests on at least %d calls", joinAnd(raise), s.MinRequestAmount)
	if x.QPS > 0 {
		window := fmt.Sprintf("a %d ms window", s.StatIntervalMs)
		if s.StatIntervalMs == 0 && x.Rule != nil {
			window = fmt.Sprintf("the %d ms window", x.Rule.StatIntervalMs)
		}
		held := "holds"
		if s.StatIntervalMs > 0 {
			held = "holds 19 times in 20"
		}
		advice += fmt.Sprintf(" (%s s of traffic at %s QPS, which %s %s)", fmtFloat(float64(s.MinRequestAmount)/x.QPS, 1), fmtFloat(x.QPS, 1), window, held)
	}
	advice += fmt.Sprintf(", not on a few %s ones", bad)
	if x.ColdStart != nil && *x.ColdStart > 0 {
		advice += ", and warm the connections (a few calls at startup) before taking traffic"
	}
	return summary, advice
}

// sawtoothWords: the run, its period and its probes; and either the
// probe criterion to relax or the retry timeout to lengthen and spread.
// Neither Sentinel 1.8 nor sentinel-golang 1.0 can back off, so the advice
// never says so.
func sawtoothWords(x *SawtoothFacts, n int64) (summary, advice string) {
	var sb strings.Builder
	if n > 1 {
		fmt.Fprintf(&sb, "up to %d failed half-open probes in a row on %d instances", x.Count, n)
	} else {
		fmt.Fprintf(&sb, "%d failed half-open probes in a row", x.Count)
	}
	if x.PeriodMs > 0 {
		fmt.Fprintf(&sb, ", every %s s", fmtFloat(float64(x.PeriodMs)/1000, 1))
	}
	if p := x.ProbeRtMs; p != nil && x.ProbesAlike {
		fmt.Fprintf(&sb, "; each probe took %d ms", *p)
	} else if p != nil {
		fmt.Fprintf(&sb, "; the probes took %d ms (median)", *p)
	}
	s := x.Suggest
	if x.Cause == KindSelfInflicted {
		probes := "the rule counts the downstream's healthy calls bad"
		if p := x.ProbeRtMs; p != nil {
			probes = fmt.Sprintf("the failed probes took %d ms (median), calls the rule counts bad", *p)
		}
		return sb.String(), fmt.Sprintf("the rule, not the downstream, keeps this breaker open (self-inflicted): %s; change the rule as that finding says, not retryTimeoutMs (%d ms)",
			probes, x.RetryTimeoutMs)
	}
	if s.MaxAllowedRtMs > 0 && x.ProbeRtMs != nil {
		return sb.String(), fmt.Sprintf("the probe criterion is too strict: the failed probes took %d ms, under %dx maxAllowedRtMs, and healthy calls' p99 is over %d ms (at most %d), so raise maxAllowedRtMs from %d to %d (%dx the least that p99 can be)",
			*x.ProbeRtMs, AdviceRtFactor, p99Floor(x.P99Ms), x.P99Ms, x.MaxAllowedRtMs, s.MaxAllowedRtMs, AdviceRtFactor)
	}
	down := fmt.Sprintf("the downstream stayed down for >= %d s", max(x.OutageMs, 0)/1000)
	spread := fmt.Sprintf("give each instance its own value (%d-%d ms; %s)", s.RetryTimeoutMs, retrySpreadTo(s.RetryTimeoutMs), noJitter)
	switch cur := x.RetryTimeoutMs; {
	case cur == 0:
		advice = fmt.Sprintf("%s: set retryTimeoutMs to %d and %s", down, s.RetryTimeoutMs, spread)
	case cur < s.RetryTimeoutMs:
		advice = fmt.Sprintf("%s: raise retryTimeoutMs from %d to %d and %s", down, cur, s.RetryTimeoutMs, spread)
	default:
		advice = fmt.Sprintf("%s: keep retryTimeoutMs at %d and %s", down, cur, spread)
	}
	return sb.String(), advice
}

// driftWords: the split, the newest version and the instances that went
// back to an older one; while it lasts, the newest version to push again
// to the instances not running it (never an older one, nor any when the
// newest cannot be told), with what to fix where instances went back;
// once it ended, in the past tense, what to do before the next push.
func driftWords(x *RuleDriftFacts, n, spanMs int64) (summary, advice string) {
	var back, restarted, reloaded []string
	for _, r := range x.Reverted {
		if !slices.Contains(back, r.Instance) {
			back = append(back, r.Instance)
		}
		if r.Restarted && !slices.Contains(restarted, r.Instance) {
			restarted = append(restarted, r.Instance)
		}
		if !r.Restarted && !slices.Contains(reloaded, r.Instance) {
			reloaded = append(reloaded, r.Instance)
		}
	}
	groups := len(x.Groups)
	told := x.Newest != ""
	if !x.ended {
		summary = fmt.Sprintf("%d instances are split into %d rule versions for this resource", n, groups)
	} else {
		summary = fmt.Sprintf("%d instances were split into %d rule versions for this resource for %s s", n, groups, fmtFloat(float64(spanMs)/1000, 1))
	}
	switch {
	case told && !x.ended:
		summary += fmt.Sprintf("; %d of them %s the newest version with rules for it", x.on, plural(x.on, "runs", "run"))
	case told:
		summary += fmt.Sprintf("; %d of them ran the newest version with rules for it", x.on)
	case !x.ended:
		summary += "; which version is the newest cannot be told: " + newestUnknownWords(x.Unknown, x.LatestAt)
	default:
		summary += "; which version was the newest cannot be told: " + newestUnknownWords(x.Unknown, x.LatestAt)
	}
	if nb := int64(len(back)); nb > 0 {
		summary += fmt.Sprintf("; %d went back to a version the app ran before the one %s left", nb, plural(nb, "it", "they"))
		if nr := int64(len(restarted)); nr > 0 {
			summary += fmt.Sprintf(" (%d after a process restart)", nr)
		}
	}
	// What makes an instance go back, to fix before it goes back again.
	var fix []string
	if nr := int64(len(restarted)); nr > 0 {
		fix = append(fix, fmt.Sprintf("%d went back after a restart: make a starting process load the rule source's current rules, not a local snapshot of older ones, or its next restart reverts it again", nr))
	}
	if nl := int64(len(reloaded)); nl > 0 {
		fix = append(fix, fmt.Sprintf("%d went back without a restart: a second loadRules (from an init class, say) replaced the pushed rules, so load rules in one place only, merging every source", nl))
	}
	switch {
	case !x.ended && told:
		nb := int64(len(x.behind))
		advice = fmt.Sprintf("push the newest version again to the %d %s not running it (never an older one) until all %d instances report it", nb, plural(nb, "instance", "instances"), n)
	case !x.ended:
		advice = fmt.Sprintf("push no version until the rule source says which one is meant: pushing one of them to all %d instances could spread a stale rule", n)
	case told && x.endOn:
		advice = fmt.Sprintf("nothing to push now: when the split ended, all %d instances present ran the newest version's rules", x.endN)
		if len(fix) == 0 {
			fix = append(fix, "to catch the next split sooner, compare the rule versions the instances report after each push")
		}
	case told && x.endN > 0:
		advice = fmt.Sprintf("push no version before the rule source says which one is meant: when the split ended, the %d instances present agreed on other rules than the newest version's", x.endN)
	case x.endN == 0:
		advice = "nothing to push now: the split ended when the last instances with rules left"
	default:
		advice = "push no version before the rule source says which one is meant"
	}
	if len(fix) > 0 {
		advice += "; " + strings.Join(fix, "; ")
	}
	return summary, advice
}

// newestUnknownWords says why the newest version cannot be told.
func newestUnknownWords(why NewestUnknown, at int64) string {
	switch why {
	case NewestTie:
		return "different rules for it were first seen at the same instant, " + fmtTime(at)
	case NewestLeft:
		return "the rules for it first seen last, at " + fmtTime(at) + ", are run by none of the instances, so each version they run has rules the app ran before others"
	case NewestForgotten:
		return fmt.Sprintf("past the %d rule contents kept per resource, the rules first seen last may be rules the app ran before", maxContents)
	}
	return "no version has rules for it"
}

// unprotectedWords: what passed, and by cause the fix: a readiness gate
// for an instance that took traffic before its rules, a push again for one
// that missed it.
func unprotectedWords(x *UnprotectedFacts, n int64, ongoing bool) (summary, advice string) {
	insts := plural(n, "instance", "instances")
	secs := fmtFloat(float64(x.LongestMs)/1000, 1)
	if x.Cause == CauseMissedPush {
		summary = fmt.Sprintf("%d entries passed on %d %s with no rule for this resource, for up to %s s: the app's other instances received one in a push %s missed",
			x.Passed, n, insts, secs, plural(n, "it", "they"))
		if !ongoing {
			// Over: the instances got a rule, stopped its traffic or left.
			advice = fmt.Sprintf("check the subscription to the rule source of the %d %s, which missed a push (%s traffic without a rule for this resource ended before the input did), and after each push compare the rule versions every instance reports",
				n, insts, plural(n, "its", "their"))
			return summary, advice
		}
		advice = fmt.Sprintf("push the app's current rules again until the %d %s %s a rule for this resource, and check %s subscription to the rule source",
			n, insts, plural(n, "reports", "report"), plural(n, "its", "their"))
		return summary, advice
	}
	summary = fmt.Sprintf("%d entries passed on %d %s that started taking traffic for this resource without rules for it (for up to %s s), while other instances of the app had them",
		x.Passed, n, insts, secs)
	advice = "add a readiness gate that returns 503 until the rules are loaded, so that a starting instance takes no traffic without them"
	if ongoing {
		advice = fmt.Sprintf("load the app's rules on the %d %s now, and %s", n, insts, advice)
	}
	return summary, advice
}

// rulesLostWords: what passed after the rules went, and where to look.
func rulesLostWords(x *RulesLostFacts, n, spanMs int64, ongoing bool) (summary, advice string) {
	summary = fmt.Sprintf("the rules for this resource went from the rule sets of %d %s while %s traffic went on: %d entries passed without them over %s s",
		n, plural(n, "instance", "instances"), plural(n, "its", "their"), x.Passed, fmtFloat(float64(spanMs)/1000, 1))
	advice = "check the push that removed them: a malformed entry, or a second loadRules that replaced the rule set"
	if ongoing {
		advice = "push this resource's rules again now, and " + advice
	}
	return summary, advice
}

// inertWords: why the rule cannot act, and the change that lets it.
func inertWords(x *InertRuleFacts) (summary, advice string) {
	switch x.Reason {
	case InertCannotTrip:
		if len(x.Rule.Breakers) == 0 || x.Suggest == nil {
			break
		}
		r, s := x.Rule.Breakers[0], x.Suggest
		if x.RatioOne {
			return ratioOneWords(x, &r)
		}
		summary = fmt.Sprintf("minRequestAmount %d is more than the %d completions the busiest %d ms window held, so this breaker cannot trip at the traffic seen, however the downstream fails",
			r.MinRequestAmount, x.MaxWindowRequests, r.StatIntervalMs)
		if x.CountOver {
			summary = fmt.Sprintf("an error count of %s (%s) is more than the %d completions the busiest %d ms window held, so this breaker cannot trip at the traffic seen, however the downstream fails",
				fmtNum(r.Threshold), thresholdName(&r), x.MaxWindowRequests, r.StatIntervalMs)
		}
		if x.BadPassed != nil && *x.BadPassed > 0 {
			over := "at or over its threshold"
			if r.Strategy == core.ErrorCount {
				over = "where half the calls or more failed"
			}
			summary += fmt.Sprintf(": %d %s calls passed while it stayed closed, of %d in %d %s %s (over %s)",
				*x.BadPassed, badWord(&r), x.BadWindowCalls, x.BadWindows, plural(x.BadWindows, "window", "windows"), over, fmtDur(x.BadTo-x.BadFrom))
		}
		switch {
		case x.CountOver && s.Threshold > 0:
			advice = fmt.Sprintf("lower %s from %s to %s, a tenth of the busiest window, so that the breaker trips when that many of a window's calls fail",
				thresholdName(&r), fmtNum(r.Threshold), fmtNum(s.Threshold))
		case s.StatIntervalMs > 0:
			advice = fmt.Sprintf("lower minRequestAmount from %d to %d and lengthen statIntervalMs from %d to %d ms, so that a window holds that many completions at the traffic seen",
				r.MinRequestAmount, s.MinRequestAmount, r.StatIntervalMs, s.StatIntervalMs)
		case s.MinRequestAmount > AdviceMinRequests:
			advice = fmt.Sprintf("lower minRequestAmount from %d to %d, a tenth of the busiest window, so that the breaker can trip down to a tenth of the traffic seen",
				r.MinRequestAmount, s.MinRequestAmount)
		default:
			advice = fmt.Sprintf("lower minRequestAmount from %d to %d, the fewest completions a trip should rest on", r.MinRequestAmount, s.MinRequestAmount)
		}
	case InertNameMismatch:
		summary = fmt.Sprintf("no traffic reached this rule's resource, while one whose name differs only in case or surrounding spaces was offered %d entries: "+
			"Sentinel matches resource names exactly, so the rule never acts", x.NearEntries)
		advice = "name the rule's resource exactly as the traffic does (shown as near), character for character"
	case InertOriginMismatch:
		return originWords(x)
	}
	return summary, advice
}

// badWord is what a breaker counts bad: "slow" or "failed" calls.
func badWord(r *core.BreakerRule) string {
	if r.Strategy == core.SlowRequestRatio {
		return "slow"
	}
	return "failed"
}

// thresholdName is a rule's threshold as its SDK names it: Java's
// slowRatioThreshold (slow ratio) or count.
func thresholdName(r *core.BreakerRule) string {
	switch {
	case r.Semantics != core.SemanticsJava && r.Semantics != core.SemanticsJava16:
		return "threshold"
	case r.Strategy == core.SlowRequestRatio:
		return "slowRatioThreshold"
	}
	return "count"
}

// ratioOneWords: a ratio threshold of 1.0 that windows of a majority of
// bad calls never reached, the bad calls let through, and the threshold
// proposed.
func ratioOneWords(x *InertRuleFacts, r *core.BreakerRule) (summary, advice string) {
	name := thresholdName(r)
	def := ""
	if name == "slowRatioThreshold" {
		def = ", Java's default when it is left out,"
	}
	windows := fmt.Sprintf("%d %s over %s", x.BadWindows, plural(x.BadWindows, "window", "windows"), fmtDur(x.BadTo-x.BadFrom))
	rule := fmt.Sprintf("%s %s%s trips it only on a window of %s calls alone", name, fmtNum(r.Threshold), def, badWord(r))
	if x.Inferred {
		// Java reports a second's mean response time, not each call's, and
		// no breaker state: that no call was blocked is what the counts say.
		summary = fmt.Sprintf("%d calls passed, none blocked by the breaker, in %s whose mean response time was over the %d ms bound "+
			"(Java reports a second's mean, not each call's): %s", *x.BadPassed, windows, r.MaxAllowedRtMs, rule)
	} else {
		share := 100 * float64(*x.BadPassed) / float64(max(x.BadWindowCalls, 1))
		summary = fmt.Sprintf("%d %s calls passed while the breaker stayed closed, %s %% of the %d calls of %s that held more than half %s calls: %s",
			*x.BadPassed, badWord(r), fmtFloat(share, 0), x.BadWindowCalls, windows, badWord(r), rule)
	}
	advice = fmt.Sprintf("lower %s from %s to %s so that a window where more than half the calls are %s trips the breaker, as every window it let through held",
		name, fmtNum(r.Threshold), fmtNum(x.Suggest.Threshold), badWord(r))
	return summary, advice
}

// selfWords: the rule's bound against the calls that passed, the trips it
// made, and the bound to set instead.
func selfWords(x *SelfInflictedFacts) (summary, advice string) {
	r := &x.Rule
	java := r.Semantics == core.SemanticsJava || r.Semantics == core.SemanticsJava16
	switch r.Strategy {
	case core.SlowRequestRatio:
		bound, rule := "maxAllowedRtMs", fmt.Sprintf("maxAllowedRtMs %d", r.MaxAllowedRtMs)
		if java {
			bound, rule = "count", fmt.Sprintf("count %d (the RT bound in ms)", r.MaxAllowedRtMs)
		}
		from := ""
		if x.Inferred {
			from = ", from Java's per-second mean response times"
		}
		summary = fmt.Sprintf("%s counts %s %% of the %d calls that passed as slow, their median over %d ms%s: the rule, not the downstream, opened this breaker %d times",
			rule, fmtFloat(100*x.HealthyBadShare, 0), x.Calls, x.MedianFloorMs, from, x.Trips)
		if java && ratioAsRt(*r) {
			summary += " (Java rounds a slow-ratio count of 0.5 to 1 ms)"
		}
		if s := x.Suggest; s != nil && s.MaxAllowedRtMs > 0 {
			advice = fmt.Sprintf("raise %s from %d to %d ms, %dx the least the calls' p99 can be (over %d, at most %d ms), so that a healthy call no longer counts as slow",
				bound, r.MaxAllowedRtMs, s.MaxAllowedRtMs, AdviceRtFactor, p99Floor(x.P99Ms), x.P99Ms)
		} else {
			why := fmt.Sprintf("%d calls are too few for one", x.Calls)
			if x.Inferred {
				why = "Java reports a second's mean response time, not the calls'"
			}
			advice = fmt.Sprintf("raise %s from %d ms to at least %dx the p99 of the downstream's healthy calls, which this input cannot give (%s; their median is over %d ms)",
				bound, r.MaxAllowedRtMs, AdviceRtFactor, why, x.MedianFloorMs)
		}
		if java && ratioAsRt(*r) {
			advice += "; for a slow-ratio rule count is that bound in ms, and the ratio belongs in slowRatioThreshold"
		}
	case core.ErrorCount:
		name := thresholdName(r)
		summary = fmt.Sprintf("an error count of %s trips this breaker on the downstream's healthy errors: %s %% of the %d calls that passed failed, %s in a %d ms window of %s calls, enough to trip it in 19 windows of 20; it opened %d times",
			fmtNum(r.Threshold), fmtFloat(100*x.HealthyBadShare, 1), x.Calls, fmtFloat(x.ErrorsPerWindow, 1), r.StatIntervalMs, fmtFloat(x.WindowCalls, 1), x.Trips)
		if s := x.Suggest; s != nil && s.Threshold > 0 {
			advice = fmt.Sprintf("raise %s from %s to %s, %dx the %d errors a healthy window holds 19 times in 20, so that only a failing downstream trips the breaker",
				name, fmtNum(r.Threshold), fmtNum(s.Threshold), AdviceRtFactor, x.HealthyErrorsQ95)
		}
	}
	return summary, advice
}

// originWords: which rules name the app itself as their origin, the
// traffic they are not applied to, and limitApp default (or the caller
// meant) with the flow threshold that would then apply.
func originWords(x *InertRuleFacts) (summary, advice string) {
	n := int64(len(x.Rule.Flows))
	rules := fmt.Sprintf("%d flow %s", n, plural(n, "rule", "rules"))
	what := "the rules apply"
	if n == 1 {
		rules += fmt.Sprintf(" (threshold %s)", fmtNum(x.Rule.Flows[0].Threshold))
		what = fmt.Sprintf("the threshold of %s applies", fmtNum(x.Rule.Flows[0].Threshold))
	}
	summary = fmt.Sprintf("%s of this resource %s the app's own name as limitApp, so Java Sentinel applies %s only to calls whose origin is the app itself, "+
		"never to its callers': the resource was offered %d entries, up to %s QPS on one instance",
		rules, plural(n, "names", "name"), plural(n, "it", "them"), x.Offered, fmtFloat(x.QPS, 1))
	advice = fmt.Sprintf("set limitApp to default so that %s to every caller (up to %s QPS seen on one instance), or to the name of the calling app %s written for",
		what, fmtFloat(x.QPS, 1), plural(n, "it was", "they were"))
	return summary, advice
}

// adviceWords are rule-advice's clauses: for each setting that does not
// fit the healthy traffic, why (summary) and the change, from the current
// value to the proposed one, with its reason (advice).
func adviceWords(x *RuleAdviceFacts) (summary, advice string) {
	r, s := x.Rule, x.Suggest
	qps := fmtFloat(x.QPS, 1)
	var why, fix []string
	if ratioAsRt(r) {
		why = append(why, fmt.Sprintf("maxAllowedRtMs %d counts nearly every call as slow", r.MaxAllowedRtMs))
		to := fmt.Sprintf("a response time in ms (%dx the healthy p99, known after %d healthy calls)", AdviceRtFactor, HealthyMinCompletions)
		if s.MaxAllowedRtMs > 0 {
			to = fmt.Sprintf("%d ms (%dx the least the healthy p99 can be: over %d ms, at most %d)", s.MaxAllowedRtMs, AdviceRtFactor, x.P99FloorMs, x.P99Ms)
		}
		fix = append(fix, fmt.Sprintf("set maxAllowedRtMs from %d to %s and the ratio in threshold, as %d ms is a ratio typed where a response time belongs (Java rounds count 0.5 to 1)",
			r.MaxAllowedRtMs, to, r.MaxAllowedRtMs))
	}
	if s.MinRequestAmount > 0 {
		why = append(why, fmt.Sprintf("minRequestAmount %d is under %d (%s s of traffic at %s QPS)", r.MinRequestAmount, AdviceMinRequests, fmtFloat(x.MinRequestSeconds, 2), qps))
		fix = append(fix, fmt.Sprintf("raise minRequestAmount from %d to %d so that no trip rests on fewer than %d calls", r.MinRequestAmount, s.MinRequestAmount, s.MinRequestAmount))
	}
	if s.StatIntervalMs > 0 {
		why = append(why, fmt.Sprintf("a %d ms window holds only %s requests at %s QPS", r.StatIntervalMs, fmtFloat(x.WindowRequests, 1), qps))
		fix = append(fix, fmt.Sprintf("lengthen statIntervalMs from %d to %d ms so that 19 windows in 20 hold %d requests at %s QPS", r.StatIntervalMs, s.StatIntervalMs, AdviceMinRequests, qps))
	}
	if x.Legacy {
		if r.MinRequestAmount < AdviceMinRequests {
			why = append(why, fmt.Sprintf("minRequestAmount %d is under %d (%s s of traffic at %s QPS)", r.MinRequestAmount, AdviceMinRequests, fmtFloat(x.MinRequestSeconds, 2), qps))
		}
		if x.WindowRequests < AdviceMinRequests {
			why = append(why, fmt.Sprintf("a %d ms window holds only %s requests at %s QPS", r.StatIntervalMs, fmtFloat(x.WindowRequests, 1), qps))
		}
		fix = append(fix, fmt.Sprintf("move this rule to Sentinel 1.8's circuit breakers, whose statIntervalMs and minRequestAmount can make a trip rest on %d calls: Sentinel before 1.8 fixes the window at 1 s (and minRequestAmount at 5 in 1.6)", AdviceMinRequests))
	}
	if s.MaxAllowedRtMs > 0 && !ratioAsRt(r) {
		why = append(why, fmt.Sprintf("maxAllowedRtMs %d is under %dx the healthy p99, which is over %d ms (at most %d)", r.MaxAllowedRtMs, AdviceRtFactor, x.P99FloorMs, x.P99Ms))
		fix = append(fix, fmt.Sprintf("raise maxAllowedRtMs from %d to %d (%dx the least that p99 can be) so that healthy calls do not count as slow", r.MaxAllowedRtMs, s.MaxAllowedRtMs, AdviceRtFactor))
	}
	return joinAnd(why), joinAnd(fix)
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

// hotWords: the value's share of the blocks and its rate against the
// rule's threshold; and an exception for it sized from that rate, or the
// threshold raised for every value. The value itself is shown from the
// facts, never quoted here.
func hotWords(x *HotValueFacts, spanMs int64) (summary, advice string) {
	n := x.Suggest.SpecificItems[x.Value]
	r := x.Rule
	summary = fmt.Sprintf("one value of parameter %d took %s %% of this resource's blocks (%d) over %s s, offered %s QPS on one instance",
		x.Param, fmtFloat(x.BlockShare*100, 0), x.Blocked, fmtFloat(float64(spanMs)/1000, 1), fmtFloat(x.QPS, 1))
	if r != nil {
		summary += " against the rule's " + hotRuleText(r)
	}
	summary += ": a limit written for every value throttles this one"
	switch {
	case r == nil:
		advice = fmt.Sprintf("add a specificItems exception of %d for this value (shown as value) to its hot-parameter rule, its %s QPS with %d %% headroom, "+
			"or raise the rule's threshold to %d if every value may reach that rate", n, fmtFloat(x.QPS, 1), HotHeadroomPercent, n)
	case r.MetricType == core.HotParamConcurrency:
		advice = fmt.Sprintf("add a specificItems exception of %d for this value (shown as value), the threshold of %d in flight scaled by its offered over its admitted entries with %d %% headroom, "+
			"or raise threshold from %d to %d if every value may need that many in flight", n, r.Threshold, HotHeadroomPercent, r.Threshold, n)
	default:
		advice = fmt.Sprintf("add a specificItems exception of %d for this value (shown as value), its %s QPS over the rule's %d s with %d %% headroom, so that it is limited at %d instead of %d, "+
			"or raise threshold from %d to %d if every value may reach that rate", n, fmtFloat(x.QPS, 1), max(r.DurationInSec, 1), HotHeadroomPercent, n, r.Threshold, r.Threshold, n)
	}
	return summary, advice
}

// warmUpWords: the blocks of the warm-up's cold starts, with the limit's
// start and end; these are the rule at work, not an overload, so the
// advice changes no rule value: the traffic a new instance gets is what
// can change.
func warmUpWords(x *WarmUpFacts, warning bool) (summary, advice string) {
	t, cf := fmtNum(x.Rule.Threshold), coldFactor(x.Rule)
	summary = fmt.Sprintf("the warm-up blocked %d of the %d calls (%s %%) offered in %s, calls the threshold of %s QPS would have admitted: "+
		"the limit starts at %s QPS (threshold %s / warmUpColdFactor %d) and rises to %s as calls use up its stored tokens "+
		"(over warmUpPeriodSec %d s at full load; the longest span took %s s)",
		x.Blocked, x.Offered, fmtFloat(warmShare(x)*100, 1), warmStarts(x, true), t, fmtNum(x.StartLimit), t, cf, t,
		x.Rule.WarmUpPeriodSec, fmtFloat(float64(x.LongestMs)/1000, 0))
	ramp := fmt.Sprintf("send a new instance at most %s QPS at first, rising to its full share over the first %d s (a load balancer's slow start)",
		fmtFloat(math.Floor(x.StartLimit), 0), x.Rule.WarmUpPeriodSec)
	share := fmtFloat(warmShare(x)*100, 1)
	switch {
	case !warning:
		advice = fmt.Sprintf("these blocks are the rule's cold start (%s %% of the calls offered, under %d %%), not an overload: "+
			"nothing to change unless callers must not see them; then %s", share, WarmUpWarnPercent, ramp)
	case x.PeakQPS > x.Rule.Threshold:
		advice = fmt.Sprintf("besides an overload (up to %s QPS offered to an instance against the threshold of %s; those blocks are not counted here), "+
			"the rule's cold start blocked %s %% of the calls offered: to block fewer after a deploy or restart, %s", fmtNum(x.PeakQPS), t, share, ramp)
	default:
		advice = fmt.Sprintf("these blocks are the rule's cold start, not an overload (up to %s QPS offered to an instance, under the threshold of %s; %s %% of the calls blocked): "+
			"to block fewer after a deploy or restart, %s, rather than raising the threshold", fmtNum(x.PeakQPS), t, share, ramp)
	}
	return summary, advice
}

// warmStarts says what began the spans: process starts, rule loads
// ("8 spans after a process start"; without the noun, "8 after a process
// start").
func warmStarts(x *WarmUpFacts, noun bool) string {
	starts := x.Spans - x.Loads
	n := func(k int64) string {
		if !noun {
			return fmt.Sprint(k)
		}
		return fmt.Sprintf("%d %s", k, plural(k, "span", "spans"))
	}
	switch {
	case x.Loads == 0:
		return n(starts) + " after a process start"
	case starts == 0:
		return n(x.Loads) + " after a rule load"
	}
	return fmt.Sprintf("%s after a process start and %d after a rule load", n(starts), x.Loads)
}
