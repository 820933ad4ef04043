package source

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/sentinel-top/sentinel-top/collector/feed"
	"github.com/sentinel-top/sentinel-top/collector/metriclog"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// Java Sentinel's rules, as /getRules answers them: degrade (1.8 and
// before), flow, regex rules expanded over the resources they match.

// pollRules fetches both rule types and sends a rules message when they
// changed. A target that does not answer them (an old version, a proxy)
// stays up without rules; a rule that does not map is rejected once.
func (p *javaPoller) pollRules(ctx context.Context) {
	degrade, err := p.get(ctx, "/getRules?type=degrade")
	var flow []byte
	if err == nil {
		flow, err = p.get(ctx, "/getRules?type=flow")
	}
	note := feed.TargetRemark{StatesInferred: true}
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		note.RulesError = err.Error()
	}
	if note != p.rulesErr {
		p.rulesErr = note
		p.st.Update(func(s *feed.TargetStatus) { s.Note = note })
	}
	if err != nil {
		return
	}
	memo := &p.st.javaRules
	degradeChanged, problems := memo.degrade.update(degrade, p.version, javaDegradeRules)
	flowChanged, flowProblems := memo.flow.update(flow, "", func(body []byte, _ string) ([]core.FlowRule, []error) {
		return javaFlowRules(body)
	})
	problems = append(problems, flowProblems...)
	paramsChanged := false
	if body, ok := p.getParamRules(ctx); ok {
		var paramProblems []error
		paramsChanged, paramProblems = memo.params.update(body, "", func(body []byte, _ string) ([]core.HotParamRule, []error) {
			return javaParamRules(body)
		})
		problems = append(problems, paramProblems...)
	}
	for _, err := range problems {
		p.sink.Reject(p.t.Name, err)
	}
	if degradeChanged || flowChanged || paramsChanged || p.rulesVersion == "" {
		p.breakers, p.flows, p.params = memo.degrade.rules, memo.flow.rules, memo.params.rules
		clear(p.patterns)
		for _, r := range p.breakers {
			p.compile(r.Pattern)
		}
		for _, r := range p.flows {
			p.compile(r.Pattern)
		}
		for _, r := range p.params {
			p.compile(r.Pattern)
		}
		p.sendRules(true)
	}
}

// javaRulesMemo is what a Java target's rule answers were last mapped to,
// per rule type. It outlives a connection (it is the target's), so that
// neither a poll nor a reconnect parses an unchanged answer again: a
// service with 30 MB of rules costs a read and a hash every JavaRulesEvery,
// not a parse; and a rule that does not map is rejected once.
type javaRulesMemo struct {
	degrade javaRuleAnswer[core.BreakerRule]
	flow    javaRuleAnswer[core.FlowRule]
	params  javaRuleAnswer[core.HotParamRule]
}

// javaRuleAnswer is one rule type's last answer, by length and SHA-256,
// and the rules it mapped to.
type javaRuleAnswer[R javaRule] struct {
	parsed  bool
	size    int
	sum     [sha256.Size]byte
	version string // the service's version it was mapped for
	rules   []R
}

// update maps body with parse unless it is the answer last mapped (same
// length, hash and service version); changed says it was mapped anew, with
// problems the rules that did not map.
func (a *javaRuleAnswer[R]) update(body []byte, version string, parse func([]byte, string) ([]R, []error)) (changed bool, problems []error) {
	sum := sha256.Sum256(body)
	if a.parsed && a.size == len(body) && a.sum == sum && a.version == version {
		return false, nil
	}
	rules, problems := parse(body, version)
	*a = javaRuleAnswer[R]{parsed: true, size: len(body), sum: sum, version: version, rules: rules}
	return true, problems
}

// compile keeps a regex rule's pattern, as Java matches it: the whole name.
// javaRules has checked that it compiles.
func (p *javaPoller) compile(pattern string) {
	if pattern != "" && p.patterns[pattern] == nil {
		p.patterns[pattern] = regexp.MustCompile(`^(?:` + pattern + `)$`)
	}
}

// sendRules sends the rules read, regex rules listed per resource they
// govern, when that rule set changed: when the rules read did (changed),
// or the app's resources did (those every Java target of the app
// reported); the inference takes it too.
func (p *javaPoller) sendRules(changed bool) {
	breakers, flows, params := p.breakers, p.flows, p.params
	if len(p.patterns) > 0 {
		names := p.d.apps.resources(p.jt.app)
		if !changed && slices.Equal(names, p.governable) {
			return
		}
		p.governable = names
		breakers = javaExpand(breakers, names, p.matches)
		flows = javaExpand(flows, names, p.matches)
		params = javaExpand(params, names, p.matches)
	}
	version := wire.RulesVersion(breakers, flows, params...)
	if version == p.rulesVersion {
		return
	}
	p.rulesVersion = version
	now := p.d.clock.UnixMilli()
	p.ingest(&wire.Rules{Header: wire.Header{Ts: now, Instance: p.jt.instance},
		Version: version, Breakers: breakers, Flows: flows, Params: params})
	for _, m := range p.inf.SetRules(now, breakers, flows) {
		p.ingest(m)
	}
}

// matches reports whether a regex rule's pattern governs a resource, as
// Java's Pattern.matches does on the name the application gave. The name
// seen has every "|" written as "_", so a name with "_" is also tried
// with "|" there.
func (p *javaPoller) matches(pattern, name string) bool {
	re := p.patterns[pattern]
	if re == nil {
		return false
	}
	return re.MatchString(name) || strings.Contains(name, "_") && re.MatchString(strings.ReplaceAll(name, "_", "|"))
}

// javaRule is a core rule a Java rule maps to.
type javaRule interface {
	core.BreakerRule | core.FlowRule | core.HotParamRule
}

// javaExpand lists each regex rule of rules (Pattern set) once for every
// name it governs, naming it; other rules are kept as they are. Names are
// sorted, so the list is stable.
func javaExpand[R javaRule](rules []R, names []string, matches func(pattern, name string) bool) []R {
	var out []R
	for _, r := range rules {
		resource, pattern := ruleNames(&r)
		if *pattern == "" {
			out = append(out, r)
			continue
		}
		for _, name := range names {
			if matches(*pattern, name) {
				*resource = name
				out = append(out, r)
			}
		}
	}
	return out
}

// ruleNames points at a rule's resource and pattern.
func ruleNames[R javaRule](r *R) (resource, pattern *string) {
	switch x := any(r).(type) {
	case *core.BreakerRule:
		return &x.Resource, &x.Pattern
	case *core.FlowRule:
		return &x.Resource, &x.Pattern
	case *core.HotParamRule:
		return &x.Resource, &x.Pattern
	}
	panic("unreachable")
}

// javaDegradeRule is Java Sentinel's DegradeRule as /getRules?type=degrade
// writes it, with the Java defaults of fields left out.
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

// javaFlowRule is Java Sentinel's FlowRule as /getRules?type=flow writes it.
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

// javaRules maps the two /getRules answers of a service of Sentinel
// version (as /version says; "" unknown) to core rules. Resource names
// are mapped as the metric lines map them (LegalName), so rules and
// statistics meet. Breakers keep Java's semantics (Semantics "java": one
// bucket per window, as Java's circuit breakers use), or, for a service
// before 1.8, the meaning its degrade rules had (see javaLegacyRule). Both
// keep limitApp, the origin the rule applies to, unless it is "default"
// (every caller, as when it is absent). Flow
// rule attributes core has no field for (thread grade, relate/chain
// strategy, cluster mode) go into the rule's id, "java:" and a list, so
// that rules differing in them do not look alike. A regex rule
// (1.8.7+) keeps its pattern as Resource and Pattern, for javaExpand to
// list it per resource it governs. Rules that do not map are left out and
// reported as problems.
func javaRules(degrade, flow []byte, version string) (breakers []core.BreakerRule, flows []core.FlowRule, problems []error) {
	breakers, problems = javaDegradeRules(degrade, version)
	flows, flowProblems := javaFlowRules(flow)
	return breakers, flows, append(problems, flowProblems...)
}

// javaDegradeRules maps a /getRules?type=degrade answer (see javaRules).
func javaDegradeRules(degrade []byte, version string) (breakers []core.BreakerRule, problems []error) {
	bad := func(kind string, i int, format string, args ...any) {
		problems = append(problems, javaRuleProblem(kind, i, format, args...))
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(orNull(degrade), &raws); err != nil {
		problems = append(problems, fmt.Errorf("%w: /getRules?type=degrade: %v", wire.ErrMalformed, err))
		raws = nil
	}
	for i, raw := range raws {
		j := javaDegradeRule{MinRequestAmount: 5, SlowRatioThreshold: 1, StatIntervalMs: 1000, RtSlowRequestAmount: 5}
		if err := json.Unmarshal(raw, &j); err != nil {
			bad("degrade", i, "%v", err)
			continue
		}
		r := core.BreakerRule{
			Resource:                     metriclog.LegalName(j.Resource),
			RetryTimeoutMs:               uint32(min(max(j.TimeWindow, 0)*1000, math.MaxUint32)),
			MinRequestAmount:             uint64(max(j.MinRequestAmount, 0)),
			StatIntervalMs:               uint32(min(max(j.StatIntervalMs, 0), math.MaxUint32)),
			StatSlidingWindowBucketCount: 1,
			Semantics:                    core.SemanticsJava,
			LimitApp:                     javaLimitApp(j.LimitApp),
		}
		if j.Regex {
			if err := javaPattern(j.Resource); err != nil {
				bad("degrade", i, "%v", err)
				continue
			}
			r.Resource, r.Pattern = j.Resource, j.Resource
		}
		switch {
		case javaLegacy(version, raw):
			if !javaLegacyRule(&r, &j) {
				bad("degrade", i, "grade %d is not 0, 1 or 2", j.Grade)
				continue
			}
		case j.Grade == 0: // slow ratio: count is the RT bound, slowRatioThreshold the ratio
			r.Strategy = core.SlowRequestRatio
			if j.Count < 0 || math.IsNaN(j.Count) || j.Count > math.MaxInt64 {
				bad("degrade", i, "count %v is not a response time", j.Count)
				continue
			}
			// Java rounds (Math.round: half up), so count 0.5 is a 1 ms bound.
			r.MaxAllowedRtMs, r.Threshold = uint64(math.Floor(j.Count+0.5)), j.SlowRatioThreshold
		case j.Grade == 1:
			r.Strategy, r.Threshold = core.ErrorRatio, j.Count
		case j.Grade == 2:
			r.Strategy, r.Threshold = core.ErrorCount, j.Count
		default:
			bad("degrade", i, "grade %d is not 0, 1 or 2", j.Grade)
			continue
		}
		if err := r.Validate(); err != nil {
			bad("degrade", i, "%v", err)
			continue
		}
		if len(r.Resource) > wire.DefaultMaxNameBytes || len(r.LimitApp) > wire.DefaultMaxNameBytes {
			bad("degrade", i, "resource or limitApp over %d bytes", wire.DefaultMaxNameBytes)
			continue
		}
		breakers = append(breakers, r)
	}
	return breakers, problems
}

// javaFlowRules maps a /getRules?type=flow answer (see javaRules).
func javaFlowRules(flow []byte) (flows []core.FlowRule, problems []error) {
	bad := func(kind string, i int, format string, args ...any) {
		problems = append(problems, javaRuleProblem(kind, i, format, args...))
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(orNull(flow), &raws); err != nil {
		problems = append(problems, fmt.Errorf("%w: /getRules?type=flow: %v", wire.ErrMalformed, err))
		raws = nil
	}
	for i, raw := range raws {
		j := javaFlowRule{LimitApp: "default", Grade: 1, WarmUpPeriodSec: 10, MaxQueueingTimeMs: 500}
		if err := json.Unmarshal(raw, &j); err != nil {
			bad("flow", i, "%v", err)
			continue
		}
		r := core.FlowRule{Resource: metriclog.LegalName(j.Resource), Threshold: j.Count, LimitApp: javaLimitApp(j.LimitApp)}
		if j.Regex {
			if err := javaPattern(j.Resource); err != nil {
				bad("flow", i, "%v", err)
				continue
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
			bad("flow", i, "controlBehavior %d is not 0, 1, 2 or 3", j.ControlBehavior)
			continue
		}
		if r.TokenCalculateStrategy == core.WarmUp {
			r.WarmUpPeriodSec = uint32(min(max(j.WarmUpPeriodSec, 0), math.MaxUint32))
			r.WarmUpColdFactor = javaColdFactor
		}
		if r.ControlBehavior == core.Throttling {
			r.MaxQueueingTimeMs = uint32(min(max(j.MaxQueueingTimeMs, 0), math.MaxUint32))
		}
		var id []string
		if j.Grade == 0 {
			id = append(id, "threads")
		} else if j.Grade != 1 {
			bad("flow", i, "grade %d is not 0 (threads) or 1 (QPS)", j.Grade)
			continue
		}
		switch j.Strategy {
		case 0:
		case 1:
			id = append(id, "relate="+metriclog.LegalName(j.RefResource))
		case 2:
			id = append(id, "chain="+j.RefResource)
		default:
			bad("flow", i, "strategy %d is not 0, 1 or 2", j.Strategy)
			continue
		}
		if j.ClusterMode {
			id = append(id, "cluster")
		}
		if len(id) > 0 {
			r.ID = "java:" + strings.Join(id, ",")
		}
		if err := r.Validate(); err != nil {
			bad("flow", i, "%v", err)
			continue
		}
		if len(r.Resource) > wire.DefaultMaxNameBytes || len(r.ID) > wire.DefaultMaxNameBytes || len(r.LimitApp) > wire.DefaultMaxNameBytes {
			bad("flow", i, "resource, refResource or limitApp over %d bytes", wire.DefaultMaxNameBytes)
			continue
		}
		flows = append(flows, r)
	}
	return flows, problems
}

// javaLegacy reports whether a degrade rule is one of Sentinel before 1.8:
// by the version /version gave, or, when it gave none, by the fields only
// those versions write (passCount, rtSlowRequestAmount) where 1.8's are
// missing.
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
