package core

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

func newTestGuard(t *testing.T) (*Guard, *VirtualClock, *transitionLog) {
	t.Helper()
	clock := NewVirtualClock(time.UnixMilli(1764460800000))
	log := &transitionLog{}
	return NewGuard(GuardOptions{Clock: clock, Listener: log}), clock, log
}

func TestGuardPassRecordsStatistics(t *testing.T) {
	g, clock, _ := newTestGuard(t)
	if err := g.LoadBreakerRules([]BreakerRule{slowRule(), {Resource: "price", Strategy: SlowRequestRatio,
		RetryTimeoutMs: 1000, StatIntervalMs: 1000, MaxAllowedRtMs: 100, Threshold: 0.9, MinRequestAmount: 100}}); err != nil {
		t.Fatal(err)
	}
	start := clock.UnixMilli()
	e1, err := g.Entry("price")
	if err != nil {
		t.Fatal(err)
	}
	e2, _ := g.Entry("price")
	clock.Advance(150 * time.Millisecond)
	e1.Exit(nil)
	e2.Exit(errors.New("boom"))

	r, ok := g.Resource("price")
	if !ok {
		t.Fatal("resource not tracked")
	}
	if ms, ok := r.SlowRtMs(); !ok || ms != 100 {
		t.Fatalf("SlowRtMs = %d, %v; want the smaller limit 100", ms, ok)
	}
	m := SumWindow(r.Stat(), clock.UnixMilli())
	if m.Pass != 2 || m.Complete != 2 || m.Error != 1 || m.Slow != 2 || m.RtSum != 300 || m.Concurrency != 2 {
		t.Fatalf("metrics %+v", m)
	}
	if r.Concurrency() != 0 {
		t.Fatalf("concurrency %d after both exits", r.Concurrency())
	}
	if _, ok := r.Stat().Lookup(start); !ok {
		t.Fatal("entry bucket missing")
	}
}

func TestGuardBlocksWithTypedError(t *testing.T) {
	g, clock, log := newTestGuard(t)
	rule := BreakerRule{ID: "db-errors", Resource: "db", Strategy: ErrorCount, RetryTimeoutMs: 5000,
		StatIntervalMs: 1000, Threshold: 1}
	if err := g.LoadBreakerRules([]BreakerRule{rule}); err != nil {
		t.Fatal(err)
	}
	e, _ := g.Entry("db")
	e.Exit(errors.New("timeout"))
	_, err := g.Entry("db")
	var be *BlockError
	if !errors.As(err, &be) || !errors.Is(err, ErrBlocked) || !errors.Is(err, ErrOpen) || errors.Is(err, ErrFlow) {
		t.Fatalf("err = %v", err)
	}
	if be.Cause != BlockedByBreaker || be.Breaker.ID != "db-errors" || be.Resource != "db" {
		t.Fatalf("block error %+v", be)
	}
	r, _ := g.Resource("db")
	if m := SumWindow(r.Stat(), clock.UnixMilli()); m.Block != 1 || m.Pass != 1 {
		t.Fatalf("metrics %+v", m)
	}
	if got := log.states(); len(got) != 1 || got[0] != "CLOSED>OPEN" {
		t.Fatalf("transitions %v", got)
	}
}

func TestGuardSecondBreakerBlockAbortsProbe(t *testing.T) {
	g, clock, log := newTestGuard(t)
	fast := BreakerRule{ID: "fast", Resource: "r", Strategy: ErrorCount, RetryTimeoutMs: 100, StatIntervalMs: 1000, Threshold: 1}
	slow := BreakerRule{ID: "slow", Resource: "r", Strategy: ErrorCount, RetryTimeoutMs: 10000, StatIntervalMs: 1000, Threshold: 1}
	if err := g.LoadBreakerRules([]BreakerRule{fast, slow}); err != nil {
		t.Fatal(err)
	}
	e, _ := g.Entry("r")
	e.Exit(errors.New("x")) // both trip
	clock.Advance(200 * time.Millisecond)
	// "fast" may probe, but "slow" still blocks: the probe is aborted.
	if _, err := g.Entry("r"); !errors.Is(err, ErrOpen) {
		t.Fatalf("err = %v", err)
	}
	r, _ := g.Resource("r")
	if st := r.Breakers()[0].State(); st != Open {
		t.Fatalf("first breaker left %v", st)
	}
	want := []string{"CLOSED>OPEN", "CLOSED>OPEN", "OPEN>HALF_OPEN", "HALF_OPEN>OPEN"}
	if got := log.states(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("transitions %v, want %v", got, want)
	}
}

func TestGuardReloadKeepsUnchangedBreakers(t *testing.T) {
	g, _, _ := newTestGuard(t)
	rule := BreakerRule{Resource: "r", Strategy: ErrorCount, RetryTimeoutMs: 10000, StatIntervalMs: 1000, Threshold: 1}
	if err := g.LoadBreakerRules([]BreakerRule{rule}); err != nil {
		t.Fatal(err)
	}
	e, _ := g.Entry("r")
	e.Exit(errors.New("x"))
	r, _ := g.Resource("r")
	before := r.Breakers()[0]
	if err := g.LoadBreakerRules([]BreakerRule{rule}); err != nil {
		t.Fatal(err)
	}
	if r.Breakers()[0] != before || before.State() != Open {
		t.Fatal("an unchanged rule lost its breaker state")
	}
	changed := rule
	changed.RetryTimeoutMs = 20000
	if err := g.LoadBreakerRules([]BreakerRule{changed}); err != nil {
		t.Fatal(err)
	}
	after := r.Breakers()[0]
	if after == before || after.State() != Closed || after.stat != before.stat {
		t.Fatal("a changed rule must start CLOSED and keep the window of the same shape")
	}
	if err := g.LoadBreakerRules(nil); err != nil || r.Breakers() != nil {
		t.Fatalf("clearing rules: err=%v breakers=%d", err, len(r.Breakers()))
	}
	if _, ok := r.SlowRtMs(); ok {
		t.Fatal("SlowRtMs still set without slow-ratio breakers")
	}
}

func TestGuardRejectsInvalidRulesAtomically(t *testing.T) {
	g, _, _ := newTestGuard(t)
	good := slowRule()
	if err := g.LoadBreakerRules([]BreakerRule{good}); err != nil {
		t.Fatal(err)
	}
	bad := good
	bad.StatIntervalMs = 0
	err := g.LoadBreakerRules([]BreakerRule{good, bad})
	if !errors.Is(err, ErrInvalidRule) || !contains(err.Error(), "breaker rule 1") {
		t.Fatalf("err = %v", err)
	}
	r, _ := g.Resource(good.Resource)
	if len(r.Breakers()) != 1 {
		t.Fatal("a rejected load changed the rules")
	}
	if err := g.LoadFlowRules([]FlowRule{{Resource: "x", Threshold: -1}}); !errors.Is(err, ErrInvalidRule) {
		t.Fatalf("flow err = %v", err)
	}
}

func TestGuardResourceCap(t *testing.T) {
	clock := NewVirtualClock(time.UnixMilli(1764460800000))
	g := NewGuard(GuardOptions{Clock: clock, MaxResources: 2})
	for _, name := range []string{"a", "b", "c", "d"} {
		e, err := g.Entry(name)
		if err != nil {
			t.Fatal(err)
		}
		e.Exit(nil)
	}
	if n := len(g.Resources()); n != 2 {
		t.Fatalf("%d resources tracked", n)
	}
	if g.Overflow() != 2 {
		t.Fatalf("overflow = %d", g.Overflow())
	}
	if err := g.LoadBreakerRules([]BreakerRule{{Resource: "z", RetryTimeoutMs: 1, StatIntervalMs: 1000}}); err == nil {
		t.Fatal("rules for a resource over the cap were accepted")
	}
}

func TestGuardFlowBlocks(t *testing.T) {
	g, _, _ := newTestGuard(t)
	if err := g.LoadFlowRules([]FlowRule{{ID: "cap", Resource: "order", Threshold: 2}}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		e, err := g.Entry("order")
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		e.Exit(nil)
	}
	_, err := g.Entry("order")
	var be *BlockError
	if !errors.As(err, &be) || !errors.Is(err, ErrFlow) || be.Flow.ID != "cap" {
		t.Fatalf("err = %v", err)
	}
	if r, _ := g.Resource("order"); len(r.Flows()) != 1 {
		t.Fatal("flow controller not listed")
	}
}

func TestGuardPassPathDoesNotAllocate(t *testing.T) {
	g, _, _ := newTestGuard(t)
	if err := g.LoadBreakerRules([]BreakerRule{slowRule()}); err != nil {
		t.Fatal(err)
	}
	if err := g.LoadFlowRules([]FlowRule{{Resource: "price", Threshold: 1e9}}); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(1000, func() {
		e, err := g.Entry("price")
		if err != nil {
			t.Fatal(err)
		}
		e.Exit(nil)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per Entry+Exit", allocs)
	}
}

func TestGuardConcurrentEntryExit(t *testing.T) {
	g := NewGuard(GuardOptions{})
	if err := g.LoadBreakerRules([]BreakerRule{{Resource: "r", Strategy: ErrorRatio, RetryTimeoutMs: 5,
		StatIntervalMs: 100, StatSlidingWindowBucketCount: 10, Threshold: 0.5, MinRequestAmount: 10}}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	passed, blocked := 0, 0
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			p, b := 0, 0
			for i := 0; i < 3000; i++ {
				e, err := g.Entry("r")
				if err != nil {
					b++
					continue
				}
				p++
				var fail error
				if (i+w)%2 == 0 {
					fail = errors.New("x")
				}
				e.Exit(fail)
			}
			mu.Lock()
			passed, blocked = passed+p, blocked+b
			mu.Unlock()
		}(w)
	}
	wg.Wait()
	r, _ := g.Resource("r")
	if r.Concurrency() != 0 || passed+blocked != 24000 {
		t.Fatalf("concurrency %d, passed %d + blocked %d", r.Concurrency(), passed, blocked)
	}
}

func TestGuardBlockPathDoesNotAllocate(t *testing.T) {
	g, _, _ := newTestGuard(t)
	if err := g.LoadBreakerRules([]BreakerRule{{Resource: "db", Strategy: ErrorCount, RetryTimeoutMs: 60000,
		StatIntervalMs: 1000, Threshold: 1}}); err != nil {
		t.Fatal(err)
	}
	e, _ := g.Entry("db")
	e.Exit(errors.New("x")) // trips: every later entry is blocked
	allocs := testing.AllocsPerRun(1000, func() {
		if _, err := g.Entry("db"); err == nil {
			t.Fatal("passed an open breaker")
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per blocked Entry", allocs)
	}
}

// A call whose bucket's slot already holds a newer bucket (its goroutine
// read the clock a whole interval before counting, or the clock stepped
// back) is not recorded, as in Sentinel, and is counted as such: its pass,
// and its completion.
func TestGuardCountsWhatItCannotRecord(t *testing.T) {
	g, clock, _ := newTestGuard(t)
	e, err := g.Entry("db")
	if err != nil {
		t.Fatal(err)
	}
	e.Exit(nil)
	if g.Unrecorded() != 0 {
		t.Fatalf("Unrecorded() = %d after a call in its time", g.Unrecorded())
	}
	clock.Advance(15 * time.Second) // takes the slot of the bucket 10 s before
	e, _ = g.Entry("db")
	e.Exit(nil)
	clock.Set(clock.Now().Add(-10 * time.Second))
	e, err = g.Entry("db")
	if err != nil {
		t.Fatal(err)
	}
	e.Exit(nil)
	r, _ := g.Resource("db")
	if g.Unrecorded() != 2 || r.Concurrency() != 0 {
		t.Errorf("Unrecorded() = %d, concurrency %d; want the pass and the completion, and 0", g.Unrecorded(), r.Concurrency())
	}
	// A block, too.
	if err := g.LoadFlowRules([]FlowRule{{Resource: "db", Threshold: 0}}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Entry("db"); !errors.Is(err, ErrFlow) {
		t.Fatalf("err = %v, want a flow block", err)
	}
	if g.Unrecorded() != 3 {
		t.Errorf("Unrecorded() = %d after a block at the stale time, want 3", g.Unrecorded())
	}
}
