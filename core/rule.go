package core

import (
	"errors"
	"fmt"
	"math"
	"regexp"
)

// Strategy is how a circuit breaker judges its window. The numeric codes are
// sentinel-golang's Strategy and Java Sentinel's degrade grade.
type Strategy uint32

// The breaker strategies.
const (
	SlowRequestRatio Strategy = iota // trips on the ratio of completions slower than MaxAllowedRtMs
	ErrorRatio                       // trips on the ratio of completions that ended in an error
	ErrorCount                       // trips on the number of completions that ended in an error
	// AverageRT is Java Sentinel's degrade grade 0 before 1.8 (1.6, 1.7):
	// the resource is cut off when its average response time over the
	// last second reaches Threshold (ms) for MinRequestAmount entries in a
	// row (rtSlowRequestAmount; always 5 in 1.6). It exists only with
	// SemanticsJava16: rules read from such services, which core does not
	// enforce. It is not a slow-request ratio and must never be advised as
	// one.
	AverageRT
)

func (s Strategy) String() string {
	switch s {
	case SlowRequestRatio:
		return "slow-ratio"
	case ErrorRatio:
		return "error-ratio"
	case ErrorCount:
		return "error-count"
	case AverageRT:
		return "average-rt"
	default:
		return fmt.Sprintf("strategy(%d)", uint32(s))
	}
}

// IsRatio reports whether the strategy compares a ratio (0..1) with its
// threshold, as opposed to a count.
func (s Strategy) IsRatio() bool { return s == SlowRequestRatio || s == ErrorRatio }

// Semantics selects whose behaviour a breaker copies where Java Sentinel 1.8
// and sentinel-golang differ. See docs/SEMANTICS.md.
type Semantics string

// The supported semantics.
const (
	// SemanticsGo is sentinel-golang v1.0.4, the default: trips at
	// value >= threshold, honours ProbeNum, and forgets the whole window when
	// it closes.
	SemanticsGo Semantics = ""
	// SemanticsJava is Java Sentinel 1.8 (1.8.1 and later): counts in one
	// bucket of StatIntervalMs (StatSlidingWindowBucketCount is ignored),
	// trips only at value > threshold (and a slow ratio of 1 at threshold 1),
	// lets exactly one probe through (ProbeNum is ignored), forgets its one
	// bucket when it closes, and never hands its window to a changed rule.
	SemanticsJava Semantics = "java"
	// SemanticsJava16 describes a degrade rule of Java Sentinel before 1.8
	// (1.6 and 1.7, whose DegradeRule has no circuit breaker): when its
	// condition holds at an entry the resource is cut off for
	// RetryTimeoutMs, then everything passes again, with no HALF_OPEN and
	// no probe. Strategy AverageRT is grade 0; ErrorRatio (grade 1) is the
	// exception ratio of the last second (StatIntervalMs 1000), ErrorCount
	// (grade 2) the exceptions of the last minute (StatIntervalMs 60000).
	// Such rules describe what a Java service runs, for display and
	// triage: core does not implement them, and NewBreaker and
	// Guard.LoadBreakerRules refuse them.
	SemanticsJava16 Semantics = "java-1.6"
)

// BreakerRule is a circuit-breaking rule. Its JSON is sentinel-golang's
// circuitbreaker.Rule, so existing rule files paste in unchanged.
//
// Defaults (zero values): Strategy 0 is SlowRequestRatio; MinRequestAmount 0
// lets a single completion trip the breaker; StatSlidingWindowBucketCount 0
// means one bucket; ProbeNum 0 means one probe closes the breaker; Semantics
// "" means sentinel-golang's. StatIntervalMs and RetryTimeoutMs are required.
type BreakerRule struct {
	// ID tells several breakers of one resource apart (optional).
	ID string `json:"id,omitempty"`
	// Resource is the guarded resource's name.
	Resource string `json:"resource"`
	// Strategy is what the breaker measures.
	Strategy Strategy `json:"strategy"`
	// RetryTimeoutMs is how long the breaker stays OPEN before it lets a
	// probe through (Java's timeWindow, which is in seconds).
	RetryTimeoutMs uint32 `json:"retryTimeoutMs"`
	// MinRequestAmount is the fewest completions in the window that may trip
	// the breaker.
	MinRequestAmount uint64 `json:"minRequestAmount"`
	// StatIntervalMs is the length of the statistic window.
	StatIntervalMs uint32 `json:"statIntervalMs"`
	// StatSlidingWindowBucketCount splits the window into buckets. When it
	// does not divide StatIntervalMs, Sentinel silently uses one bucket; so
	// does core, and Warnings says so. Java semantics ignore it (one bucket).
	StatSlidingWindowBucketCount uint32 `json:"statSlidingWindowBucketCount"`
	// MaxAllowedRtMs is the response time above which a completion is slow
	// (SlowRequestRatio only).
	MaxAllowedRtMs uint64 `json:"maxAllowedRtMs"`
	// Threshold is the ratio (0..1) or error count at which the breaker trips
	// (AverageRT: the average response time, ms).
	Threshold float64 `json:"threshold"`
	// ProbeNum is how many successful probes in HALF_OPEN close the breaker;
	// with ProbeNum > 0 every request in HALF_OPEN passes. Java semantics
	// ignore it (one probe).
	ProbeNum uint64 `json:"probeNum"`
	// Semantics selects Java Sentinel 1.8 behaviour where it differs.
	Semantics Semantics `json:"semantics,omitempty"`
	// Pattern is set on a rule read from a Java regex rule (Sentinel
	// 1.8.7+, "regex": true): the rule's regular expression, which fully
	// matches Resource (Java's Pattern.matches). Such a rule governs each
	// matching resource with a breaker of its own, so it is listed once per
	// resource it governs, each copy naming its resource. Informative: core
	// enforces the rule on Resource, and rule comparisons include it.
	Pattern string `json:"pattern,omitempty"`
	// LimitApp is set on a rule read from Java Sentinel: the origin the
	// rule names ("default" for every caller, "other" for callers no other
	// rule of the resource names, or one caller's app name). Informative:
	// Java's degrade rules carry it but no version checks it (every breaker
	// of a resource is tried on every entry), and core, which does not know
	// callers' origins, enforces the rule on every entry too (Warnings says
	// so).
	LimitApp string `json:"limitApp,omitempty"`
}

// ErrInvalidRule is wrapped by every rule validation error.
var ErrInvalidRule = errors.New("invalid rule")

func ruleErr(kind, resource, format string, args ...any) error {
	return fmt.Errorf("%w: %s rule for %q: %s", ErrInvalidRule, kind, resource, fmt.Sprintf(format, args...))
}

// Validate reports the first problem that makes the rule unusable, with the
// offending field's JSON name.
func (r *BreakerRule) Validate() error {
	switch {
	case r.Resource == "":
		return ruleErr("breaker", r.Resource, "resource is empty")
	case r.Strategy > AverageRT || r.Strategy == AverageRT && r.Semantics != SemanticsJava16:
		return ruleErr("breaker", r.Resource, "strategy %d is not 0 (slow ratio), 1 (error ratio) or 2 (error count), or 3 (average RT) with semantics \"java-1.6\"", r.Strategy)
	case r.StatIntervalMs == 0:
		return ruleErr("breaker", r.Resource, "statIntervalMs must be positive")
	case r.RetryTimeoutMs == 0:
		return ruleErr("breaker", r.Resource, "retryTimeoutMs must be positive")
	case math.IsNaN(r.Threshold) || math.IsInf(r.Threshold, 0) || r.Threshold < 0:
		return ruleErr("breaker", r.Resource, "threshold %v must be a non-negative number", r.Threshold)
	case r.Strategy.IsRatio() && r.Threshold > 1:
		return ruleErr("breaker", r.Resource, "threshold %v is a ratio and must be within [0, 1]", r.Threshold)
	case r.Semantics != SemanticsGo && r.Semantics != SemanticsJava && r.Semantics != SemanticsJava16:
		return ruleErr("breaker", r.Resource, "semantics %q is not \"\" (sentinel-golang), \"java\" or \"java-1.6\"", r.Semantics)
	}
	return checkPattern("breaker", r.Resource, r.Pattern)
}

// checkPattern validates a rule's Pattern: empty, or a regular expression
// Go can match.
func checkPattern(kind, resource, pattern string) error {
	if pattern == "" {
		return nil
	}
	if _, err := regexp.Compile(pattern); err != nil {
		return ruleErr(kind, resource, "pattern %q: %v", pattern, err)
	}
	return nil
}

// enforceable reports why core cannot enforce a valid rule: one that only
// describes a Java service of another version.
func (r *BreakerRule) enforceable() error {
	if r.Semantics == SemanticsJava16 {
		return ruleErr("breaker", r.Resource, "semantics \"java-1.6\" describes Java Sentinel before 1.8, which core does not implement")
	}
	return nil
}

// Warnings lists settings that are accepted but probably not what was meant.
func (r *BreakerRule) Warnings() []string {
	w := limitAppWarning(nil, r.LimitApp)
	if r.Semantics == SemanticsJava {
		if r.StatSlidingWindowBucketCount > 1 {
			w = append(w, fmt.Sprintf("statSlidingWindowBucketCount %d is ignored with java semantics: Java Sentinel 1.8 counts in 1 bucket of statIntervalMs",
				r.StatSlidingWindowBucketCount))
		}
		if r.ProbeNum > 0 {
			w = append(w, fmt.Sprintf("probeNum %d is ignored with java semantics: Java Sentinel 1.8 lets 1 probe through", r.ProbeNum))
		}
		if r.RetryTimeoutMs%1000 != 0 {
			w = append(w, fmt.Sprintf("retryTimeoutMs %d is not whole seconds: Java Sentinel's timeWindow cannot express it", r.RetryTimeoutMs))
		}
		return w
	}
	if r.WindowMisaligned() {
		w = append(w, fmt.Sprintf("statIntervalMs %d is not divisible by statSlidingWindowBucketCount %d: Sentinel silently uses 1 bucket",
			r.StatIntervalMs, r.StatSlidingWindowBucketCount))
	}
	return w
}

// limitAppWarning adds the warning of a rule that names callers core cannot
// tell apart.
func limitAppWarning(w []string, limitApp string) []string {
	if limitApp != "" && limitApp != "default" {
		w = append(w, fmt.Sprintf("limitApp %q is not enforced: core limits every caller", limitApp))
	}
	return w
}

// WindowMisaligned reports whether the bucket count does not divide the
// interval, so that Sentinel falls back to one bucket.
func (r *BreakerRule) WindowMisaligned() bool {
	n := r.StatSlidingWindowBucketCount
	return n != 0 && r.StatIntervalMs%n != 0
}

// BucketCount is the number of buckets the breaker's window really uses:
// always 1 with java semantics (Java 1.8's breakers build
// `new SlowRequestLeapArray(1, statIntervalMs)` and its error twin).
func (r *BreakerRule) BucketCount() int {
	n := r.StatSlidingWindowBucketCount
	if r.Semantics == SemanticsJava || n == 0 || r.StatIntervalMs%n != 0 {
		return 1
	}
	return int(n)
}

// sameStat reports whether a breaker for r can keep the statistics of one for
// o. Java's DegradeRuleManager keeps a breaker only for an equal rule and
// builds any other afresh, so a java rule never keeps another's statistics.
func (r *BreakerRule) sameStat(o *BreakerRule) bool {
	if r.Semantics == SemanticsJava || o.Semantics == SemanticsJava {
		return false
	}
	return r.Resource == o.Resource && r.Strategy == o.Strategy &&
		r.StatIntervalMs == o.StatIntervalMs && r.StatSlidingWindowBucketCount == o.StatSlidingWindowBucketCount
}

// TokenCalculateStrategy is how a flow rule computes its allowed rate.
type TokenCalculateStrategy int32

// The token calculate strategies (sentinel-golang's codes).
const (
	Direct TokenCalculateStrategy = iota // the threshold as is
	WarmUp                               // ramps up from threshold/coldFactor over warmUpPeriodSec
)

func (s TokenCalculateStrategy) String() string {
	switch s {
	case Direct:
		return "direct"
	case WarmUp:
		return "warm-up"
	default:
		return fmt.Sprintf("tokenCalculateStrategy(%d)", int32(s))
	}
}

// ControlBehavior is what a flow rule does with traffic over its rate.
type ControlBehavior int32

// The control behaviours (sentinel-golang's codes).
const (
	Reject     ControlBehavior = iota // block at once
	Throttling                        // queue, spacing requests evenly, up to maxQueueingTimeMs
)

func (b ControlBehavior) String() string {
	switch b {
	case Reject:
		return "reject"
	case Throttling:
		return "throttling"
	default:
		return fmt.Sprintf("controlBehavior(%d)", int32(b))
	}
}

// FlowRule is a flow-control rule. Its JSON is sentinel-golang's flow.Rule
// (the fields core supports), so existing rule files paste in unchanged.
//
// Defaults (zero values): Direct and Reject; StatIntervalInMs 0 means the
// resource's own one-second statistic; WarmUpColdFactor 0 means 3.
// Threshold is per second (per StatIntervalInMs for Reject with a custom
// interval, as in sentinel-golang).
type FlowRule struct {
	// ID identifies the rule (optional).
	ID string `json:"id,omitempty"`
	// Resource is the guarded resource's name.
	Resource string `json:"resource"`
	// TokenCalculateStrategy is Direct (0) or WarmUp (1).
	TokenCalculateStrategy TokenCalculateStrategy `json:"tokenCalculateStrategy"`
	// ControlBehavior is Reject (0) or Throttling (1).
	ControlBehavior ControlBehavior `json:"controlBehavior"`
	// Threshold is the allowed rate.
	Threshold float64 `json:"threshold"`
	// RelationStrategy must be 0 (the resource itself); sentinel-golang's
	// associated-resource mode is not supported.
	RelationStrategy int32 `json:"relationStrategy,omitempty"`
	// RefResource is accepted for compatibility and must be empty.
	RefResource string `json:"refResource,omitempty"`
	// MaxQueueingTimeMs is the longest a Throttling rule makes a request wait.
	MaxQueueingTimeMs uint32 `json:"maxQueueingTimeMs"`
	// WarmUpPeriodSec is how long WarmUp takes to reach the threshold.
	WarmUpPeriodSec uint32 `json:"warmUpPeriodSec"`
	// WarmUpColdFactor divides the threshold at the coldest point.
	WarmUpColdFactor uint32 `json:"warmUpColdFactor"`
	// StatIntervalInMs is the statistic window of a Reject rule.
	StatIntervalInMs uint32 `json:"statIntervalInMs"`
	// Pattern is set on a rule read from a Java regex rule, as for
	// BreakerRule.Pattern: the regular expression that fully matches
	// Resource. Informative: core enforces the rule on Resource.
	Pattern string `json:"pattern,omitempty"`
	// LimitApp is the origin the rule applies to, as for
	// BreakerRule.LimitApp. Informative.
	LimitApp string `json:"limitApp,omitempty"`
}

// Warnings lists settings that are accepted but have no effect.
func (r *FlowRule) Warnings() []string { return limitAppWarning(nil, r.LimitApp) }

// Validate reports the first problem that makes the rule unusable.
func (r *FlowRule) Validate() error {
	switch {
	case r.Resource == "":
		return ruleErr("flow", r.Resource, "resource is empty")
	case math.IsNaN(r.Threshold) || math.IsInf(r.Threshold, 0) || r.Threshold < 0:
		return ruleErr("flow", r.Resource, "threshold %v must be a non-negative number", r.Threshold)
	case r.TokenCalculateStrategy != Direct && r.TokenCalculateStrategy != WarmUp:
		return ruleErr("flow", r.Resource, "tokenCalculateStrategy %d is not 0 (direct) or 1 (warm-up)", r.TokenCalculateStrategy)
	case r.ControlBehavior != Reject && r.ControlBehavior != Throttling:
		return ruleErr("flow", r.Resource, "controlBehavior %d is not 0 (reject) or 1 (throttling)", r.ControlBehavior)
	case r.RelationStrategy != 0 || r.RefResource != "":
		return ruleErr("flow", r.Resource, "relationStrategy/refResource (associated resources) are not supported")
	case r.TokenCalculateStrategy == WarmUp && r.WarmUpPeriodSec == 0:
		return ruleErr("flow", r.Resource, "warmUpPeriodSec must be positive for warm-up")
	case r.TokenCalculateStrategy == WarmUp && r.WarmUpColdFactor == 1:
		return ruleErr("flow", r.Resource, "warmUpColdFactor must be greater than 1")
	}
	return checkPattern("flow", r.Resource, r.Pattern)
}
