package core_test

import (
	"context"
	"testing"

	"github.com/alibaba/sentinel-golang/api"
	sgbase "github.com/alibaba/sentinel-golang/core/base"
	sgcb "github.com/alibaba/sentinel-golang/core/circuitbreaker"
	sgstat "github.com/alibaba/sentinel-golang/core/stat/base"
	"github.com/alibaba/sentinel-golang/logging"
	sgutil "github.com/alibaba/sentinel-golang/util"

	"github.com/sentinel-top/sentinel-top/core"
)

// Benchmarks of core beside sentinel-golang v1.0.4, in the same run, on the
// wall clock (both read time.Now once per call). docs/BENCHMARKS.md has the
// command and the latest figures.

func BenchmarkWindowAdd(b *testing.B) {
	b.Run("impl=core", func(b *testing.B) {
		w := core.NewResourceWindow()
		clock := core.NewRealClock()
		b.ReportAllocs()
		for b.Loop() {
			w.Current(clock.UnixMilli()).AddPass(1)
		}
	})
	b.Run("impl=sentinel-golang", func(b *testing.B) {
		a := sgstat.NewBucketLeapArray(core.ResourceSampleCount, core.ResourceIntervalMs)
		b.ReportAllocs()
		for b.Loop() {
			a.AddCount(sgbase.MetricEventPass, 1)
		}
	})
	// The window alone, with the time already read: Guard.Entry reads the
	// clock once and uses it for every window it touches.
	b.Run("impl=core/clock=given", func(b *testing.B) {
		w := core.NewResourceWindow()
		now := core.NewRealClock().UnixMilli()
		b.ReportAllocs()
		i := int64(0)
		for b.Loop() {
			w.Current(now + i>>16).AddPass(1) // a new millisecond every 65,536 adds
			i++
		}
	})
}

func BenchmarkWindowAddParallel(b *testing.B) {
	b.Run("impl=core", func(b *testing.B) {
		w := core.NewResourceWindow()
		clock := core.NewRealClock()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				w.Current(clock.UnixMilli()).AddPass(1)
			}
		})
	})
	b.Run("impl=sentinel-golang", func(b *testing.B) {
		a := sgstat.NewBucketLeapArray(core.ResourceSampleCount, core.ResourceIntervalMs)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				a.AddCount(sgbase.MetricEventPass, 1)
			}
		})
	})
}

// benchRule is a slow-ratio breaker that the benchmark traffic never trips.
var benchRule = core.BreakerRule{Resource: "bench", Strategy: core.SlowRequestRatio, RetryTimeoutMs: 10000,
	MinRequestAmount: 5, StatIntervalMs: 1000, StatSlidingWindowBucketCount: 10, MaxAllowedRtMs: 10000, Threshold: 0.5}

func benchGuard(b *testing.B) *core.Guard {
	g := core.NewGuard(core.GuardOptions{})
	if err := g.LoadBreakerRules([]core.BreakerRule{benchRule}); err != nil {
		b.Fatal(err)
	}
	return g
}

func benchSentinel(b *testing.B) *sgbase.SlotChain {
	logging.ResetGlobalLoggerLevel(logging.ErrorLevel)
	if _, err := sgcb.LoadRules([]*sgcb.Rule{toSentinelRule(benchRule)}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = sgcb.ClearRules() })
	return breakerChain()
}

func BenchmarkEntryExit(b *testing.B) {
	b.Run("impl=core", func(b *testing.B) {
		g := benchGuard(b)
		b.ReportAllocs()
		for b.Loop() {
			e, err := g.Entry("bench")
			if err != nil {
				b.Fatal(err)
			}
			e.Exit(nil)
		}
	})
	b.Run("impl=sentinel-golang", func(b *testing.B) {
		sc := benchSentinel(b)
		b.ReportAllocs()
		for b.Loop() {
			e, blk := api.Entry("bench", api.WithSlotChain(sc))
			if blk != nil {
				b.Fatal(blk)
			}
			e.Exit()
		}
	})
}

func BenchmarkEntryExitParallel(b *testing.B) {
	b.Run("impl=core", func(b *testing.B) {
		g := benchGuard(b)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				e, err := g.Entry("bench")
				if err != nil {
					b.Fatal(err)
				}
				e.Exit(nil)
			}
		})
	})
	b.Run("impl=sentinel-golang", func(b *testing.B) {
		sc := benchSentinel(b)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				e, blk := api.Entry("bench", api.WithSlotChain(sc))
				if blk != nil {
					b.Fatal(blk)
				}
				e.Exit()
			}
		})
	})
}

// BenchmarkEntryExitCachedClock compares the two with their cached clocks:
// core.CoarseClock and sentinel-golang's time ticker (UseCacheTime). It must
// stay the last benchmark of the file: sentinel-golang's ticker, once
// started, runs for the rest of the process.
func BenchmarkEntryExitCachedClock(b *testing.B) {
	b.Run("impl=core", func(b *testing.B) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		g := core.NewGuard(core.GuardOptions{Clock: core.NewCoarseClock(ctx)})
		if err := g.LoadBreakerRules([]core.BreakerRule{benchRule}); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			e, err := g.Entry("bench")
			if err != nil {
				b.Fatal(err)
			}
			e.Exit(nil)
		}
	})
	b.Run("impl=sentinel-golang", func(b *testing.B) {
		sgutil.StartTimeTicker()
		sc := benchSentinel(b)
		b.ReportAllocs()
		for b.Loop() {
			e, blk := api.Entry("bench", api.WithSlotChain(sc))
			if blk != nil {
				b.Fatal(blk)
			}
			e.Exit()
		}
	})
}
