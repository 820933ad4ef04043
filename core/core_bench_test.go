package core_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/alibaba/sentinel-golang/api"
	sgbase "github.com/alibaba/sentinel-golang/core/base"
	sgcb "github.com/alibaba/sentinel-golang/core/circuitbreaker"
	sgstat "github.com/alibaba/sentinel-golang/core/stat/base"
	"github.com/alibaba/sentinel-golang/logging"
	sgutil "github.com/alibaba/sentinel-golang/util"

	"github.com/sentinel-top/sentinel-top/core"
)

// Benchmarks of core beside sentinel-golang v1.0.4, in the same run. Every
// comparison reads time the same way on both sides, named by the clock= part
// of the sub-benchmark: time.Now (the wall clock, as sentinel-golang reads it
// by default), stub (a clock behind each side's clock interface that returns a
// counter: the time given, as far as sentinel-golang's API allows), and the
// cached clocks (core.CoarseClock, sentinel-golang's time ticker). core's own
// default, RealClock (monotonic clock only), is measured too, without a
// sentinel-golang counterpart. docs/BENCHMARKS.md has the commands and the
// latest figures.

// wallClock is core's RealClock reading time.Now on every UnixMilli, as
// sentinel-golang's default clock does: the clock read of the two sides is
// then the same call.
type wallClock struct{ *core.RealClock }

func (wallClock) UnixMilli() int64 { return time.Now().UnixMilli() }

// coreStubClock and sgStubClock give each side the time through its own
// clock interface without reading any clock: a new millisecond every 65,536
// readings, as clock=given does.
type coreStubClock struct {
	*core.RealClock
	base, i int64
}

func (c *coreStubClock) UnixMilli() int64 { c.i++; return c.base + c.i>>16 }

type sgStubClock struct{ base, i uint64 }

func (c *sgStubClock) Now() time.Time            { return time.UnixMilli(int64(c.CurrentTimeMillis())) }
func (c *sgStubClock) Sleep(d time.Duration)     { time.Sleep(d) }
func (c *sgStubClock) CurrentTimeMillis() uint64 { c.i++; return c.base + c.i>>16 }
func (c *sgStubClock) CurrentTimeNano() uint64   { return c.CurrentTimeMillis() * 1e6 }

// coreWindowAdd adds one pass at the clock's time, through the Clock
// interface as Guard.Entry reads it.
func coreWindowAdd(b *testing.B, clock core.Clock, parallel bool) {
	w := core.NewResourceWindow()
	serialAndParallel(b, parallel, func() { w.Current(clock.UnixMilli()).AddPass(1) })
}

func sentinelWindowAdd(b *testing.B, parallel bool) {
	a := sgstat.NewBucketLeapArray(core.ResourceSampleCount, core.ResourceIntervalMs)
	serialAndParallel(b, parallel, func() { a.AddCount(sgbase.MetricEventPass, 1) })
}

func BenchmarkWindowAdd(b *testing.B) {
	// Both read time.Now on every add.
	b.Run("impl=core/clock=time.Now", func(b *testing.B) {
		coreWindowAdd(b, wallClock{core.NewRealClock()}, false)
	})
	b.Run("impl=sentinel-golang/clock=time.Now", func(b *testing.B) { sentinelWindowAdd(b, false) })
	// core's default clock: the monotonic clock, the wall clock once a second.
	b.Run("impl=core/clock=RealClock", func(b *testing.B) { coreWindowAdd(b, core.NewRealClock(), false) })
	// Both get the time from a stub behind their clock interface.
	b.Run("impl=core/clock=stub", func(b *testing.B) {
		coreWindowAdd(b, &coreStubClock{RealClock: core.NewRealClock(), base: time.Now().UnixMilli()}, false)
	})
	b.Run("impl=sentinel-golang/clock=stub", func(b *testing.B) {
		old := sgutil.CurrentClock()
		sgutil.SetClock(&sgStubClock{base: uint64(time.Now().UnixMilli())})
		b.Cleanup(func() { sgutil.SetClock(old) })
		sentinelWindowAdd(b, false)
	})
	// The window alone, with the time already read: Guard.Entry reads the
	// clock once and uses it for every window it touches. sentinel-golang's
	// BucketLeapArray cannot be given a time (addCountWithTime is not
	// exported): clock=stub is the nearest.
	b.Run("impl=core/clock=given", func(b *testing.B) {
		w := core.NewResourceWindow()
		now := time.Now().UnixMilli()
		b.ReportAllocs()
		i := int64(0)
		for b.Loop() {
			w.Current(now + i>>16).AddPass(1) // a new millisecond every 65,536 adds
			i++
		}
	})
}

func BenchmarkWindowAddParallel(b *testing.B) {
	b.Run("impl=core/clock=time.Now", func(b *testing.B) {
		coreWindowAdd(b, wallClock{core.NewRealClock()}, true)
	})
	b.Run("impl=sentinel-golang/clock=time.Now", func(b *testing.B) { sentinelWindowAdd(b, true) })
	b.Run("impl=core/clock=RealClock", func(b *testing.B) { coreWindowAdd(b, core.NewRealClock(), true) })
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
	// Both read time.Now: core twice per call, sentinel-golang four times.
	b.Run("impl=core/clock=time.Now", func(b *testing.B) {
		g := benchGuard(b, wallClock{core.NewRealClock()})
		serialAndParallel(b, parallel, func() { coreCall(b, g) })
	})
	b.Run("impl=sentinel-golang/clock=time.Now", func(b *testing.B) {
		sc := benchSentinel(b)
		serialAndParallel(b, parallel, func() { sentinelCall(b, sc) })
	})
	// core's default clock.
	b.Run("impl=core/clock=RealClock", func(b *testing.B) {
		g := benchGuard(b, nil)
		serialAndParallel(b, parallel, func() { coreCall(b, g) })
	})
}

func BenchmarkEntryExit(b *testing.B)         { benchEntryExit(b, false) }
func BenchmarkEntryExitParallel(b *testing.B) { benchEntryExit(b, true) }

// The cached-clock benchmarks compare the two with their cached clocks:
// core.CoarseClock and sentinel-golang's time ticker (UseCacheTime). They
// must stay the last benchmarks of the file: sentinel-golang's ticker, once
// started, runs for the rest of the process, and every sentinel-golang
// figure after it would be a cached-clock one.

var startTicker sync.Once

func sentinelTicker() { startTicker.Do(sgutil.StartTimeTicker) }

func BenchmarkWindowAddCachedClock(b *testing.B) {
	b.Run("impl=core/clock=CoarseClock", func(b *testing.B) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		coreWindowAdd(b, core.NewCoarseClock(ctx), false)
	})
	b.Run("impl=sentinel-golang/clock=ticker", func(b *testing.B) {
		sentinelTicker()
		sentinelWindowAdd(b, false)
	})
}

func BenchmarkEntryExitCachedClock(b *testing.B) {
	b.Run("impl=core/clock=CoarseClock", func(b *testing.B) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		g := benchGuard(b, core.NewCoarseClock(ctx))
		serialAndParallel(b, false, func() { coreCall(b, g) })
	})
	b.Run("impl=sentinel-golang/clock=ticker", func(b *testing.B) {
		sentinelTicker()
		sc := benchSentinel(b)
		serialAndParallel(b, false, func() { sentinelCall(b, sc) })
	})
}
