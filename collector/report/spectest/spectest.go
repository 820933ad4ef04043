// Package spectest holds a JSON report to spec/findings-v1.md (revision 3)
// rather than to the code that writes it: its types are the spec's fields,
// written out apart from collector/report's, and Decode refuses any field the
// spec does not have, at any depth. Tests of the report and of the report
// command share it.
package spectest

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/sentinel-top/sentinel-top/core"
)

// Report is a findings-v1 report.
type Report struct {
	V             int            `json:"v"`
	Source        string         `json:"source"`
	From          int64          `json:"from"`
	To            int64          `json:"to"`
	Apps          int            `json:"apps"`
	Instances     int            `json:"instances"`
	Resources     int            `json:"resources"`
	Messages      int64          `json:"messages"`
	Rejected      int64          `json:"rejected"`
	ResourcesSeen []ResourceSeen `json:"resourcesSeen"`
	Findings      []Finding      `json:"findings"`
	Plans         []Plan         `json:"plans"`
}

// Plan is one rule's plan (revision 3, "Rule plans").
type Plan struct {
	App         string              `json:"app"`
	Resource    string              `json:"resource"`
	Rule        string              `json:"rule"`
	Instances   []string            `json:"instances"`
	Current     PlanRule            `json:"current"`
	Proposed    PlanRule            `json:"proposed"`
	PerInstance map[string]PlanRule `json:"perInstance"`
	Because     []string            `json:"because"`
	Safe        bool                `json:"safe"`
	Why         string              `json:"why"`
	WhatIf      *WhatIf             `json:"whatIf"`
}

// PlanRule is a rule's fields, with the rule's JSON names; a plan's
// proposed and perInstance hold only those that change. A breaker plan's
// are a circuit-breaker rule's; a hot-parameter plan's (rule "param",
// from hot-value) are wire-v1's "params" rule fields, and it proposes the
// finding's suggest ({"specificItems":{VALUE:N}}); a flow plan's (rule
// "flow", from inert-rule origin-mismatch) are wire-v1's flow rule fields,
// and it proposes {"limitApp":"default"}.
type PlanRule struct {
	Strategy                     *int64   `json:"strategy"`
	MaxAllowedRtMs               *int64   `json:"maxAllowedRtMs"`
	Threshold                    *float64 `json:"threshold"`
	MinRequestAmount             *int64   `json:"minRequestAmount"`
	StatIntervalMs               *int64   `json:"statIntervalMs"`
	StatSlidingWindowBucketCount *int64   `json:"statSlidingWindowBucketCount"`
	RetryTimeoutMs               *int64   `json:"retryTimeoutMs"`
	ProbeNum                     *int64   `json:"probeNum"`

	MetricType      *int64           `json:"metricType"`
	ControlBehavior *int64           `json:"controlBehavior"`
	ParamIndex      *int64           `json:"paramIndex"`
	ParamKey        *string          `json:"paramKey"`
	DurationInSec   *int64           `json:"durationInSec"`
	BurstCount      *int64           `json:"burstCount"`
	SpecificItems   map[string]int64 `json:"specificItems"`

	TokenCalculateStrategy *int64  `json:"tokenCalculateStrategy"`
	MaxQueueingTimeMs      *int64  `json:"maxQueueingTimeMs"`
	WarmUpPeriodSec        *int64  `json:"warmUpPeriodSec"`
	WarmUpColdFactor       *int64  `json:"warmUpColdFactor"`
	StatIntervalInMs       *int64  `json:"statIntervalInMs"`
	LimitApp               *string `json:"limitApp"`
}

// WhatIf is a plan's replay, the current rule's and the proposed one's. A
// hot-parameter plan's counts the value's calls offered, and the calls the
// proposal adds: most in one second, and while the breaker was open.
type WhatIf struct {
	StepMs                int64         `json:"stepMs"`
	Estimated             bool          `json:"estimated"`
	Current               WhatIfMetrics `json:"current"`
	Proposed              WhatIfMetrics `json:"proposed"`
	Offered               *int64        `json:"offered"`
	AddedPeakPerSecond    *int64        `json:"addedPeakPerSecond"`
	AddedWhileBreakerOpen *int64        `json:"addedWhileBreakerOpen"`
}

// WhatIfMetrics is what one rule did in the replay; ranges are [low,
// high]. A hot-parameter plan's has passed and blocked alone (the value's
// calls).
type WhatIfMetrics struct {
	Trips              *int64    `json:"trips"`
	LowConfidenceTrips *int64    `json:"lowConfidenceTrips"`
	OutagesCaught      *int64    `json:"outagesCaught"`
	DetectMs           []int64   `json:"detectMs"`
	Probes             *int64    `json:"probes"`
	PassedDuringOutage *[2]int64 `json:"passedDuringOutage"`
	BlockedHealthy     *[2]int64 `json:"blockedHealthy"`
	Passed             *int64    `json:"passed"`
	Blocked            *int64    `json:"blocked"`
}

// ResourceSeen is one app x resource of resourcesSeen.
type ResourceSeen struct {
	App      string `json:"app"`
	Resource string `json:"resource"`
	Pass     int64  `json:"pass"`
	Block    int64  `json:"block"`
	Complete int64  `json:"complete"`
	Error    int64  `json:"error"`
	Slow     int64  `json:"slow"`
	States   string `json:"states"`
}

// Finding has the common fields and every kind's own (nil when absent).
type Finding struct {
	Kind         string   `json:"kind"`
	Severity     string   `json:"severity"`
	PeakSeverity string   `json:"peakSeverity"`
	App          string   `json:"app"`
	Resource     string   `json:"resource"`
	Instances    []string `json:"instances"`
	From         int64    `json:"from"`
	To           int64    `json:"to"`
	Summary      string   `json:"summary"`
	Advice       string   `json:"advice"`

	Suggest            map[string]json.RawMessage `json:"suggest"`
	Count              *int64                     `json:"count"`
	PeriodMs           *int64                     `json:"periodMs"`
	ProbeRtMs          *int64                     `json:"probeRtMs"`
	SpreadMs           *int64                     `json:"spreadMs"`
	AtThreshold        *int64                     `json:"atThreshold"`
	ClosedAtFirstProbe *int64                     `json:"closedAtFirstProbe"`
	// ColdStart is absent where the process start is unknown; Inferred
	// marks Java Sentinel's trips (revision 3).
	ColdStart         *int64    `json:"coldStart"`
	Inferred          *bool     `json:"inferred"`
	Worst             *Evidence `json:"worst"`
	Groups            []Group   `json:"groups"`
	Newest            *string   `json:"newest"`
	Reverted          []Revert  `json:"reverted"`
	Passed            *int64    `json:"passed"`
	Cause             *string   `json:"cause"`
	LostAt            *int64    `json:"lostAt"`
	Reason            *string   `json:"reason"`
	Near              *string   `json:"near"`
	MaxWindowRequests *int64    `json:"maxWindowRequests"`
	// Blocked, Offered and StartLimit are warm-up's (its span is the
	// finding's from and to).
	Blocked    *int64   `json:"blocked"`
	Offered    *int64   `json:"offered"`
	StartLimit *float64 `json:"startLimit"`
	// BadPassed is inert-rule cannot-trip's; HealthyBadShare and Trips are
	// self-inflicted's. Inferred (with them too) says the response times
	// were Java's per-second means.
	BadPassed       *int64   `json:"badPassed"`
	HealthyBadShare *float64 `json:"healthyBadShare"`
	Trips           *int64   `json:"trips"`
	// Param, Value and BlockShare (with QPS) are hot-value's; its suggest
	// is {"specificItems":{VALUE:N}}.
	Param      *int64   `json:"param"`
	Value      *string  `json:"value"`
	BlockShare *float64 `json:"blockShare"`
	Apps       []string `json:"apps"`
	// Rule is a breaker rule (window-misaligned, self-inflicted) or a rule
	// set (inert-rule).
	Rule              json.RawMessage `json:"rule"`
	QPS               *float64        `json:"qps"`
	WindowRequests    *float64        `json:"windowRequests"`
	MinRequestSeconds *float64        `json:"minRequestSeconds"`
	P99Ms             *int64          `json:"p99Ms"`
	RtOverP99         *float64        `json:"rtOverP99"`
}

// Evidence is low-confidence-trip's worst trip.
type Evidence struct {
	K     int64   `json:"k"`
	N     int64   `json:"n"`
	Lower float64 `json:"lower"`
}

// Group is one of rule-drift's groups.
type Group struct {
	Version   string   `json:"version"`
	Rule      RuleSet  `json:"rule"`
	Instances []string `json:"instances"`
	FirstSeen int64    `json:"firstSeen"`
}

// Revert is one of rule-drift's reverted instances (revision 3): it went
// from version From back to To, a version its app ran earlier, at At.
type Revert struct {
	Instance  string `json:"instance"`
	From      string `json:"from"`
	To        string `json:"to"`
	At        int64  `json:"at"`
	Restarted bool   `json:"restarted"`
}

// RuleSet is a group's rules for the finding's resource.
type RuleSet struct {
	Breakers []core.BreakerRule `json:"breakers"`
	Flows    []core.FlowRule    `json:"flows"`
}

// Decode decodes a report, refusing any field the spec does not have.
func Decode(data []byte) (*Report, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var r Report
	if err := dec.Decode(&r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Check holds a decoded plan to its rule kind's fields: a "breaker" plan's
// current rule and replay have a breaker's fields and no hot-parameter
// rule's, a "param" plan's the reverse; any other kind is refused.
func (p *Plan) Check() error {
	c := &p.Current
	breaker := c.Strategy != nil || c.MinRequestAmount != nil || c.StatIntervalMs != nil || c.RetryTimeoutMs != nil
	param := c.MetricType != nil || c.ParamIndex != nil || c.SpecificItems != nil || c.DurationInSec != nil
	flow := c.TokenCalculateStrategy != nil || c.StatIntervalInMs != nil || c.LimitApp != nil || c.WarmUpPeriodSec != nil
	switch p.Rule {
	case "breaker":
		if !breaker || param || flow || c.Threshold == nil {
			return fmt.Errorf("breaker plan %s/%s: current rule without a breaker's fields, or with a hot-parameter rule's", p.App, p.Resource)
		}
		if w := p.WhatIf; w != nil && (w.Current.Trips == nil || w.Proposed.Trips == nil || w.Offered != nil || w.Current.Passed != nil) {
			return fmt.Errorf("breaker plan %s/%s: whatIf without a breaker's measures", p.App, p.Resource)
		}
	case "param":
		if breaker || flow || !param || c.Threshold == nil || c.MetricType == nil || c.SpecificItems == nil {
			return fmt.Errorf("param plan %s/%s: current rule without a hot-parameter rule's fields, or with a breaker's", p.App, p.Resource)
		}
		if p.PerInstance != nil || (p.Safe && len(p.Proposed.SpecificItems) != 1) {
			return fmt.Errorf("param plan %s/%s: proposes other than one specificItems entry", p.App, p.Resource)
		}
		if w := p.WhatIf; w != nil && (w.Offered == nil || w.Current.Passed == nil || w.Proposed.Blocked == nil || w.Current.Trips != nil) {
			return fmt.Errorf("param plan %s/%s: whatIf without a hot-parameter rule's measures", p.App, p.Resource)
		}
	case "flow":
		if breaker || param || !flow || c.Threshold == nil || c.TokenCalculateStrategy == nil || c.ControlBehavior == nil {
			return fmt.Errorf("flow plan %s/%s: current rule without a flow rule's fields, or with another's", p.App, p.Resource)
		}
		if p.PerInstance != nil || (p.Safe && p.Proposed.LimitApp == nil) {
			return fmt.Errorf("flow plan %s/%s: proposes other than limitApp", p.App, p.Resource)
		}
		if w := p.WhatIf; w != nil && (w.Offered == nil || w.Current.Passed == nil || w.Proposed.Blocked == nil || w.Current.Trips != nil) {
			return fmt.Errorf("flow plan %s/%s: whatIf without a flow rule's measures", p.App, p.Resource)
		}
	default:
		return fmt.Errorf("plan %s/%s: rule kind %q", p.App, p.Resource, p.Rule)
	}
	return nil
}
