package collector

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/internal/racetest"
)

// estimateMargin is how far the budget's charge for what a peer makes the
// collector keep may be from the live heap it takes: within a fifth either
// way. An estimate below the heap lets the process grow past --max-memory;
// one far above it refuses what would have fit.
const estimateMargin = 0.2

// liveHeap is the heap the live objects take, as the runtime measures it
// after a full collection (runtime/metrics, /gc/heap/live:bytes).
func liveHeap() int64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// charged is what the budget holds: the model's charges, with the names
// and the traffic log a snapshot charges.
func charged(c *Collector) int64 {
	c.Publish()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.memUsed
}

// calibrationName is a resource name of n bytes, unique to prefix and i.
func calibrationName(prefix string, i, n int) string {
	s := fmt.Sprintf("%s-%d/", prefix, i)
	return s + strings.Repeat("r", max(n-len(s), 0))
}

// TestBudgetEstimatesMatchTheHeap feeds a collector what a peer can make
// it keep, kind by kind (instances, series with and without their app
// series, resources known from rules, breaker tracks, hot values), with
// short and long names, and compares what the budget charged for each with
// the live heap the runtime measured (runtime/metrics): they may differ by
// estimateMargin at most. The messages are built before the first
// measurement, so the heap grows only by what the collector keeps. It
// skips under -race, whose shadow memory is not the collector's; .ci/run
// runs it without.
func TestBudgetEstimatesMatchTheHeap(t *testing.T) {
	if racetest.Enabled {
		t.Skip("the race detector's memory is not the collector's: run without -race")
	}
	hello := func(inst, app string) *wire.Hello {
		return &wire.Hello{Header: wire.Header{Ts: t0ms, Instance: inst}, App: app, StartedAt: t0ms, BucketMs: 500}
	}
	bucketsOf := func(inst string, k int64, resources []string, hot bool) *wire.Buckets {
		b := &wire.Buckets{Header: wire.Header{Ts: t0ms + k*500 + 500, Instance: inst}, BucketMs: 500}
		for _, r := range resources {
			it := wire.NewBucketItem(r, t0ms+k*500, core.Metrics{Pass: 7, Complete: 7, RtSum: 70, Error: 1}, true)
			if hot {
				for v := range wire.MaxHotValues {
					it.Hot = append(it.Hot, wire.HotItem{Param: 0, Value: fmt.Sprintf("user-%0120d", v), Pass: 3})
				}
			}
			b.Items = append(b.Items, it)
		}
		return b
	}
	names := func(prefix string, n, length int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = calibrationName(prefix, i, length)
		}
		return out
	}
	type step struct {
		setup []wire.Message        // fed before the first measurement
		feed  func() []wire.Message // what is measured
		what  string
		n     int // objects kept
	}
	cases := map[string]func(length int) step{
		"instances": func(length int) step {
			return step{what: "instance", n: 3000, feed: func() (feed []wire.Message) {
				for i := range 3000 {
					feed = append(feed, hello(calibrationName("inst", i, length), "app"))
				}
				return feed
			}}
		},
		"series, each with its app series": func(length int) step {
			return step{setup: []wire.Message{hello("i-0", "app")}, what: "series", n: 3000, feed: func() (feed []wire.Message) {
				res := names("res", 3000, length)
				for k := range int64(20) {
					feed = append(feed, bucketsOf("i-0", k, res, false))
				}
				return feed
			}}
		},
		"series of an app's 10 instances": func(length int) step {
			var setup []wire.Message
			for i := range 10 {
				setup = append(setup, hello(fmt.Sprint("i-", i), "app"))
			}
			return step{setup: setup, what: "series", n: 3000, feed: func() (feed []wire.Message) {
				res := names("res", 300, length)
				for i := range 10 {
					for k := range int64(20) {
						feed = append(feed, bucketsOf(fmt.Sprint("i-", i), k, res, false))
					}
				}
				return feed
			}}
		},
		"resources named by rules": func(length int) step {
			return step{setup: []wire.Message{hello("i-0", "app")}, what: "rule resource", n: 10000, feed: func() (feed []wire.Message) {
				for k := range 10 {
					var rules []core.BreakerRule
					for _, r := range names(fmt.Sprint("rules-", k), 1000, length) {
						rules = append(rules, core.BreakerRule{Resource: r, Strategy: core.ErrorCount, Threshold: 5, StatIntervalMs: 1000, RetryTimeoutMs: 1000})
					}
					feed = append(feed, &wire.Rules{Header: wire.Header{Ts: t0ms + int64(k)*200, Instance: "i-0"}, Version: fmt.Sprint(k), Breakers: rules})
				}
				return feed
			}}
		},
		"breaker tracks": func(length int) step {
			res := names("res", 200, 40)
			setup := []wire.Message{hello("i-0", "app"), bucketsOf("i-0", 0, res, false)}
			return step{setup: setup, what: "track", n: 200 * MaxTracksPerSeries, feed: func() (feed []wire.Message) {
				for id := range MaxTracksPerSeries {
					for _, r := range res {
						feed = append(feed, &wire.State{Header: wire.Header{Ts: t0ms + 1000, Instance: "i-0"}, Resource: r, Strategy: core.ErrorCount,
							From: core.Closed, To: core.Open, RuleID: calibrationName("rule", id, length), Threshold: 5, RetryTimeoutMs: 1000,
							Snapshot: &wire.Snapshot{Total: 10, Error: 6, Value: 6}})
					}
				}
				return feed
			}}
		},
		"hot values": func(length int) step {
			res := names("res", 1000, length)
			setup := []wire.Message{hello("i-0", "app"), bucketsOf("i-0", 0, res, false)}
			return step{setup: setup, what: "hot ring", n: 1000, feed: func() (feed []wire.Message) {
				for k := range int64(14) {
					feed = append(feed, bucketsOf("i-0", k+1, res, true))
				}
				return feed
			}}
		},
	}
	for name, mk := range cases {
		for _, length := range []int{24, 200} {
			t.Run(fmt.Sprintf("%s, names of %d bytes", name, length), func(t *testing.T) {
				st := mk(length)
				c := New(Options{MaxMemory: 4 << 30})
				for _, m := range st.setup {
					c.Ingest("calibration", m)
				}
				st.setup = nil
				// The messages are made after the first measurement and
				// dropped before the second: the heap grows by what the
				// collector keeps of them, their names included.
				est0, heap0 := charged(c), liveHeap()
				for _, m := range st.feed() {
					if !c.Ingest("calibration", m) {
						t.Fatalf("%s refused", m.Kind())
					}
				}
				est, heap := charged(c)-est0, liveHeap()-heap0
				runtime.KeepAlive(c)
				t.Logf("%d of %s: charged %d bytes each, the heap grew %d bytes each (%.2fx)",
					st.n, st.what, est/int64(st.n), heap/int64(st.n), float64(est)/float64(heap))
				if r := float64(est) / float64(heap); r < 1-estimateMargin || r > 1+estimateMargin {
					t.Errorf("the budget charged %.2fx the heap measured: over the margin of %.0f%%", r, estimateMargin*100)
				}
			})
		}
	}
}
