package collector

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/internal/promtext"
)

// flatten gives metric families as "name TYPE help" and name{labels} -> value.
func flatten(mfs []*dto.MetricFamily) (heads []string, samples map[string]float64) {
	samples = map[string]float64{}
	for _, mf := range mfs {
		if len(mf.GetMetric()) == 0 {
			continue
		}
		heads = append(heads, mf.GetName()+" "+mf.GetType().String()+" "+mf.GetHelp())
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			sort.Strings(labels)
			samples[mf.GetName()+"{"+strings.Join(labels, ",")+"}"] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	sort.Strings(heads)
	return heads, samples
}

// metricsCollector is a collector holding two instances, breakers that
// opened, and names the text format must escape.
func metricsCollector(t *testing.T, more int) *Collector {
	t.Helper()
	clock := core.NewVirtualClock(time.UnixMilli(t0ms))
	c := New(Options{Clock: clock, Mode: ModeLive})
	names := []string{"db", `say "hi"`, `back\slash`, "two\nlines", "名前"}
	for i := range more {
		names = append(names, fmt.Sprintf("GET:/api/v1/resource-%d", i))
	}
	for _, inst := range []string{"a-1", "a-2"} {
		c.Ingest(inst, &wire.Hello{Header: wire.Header{Ts: t0ms, Instance: inst}, App: `app "x"`, BucketMs: 500, StartedAt: t0ms - 1000})
		var rules []core.BreakerRule
		for _, n := range names {
			rules = append(rules, core.BreakerRule{Resource: n, Strategy: core.ErrorCount, Threshold: 5, StatIntervalMs: 1000, RetryTimeoutMs: 1000})
		}
		c.Ingest(inst, &wire.Rules{Header: wire.Header{Ts: t0ms, Instance: inst}, Version: "v1", Breakers: rules})
	}
	for i := int64(1); i <= 6; i++ {
		clock.Advance(500 * time.Millisecond)
		now := clock.UnixMilli()
		for _, inst := range []string{"a-1", "a-2"} {
			b := &wire.Buckets{Header: wire.Header{Ts: now, Instance: inst}, BucketMs: 500}
			for k, n := range names {
				b.Items = append(b.Items, wire.NewBucketItem(n, now-500, core.Metrics{Pass: 10 * i, Complete: 10 * i, Error: int64(k) * i, RtSum: 70 * i}, true))
			}
			c.Ingest(inst, b)
		}
	}
	c.Ingest("a-1", &wire.State{Header: wire.Header{Ts: clock.UnixMilli(), Instance: "a-1"}, Resource: `say "hi"`,
		Strategy: core.ErrorCount, From: core.Closed, To: core.Open, Threshold: 5, RetryTimeoutMs: 1000})
	c.Publish()
	return c
}

// TestWriteMetricsIsWhatARegistryGathers: the text WriteMetrics streams,
// parsed as Prometheus parses a scrape, holds exactly the families, help
// texts, types, label sets and values that a registry gathers from
// PrometheusCollector, names with quotes, backslashes, newlines and
// non-ASCII letters included.
func TestWriteMetricsIsWhatARegistryGathers(t *testing.T) {
	c := metricsCollector(t, 0)
	reg := prometheus.NewRegistry()
	reg.MustRegister(c.PrometheusCollector())
	gathered, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var page bytes.Buffer
	if err := c.WriteMetrics(&page); err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	parsed, err := parser.TextToMetricFamilies(bytes.NewReader(page.Bytes()))
	if err != nil {
		t.Fatalf("the page does not parse: %v\n%s", err, page.String())
	}
	var streamed []*dto.MetricFamily
	for _, mf := range parsed {
		streamed = append(streamed, mf)
	}
	wantHeads, want := flatten(gathered)
	gotHeads, got := flatten(streamed)
	if strings.Join(gotHeads, "\n") != strings.Join(wantHeads, "\n") {
		t.Errorf("families:\n%s\nwant:\n%s", strings.Join(gotHeads, "\n"), strings.Join(wantHeads, "\n"))
	}
	if len(want) < 50 || len(got) != len(want) {
		t.Errorf("%d samples streamed, %d gathered", len(got), len(want))
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s: streamed %v (present %v), gathered %v", k, g, ok, v)
		}
	}
	// Line for line what a registry's page says, in another order.
	var registryPage bytes.Buffer
	for _, mf := range gathered {
		if _, err := expfmt.MetricFamilyToText(&registryPage, mf); err != nil {
			t.Fatal(err)
		}
	}
	lines := func(b []byte) string {
		l := strings.Split(strings.TrimSpace(string(b)), "\n")
		sort.Strings(l)
		return strings.Join(l, "\n")
	}
	if lines(page.Bytes()) != lines(registryPage.Bytes()) {
		t.Errorf("streamed page:\n%s\nregistry's page:\n%s", page.String(), registryPage.String())
	}
	for _, k := range []string{`sentinel_top_resource_pass_total{app=app "x",resource=two` + "\n" + `lines}`,
		`sentinel_top_breaker_transitions_total{app=app "x",from=CLOSED,resource=say "hi",to=OPEN}`} {
		if _, ok := got[k]; !ok {
			t.Errorf("no %q in the page:\n%s", k, page.String())
		}
	}
}

// failAfter accepts n bytes, then fails every write.
type failAfter struct{ n, writes int }

var errGone = errors.New("client gone")

func (f *failAfter) Write(p []byte) (int, error) {
	f.writes++
	if len(p) > f.n {
		return 0, errGone
	}
	f.n -= len(p)
	return len(p), nil
}

// TestWriteMetricsStopsAtAWriteError: the page is written in 32 KiB
// pieces as it is rendered, and a client that goes away mid-page ends the
// rendering at its first failed write, with its error.
func TestWriteMetricsStopsAtAWriteError(t *testing.T) {
	c := metricsCollector(t, 500)
	var page bytes.Buffer
	if err := c.WriteMetrics(&page); err != nil || page.Len() < 256<<10 {
		t.Fatalf("a page of %d bytes (%v), want over 256 KiB", page.Len(), err)
	}
	w := &failAfter{n: 40 << 10}
	if err := c.WriteMetrics(w); !errors.Is(err, errGone) || w.writes != 2 {
		t.Fatalf("err %v after %d writes, want %v at the second (32 KiB each)", err, w.writes, errGone)
	}
}

// BenchmarkMetricsPage renders the /metrics page of 950 resources with
// 300-byte names and a breaker each (10,500 series, 3.9 MB): streamed as
// WriteMetrics writes it, and gathered by a registry then encoded, as
// promhttp does. B/op is what one scrape allocates; what it holds at once
// is at most that.
func BenchmarkMetricsPage(b *testing.B) {
	clock := core.NewVirtualClock(time.UnixMilli(t0ms))
	c := New(Options{Clock: clock, Mode: ModeLive})
	var rules []core.BreakerRule
	var names []string
	for i := range 950 {
		names = append(names, fmt.Sprintf("GET:/api/v1/%0288d", i))
		rules = append(rules, core.BreakerRule{Resource: names[i], Strategy: core.ErrorCount, Threshold: 5, StatIntervalMs: 1000, RetryTimeoutMs: 1000})
	}
	c.Ingest("p", &wire.Hello{Header: wire.Header{Ts: t0ms, Instance: "page-1"}, App: "page", BucketMs: 500, StartedAt: t0ms - 1000})
	c.Ingest("p", &wire.Rules{Header: wire.Header{Ts: t0ms, Instance: "page-1"}, Version: "v1", Breakers: rules})
	clock.Advance(500 * time.Millisecond)
	bk := &wire.Buckets{Header: wire.Header{Ts: clock.UnixMilli(), Instance: "page-1"}, BucketMs: 500}
	for _, n := range names {
		bk.Items = append(bk.Items, wire.NewBucketItem(n, t0ms, core.Metrics{Pass: 5, Complete: 5, RtSum: 50}, true))
	}
	c.Ingest("p", bk)
	c.Publish()
	var size countingWriter
	if err := c.WriteMetrics(&size); err != nil || size < 3_500_000 {
		b.Fatalf("a page of %d bytes (%v)", size, err)
	}
	b.Run("streamed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := c.WriteMetrics(io.Discard); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("gathered", func(b *testing.B) {
		b.ReportAllocs()
		reg := prometheus.NewRegistry()
		reg.MustRegister(c.PrometheusCollector())
		for b.Loop() {
			mfs, err := reg.Gather()
			if err != nil {
				b.Fatal(err)
			}
			for _, mf := range mfs {
				if _, err := expfmt.MetricFamilyToText(io.Discard, mf); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// countingWriter counts what is written to it.
type countingWriter int

func (w *countingWriter) Write(p []byte) (int, error) {
	*w += countingWriter(len(p))
	return len(p), nil
}

// TestMetricsCountBreakersByProvenance: sentinel_top_breakers counts the
// live breakers by provenance, unknown ones included, which have no
// sentinel_top_breaker_state (never a CLOSED the source did not say): an
// alert can tell "no breaker open" from "no breaker known".
func TestMetricsCountBreakersByProvenance(t *testing.T) {
	snap := &Snapshot{}
	for i, p := range []Provenance{ProvenanceExact, ProvenanceUnknown, ProvenanceExact, ProvenanceInferred, ProvenanceUnknown, ProvenanceUnknown} {
		snap.Breakers = append(snap.Breakers, BreakerState{App: "a", Resource: "r", Instance: fmt.Sprintf("i-%d", i), State: core.Open, Provenance: p})
	}
	var page bytes.Buffer
	pt := promText{promtext.NewWriter(&page)}
	emitMetrics(snap, pt)
	if err := pt.w.Flush(); err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	parsed, err := parser.TextToMetricFamilies(bytes.NewReader(page.Bytes()))
	if err != nil {
		t.Fatalf("%v\n%s", err, page.String())
	}
	var mfs []*dto.MetricFamily
	for _, mf := range parsed {
		mfs = append(mfs, mf)
	}
	_, got := flatten(mfs)
	for k, want := range map[string]float64{
		"sentinel_top_breakers{provenance=exact}":    2,
		"sentinel_top_breakers{provenance=inferred}": 1,
		"sentinel_top_breakers{provenance=unknown}":  3,
	} {
		if got[k] != want {
			t.Errorf("%s = %v, want %v", k, got[k], want)
		}
	}
	states := 0
	for k := range got {
		if strings.HasPrefix(k, "sentinel_top_breaker_state{") {
			states++
			if strings.Contains(k, "provenance=unknown") {
				t.Errorf("a state for an unknown breaker: %s", k)
			}
		}
	}
	if states != 3*3 {
		t.Errorf("%d state samples, want 9 (3 known breakers x 3 states)", states)
	}
}
