package sim_test

import (
	"context"
	"fmt"
	"log"
	"slices"
	"time"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/sim"
)

// A minute of one order instance calling a member service whose database
// is slow for twenty seconds: the breaker opens on a window full of slow
// calls, a probe ten seconds later fails, and the next one, after the
// database is back, closes it.
func ExampleRun() {
	const res = "GET:/member/info"
	s := &sim.Scenario{
		Name:     "example",
		Duration: time.Minute,
		Seed:     1,
		Downstreams: []*sim.Downstream{{
			Name:    "member-service",
			Latency: sim.LogNormal{Median: 20 * time.Millisecond, P99: 80 * time.Millisecond},
			Faults:  []sim.Fault{{From: 10 * time.Second, To: 30 * time.Second, Latency: sim.Fixed(2 * time.Second)}},
		}},
		Instances: []*sim.Instance{{
			App: "order", Name: "order-1",
			Calls: []sim.Call{{Resource: res, Downstream: "member-service", Traffic: sim.Constant(50)}},
			Rules: []sim.RuleChange{{Breakers: []core.BreakerRule{{
				Resource: res, Strategy: core.SlowRequestRatio, MaxAllowedRtMs: 500, Threshold: 0.5,
				MinRequestAmount: 20, StatIntervalMs: 1000, StatSlidingWindowBucketCount: 2, RetryTimeoutMs: 10000,
			}}}},
		}},
	}
	start := s.Start
	if start.IsZero() {
		start = sim.DefaultStart
	}
	kinds := map[wire.Kind]int{}
	err := sim.Run(context.Background(), s, func(m wire.Message) error {
		kinds[m.Kind()]++
		if st, ok := m.(*wire.State); ok {
			at := time.Duration(st.Ts-start.UnixMilli()) * time.Millisecond
			fmt.Printf("at %4.1fs %s -> %s\n", at.Seconds(), st.From, st.To)
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(kinds[wire.KindHello], "hello,", kinds[wire.KindBuckets], "buckets,", kinds[wire.KindBye], "bye")
	// Output:
	// at 12.5s CLOSED -> OPEN
	// at 22.5s OPEN -> HALF_OPEN
	// at 24.5s HALF_OPEN -> OPEN
	// at 34.5s OPEN -> HALF_OPEN
	// at 34.5s HALF_OPEN -> CLOSED
	// 1 hello, 120 buckets, 1 bye
}

// The scenarios --demo runs, by name.
func ExampleNames() {
	names := sim.Names()
	fmt.Println(names[0], slices.Contains(names, "sawtooth-db-slow"))
	_, ok := sim.Lookup("sawtooth-db-slow")
	fmt.Println(ok)
	// Output:
	// demo true
	// true
}
