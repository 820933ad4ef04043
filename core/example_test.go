package core_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/sentinel-top/sentinel-top/core"
)

// A guard around a slow downstream: three slow calls out of five trip a
// slow-ratio breaker, and calls are blocked until the retry timeout.
func ExampleGuard() {
	clock := core.NewVirtualClock(time.UnixMilli(1764460800000))
	guard := core.NewGuard(core.GuardOptions{
		Clock: clock,
		Listener: core.TransitionFunc(func(t core.Transition) {
			fmt.Printf("%s: %s -> %s (%d of %d slow)\n", t.Resource, t.From, t.To, t.Snapshot.Bad, t.Snapshot.Total)
		}),
	})
	err := guard.LoadBreakerRules([]core.BreakerRule{{
		Resource: "priceService:queryPrice", Strategy: core.SlowRequestRatio,
		MaxAllowedRtMs: 200, Threshold: 0.5, MinRequestAmount: 5,
		StatIntervalMs: 1000, RetryTimeoutMs: 10000,
	}})
	if err != nil {
		panic(err)
	}
	for _, rt := range []time.Duration{20, 250, 30, 280, 210} {
		e, err := guard.Entry("priceService:queryPrice")
		if err != nil {
			fmt.Println(err)
			continue
		}
		clock.Advance(rt * time.Millisecond) // the call takes rt
		e.Exit(nil)
	}
	_, err = guard.Entry("priceService:queryPrice")
	fmt.Println(errors.Is(err, core.ErrOpen), err)
	// Output:
	// priceService:queryPrice: CLOSED -> OPEN (3 of 5 slow)
	// true priceService:queryPrice: blocked by slow-ratio circuit breaker
}

// A breaker used directly, with explicit times.
func ExampleBreaker() {
	b, err := core.NewBreaker(core.BreakerRule{
		Resource: "db", Strategy: core.ErrorCount, Threshold: 3,
		StatIntervalMs: 10000, RetryTimeoutMs: 5000,
	})
	if err != nil {
		panic(err)
	}
	const t0 = 1764460800000
	for i := 0; i < 3; i++ {
		b.OnComplete(t0, 40, true)
	}
	fmt.Println(b.State())
	pass, probe := b.TryPass(t0 + 5000)
	fmt.Println(pass, probe, b.State())
	b.OnComplete(t0+5020, 20, false)
	fmt.Println(b.State())
	// Output:
	// OPEN
	// true true HALF_OPEN
	// CLOSED
}

// A sliding window of metric buckets summed over its interval.
func ExampleWindow() {
	w, err := core.NewMetricWindow(2, 1000) // two 500 ms buckets
	if err != nil {
		panic(err)
	}
	w.Current(100).AddPass(3)
	w.Current(600).AddPass(4)
	w.Current(1200).AddPass(5) // reuses the slot of [0, 500)
	fmt.Println(core.SumWindow(w, 1200).Pass)
	// Output: 9
}

// A virtual clock runs timers at their exact due times as it advances.
func ExampleVirtualClock() {
	clock := core.NewVirtualClock(time.Unix(0, 0).UTC())
	ticker := clock.NewTicker(500 * time.Millisecond)
	defer ticker.Stop()
	clock.Advance(500 * time.Millisecond)
	fmt.Println((<-ticker.C()).Format("15:04:05.000"))
	clock.Advance(time.Minute)
	fmt.Println(clock.Now().Format("15:04:05.000"))
	// Output:
	// 00:00:00.500
	// 00:01:00.500
}
