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
