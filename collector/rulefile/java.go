package rulefile

import (
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
	breakers, problems := mapAll(raws, func(raw json.RawMessage) (core.BreakerRule, error) {
		return javaDegradeRuleAt(raw, version)
	})
	return breakers, problems, nil
}

// javaDegradeRuleAt maps one element of a degrade rule array.
func javaDegradeRuleAt(raw json.RawMessage, version string) (core.BreakerRule, error) {
	j := javaDegradeRule{MinRequestAmount: 5, SlowRatioThreshold: 1, StatIntervalMs: 1000, RtSlowRequestAmount: 5}
	if err := decode(raw, &j); err != nil {
		return core.BreakerRule{}, err
	}
	legacy := javaLegacy(version, raw)
	if err := javaDegradeCheck(&j, legacy); err != nil {
		return core.BreakerRule{}, err
	}
	r := core.BreakerRule{
		Resource:                     metriclog.LegalName(j.Resource),
		RetryTimeoutMs:               uint32(j.TimeWindow * 1000),
		MinRequestAmount:             uint64(max(j.MinRequestAmount, 0)),
		StatIntervalMs:               uint32(max(j.StatIntervalMs, 0)),
		StatSlidingWindowBucketCount: 1,
		Semantics:                    core.SemanticsJava,
		LimitApp:                     JavaLimitApp(j.LimitApp),
	}
	if j.Regex {
		r.Resource, r.Pattern = j.Resource, j.Resource
	}
	switch {
	case legacy:
		javaLegacyRule(&r, &j)
	case j.Grade == 0: // slow ratio: count is the RT bound, slowRatioThreshold the ratio
		// Java rounds (Math.round: half up), so count 0.5 is a 1 ms bound.
		r.Strategy, r.MaxAllowedRtMs, r.Threshold = core.SlowRequestRatio, uint64(math.Floor(j.Count+0.5)), j.SlowRatioThreshold
	case j.Grade == 1:
		r.Strategy, r.Threshold = core.ErrorRatio, j.Count
	default:
		r.Strategy, r.Threshold = core.ErrorCount, j.Count
	}
	if err := r.Validate(); err != nil {
		return r, err
	}
	if len(r.Resource) > wire.DefaultMaxNameBytes || len(r.LimitApp) > wire.DefaultMaxNameBytes {
		return r, invalid("resource", "resource or limitApp over %d bytes", wire.DefaultMaxNameBytes)
	}
	return r, nil
}

// javaDegradeCheck refuses what Java's DegradeRuleManager refuses (a
// blank resource, a negative count, a timeWindow that is not positive,
// an unknown grade; from 1.8 on, a minRequestAmount or statIntervalMs
// that is not positive, a slowRatioThreshold outside [0, 1], a regex rule
// whose pattern does not compile), naming Java's field, and values core
// cannot hold. An error ratio over 1 is left to core's Validate.
func javaDegradeCheck(j *javaDegradeRule, legacy bool) error {
	if err := javaResource(j.Resource, j.Regex); err != nil {
		return err
	}
	switch {
	case j.Grade < 0 || j.Grade > 2:
		return invalid("grade", "grade %d is not 0 (slow ratio), 1 (error ratio) or 2 (error count)", j.Grade)
	case j.Count < 0 || math.IsNaN(j.Count):
		return invalid("count", "count %v must not be negative", j.Count)
	case !legacy && j.Grade == 0 && j.Count >= math.MaxInt64:
		return wrongType("count", "count %v is too long a response time (ms)", j.Count)
	case j.TimeWindow <= 0:
		return invalid("timeWindow", "timeWindow %d must be positive (seconds)", j.TimeWindow)
	case j.TimeWindow > javaMaxTimeWindow:
		return wrongType("timeWindow", "timeWindow %d overflows Java's milliseconds (an int): at most %d seconds", j.TimeWindow, javaMaxTimeWindow)
	case legacy:
		return nil // 1.6 and 1.7 have no more checks, nor these fields
	}
	if err := javaPositive("minRequestAmount", j.MinRequestAmount); err != nil {
		return err
	}
	if err := javaPositive("statIntervalMs", j.StatIntervalMs); err != nil {
		return err
	}
	if j.Grade == 0 && !(j.SlowRatioThreshold >= 0 && j.SlowRatioThreshold <= 1) {
		return invalid("slowRatioThreshold", "slowRatioThreshold %v must be within [0, 1]", j.SlowRatioThreshold)
	}
	return nil
}

// javaMaxTimeWindow is the longest timeWindow (seconds) Java's circuit
// breakers hold: they keep it in milliseconds, in an int.
const javaMaxTimeWindow = math.MaxInt32 / 1000

// javaResource refuses a blank resource, as Java does, and a regex rule's
// pattern Go cannot match.
func javaResource(resource string, regex bool) error {
	if strings.TrimSpace(resource) == "" {
		return invalid("resource", "resource %q is blank", resource)
	}
	if regex {
		if err := JavaPattern(resource); err != nil {
			return &problem{field: "resource", msg: err.Error(), err: core.ErrInvalidRule}
		}
	}
	return nil
}

// javaPositive refuses a Java int field that is not positive, or past an
// int.
func javaPositive(field string, v int64) error {
	switch {
	case v <= 0:
		return invalid(field, "%s %d must be positive", field, v)
	case v > math.MaxInt32:
		return wrongType(field, "%s %d is past Java's int (%d)", field, v, math.MaxInt32)
	}
	return nil
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
	flows, problems := mapAll(raws, javaFlowRuleAt)
	return flows, problems, nil
}

// javaFlowRuleAt maps one element of a flow rule array.
func javaFlowRuleAt(raw json.RawMessage) (core.FlowRule, error) {
	j := javaFlowRule{LimitApp: "default", Grade: 1, WarmUpPeriodSec: 10, MaxQueueingTimeMs: 500}
	if err := decode(raw, &j); err != nil {
		return core.FlowRule{}, err
	}
	if err := javaFlowCheck(&j); err != nil {
		return core.FlowRule{}, err
	}
	r := core.FlowRule{Resource: metriclog.LegalName(j.Resource), Threshold: j.Count, LimitApp: JavaLimitApp(j.LimitApp)}
	if j.Regex {
		r.Resource, r.Pattern = j.Resource, j.Resource
	}
	if j.ControlBehavior == 1 || j.ControlBehavior == 3 {
		r.TokenCalculateStrategy, r.WarmUpPeriodSec, r.WarmUpColdFactor = core.WarmUp, uint32(j.WarmUpPeriodSec), JavaColdFactor
	}
	if j.ControlBehavior == 2 || j.ControlBehavior == 3 {
		r.ControlBehavior, r.MaxQueueingTimeMs = core.Throttling, uint32(j.MaxQueueingTimeMs)
	}
	var id []string
	if j.Grade == 0 {
		id = append(id, "threads")
	}
	switch j.Strategy {
	case 1:
		id = append(id, "relate="+metriclog.LegalName(j.RefResource))
	case 2:
		id = append(id, "chain="+j.RefResource)
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
		return r, invalid("resource", "resource, refResource or limitApp over %d bytes", wire.DefaultMaxNameBytes)
	}
	return r, nil
}

// javaFlowCheck refuses what Java's FlowRuleUtil refuses (a blank
// resource, a negative count, a relate or chain rule without refResource,
// a warm-up without warmUpPeriodSec, a rate limiter without
// maxQueueingTimeMs, a regex rule that shapes traffic or is clustered)
// and what Java accepts but no version implements (a grade, strategy or
// controlBehavior past the known ones), naming Java's field.
func javaFlowCheck(j *javaFlowRule) error {
	if err := javaResource(j.Resource, j.Regex); err != nil {
		return err
	}
	switch {
	case j.Count < 0 || math.IsNaN(j.Count):
		return invalid("count", "count %v must not be negative", j.Count)
	case j.Grade != 0 && j.Grade != 1:
		return invalid("grade", "grade %d is not 0 (threads) or 1 (QPS)", j.Grade)
	case j.Strategy < 0 || j.Strategy > 2:
		return invalid("strategy", "strategy %d is not 0 (direct), 1 (relate) or 2 (chain)", j.Strategy)
	case j.Strategy != 0 && strings.TrimSpace(j.RefResource) == "":
		return invalid("refResource", "refResource is blank: strategy %d (relate or chain) names the resource it looks at", j.Strategy)
	case j.ControlBehavior < 0 || j.ControlBehavior > 3:
		return invalid("controlBehavior", "controlBehavior %d is not 0, 1, 2 or 3", j.ControlBehavior)
	case j.Regex && (j.ControlBehavior != 0 || j.ClusterMode):
		return invalid("regex", "a regex rule must have controlBehavior 0 and no cluster mode")
	}
	if j.ControlBehavior == 1 || j.ControlBehavior == 3 {
		if err := javaPositive("warmUpPeriodSec", j.WarmUpPeriodSec); err != nil {
			return err
		}
	}
	if j.ControlBehavior == 2 || j.ControlBehavior == 3 {
		if err := javaPositive("maxQueueingTimeMs", j.MaxQueueingTimeMs); err != nil {
			return err
		}
	}
	return nil
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
// last minute reaching count. javaDegradeCheck has checked the grade.
func javaLegacyRule(r *core.BreakerRule, j *javaDegradeRule) {
	r.Semantics, r.Threshold, r.StatIntervalMs = core.SemanticsJava16, j.Count, 1000
	switch j.Grade {
	case 0:
		r.Strategy, r.MinRequestAmount = core.AverageRT, uint64(max(j.RtSlowRequestAmount, 0))
	case 1:
		r.Strategy = core.ErrorRatio
	default:
		r.Strategy, r.MinRequestAmount, r.StatIntervalMs = core.ErrorCount, 0, 60000
	}
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
