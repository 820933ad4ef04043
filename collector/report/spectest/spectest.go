// Package spectest holds a JSON report to spec/findings-v1.md (revision 3)
// rather than to the code that writes it: its types are the spec's fields,
// written out apart from collector/report's, and Decode refuses any field the
// spec does not have, at any depth. Tests of the report and of the report
// command share it.
package spectest

import (
	"bytes"
	"encoding/json"

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

// PlanRule is a breaker rule's fields, with the rule's JSON names; a
// plan's proposed and perInstance hold only those that change.
type PlanRule struct {
	Strategy                     *int64   `json:"strategy"`
	MaxAllowedRtMs               *int64   `json:"maxAllowedRtMs"`
	Threshold                    *float64 `json:"threshold"`
	MinRequestAmount             *int64   `json:"minRequestAmount"`
	StatIntervalMs               *int64   `json:"statIntervalMs"`
	StatSlidingWindowBucketCount *int64   `json:"statSlidingWindowBucketCount"`
	RetryTimeoutMs               *int64   `json:"retryTimeoutMs"`
	ProbeNum                     *int64   `json:"probeNum"`
}

// WhatIf is a plan's replay, the current rule's and the proposed one's.
type WhatIf struct {
	StepMs    int64         `json:"stepMs"`
	Estimated bool          `json:"estimated"`
	Current   WhatIfMetrics `json:"current"`
	Proposed  WhatIfMetrics `json:"proposed"`
}

// WhatIfMetrics is what one rule did in the replay; ranges are [low, high].
type WhatIfMetrics struct {
	Trips              int64    `json:"trips"`
	LowConfidenceTrips int64    `json:"lowConfidenceTrips"`
	OutagesCaught      int64    `json:"outagesCaught"`
	DetectMs           []int64  `json:"detectMs"`
	Probes             int64    `json:"probes"`
	PassedDuringOutage [2]int64 `json:"passedDuringOutage"`
	BlockedHealthy     [2]int64 `json:"blockedHealthy"`
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
	ColdStart          *int64                     `json:"coldStart"`
	Worst              *Evidence                  `json:"worst"`
	Groups             []Group                    `json:"groups"`
	Newest             *string                    `json:"newest"`
	Passed             *int64                     `json:"passed"`
	Cause              *string                    `json:"cause"`
	LostAt             *int64                     `json:"lostAt"`
	Reason             *string                    `json:"reason"`
	Near               *string                    `json:"near"`
	MaxWindowRequests  *int64                     `json:"maxWindowRequests"`
	// Param, Value and BlockShare (with QPS) are hot-value's; its suggest
	// is {"specificItems":{VALUE:N}}.
	Param      *int64   `json:"param"`
	Value      *string  `json:"value"`
	BlockShare *float64 `json:"blockShare"`
	Apps       []string `json:"apps"`
	// Rule is a breaker rule (window-misaligned) or a rule set
	// (inert-rule).
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
