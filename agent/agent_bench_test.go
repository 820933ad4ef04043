package agent

import (
	"net"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/sentinel-top/sentinel-top/core"
)

// benchRule never trips under the benchmark's instant calls.
var benchRule = core.BreakerRule{Resource: "bench", Strategy: core.SlowRequestRatio, RetryTimeoutMs: 10000,
	MinRequestAmount: 5, StatIntervalMs: 1000, StatSlidingWindowBucketCount: 10, MaxAllowedRtMs: 10000, Threshold: 0.5}

func benchEntryExit(b *testing.B, entry func() (*core.Entry, error)) {
	b.ReportAllocs()
	for b.Loop() {
		e, err := entry()
		if err != nil {
			b.Fatal(err)
		}
		e.Exit(nil)
	}
}

// BenchmarkEntryExit compares the agent's Entry/Exit with core's alone, and
// with a reader attached that never reads: the service must not notice.
func BenchmarkEntryExit(b *testing.B) {
	b.Run("impl=core", func(b *testing.B) {
		g := core.NewGuard(core.GuardOptions{})
		if err := g.LoadBreakerRules([]core.BreakerRule{benchRule}); err != nil {
			b.Fatal(err)
		}
		benchEntryExit(b, func() (*core.Entry, error) { return g.Entry("bench") })
	})
	for _, readers := range []string{"none", "stalled"} {
		b.Run("impl=agent/readers="+readers, func(b *testing.B) {
			a, err := New(Options{App: "bench", Instance: "bench-1", QueueLen: 4})
			if err != nil {
				b.Fatal(err)
			}
			defer a.Close()
			if err := a.LoadRules([]core.BreakerRule{benchRule}, nil); err != nil {
				b.Fatal(err)
			}
			if readers == "stalled" {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					b.Fatal(err)
				}
				go a.Serve(ln)
				conn, _, err := websocket.DefaultDialer.Dial("ws://"+ln.Addr().String()+StreamPath, nil)
				if err != nil {
					b.Fatal(err)
				}
				defer conn.Close() // never read
				for a.Stats().Readers == 0 {
					time.Sleep(time.Millisecond)
				}
			}
			benchEntryExit(b, func() (*core.Entry, error) { return a.Entry("bench") })
		})
	}
}

// BenchmarkEntryExitWithParam: one string argument through a QPS
// hot-parameter rule that never blocks, the value already tracked: core's
// EntryWithParam alone, and the agent's Entry, which also counts the
// value for the bucket's hot values.
func BenchmarkEntryExitWithParam(b *testing.B) {
	rule := core.HotParamRule{Resource: "bench", MetricType: core.HotParamQPS, Threshold: 1 << 40, DurationInSec: 1}
	user := "vip-123"
	b.Run("impl=core", func(b *testing.B) {
		g := core.NewGuard(core.GuardOptions{})
		if err := g.LoadHotParamRules([]core.HotParamRule{rule}); err != nil {
			b.Fatal(err)
		}
		benchEntryExit(b, func() (*core.Entry, error) { return g.EntryWithParam("bench", user) })
	})
	b.Run("impl=agent", func(b *testing.B) {
		a, err := New(Options{App: "bench", Instance: "bench-1"})
		if err != nil {
			b.Fatal(err)
		}
		defer a.Close()
		if err := a.LoadRules(nil, nil, rule); err != nil {
			b.Fatal(err)
		}
		benchEntryExit(b, func() (*core.Entry, error) { return a.Entry("bench", user) })
	})
}
