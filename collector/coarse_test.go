package collector_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/collector"
	feedpkg "github.com/sentinel-top/sentinel-top/collector/feed"
	"github.com/sentinel-top/sentinel-top/collector/triage"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// TestCoarseInputWithholdsExactKinds: the same fixture, fed as exact input
// and as input of a coarse resolution (the Prometheus source's step):
// the sawtooth found in the first is withheld in the second, and a warning
// names the kinds that cannot be judged and how many findings it left out;
// the other kinds are published alike.
func TestCoarseInputWithholdsExactKinds(t *testing.T) {
	kinds := func(s *collector.Snapshot) map[triage.Kind]int {
		out := map[triage.Kind]int{}
		for _, f := range s.Findings {
			out[f.Kind]++
		}
		return out
	}
	exact, _, _ := feedFixture(t, "sawtooth-db-slow", collector.Options{}, 0, func(*collector.Collector, int64) {})
	coarse, _, _ := feedFixture(t, "sawtooth-db-slow", collector.Options{Resolution: 15 * time.Second}, 0, func(*collector.Collector, int64) {})
	es, cs := exact.Publish(), coarse.Publish()
	ek, ck := kinds(es), kinds(cs)
	if ek[triage.KindSawtooth] == 0 {
		t.Fatalf("the exact input finds no sawtooth: %v", ek)
	}
	withheld := 0
	for k, n := range ek {
		need := false
		for _, x := range triage.NeedExact() {
			need = need || x == k
		}
		switch {
		case need && ck[k] != 0:
			t.Errorf("%s published from coarse input: %d", k, ck[k])
		case need:
			withheld += n
		case ck[k] != n:
			t.Errorf("%s: %d from coarse input, %d from exact", k, ck[k], n)
		}
	}
	var said []string
	for _, w := range cs.Warnings {
		if c, ok := w.(collector.CoarseInput); ok {
			said = append(said, collector.WarningText(c))
			if c.Withheld != withheld || c.StepMs != 15000 {
				t.Errorf("warning %+v, want %d withheld at 15000 ms", c, withheld)
			}
		}
		if _, ok := w.(collector.UnjudgedTrips); ok {
			t.Errorf("coarse input lists unjudged trips beside its warning: %+v", w)
		}
	}
	if len(said) != 1 || !strings.Contains(said[0], "sawtooth") || !strings.Contains(said[0], "15s steps") {
		t.Errorf("coarse warnings %q", said)
	}
	for _, w := range es.Warnings {
		if _, ok := w.(collector.CoarseInput); ok {
			t.Errorf("exact input warns %+v", w)
		}
	}
	t.Logf("%s", said)
}

// TestCoarseInputSaysCompletionsAreUnknown: coarse input that passes
// entries and completes none (sentinel-golang's exporter) says its
// completions are unknown, and that no rules came.
func TestCoarseInputSaysCompletionsAreUnknown(t *testing.T) {
	clock := core.NewVirtualClock(time.UnixMilli(1_000_000))
	c := collector.New(collector.Options{Clock: clock, Resolution: time.Second})
	c.Hello("prometheus", &wire.Hello{Header: wire.Header{Ts: 1_000_000, Instance: "checkout/h/1"}, App: "checkout",
		SDK: "prometheus/sentinel-golang", BucketMs: 1000}, feedpkg.Origin{Polled: true, StatesUnknown: true})
	c.Ingest("prometheus", &wire.Buckets{Header: wire.Header{Ts: 1_001_000, Instance: "checkout/h/1"}, BucketMs: 1000,
		Items: []wire.BucketItem{{Resource: "r", Start: 1_000_000, Metrics: core.Metrics{Pass: 7, Block: 2}}}})
	clock.Set(time.UnixMilli(1_001_000))
	var got *collector.CoarseInput
	for _, w := range c.Publish().Warnings {
		if x, ok := w.(collector.CoarseInput); ok {
			got = &x
		}
	}
	if got == nil || !got.NoCompletions || !got.NoRules || !strings.Contains(collector.WarningText(*got), "unknown, not 0") {
		t.Fatalf("warning %+v", got)
	}
}
