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

// coreCall and sentinelCall are one guarded call on each side.
func coreCall(b *testing.B, g *core.Guard) {
	e, err := g.Entry("bench")
	if err != nil {
		b.Fatal(err)
	}
	e.Exit(nil)
}

func sentinelCall(b *testing.B, sc *sgbase.SlotChain) {
	e, blk := api.Entry("bench", api.WithSlotChain(sc))
	if blk != nil {
		b.Fatal(blk)
	}
	e.Exit()
}

func benchGuard(b *testing.B, clock core.Clock) *core.Guard {
	g := core.NewGuard(core.GuardOptions{Clock: clock})
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

// serialAndParallel runs call in a serial loop, or under RunParallel.
func serialAndParallel(b *testing.B, parallel bool, call func()) {
	b.ReportAllocs()
	if parallel {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				call()
			}
		})
		return
	}
	for b.Loop() {
		call()
	}
}

func benchEntryExit(b *testing.B, parallel bool) {
	b.Run("impl=core", func(b *testing.B) {
		g := benchGuard(b, nil)
		serialAndParallel(b, parallel, func() { coreCall(b, g) })
	})
	b.Run("impl=sentinel-golang", func(b *testing.B) {
		sc := benchSentinel(b)
		serialAndParallel(b, parallel, func() { sentinelCall(b, sc) })
	})
}

func BenchmarkEntryExit(b *testing.B)         { benchEntryExit(b, false) }
func BenchmarkEntryExitParallel(b *testing.B) { benchEntryExit(b, true) }

// BenchmarkEntryExitCachedClock compares the two with their cached clocks:
// core.CoarseClock and sentinel-golang's time ticker (UseCacheTime). It must
// stay the last benchmark of the file: sentinel-golang's ticker, once
// started, runs for the rest of the process.
func BenchmarkEntryExitCachedClock(b *testing.B) {
	b.Run("impl=core", func(b *testing.B) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		g := benchGuard(b, core.NewCoarseClock(ctx))
		serialAndParallel(b, false, func() { coreCall(b, g) })
	})
	b.Run("impl=sentinel-golang", func(b *testing.B) {
		sgutil.StartTimeTicker()
		sc := benchSentinel(b)
		serialAndParallel(b, false, func() { sentinelCall(b, sc) })
	})
}
