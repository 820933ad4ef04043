package promtext

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestWriterPageParses: a page written sample by sample parses as
// Prometheus parses a scrape, with each family's HELP and TYPE once,
// labels in name order, label values and help texts escaped (quotes,
// backslashes, newlines, invalid UTF-8) and special values written as the
// format wants.
func TestWriterPageParses(t *testing.T) {
	var page bytes.Buffer
	w := NewWriter(&page)
	c := NewCounter("x_total", "Help with a \\ and a\nnewline.", "zeta", "alpha")
	g := NewGauge("y", "A gauge.")
	w.Sample(c, 3, "z\"1\"", "a\\1\n")
	w.Sample(c, 4, "\xff", "b")
	w.Sample(g, math.Inf(1))
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	text := page.String()
	if strings.Count(text, "# TYPE x_total counter\n") != 1 || !strings.Contains(text, "# TYPE y gauge\n") ||
		!strings.Contains(text, `x_total{alpha="a\\1\n",zeta="z\"1\""} 3`+"\n") || !strings.Contains(text, "y +Inf\n") {
		t.Errorf("page:\n%s", text)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(bytes.NewReader(page.Bytes()))
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	x := mfs["x_total"]
	if x.GetHelp() != "Help with a \\ and a\nnewline." || len(x.GetMetric()) != 2 {
		t.Fatalf("x_total: %v", x)
	}
	got := map[string]float64{}
	for _, m := range x.GetMetric() {
		l := m.GetLabel()
		got[l[0].GetValue()+"|"+l[1].GetValue()] = m.GetCounter().GetValue()
	}
	if got["a\\1\n|z\"1\""] != 3 || got["b|\uFFFD"] != 4 {
		t.Errorf("x_total samples %v", got)
	}
	if v := mfs["y"].GetMetric()[0].GetGauge().GetValue(); !math.IsInf(v, 1) {
		t.Errorf("y = %v", v)
	}
}

type failingWriter struct{ writes int }

var errFull = errors.New("full")

func (f *failingWriter) Write(p []byte) (int, error) { f.writes++; return 0, errFull }

// TestWriterStopsAtAWriteError: after the first failed write nothing more
// is written, and Flush returns the error.
func TestWriterStopsAtAWriteError(t *testing.T) {
	f := &failingWriter{}
	w := NewWriter(f)
	g := NewGauge("g", "A gauge.", "l")
	long := strings.Repeat("v", 40<<10) // past the 32 KiB buffer: written at once
	for range 10 {
		w.Sample(g, 1, long)
	}
	if err := w.Flush(); !errors.Is(err, errFull) || f.writes != 1 {
		t.Errorf("err %v after %d writes, want %v after 1", err, f.writes, errFull)
	}
}
