package rulefile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strings"

	"github.com/sentinel-top/sentinel-top/collector/metriclog"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// Java Sentinel's degrade and flow rules, as its rule managers take them
// and /getRules answers them, mapped to core's rules.

// JavaColdFactor is Java Sentinel's csp.sentinel.flow.cold.factor default,
// the cold factor of every warm-up flow rule it reads.
const JavaColdFactor = 3

// javaDegradeRule is Java Sentinel's DegradeRule as JSON writes it, with
// the Java defaults of fields left out.
type javaDegradeRule struct {
	Resource           string  `json:"resource"`
	Grade              int64   `json:"grade"`
	Count              float64 `json:"count"`
	TimeWindow         int64   `json:"timeWindow"` // seconds
	MinRequestAmount   int64   `json:"minRequestAmount"`
	SlowRatioThreshold float64 `json:"slowRatioThreshold"`
	StatIntervalMs     int64   `json:"statIntervalMs"`
	Regex              bool    `json:"regex"` // 1.8.7+: Resource is a pattern
	LimitApp           string  `json:"limitApp"`
	// RtSlowRequestAmount is 1.7's: how many entries in a row over the
	// average RT cut the resource off (always 5 in 1.6).
	RtSlowRequestAmount int64 `json:"rtSlowRequestAmount"`
}

// javaFlowRule is Java Sentinel's FlowRule as JSON writes it.
type javaFlowRule struct {
	Resource          string  `json:"resource"`
	LimitApp          string  `json:"limitApp"`
	Grade             int64   `json:"grade"` // 0 threads, 1 QPS
	Count             float64 `json:"count"`
	Strategy          int64   `json:"strategy"` // 0 direct, 1 relate, 2 chain
	RefResource       string  `json:"refResource"`
	ControlBehavior   int64   `json:"controlBehavior"` // 0 reject, 1 warm-up, 2 rate limiter, 3 warm-up rate limiter
	WarmUpPeriodSec   int64   `json:"warmUpPeriodSec"`
	MaxQueueingTimeMs int64   `json:"maxQueueingTimeMs"`
	ClusterMode       bool    `json:"clusterMode"`
	Regex             bool    `json:"regex"`
}

// JavaDegradeRules maps a JSON array of Java Sentinel's DegradeRule (a
// /getRules?type=degrade answer, or a rule file) to core rules, for a
// service of Sentinel version (as its /version says; "" when unknown).
//
// Resource names are mapped as the metric lines map them
// (metriclog.LegalName), so rules and statistics meet. Breakers keep
// Java's semantics (core.SemanticsJava: one bucket per window, as Java's
// circuit breakers use), or, for a service before 1.8, the meaning its
// degrade rules had (core.SemanticsJava16). A rule of unknown version is
// taken for one before 1.8 when it carries the fields only those versions
// write (passCount, rtSlowRequestAmount) and not 1.8's slowRatioThreshold.
// Java's defaults stand for fields left out: minRequestAmount 5,
// slowRatioThreshold 1, statIntervalMs 1000. A slow-ratio rule's count is
// rounded as Java rounds it (half up), so count 0.5 is a 1 ms bound.
// limitApp, the origin the rule applies to, is kept unless it is
// "default" (every caller, as when it is absent). A regex rule (1.8.7+)
// keeps its pattern as Resource and Pattern.
//
// Empty data and JSON null are no rules. Data that is not a JSON array is
// an error wrapping ErrSyntax. Rules that do not map are left out and
// reported, one RuleError each, in the array's order.
func JavaDegradeRules(data []byte, version string) ([]core.BreakerRule, []*RuleError, error) {
	raws, err := array(data)
	if err != nil {
		return nil, nil, err
	}
	var breakers []core.BreakerRule
	var problems []*RuleError
	for i, raw := range raws {
		r, err := javaDegradeRuleAt(raw, version)
		if err != nil {
			problems = append(problems, &RuleError{Index: i, Err: err})
			continue
		}
		breakers = append(breakers, r)
	}
	return breakers, problems, nil
}

// javaDegradeRuleAt maps one element of a degrade rule array.
func javaDegradeRuleAt(raw json.RawMessage, version string) (core.BreakerRule, error) {
	j := javaDegradeRule{MinRequestAmount: 5, SlowRatioThreshold: 1, StatIntervalMs: 1000, RtSlowRequestAmount: 5}
	if err := json.Unmarshal(raw, &j); err != nil {
		return core.BreakerRule{}, err
	}
	r := core.BreakerRule{
		Resource:                     metriclog.LegalName(j.Resource),
		RetryTimeoutMs:               uint32(min(max(j.TimeWindow, 0)*1000, math.MaxUint32)),
		MinRequestAmount:             uint64(max(j.MinRequestAmount, 0)),
		StatIntervalMs:               uint32(min(max(j.StatIntervalMs, 0), math.MaxUint32)),
		StatSlidingWindowBucketCount: 1,
		Semantics:                    core.SemanticsJava,
		LimitApp:                     JavaLimitApp(j.LimitApp),
	}
	if j.Regex {
		if err := JavaPattern(j.Resource); err != nil {
			return r, err
		}
		r.Resource, r.Pattern = j.Resource, j.Resource
	}
	switch {
	case javaLegacy(version, raw):
		if !javaLegacyRule(&r, &j) {
			return r, fmt.Errorf("grade %d is not 0, 1 or 2", j.Grade)
		}
	case j.Grade == 0: // slow ratio: count is the RT bound, slowRatioThreshold the ratio
		r.Strategy = core.SlowRequestRatio
		if j.Count < 0 || math.IsNaN(j.Count) || j.Count > math.MaxInt64 {
			return r, fmt.Errorf("count %v is not a response time", j.Count)
		}
		// Java rounds (Math.round: half up), so count 0.5 is a 1 ms bound.
		r.MaxAllowedRtMs, r.Threshold = uint64(math.Floor(j.Count+0.5)), j.SlowRatioThreshold
	case j.Grade == 1:
		r.Strategy, r.Threshold = core.ErrorRatio, j.Count
	case j.Grade == 2:
		r.Strategy, r.Threshold = core.ErrorCount, j.Count
	default:
		return r, fmt.Errorf("grade %d is not 0, 1 or 2", j.Grade)
	}
	if err := r.Validate(); err != nil {
		return r, err
	}
	if len(r.Resource) > wire.DefaultMaxNameBytes || len(r.LimitApp) > wire.DefaultMaxNameBytes {
		return r, fmt.Errorf("resource or limitApp over %d bytes", wire.DefaultMaxNameBytes)
	}
	return r, nil
}

// JavaFlowRules maps a JSON array of Java Sentinel's FlowRule (a
// /getRules?type=flow answer, or a rule file) to core rules.
//
// Resource names are mapped as JavaDegradeRules maps them, and so is
// limitApp. Java's defaults stand for fields left out: grade 1 (QPS),
// warmUpPeriodSec 10, maxQueueingTimeMs 500; a warm-up rule's cold factor
// is JavaColdFactor. controlBehavior maps to core's two fields (1 warm-up,
// 2 rate limiter, 3 both). Attributes core has no field for (grade 0,
// threads; strategy 1, relate, or 2, chain, with their refResource;
// cluster mode) go into the rule's ID, "java:" and a comma-separated list
// ("java:threads,relate=other"), so that rules differing in them do not
// look alike: core limits the rule's own resource by QPS whatever the ID
// says.
//
// Empty data, JSON null and errors are as for JavaDegradeRules.
func JavaFlowRules(data []byte) ([]core.FlowRule, []*RuleError, error) {
	raws, err := array(data)
	if err != nil {
		return nil, nil, err
	}
	var flows []core.FlowRule
	var problems []*RuleError
	for i, raw := range raws {
		r, err := javaFlowRuleAt(raw)
		if err != nil {
			problems = append(problems, &RuleError{Index: i, Err: err})
			continue
		}
		flows = append(flows, r)
	}
	return flows, problems, nil
}

// javaFlowRuleAt maps one element of a flow rule array.
func javaFlowRuleAt(raw json.RawMessage) (core.FlowRule, error) {
	j := javaFlowRule{LimitApp: "default", Grade: 1, WarmUpPeriodSec: 10, MaxQueueingTimeMs: 500}
	if err := json.Unmarshal(raw, &j); err != nil {
		return core.FlowRule{}, err
	}
	r := core.FlowRule{Resource: metriclog.LegalName(j.Resource), Threshold: j.Count, LimitApp: JavaLimitApp(j.LimitApp)}
	if j.Regex {
		if err := JavaPattern(j.Resource); err != nil {
			return r, err
		}
		r.Resource, r.Pattern = j.Resource, j.Resource
	}
	switch j.ControlBehavior {
	case 0:
	case 1:
		r.TokenCalculateStrategy = core.WarmUp
	case 2:
		r.ControlBehavior = core.Throttling
	case 3:
		r.TokenCalculateStrategy, r.ControlBehavior = core.WarmUp, core.Throttling
	default:
		return r, fmt.Errorf("controlBehavior %d is not 0, 1, 2 or 3", j.ControlBehavior)
	}
	if r.TokenCalculateStrategy == core.WarmUp {
		r.WarmUpPeriodSec = uint32(min(max(j.WarmUpPeriodSec, 0), math.MaxUint32))
		r.WarmUpColdFactor = JavaColdFactor
	}
	if r.ControlBehavior == core.Throttling {
		r.MaxQueueingTimeMs = uint32(min(max(j.MaxQueueingTimeMs, 0), math.MaxUint32))
	}
	var id []string
	if j.Grade == 0 {
		id = append(id, "threads")
	} else if j.Grade != 1 {
		return r, fmt.Errorf("grade %d is not 0 (threads) or 1 (QPS)", j.Grade)
	}
	switch j.Strategy {
	case 0:
	case 1:
		id = append(id, "relate="+metriclog.LegalName(j.RefResource))
	case 2:
		id = append(id, "chain="+j.RefResource)
	default:
		return r, fmt.Errorf("strategy %d is not 0, 1 or 2", j.Strategy)
	}
	if j.ClusterMode {
		id = append(id, "cluster")
	}
	if len(id) > 0 {
		r.ID = "java:" + strings.Join(id, ",")
	}
	if err := r.Validate(); err != nil {
		return r, err
	}
	if len(r.Resource) > wire.DefaultMaxNameBytes || len(r.ID) > wire.DefaultMaxNameBytes || len(r.LimitApp) > wire.DefaultMaxNameBytes {
		return r, fmt.Errorf("resource, refResource or limitApp over %d bytes", wire.DefaultMaxNameBytes)
	}
	return r, nil
}

// javaLegacy reports whether a degrade rule is one of Sentinel before 1.8:
// by the version the service gave, or, when it gave none, by the fields
// only those versions write (passCount, rtSlowRequestAmount) where 1.8's
// are missing.
func javaLegacy(version string, raw json.RawMessage) bool {
	if version != "" {
		var major, minor int
		if _, err := fmt.Sscanf(version, "%d.%d", &major, &minor); err == nil {
			return major < 1 || major == 1 && minor < 8
		}
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil {
		return false
	}
	_, pass := fields["passCount"]
	_, amount := fields["rtSlowRequestAmount"]
	_, ratio := fields["slowRatioThreshold"]
	return (pass || amount) && !ratio
}

// javaLegacyRule maps a degrade rule of Sentinel before 1.8 (1.6, 1.7),
// whose DegradeRule cuts the resource off for timeWindow when its
// condition holds at an entry, with no probe: grade 0 is the average
// response time of the last second reaching count (ms) for
// rtSlowRequestAmount entries in a row (5 in 1.6), never a slow-request
// ratio; grade 1 the exception ratio of the last second reaching count
// with minRequestAmount entries (5 in 1.6); grade 2 the exceptions of the
// last minute reaching count. False for another grade.
func javaLegacyRule(r *core.BreakerRule, j *javaDegradeRule) bool {
	r.Semantics, r.Threshold, r.StatIntervalMs = core.SemanticsJava16, j.Count, 1000
	switch j.Grade {
	case 0:
		r.Strategy, r.MinRequestAmount = core.AverageRT, uint64(max(j.RtSlowRequestAmount, 0))
	case 1:
		r.Strategy = core.ErrorRatio
	case 2:
		r.Strategy, r.MinRequestAmount, r.StatIntervalMs = core.ErrorCount, 0, 60000
	default:
		return false
	}
	return true
}

// JavaPattern checks a Java regex rule's pattern: Go's regexp must be
// able to match it (Java's lookarounds and backreferences it cannot).
func JavaPattern(pattern string) error {
	if _, err := regexp.Compile(`^(?:` + pattern + `)$`); err != nil {
		return fmt.Errorf("regex %q cannot be matched here: %v", pattern, err)
	}
	return nil
}

// JavaLimitApp is a Java rule's limitApp as core keeps it: "" for
// "default", which limits every caller as an absent one does.
func JavaLimitApp(s string) string {
	if s == "default" {
		return ""
	}
	return s
}

// array splits a JSON array into its elements: none for empty data or
// null.
func array(data []byte) ([]json.RawMessage, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(data, &raws); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	return raws, nil
}
