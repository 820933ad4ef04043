package core_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/sentinel-top/sentinel-top/core"
)

// A hot-parameter rule limits each user separately: 2 calls per second per
// user, with a VIP allowed 4. Rules paste in as sentinel-golang's
// hotspot.Rule JSON, with specificItems keyed by the value's text.
func ExampleGuard_EntryWithParam() {
	clock := core.NewVirtualClock(time.UnixMilli(1764460800000))
	guard := core.NewGuard(core.GuardOptions{Clock: clock})
	var rules []core.HotParamRule
	err := json.Unmarshal([]byte(`[{"resource":"getProfile","metricType":1,"controlBehavior":0,
		"paramIndex":0,"threshold":2,"durationInSec":1,"specificItems":{"vip-7":4}}]`), &rules)
	if err != nil {
		panic(err)
	}
	if err := guard.LoadHotParamRules(rules); err != nil {
		panic(err)
	}
	for _, user := range []string{"alice", "vip-7", "bob"} {
		passed := 0
		for range 5 {
			e, err := guard.EntryWithParam("getProfile", user)
			if errors.Is(err, core.ErrHotParam) {
				continue
			}
			passed++
			e.Exit(nil)
		}
		fmt.Printf("%s: %d of 5 passed\n", user, passed)
	}
	// The bucket refills once more than durationInSec has passed.
	clock.Advance(1001 * time.Millisecond)
	e, err := guard.EntryWithParam("getProfile", "alice")
	fmt.Println("alice a second later:", err == nil)
	e.Exit(nil)
	// Output:
	// alice: 2 of 5 passed
	// vip-7: 4 of 5 passed
	// bob: 2 of 5 passed
	// alice a second later: true
}

// Several parameters and attachments: each rule picks its own, by position
// (paramIndex, negative from the end) or by name (paramKey). A concurrency
// rule counts each tenant's calls in flight until Exit.
func ExampleGuard_EntryWithParams() {
	guard := core.NewGuard(core.GuardOptions{Clock: core.NewVirtualClock(time.UnixMilli(1764460800000))})
	err := guard.LoadHotParamRules([]core.HotParamRule{
		{Resource: "export", MetricType: core.HotParamConcurrency, ParamKey: "tenant", Threshold: 1},
		{Resource: "export", MetricType: core.HotParamQPS, ParamIndex: -1, Threshold: 100, DurationInSec: 60},
	})
	if err != nil {
		panic(err)
	}
	call := core.Params{Args: []any{"report.csv", 42}, Attachments: map[string]any{"tenant": "acme"}}
	first, err := guard.EntryWithParams("export", call)
	fmt.Println("first acme export:", err)
	_, err = guard.EntryWithParams("export", call)
	fmt.Println("second while the first runs:", err)
	first.Exit(nil)
	third, err := guard.EntryWithParams("export", call)
	fmt.Println("after the first is done:", err)
	third.Exit(nil)
	// Output:
	// first acme export: <nil>
	// second while the first runs: export: blocked by hot-parameter rule (concurrency, threshold 1 per value)
	// after the first is done: <nil>
}

// A controller used directly, with explicit times: throttling spaces each
// value's calls durationInSec*1000/threshold ms apart, queueing a call for
// less than maxQueueingTimeMs.
func ExampleHotParamController() {
	c, err := core.NewHotParamController(core.HotParamRule{Resource: "search", MetricType: core.HotParamQPS,
		ControlBehavior: core.Throttling, Threshold: 5, DurationInSec: 1, MaxQueueingTimeMs: 500})
	if err != nil {
		panic(err)
	}
	const t0 = 1764460800000 // Unix ms
	for i := 1; i <= 4; i++ {
		pass, wait := c.Check(t0, "golang", 1)
		fmt.Printf("golang %d: pass=%v wait=%v\n", i, pass, wait)
	}
	pass, wait := c.Check(t0, "rust", 1)
	fmt.Printf("rust 1: pass=%v wait=%v\n", pass, wait)
	// Output:
	// golang 1: pass=true wait=0s
	// golang 2: pass=true wait=200ms
	// golang 3: pass=true wait=400ms
	// golang 4: pass=false wait=0s
	// rust 1: pass=true wait=0s
}
