package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/sentinel-top/sentinel-top/collector/triage"
	"github.com/sentinel-top/sentinel-top/core"
)

// The JSON shapes of spec/findings-v1.md. Each kind has its own struct so a
// finding carries exactly the common fields and its kind's own, in the
// spec's order.

type jsonReport struct {
	V         int    `json:"v"`
	Source    string `json:"source"`
	From      int64  `json:"from"`
	To        int64  `json:"to"`
	Apps      int    `json:"apps"`
	Instances int    `json:"instances"`
	Resources int    `json:"resources"`
	Messages  int64  `json:"messages"`
	Rejected  int64  `json:"rejected"`
	Findings  []any  `json:"findings"`
}

type jsonHead struct {
	Kind      triage.Kind `json:"kind"`
	Severity  string      `json:"severity"`
	App       string      `json:"app"`
	Resource  string      `json:"resource"`
	Instances []string    `json:"instances"`
	From      int64       `json:"from"`
	To        int64       `json:"to"`
}

type jsonTail struct {
	Summary string `json:"summary"`
	Advice  string `json:"advice"`
}

type jsonSawtooth struct {
	jsonHead
	Count    int64 `json:"count"`
	PeriodMs int64 `json:"periodMs"`
	jsonTail
}

type jsonSyncHalfOpen struct {
	jsonHead
	Count    int64 `json:"count"`
	SpreadMs int64 `json:"spreadMs"`
	jsonTail
}

type jsonLowConfidence struct {
	jsonHead
	Count int64     `json:"count"`
	Worst jsonWorst `json:"worst"`
	jsonTail
}

type jsonWorst struct {
	K     int64   `json:"k"`
	N     int64   `json:"n"`
	Lower float64 `json:"lower"`
}

type jsonRuleDrift struct {
	jsonHead
	Groups []jsonGroup `json:"groups"`
	jsonTail
}

type jsonGroup struct {
	Version   string      `json:"version"`
	Rule      jsonRuleSet `json:"rule"`
	Instances []string    `json:"instances"`
}

type jsonRuleSet struct {
	Breakers []core.BreakerRule `json:"breakers"`
	Flows    []core.FlowRule    `json:"flows"`
}

type jsonUnprotected struct {
	jsonHead
	Passed int64 `json:"passed"`
	jsonTail
}

type jsonSharedResource struct {
	jsonHead
	Apps []string `json:"apps"`
	jsonTail
}

type jsonWindowMisaligned struct {
	jsonHead
	Rule core.BreakerRule `json:"rule"`
	jsonTail
}

type jsonRuleAdvice struct {
	jsonHead
	QPS            float64 `json:"qps"`
	WindowRequests float64 `json:"windowRequests"`
	P99Ms          int64   `json:"p99Ms"`
	RtOverP99      float64 `json:"rtOverP99"`
	jsonTail
}

func nonNil[T any](xs []T) []T {
	if xs == nil {
		return []T{}
	}
	return xs
}

func ruleSetJSON(rs triage.RuleSet) jsonRuleSet {
	return jsonRuleSet{Breakers: nonNil(rs.Breakers), Flows: nonNil(rs.Flows)}
}

func findingJSON(f *triage.Finding) any {
	h := jsonHead{
		Kind: f.Kind, Severity: f.Severity.String(), App: f.App, Resource: f.Resource,
		Instances: nonNil(f.Instances), From: f.From, To: f.To,
	}
	t := jsonTail{Summary: f.Summary, Advice: f.Advice}
	switch f.Kind {
	case triage.KindSawtooth:
		return jsonSawtooth{h, f.Count, f.PeriodMs, t}
	case triage.KindSyncHalfOpen:
		return jsonSyncHalfOpen{h, f.Count, f.SpreadMs, t}
	case triage.KindLowConfidenceTrip:
		return jsonLowConfidence{h, f.Count, jsonWorst{f.Worst.K, f.Worst.N, f.Worst.Lower}, t}
	case triage.KindRuleDrift:
		groups := make([]jsonGroup, len(f.Groups))
		for i, g := range f.Groups {
			groups[i] = jsonGroup{Version: g.Version, Rule: ruleSetJSON(g.Rule), Instances: nonNil(g.Instances)}
		}
		return jsonRuleDrift{h, groups, t}
	case triage.KindUnprotected:
		return jsonUnprotected{h, f.Passed, t}
	case triage.KindSharedResource:
		return jsonSharedResource{h, nonNil(f.Apps), t}
	case triage.KindWindowMisaligned:
		return jsonWindowMisaligned{h, f.Rule, t}
	case triage.KindRuleAdvice:
		return jsonRuleAdvice{h, f.QPS, f.WindowRequests, f.P99Ms, f.RtOverP99, t}
	}
	return struct {
		jsonHead
		jsonTail
	}{h, t}
}

// JSON writes the report as the JSON of spec/findings-v1.md, indented, with
// a final newline. Strings keep their exact value, but every character that
// a terminal would not show as itself (controls, bidi overrides, zero-width
// and other format characters) is written as a \u escape, so that the
// report is also safe to look at.
func JSON(w io.Writer, r *Report) error {
	out := jsonReport{
		V: Version, Source: r.Source, From: r.From, To: r.To,
		Apps: r.Apps, Instances: r.Instances, Resources: r.Resources,
		Messages: r.Messages, Rejected: r.Rejected,
		Findings: make([]any, len(r.Findings)),
	}
	for i := range r.Findings {
		out.Findings[i] = findingJSON(&r.Findings[i])
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // not for a web page; keeps ">=" readable
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := w.Write(escapeInvisible(buf.Bytes()))
	return err
}

// escapeInvisible rewrites the non-ASCII runes of encoded JSON that are not
// printable as \u escapes (surrogate pairs above U+FFFF). Non-ASCII runes
// only occur inside strings, where the escape decodes to the same rune.
func escapeInvisible(b []byte) []byte {
	var out []byte
	last := 0
	for i := 0; i < len(b); {
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if unicode.IsPrint(r) {
			i += size
			continue
		}
		out = append(out, b[last:i]...)
		if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
			out = fmt.Appendf(out, `\u%04x\u%04x`, r1, r2)
		} else {
			out = fmt.Appendf(out, `\u%04x`, r)
		}
		i += size
		last = i
	}
	if out == nil {
		return b
	}
	return append(out, b[last:]...)
}
