package core

import (
	"errors"
	"strconv"
	"testing"
	"time"
)

func TestGuardHotParamBlocksPerValue(t *testing.T) {
	g, clock, _ := newTestGuard(t)
	if err := g.LoadHotParamRules([]HotParamRule{qpsRule(2, 0, 1)}); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		e, err := g.EntryWithParam("api", "alice")
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		e.Exit(nil)
	}
	_, err := g.EntryWithParam("api", "alice")
	var be *BlockError
	if !errors.Is(err, ErrHotParam) || !errors.Is(err, ErrBlocked) || errors.Is(err, ErrFlow) || !errors.As(err, &be) {
		t.Fatalf("third entry: %v", err)
	}
	if be.Cause != BlockedByHotParam || be.HotParam.Threshold != 2 || be.Cause.String() != "hot-param" {
		t.Fatalf("block error %+v", be)
	}
	if want := "api: blocked by hot-parameter rule (qps, reject, threshold 2 per value per 1 s)"; err.Error() != want {
		t.Fatalf("error %q, want %q", err, want)
	}
	if e, err := g.EntryWithParam("api", "bob"); err != nil {
		t.Fatalf("another value blocked: %v", err)
	} else {
		e.Exit(nil)
	}
	if e, err := g.Entry("api"); err != nil {
		t.Fatalf("an entry without parameters is not limited: %v", err)
	} else {
		e.Exit(nil)
	}
	r, _ := g.Resource("api")
	if m := SumWindow(r.Stat(), clock.UnixMilli()); m.Pass != 4 || m.Block != 1 {
		t.Fatalf("window %+v", m)
	}
}

func TestGuardHotParamConcurrencyCountsUntilExit(t *testing.T) {
	g, _, _ := newTestGuard(t)
	if err := g.LoadHotParamRules([]HotParamRule{{Resource: "api", Threshold: 2, ParamKey: "tenant"}}); err != nil {
		t.Fatal(err)
	}
	p := Params{Attachments: map[string]any{"tenant": 7}}
	a, errA := g.EntryWithParams("api", p)
	b, errB := g.EntryWithParams("api", p)
	if errA != nil || errB != nil {
		t.Fatal(errA, errB)
	}
	if _, err := g.EntryWithParams("api", p); !errors.Is(err, ErrHotParam) {
		t.Fatalf("third in flight: %v", err)
	}
	a.Exit(nil)
	c, err := g.EntryWithParams("api", p)
	if err != nil {
		t.Fatalf("after an exit: %v", err)
	}
	b.Exit(nil)
	c.Exit(errors.New("boom"))
	r, _ := g.Resource("api")
	if v, ok := r.HotParams()[0].Value(7); !ok || v.Concurrency != 0 {
		t.Fatalf("value 7: %+v, %v", v, ok)
	}
}

// A breaker that blocks after a concurrency rule passed leaves the value's
// count alone: only entries that pass every rule are counted.
func TestGuardHotParamBreakerBlockDoesNotCount(t *testing.T) {
	g, _, _ := newTestGuard(t)
	err := errors.Join(
		g.LoadHotParamRules([]HotParamRule{{Resource: "api", Threshold: 5}}),
		g.LoadBreakerRules([]BreakerRule{{Resource: "api", Strategy: ErrorCount, Threshold: 1, StatIntervalMs: 1000, RetryTimeoutMs: 10000}}))
	if err != nil {
		t.Fatal(err)
	}
	e, _ := g.EntryWithParam("api", "x")
	e.Exit(errors.New("boom")) // trips the breaker
	for range 3 {
		if _, err := g.EntryWithParam("api", "x"); !errors.Is(err, ErrOpen) {
			t.Fatalf("want the breaker to block: %v", err)
		}
	}
	r, _ := g.Resource("api")
	if v, _ := r.HotParams()[0].Value("x"); v.Concurrency != 0 {
		t.Fatalf("concurrency %d after blocked entries", v.Concurrency)
	}
}

// A throttling wait is slept inside Entry, before the breakers are asked.
func TestGuardHotParamThrottlingWaits(t *testing.T) {
	clock := &flowConfClock{res: 1}
	clock.ns.Store(flowT0 * int64(time.Millisecond))
	g := NewGuard(GuardOptions{Clock: flowConfGuardClock{clock}})
	if err := g.LoadHotParamRules([]HotParamRule{{Resource: "api", MetricType: HotParamQPS, ControlBehavior: Throttling,
		Threshold: 10, DurationInSec: 1, MaxQueueingTimeMs: 1000}}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		clock.ns.Store(flowT0 * int64(time.Millisecond))
		clock.slept.Store(0)
		e, err := g.EntryWithParam("api", 1)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := time.Duration(clock.slept.Load()), time.Duration(i)*100*time.Millisecond; got != want {
			t.Fatalf("entry %d waited %v, want %v", i, got, want)
		}
		e.Exit(nil)
	}
}

func TestGuardLoadHotParamRules(t *testing.T) {
	g, _, _ := newTestGuard(t)
	rule := qpsRule(1, 0, 1)
	rule.SpecificItems = map[string]int64{"vip": 5}
	if err := g.LoadHotParamRules([]HotParamRule{rule}); err != nil {
		t.Fatal(err)
	}
	r, _ := g.Resource("api")
	before := r.HotParams()[0]
	same := rule
	same.SpecificItems = map[string]int64{"vip": 5}
	if err := g.LoadHotParamRules([]HotParamRule{same, {Resource: "a"}}); err != nil {
		t.Fatal(err)
	}
	if r.HotParams()[0] != before {
		t.Fatal("an equal rule lost its controller")
	}
	if err := g.LoadHotParamRules([]HotParamRule{same, {Resource: ""}}); !errors.Is(err, ErrInvalidRule) {
		t.Fatalf("invalid set: %v", err)
	}
	if len(r.HotParams()) != 1 {
		t.Fatal("a rejected set changed the rules")
	}
	changed := same
	changed.SpecificItems = map[string]int64{"vip": 6}
	if err := g.LoadHotParamRules([]HotParamRule{changed}); err != nil {
		t.Fatal(err)
	}
	if r.HotParams()[0] == before {
		t.Fatal("a changed rule kept its controller")
	}
	if err := g.LoadHotParamRules(nil); err != nil || r.HotParams() != nil {
		t.Fatalf("clearing: %v, %d left", err, len(r.HotParams()))
	}
}

// The pass path does not allocate for values already tracked, whatever
// their kind, nor does a block.
func TestGuardHotParamEntryDoesNotAllocate(t *testing.T) {
	g, clock, _ := newTestGuard(t)
	err := g.LoadHotParamRules([]HotParamRule{
		{Resource: "api", MetricType: HotParamQPS, Threshold: 1 << 40, DurationInSec: 1, SpecificItems: map[string]int64{"7": 1 << 40}},
		{Resource: "api", MetricType: HotParamQPS, ControlBehavior: Throttling, Threshold: 1 << 40, DurationInSec: 1, ParamIndex: -1},
		{Resource: "api", Threshold: 1 << 40, ParamKey: "user"},
		{Resource: "blocked", MetricType: HotParamQPS, DurationInSec: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	type userID string
	buf := []byte("user-123")
	attachments := map[string]any{"user": "user-123"}
	for _, tc := range []struct {
		name string
		f    func()
	}{
		{"string", func() {
			s := string(buf) // not a constant: a value the caller built
			e, _ := g.EntryWithParam("api", s)
			e.Exit(nil)
		}},
		{"int", func() {
			n, _ := strconv.Atoi("70000")
			e, _ := g.EntryWithParam("api", n)
			e.Exit(nil)
		}},
		{"named", func() {
			e, _ := g.EntryWithParam("api", userID(buf))
			e.Exit(nil)
		}},
		{"params", func() {
			// A map's values escape wherever it lives: a caller keeps its
			// attachments.
			e, _ := g.EntryWithParams("api", Params{Args: []any{string(buf), 7}, Attachments: attachments})
			e.Exit(nil)
		}},
		{"blocked", func() { g.EntryWithParam("blocked", string(buf)) }},
	} {
		tc.f() // first sight: the rules keep a copy
		clock.Advance(time.Millisecond)
		if n := testing.AllocsPerRun(200, tc.f); n != 0 {
			t.Errorf("%s: %.1f allocations per entry", tc.name, n)
		}
	}
}

// Concurrent callers over shared values: no race, and with every value
// still tracked, every count in flight is back to 0 once all have exited.
func TestGuardHotParamConcurrentCallers(t *testing.T) {
	clock := &flowConfClock{res: 1}
	clock.ns.Store(flowT0 * int64(time.Millisecond))
	g := NewGuard(GuardOptions{Clock: flowConfGuardClock{clock}})
	err := g.LoadHotParamRules([]HotParamRule{
		{Resource: "api", Threshold: 3},
		{Resource: "api", MetricType: HotParamQPS, Threshold: 50, BurstCount: 10, DurationInSec: 1, ParamIndex: 1},
		{Resource: "api", MetricType: HotParamQPS, ControlBehavior: Throttling, Threshold: 500, DurationInSec: 1,
			MaxQueueingTimeMs: 20, ParamKey: "k"},
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan int)
	for w := range 4 {
		go func() {
			passed := 0
			var held []*Entry
			for i := range 2000 {
				clock.ns.Add(int64(time.Millisecond) / 4)
				e, err := g.EntryWithParams("api", Params{Args: []any{i % 17, w}, Attachments: map[string]any{"k": i % 5}})
				if err == nil {
					passed++
					held = append(held, e)
				}
				if len(held) > 3 || err != nil && len(held) > 0 {
					held[0].Exit(nil)
					held = held[1:]
				}
			}
			for _, e := range held {
				e.Exit(nil)
			}
			done <- passed
		}()
	}
	total := 0
	for range 4 {
		total += <-done
	}
	r, _ := g.Resource("api")
	r.HotParams()[0].Values(func(v any, s HotParamValue) bool {
		if s.Concurrency != 0 {
			t.Errorf("value %v: %d in flight after every exit", v, s.Concurrency)
		}
		return true
	})
	if total == 0 || total == 8000 {
		t.Fatalf("%d of 8000 passed: the rules never decided", total)
	}
}
