package triage

import (
	"reflect"
	"strings"
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
)

func TestPlanChanges(t *testing.T) {
	p := &Plan{App: "gw", Resource: "price", Instances: []string{"gw-1", "gw-2"},
		Current:  PlanRule{Strategy: core.SlowRequestRatio, MaxAllowedRtMs: 500, Threshold: 0.5, MinRequestAmount: 5, StatIntervalMs: 1000, RetryTimeoutMs: 10000},
		Proposed: RuleValues{MinRequestAmount: 20},
		// the first instance keeps the rule's retry timeout (settle left
		// it out of Proposed): the change is only per instance.
		PerInstance: map[string]RuleValues{"gw-1": {RetryTimeoutMs: 10000}, "gw-2": {RetryTimeoutMs: 13000}},
		Rejected:    RuleValues{MaxAllowedRtMs: 800, StatIntervalMs: 1000},
		Because:     []Kind{KindLowConfidenceTrip, KindSyncHalfOpen}, Safe: true, Why: "left out maxAllowedRtMs 800: ..."}
	got := p.Changes()
	want := []Change{
		{Field: "minRequestAmount", Current: 5, Lowest: 20, Highest: 20},
		{Field: "retryTimeoutMs", Current: 10000, Lowest: 10000, Highest: 13000,
			PerInstance: []InstanceValue{{"gw-1", 10000}, {"gw-2", 13000}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("changes\n got %+v\nwant %+v", got, want)
	}
	if s := got[1].String(); s != "retryTimeoutMs 10000 -> 10000 to 13000, one per instance" {
		t.Errorf("words %q", s)
	}
	// a rejected value equal to the rule's is no change.
	if left := p.LeftOut(); len(left) != 1 || left[0].String() != "maxAllowedRtMs 500 -> 800" {
		t.Errorf("left out %+v", left)
	}
	if v, why := p.Verdict(); v != "safe" || why != safeWhy+"; left out maxAllowedRtMs 800: ..." {
		t.Errorf("verdict %q: %q", v, why)
	}
	p.Safe, p.Why = false, "no safe change found: the replay failed"
	if v, why := p.Verdict(); v != "no safe change found" || why != "the replay failed" {
		t.Errorf("verdict %q: %q", v, why)
	}
	f := &Finding{Kind: KindSyncHalfOpen, App: "gw", Resource: "price"}
	if !p.Covers(f) {
		t.Error("the plan does not cover its finding")
	}
	f.Kind = KindSawtooth
	if p.Covers(f) {
		t.Error("the plan covers a finding of another kind")
	}
}

func TestCurrentFields(t *testing.T) {
	p := &Plan{Current: PlanRule{Strategy: core.ErrorRatio, Threshold: 0.5, MinRequestAmount: 10000, StatIntervalMs: 10000,
		StatSlidingWindowBucketCount: 10, RetryTimeoutMs: 30000}}
	want := []RuleField{{"strategy", "error-ratio"}, {"threshold", "0.5"}, {"minRequestAmount", "10000"},
		{"statIntervalMs", "10000"}, {"statSlidingWindowBucketCount", "10"}, {"retryTimeoutMs", "30000"}}
	if got := p.CurrentFields(); !reflect.DeepEqual(got, want) {
		t.Fatalf("fields %v", got)
	}
}

// A Java Sentinel rule's plan is shown in its DegradeRule's words: count
// for the RT bound, timeWindow in seconds.
func TestJavaPlanInJavasWords(t *testing.T) {
	p := Plan{java: true, Instances: []string{"a", "b"},
		Current:     PlanRule{Strategy: core.SlowRequestRatio, MaxAllowedRtMs: 500, Threshold: 0.5, MinRequestAmount: 5, StatIntervalMs: 1000, RetryTimeoutMs: 10_000},
		Proposed:    RuleValues{MinRequestAmount: 20, RetryTimeoutMs: 30_000},
		PerInstance: map[string]RuleValues{"a": {RetryTimeoutMs: 30_000}, "b": {RetryTimeoutMs: 40_000}}}
	var cur []string
	for _, f := range p.CurrentFields() {
		cur = append(cur, f.Name+"="+f.Value)
	}
	if got, want := strings.Join(cur, " "), "grade=slow-ratio count=500 slowRatioThreshold=0.5 minRequestAmount=5 statIntervalMs=1000 timeWindow=10"; got != want {
		t.Errorf("current %q, want %q", got, want)
	}
	var ch []string
	for _, c := range p.Changes() {
		ch = append(ch, c.String())
	}
	if got, want := strings.Join(ch, "; "), "minRequestAmount 5 -> 20; timeWindow 10 -> 30 to 40, one per instance"; got != want {
		t.Errorf("changes %q, want %q", got, want)
	}
}
