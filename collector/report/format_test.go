package report

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"testing"
)

// TestRenderer: each format's name gives its renderer (told by what it
// writes); any other name is refused, saying what is wanted.
func TestRenderer(t *testing.T) {
	rep := &Report{Source: "fixtures/sawtooth.ndjson", From: 1764460800000, To: 1764461100000, Messages: 12}
	wif := &WhatIf{Rules: []string{"breakers.json"}, Inputs: []WhatIfInput{{Source: "sawtooth-db-slow", Error: "the input holds no message"}}}
	for _, tc := range []struct {
		format string
		want   func(io.Writer, *Report) error
		whatif func(io.Writer, *WhatIf) error
	}{
		{"text", Text, WhatIfText},
		{"md", Markdown, WhatIfMarkdown},
		{"markdown", Markdown, WhatIfMarkdown},
		{"json", JSON, WhatIfJSON},
	} {
		render, err := Renderer(tc.format)
		if err != nil {
			t.Fatalf("Renderer(%q): %v", tc.format, err)
		}
		if got, want := output(t, render, rep), output(t, tc.want, rep); got != want {
			t.Errorf("Renderer(%q) wrote\n%s\nwant\n%s", tc.format, got, want)
		}
		renderWhatIf, err := WhatIfRenderer(tc.format)
		if err != nil {
			t.Fatalf("WhatIfRenderer(%q): %v", tc.format, err)
		}
		if got, want := output(t, renderWhatIf, wif), output(t, tc.whatif, wif); got != want {
			t.Errorf("WhatIfRenderer(%q) wrote\n%s\nwant\n%s", tc.format, got, want)
		}
	}
	for _, format := range []string{"", "xml", "TEXT", "Markdown", "html", " json"} {
		render, err := Renderer(format)
		if render != nil || !errors.Is(err, ErrFormat) || err.Error() != strconv.Quote(format)+": want text, md or json" {
			t.Errorf("Renderer(%q): %v", format, err)
		}
		renderWhatIf, err := WhatIfRenderer(format)
		if renderWhatIf != nil || !errors.Is(err, ErrFormat) || err.Error() != strconv.Quote(format)+": want text, md or json" {
			t.Errorf("WhatIfRenderer(%q): %v", format, err)
		}
	}
}

// TestRenderersDiffer: the three formats write three different things,
// so that TestRenderer tells them apart.
func TestRenderersDiffer(t *testing.T) {
	rep := &Report{Source: "x"}
	wif := &WhatIf{Rules: []string{"r.json"}}
	if a, b, c := output(t, Text, rep), output(t, Markdown, rep), output(t, JSON, rep); a == b || b == c || a == c {
		t.Errorf("the report's formats write the same:\n%s\n%s\n%s", a, b, c)
	}
	if a, b, c := output(t, WhatIfText, wif), output(t, WhatIfMarkdown, wif), output(t, WhatIfJSON, wif); a == b || b == c || a == c {
		t.Errorf("whatif's formats write the same:\n%s\n%s\n%s", a, b, c)
	}
}

func output[R any](t *testing.T, render func(io.Writer, R) error, r R) string {
	t.Helper()
	var b bytes.Buffer
	if err := render(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
