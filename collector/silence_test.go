package collector

import (
	"slices"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/collector/feed"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// silenceFeed feeds a collector as the Java poller does: one polled
// instance whose states are inferred, its seconds' lines and its inferred
// transitions, on a virtual clock.
type silenceFeed struct {
	t     *testing.T
	c     *Collector
	clock *core.VirtualClock
	t0    int64
}

func newSilenceFeed(t *testing.T) *silenceFeed {
	t0 := int64(1_796_000_000_000)
	clock := core.NewVirtualClock(time.UnixMilli(t0))
	f := &silenceFeed{t: t, c: New(Options{Clock: clock}), clock: clock, t0: t0}
	h := &wire.Hello{Header: wire.Header{Ts: t0, Instance: "10.0.0.1:8719"}, App: "price", SDK: "java-sentinel/1.8.9", BucketMs: 1000}
	if !f.c.Hello("java", h, feed.Origin{Polled: true, StatesUnknown: true}) {
		t.Fatal("hello refused")
	}
	return f
}

// second delivers second s (from t0) with pass calls of queryPrice (none:
// no line), the data complete to its end.
func (f *silenceFeed) second(s int64, pass int64) {
	f.t.Helper()
	start := f.t0 + s*1000
	f.clock.Set(time.UnixMilli(start + 2000))
	// As the poller stamps it: the last ms of the second after the data.
	m := &wire.Buckets{Header: wire.Header{Ts: start + 1999, Instance: "10.0.0.1:8719"}, BucketMs: 1000}
	if pass > 0 {
		m.Items = []wire.BucketItem{{Resource: "queryPrice", Start: start, Metrics: core.Metrics{Pass: pass, Complete: pass, RtSum: 20 * pass}}}
	}
	if !f.c.Ingest("java", m) {
		f.t.Fatalf("second %d refused", s)
	}
}

// state delivers an inferred transition at second s, under a rule of
// timeWindow retryMs.
func (f *silenceFeed) state(s int64, from, to core.State, retryMs int64) {
	f.t.Helper()
	m := &wire.State{Header: wire.Header{Ts: f.t0 + s*1000, Instance: "10.0.0.1:8719"}, Resource: "queryPrice",
		Strategy: core.ErrorRatio, From: from, To: to, Threshold: 0.5, RetryTimeoutMs: retryMs, Inferred: true}
	if !f.c.Ingest("java", m) {
		f.t.Fatalf("state at %d refused", s)
	}
}

// shown is the row's breaker counts now, and the detail's silences
// (seconds from t0).
func (f *silenceFeed) shown() (StateCounts, [][2]int64) {
	snap := f.c.Publish()
	var counts StateCounts
	for _, r := range snap.Rows {
		if r.Resource == "queryPrice" {
			counts = r.Breakers
		}
	}
	d := f.c.Detail("price", "queryPrice", f.t0, f.clock.UnixMilli()-1) // up to now
	var spans [][2]int64
	for _, sp := range d.Instances[0].Silent {
		spans = append(spans, [2]int64{(sp.From - f.t0) / 1000, (sp.To - f.t0 + 999) / 1000})
	}
	return counts, spans
}

// TestInferredClosedUnknownAfterSilence: an inferred CLOSED followed by no
// call for at least the breaker's timeWindow (less the second its trip may
// have been early in) is unknown over the silence, live (the row counts it
// unknown) and in the history (the detail's Silent spans, drawn unknown),
// from the end of the last second with a line to the next one; a shorter
// silence, or one while OPEN, keeps the state inferred; a second arriving
// late inside a silence cuts it.
func TestInferredClosedUnknownAfterSilence(t *testing.T) {
	f := newSilenceFeed(t)
	for s := int64(0); s < 5; s++ {
		f.second(s, 3)
	}
	f.state(4, core.Closed, core.Open, 3000) // timeWindow 3 s: silences of 2 s count
	f.second(5, 0)
	f.second(6, 0)
	f.second(7, 0)
	f.second(8, 1)
	f.state(8, core.Open, core.HalfOpen, 3000)
	f.state(8, core.HalfOpen, core.Closed, 3000)
	f.second(9, 2)
	// A silence of one second: shorter than 2 s, CLOSED~ stands.
	f.second(10, 0)
	f.second(11, 2)
	counts, spans := f.shown()
	if counts != (StateCounts{Closed: 1}) || len(spans) != 0 {
		t.Fatalf("after OPEN through a silence and a one-second one: %+v, silences %v", counts, spans)
	}
	// Two silent seconds: unknown from the end of second 11 on (to now,
	// 15 s: the data ends at 14 s).
	f.second(12, 0)
	if counts, spans = f.shown(); counts != (StateCounts{Closed: 1}) || len(spans) != 0 {
		t.Fatalf("one silent second: %+v, silences %v", counts, spans)
	}
	f.second(13, 0)
	if counts, spans = f.shown(); counts != (StateCounts{Unknown: 1}) || !slices.Equal(spans, [][2]int64{{12, 15}}) {
		t.Fatalf("two silent seconds: %+v, silences %v", counts, spans)
	}
	f.second(14, 0)
	f.second(15, 0)
	f.second(16, 4)
	if counts, spans = f.shown(); counts != (StateCounts{Closed: 1}) || !slices.Equal(spans, [][2]int64{{12, 16}}) {
		t.Fatalf("calls again: %+v, silences %v", counts, spans)
	}
	// A second delivered late (a reconnect reading its gap back) in the
	// silence leaves the parts of it long enough: 12 alone is one second,
	// and does not count; 14-15 does.
	late := &wire.Buckets{Header: wire.Header{Ts: f.t0 + 17999, Instance: "10.0.0.1:8719"}, BucketMs: 1000,
		Items: []wire.BucketItem{{Resource: "queryPrice", Start: f.t0 + 13000, Metrics: core.Metrics{Pass: 1, Complete: 1}}}}
	if !f.c.Ingest("java", late) {
		t.Fatal("late second refused")
	}
	if _, spans = f.shown(); !slices.Equal(spans, [][2]int64{{14, 16}}) {
		t.Fatalf("after a late second: silences %v", spans)
	}
	// A trip inferred within a silence ends what is unknown there.
	for s := int64(17); s < 20; s++ {
		f.second(s, 0)
	}
	f.state(17, core.Closed, core.Open, 3000)
	if counts, spans = f.shown(); counts != (StateCounts{Open: 1}) || !slices.Equal(spans, [][2]int64{{14, 16}}) {
		t.Fatalf("a trip in the silence: %+v, silences %v", counts, spans)
	}
}

// TestSilencesKeptAreBounded: a series keeps its latest maxQuietSpans
// silences, however many its instance makes.
func TestSilencesKeptAreBounded(t *testing.T) {
	f := newSilenceFeed(t)
	f.second(0, 3)
	f.state(0, core.Closed, core.Open, 1000)
	f.second(1, 1)
	f.state(1, core.Open, core.HalfOpen, 1000)
	f.state(1, core.HalfOpen, core.Closed, 1000)
	s := int64(2)
	for range 300 {
		f.second(s, 0)
		f.second(s+1, 2)
		s += 2
	}
	_, spans := f.shown()
	if len(spans) > maxQuietSpans || len(spans) < maxQuietSpans*3/4 {
		t.Fatalf("%d silences kept of 300", len(spans))
	}
	if last := spans[len(spans)-1]; last != [2]int64{s - 2, s - 1} {
		t.Errorf("the latest silence kept is %v, want [%d %d]", last, s-2, s-1)
	}
}
