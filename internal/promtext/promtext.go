// Package promtext writes the Prometheus text exposition format (version
// 0.0.4) sample by sample, through a fixed buffer: what it holds does not
// grow with the number of series. The collector's /metrics and the agent's
// write with it.
package promtext

import (
	"bufio"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Family is one metric family: its name, help text, type and label names.
type Family struct {
	Name, Help string
	Counter    bool
	// Labels are the label names, in the order samples give their values.
	Labels []string
	sorted []int // Labels' indexes by name: the order a registry writes them in
}

// NewCounter describes a counter family.
func NewCounter(name, help string, labels ...string) *Family {
	f := NewGauge(name, help, labels...)
	f.Counter = true
	return f
}

// NewGauge describes a gauge family.
func NewGauge(name, help string, labels ...string) *Family {
	f := &Family{Name: name, Help: help, Labels: labels}
	for i := range labels {
		f.sorted = append(f.sorted, i)
	}
	slices.SortFunc(f.sorted, func(a, b int) int { return strings.Compare(labels[a], labels[b]) })
	return f
}

// Writer writes samples to an io.Writer through a 32 KiB buffer, each
// family's HELP and TYPE before its first sample. Every sample of a family
// must come before the next family's. After a write error it writes
// nothing more, and Flush returns the error.
type Writer struct {
	w    *bufio.Writer
	last *Family
	buf  []byte
	err  error
}

// NewWriter returns a Writer writing to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: bufio.NewWriterSize(w, 32<<10)} }

// Sample writes one sample of f: labels are its label values, in the
// order of f.Labels (missing ones are written empty). It keeps neither.
func (t *Writer) Sample(f *Family, v float64, labels ...string) {
	if t.err != nil {
		return
	}
	b := t.buf[:0]
	if f != t.last {
		t.last = f
		b = append(b, "# HELP "...)
		b = append(b, f.Name...)
		b = append(b, ' ')
		b = appendEscaped(b, f.Help, false)
		b = append(b, "\n# TYPE "...)
		b = append(b, f.Name...)
		if f.Counter {
			b = append(b, " counter\n"...)
		} else {
			b = append(b, " gauge\n"...)
		}
	}
	b = append(b, f.Name...)
	for n, i := range f.sorted {
		if n == 0 {
			b = append(b, '{')
		} else {
			b = append(b, ',')
		}
		b = append(b, f.Labels[i]...)
		b = append(b, `="`...)
		if i < len(labels) {
			b = appendEscaped(b, labels[i], true)
		}
		b = append(b, '"')
	}
	if len(f.Labels) > 0 {
		b = append(b, '}')
	}
	b = append(b, ' ')
	b = appendValue(b, v)
	b = append(b, '\n')
	t.buf = b
	_, t.err = t.w.Write(b)
}

// Flush writes what is buffered, and returns the first write error.
func (t *Writer) Flush() error {
	if t.err == nil {
		t.err = t.w.Flush()
	}
	return t.err
}

// appendEscaped appends s as the text format wants a HELP text (backslash
// and newline escaped) or a label value (the double quote too), invalid
// UTF-8 replaced.
func appendEscaped(b []byte, s string, quote bool) []byte {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b = append(b, `\\`...)
		case c == '\n':
			b = append(b, `\n`...)
		case c == '"' && quote:
			b = append(b, `\"`...)
		default:
			b = append(b, c)
		}
	}
	return b
}

// appendValue appends v as the text format writes a float.
func appendValue(b []byte, v float64) []byte {
	switch {
	case math.IsNaN(v):
		return append(b, "NaN"...)
	case math.IsInf(v, 1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}
