package triage

import (
	"strconv"

	"github.com/sentinel-top/sentinel-top/core"
)

// Facts are a finding's own evidence, typed by kind: *SawtoothFacts,
// *SyncHalfOpenFacts, and so on. Their JSON is the kind's own fields of
// spec/findings-v1.md; Evidence lists them for renderers, so that the
// report and the dashboard show every kind without knowing any.
type Facts interface {
	// Kind is the kind these facts are evidence of.
	Kind() Kind
	// Evidence is the facts as labelled values, in the order to show them.
	Evidence() []Fact
}

// Fact is one labelled piece of evidence: parts in order, and rules to show
// as a block of rule lines when Rules is set.
type Fact struct {
	Label string
	Parts []Part
	Rules *RuleSet
}

// Part is words and numbers of the engine's own (Text), or strings that came
// from the input (Input: instance and app names, rule versions), which
// renderers sanitize and show as a list.
type Part struct {
	Text  string
	Input []string
}

// text is a fact of the engine's own words.
func text(label, s string) Fact { return Fact{Label: label, Parts: []Part{{Text: s}}} }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// SawtoothFacts: a run of failed half-open probes.
type SawtoothFacts struct {
	// Count is the longest run of failed probes on any instance.
	Count int64 `json:"count"`
	// PeriodMs is the median OPEN->OPEN spacing within runs.
	PeriodMs int64 `json:"periodMs"`
	// RetryTimeoutMs is the breaker's retry timeout during the longest run
	// (0 when unknown), and OutageMs how long that run lasted.
	RetryTimeoutMs uint32 `json:"-"`
	OutageMs       int64  `json:"-"`
}

// Kind is KindSawtooth.
func (*SawtoothFacts) Kind() Kind { return KindSawtooth }

// Evidence lists the run and its period.
func (f *SawtoothFacts) Evidence() []Fact {
	return []Fact{
		text("Longest run", itoa(f.Count)+" failed probes"),
		text("Period", itoa(f.PeriodMs)+" ms (median OPEN to OPEN)"),
	}
}

// SharedResourceFacts: one resource name in several apps.
type SharedResourceFacts struct {
	// Apps reporting the resource, sorted.
	Apps []string `json:"apps"`
}

// Kind is KindSharedResource.
func (*SharedResourceFacts) Kind() Kind { return KindSharedResource }

// Evidence lists the apps.
func (f *SharedResourceFacts) Evidence() []Fact {
	return []Fact{{Label: "Apps (" + itoa(int64(len(f.Apps))) + ")", Parts: []Part{{Input: f.Apps}}}}
}

// WindowMisalignedFacts: a statistic window Sentinel cannot split.
type WindowMisalignedFacts struct {
	// Rule is the misaligned breaker rule.
	Rule core.BreakerRule `json:"rule"`
}

// Kind is KindWindowMisaligned.
func (*WindowMisalignedFacts) Kind() Kind { return KindWindowMisaligned }

// Evidence shows the rule.
func (f *WindowMisalignedFacts) Evidence() []Fact {
	return []Fact{{Label: "Rule", Parts: []Part{{Text: "as loaded"}}, Rules: &RuleSet{Breakers: []core.BreakerRule{f.Rule}}}}
}

// RuleAdviceFacts: a ratio breaker's settings against its traffic.
type RuleAdviceFacts struct {
	// QPS is the median per-instance QPS; WindowRequests the requests it
	// puts in one statistic window; P99Ms the p99 response time; RtOverP99
	// maxAllowedRtMs divided by P99Ms, 0 when P99Ms is unknown.
	QPS            float64 `json:"qps"`
	WindowRequests float64 `json:"windowRequests"`
	P99Ms          int64   `json:"p99Ms"`
	RtOverP99      float64 `json:"rtOverP99"`
	// Rule is the rule judged.
	Rule core.BreakerRule `json:"-"`
}

// Kind is KindRuleAdvice.
func (*RuleAdviceFacts) Kind() Kind { return KindRuleAdvice }

// Evidence lists the traffic and the response times.
func (f *RuleAdviceFacts) Evidence() []Fact {
	return []Fact{
		text("QPS", fmtFloat(f.QPS, 1)+" (median per instance)"),
		text("Window requests", fmtFloat(f.WindowRequests, 1)),
		text("p99", itoa(f.P99Ms)+" ms"),
		text("maxAllowedRtMs / p99", fmtFloat(f.RtOverP99, 2)),
	}
}
