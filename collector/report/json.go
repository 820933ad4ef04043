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
	// ResourcesSeen: every app x resource with its totals and the
	// provenance of its breaker states.
	ResourcesSeen []ResourceSeen    `json:"resourcesSeen"`
	Findings      []json.RawMessage `json:"findings"`
	Plans         []triage.Plan     `json:"plans"`
}

type jsonHead struct {
	Kind      triage.Kind `json:"kind"`
	Severity  string      `json:"severity"`
	Peak      string      `json:"peakSeverity"`
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

func nonNil[T any](xs []T) []T {
	if xs == nil {
		return []T{}
	}
	return xs
}

// findingJSON is a finding as spec/findings-v1.md has it: the common
// fields, the kind's own (its facts' JSON, spliced in after them), then
// summary and advice.
func findingJSON(f *triage.Finding) (json.RawMessage, error) {
	h := jsonHead{
		Kind: f.Kind, Severity: f.Severity.String(), Peak: f.PeakSeverity.String(), App: f.App, Resource: f.Resource,
		Instances: nonNil(f.Instances), From: f.From, To: f.To,
	}
	var out []byte
	for _, v := range []any{h, f.Facts, jsonTail{Summary: f.Summary, Advice: f.Advice}} {
		if v == nil {
			continue
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false) // as the report's own encoder
		if err := enc.Encode(v); err != nil {
			return nil, err
		}
		b := bytes.TrimSpace(buf.Bytes())
		if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
			return nil, fmt.Errorf("report: %s facts are not an object", f.Kind)
		}
		if len(b) == 2 {
			continue
		}
		if out == nil {
			out = append(out, b[:len(b)-1]...)
		} else {
			out = append(append(out, ','), b[1:len(b)-1]...)
		}
	}
	return append(out, '}'), nil
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
		Messages: r.Messages, Rejected: r.Rejected, ResourcesSeen: nonNil(r.ResourcesSeen),
		Findings: make([]json.RawMessage, len(r.Findings)),
		Plans:    nonNil(r.Plans),
	}
	for i := range r.Findings {
		f, err := findingJSON(&r.Findings[i])
		if err != nil {
			return err
		}
		out.Findings[i] = f
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
