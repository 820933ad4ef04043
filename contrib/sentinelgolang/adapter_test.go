package sentinelgolang

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"testing"
	"time"

	"github.com/alibaba/sentinel-golang/api"
	sgbase "github.com/alibaba/sentinel-golang/core/base"
	sgcb "github.com/alibaba/sentinel-golang/core/circuitbreaker"
	sgflow "github.com/alibaba/sentinel-golang/core/flow"
	"github.com/alibaba/sentinel-golang/logging"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/collector/source"
	"github.com/sentinel-top/sentinel-top/core"
)

// sentinel-golang keeps its rules, slot chain and listeners in globals:
// these tests never run in parallel, and each clears the rules it loaded.

func init() { logging.ResetGlobalLoggerLevel(logging.ErrorLevel) }

func eventually(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(8 * time.Second)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// serve starts a and a collector dialing it over loopback.
func serve(t *testing.T, a *Adapter) *collector.Collector {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go a.Serve(ln)
	c := collector.New(collector.Options{})
	targets, err := source.ParseTargets(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { source.Dial(ctx, c, targets, source.DialOptions{Seed: 1}); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return c
}

// call makes one guarded call through sentinel-golang's API.
func call(resource string, fail bool) (blocked bool) {
	e, b := api.Entry(resource, api.WithTrafficType(sgbase.Outbound))
	if b != nil {
		return true
	}
	if fail {
		api.TraceError(e, errors.New("downstream failed"))
	}
	e.Exit()
	return false
}

// TestBreakerTripShowsInCollector trips a real sentinel-golang breaker and
// requires a collector dialing the adapter to show its transitions, with
// the trip's window and the probes, and exactly the counts sentinel-golang
// decided.
func TestBreakerTripShowsInCollector(t *testing.T) {
	a, err := New(Options{App: "order", Instance: "order-1"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	const res = "GET:http://member-service/api/user/info"
	if _, err := sgcb.LoadRules([]*sgcb.Rule{{Id: "errors", Resource: res, Strategy: sgcb.ErrorCount, RetryTimeoutMs: 300,
		MinRequestAmount: 1, StatIntervalMs: 1000, StatSlidingWindowBucketCount: 1, Threshold: 3}}); err != nil {
		t.Fatal(err)
	}
	if _, err := sgflow.LoadRules([]*sgflow.Rule{{Resource: "createOrder", TokenCalculateStrategy: sgflow.Direct,
		ControlBehavior: sgflow.Reject, Threshold: 2, StatIntervalInMs: 1000}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sgcb.ClearRules(); sgflow.ClearRules() })
	a.RefreshRules()
	c := serve(t, a)
	eventually(t, "hello and rules", func() error {
		if m, _, _ := c.Counters(); m < 2 {
			return fmt.Errorf("%d messages", m)
		}
		return nil
	})

	// Eight calls early in one second, so that sentinel-golang's one-bucket
	// window and the adapter's hold them all: five good, three failing.
	for time.Now().UnixMilli()%1000 > 300 {
		time.Sleep(5 * time.Millisecond)
	}
	began := time.Now().UnixMilli()
	pass, block, errs := 0, 0, 0
	do := func(fail bool) bool {
		if call(res, fail) {
			block++
			return true
		}
		pass++
		if fail {
			errs++
		}
		return false
	}
	for i := 0; i < 8; i++ {
		if do(i >= 5) {
			t.Fatalf("call %d blocked", i)
		}
	}
	for i := 0; i < 4; i++ {
		if !do(false) {
			t.Fatalf("call %d passed an open breaker", i)
		}
	}
	// A failing probe, then a good one.
	time.Sleep(350 * time.Millisecond)
	if do(true) {
		t.Fatal("the first probe was blocked")
	}
	if !do(false) {
		t.Fatal("passed after a failed probe")
	}
	time.Sleep(350 * time.Millisecond)
	if do(false) {
		t.Fatal("the second probe was blocked")
	}
	if do(false) {
		t.Fatal("blocked after closing")
	}
	// Flow control blocks too: 2 a second.
	flowPass, flowBlock := 0, 0
	for i := 0; i < 6; i++ {
		if call("createOrder", false) {
			flowBlock++
		} else {
			flowPass++
		}
	}
	if flowBlock == 0 {
		t.Fatal("the flow rule blocked nothing")
	}

	want := fmt.Sprintf("pass %d block %d complete %d error %d", pass, block, pass, errs)
	eventually(t, "counts", func() error {
		tp, ok := c.Totals("order-1", res)
		p, b, cp, e := tp.Pass, tp.Block, tp.Complete, tp.Error
		if got := fmt.Sprintf("pass %d block %d complete %d error %d", p, b, cp, e); !ok || got != want {
			return fmt.Errorf("%s, want %s", got, want)
		}
		tp, _ = c.Totals("order-1", "createOrder")
		if p, b = tp.Pass, tp.Block; p != int64(flowPass) || b != int64(flowBlock) {
			return fmt.Errorf("createOrder: pass %d block %d, want %d %d", p, b, flowPass, flowBlock)
		}
		return nil
	})
	var d *collector.Detail
	eventually(t, "transitions", func() error {
		d = c.Detail("order", res, began-1000, time.Now().UnixMilli()+1000)
		if len(d.Instances) != 1 || len(d.Instances[0].Transitions) != 5 {
			return fmt.Errorf("%+v", d.Instances)
		}
		return nil
	})
	in := d.Instances[0]
	steps := ""
	for _, tr := range in.Transitions {
		steps += fmt.Sprintf("%s>%s ", tr.From, tr.To)
		if tr.RuleID != "errors" {
			t.Errorf("rule id %q", tr.RuleID)
		}
	}
	if steps != "CLOSED>OPEN OPEN>HALF_OPEN HALF_OPEN>OPEN OPEN>HALF_OPEN HALF_OPEN>CLOSED " {
		t.Fatalf("transitions %s", steps)
	}
	trip := in.Transitions[0]
	if trip.Snapshot == nil || *trip.Snapshot != (core.WindowSnapshot{Total: 8, Bad: 3, Value: 3}) {
		t.Errorf("trip window %+v", trip.Snapshot)
	}
	if p := in.Transitions[2].Probe; p == nil || !p.Error {
		t.Errorf("failed probe %+v", p)
	}
	if p := in.Transitions[4].Probe; p == nil || p.Error {
		t.Errorf("good probe %+v", p)
	}
	if in.State != core.Closed || !in.HasBreaker || len(in.Breakers) != 1 || in.Breakers[0].Threshold != 3 ||
		in.Breakers[0].Strategy != core.ErrorCount || in.Breakers[0].RetryTimeoutMs != 300 {
		t.Errorf("instance %+v", in)
	}
	if s := a.Stats(); s.Readers != 1 || s.Panics != 0 || s.SkippedRules != 0 || s.Overflow != 0 {
		t.Errorf("stats %+v", s)
	}
}

// TestRulesFollowLoadRules: a rule push reaches the collector without a
// reconnect, rules core cannot represent are counted, not sent, and a
// slow-ratio breaker's bound decides the slow count.
func TestRulesFollowLoadRules(t *testing.T) {
	a, err := New(Options{App: "pay", Instance: "pay-1", Manual: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	t.Cleanup(func() { sgcb.ClearRules(); sgflow.ClearRules() })
	chain := sgbase.NewSlotChain()
	chain.AddRuleCheckSlot(sgcb.DefaultSlot)
	chain.AddStatSlot(sgcb.DefaultMetricStatSlot)
	chain.AddStatSlot(a.Slot())
	c := serve(t, a)
	eventually(t, "hello", func() error {
		if m, _, _ := c.Counters(); m < 1 {
			return fmt.Errorf("%d messages", m)
		}
		return nil
	})
	if _, err := sgcb.LoadRules([]*sgcb.Rule{{Resource: "db", Strategy: sgcb.SlowRequestRatio, RetryTimeoutMs: 5000,
		MinRequestAmount: 100, StatIntervalMs: 1000, MaxAllowedRtMs: 20, Threshold: 0.5}}); err != nil {
		t.Fatal(err)
	}
	if _, err := sgflow.LoadRules([]*sgflow.Rule{{Resource: "db", TokenCalculateStrategy: sgflow.MemoryAdaptive,
		ControlBehavior: sgflow.Reject, LowMemUsageThreshold: 10, HighMemUsageThreshold: 5, MemLowWaterMarkBytes: 1,
		MemHighWaterMarkBytes: 2}}); err != nil {
		t.Fatal(err)
	}
	a.RefreshRules()
	// Two slow completions and one fast, timed by sentinel-golang.
	for _, d := range []time.Duration{30 * time.Millisecond, 30 * time.Millisecond, 0} {
		e, b := api.Entry("db", api.WithSlotChain(chain))
		if b != nil {
			t.Fatal(b)
		}
		time.Sleep(d)
		e.Exit()
	}
	eventually(t, "rules and slow counts", func() error {
		now := time.Now().UnixMilli()
		d := c.Detail("pay", "db", now-60000, now)
		if len(d.Instances) != 1 || len(d.Instances[0].Breakers) != 1 || d.Instances[0].Breakers[0].MaxAllowedRtMs != 20 {
			return fmt.Errorf("%+v", d.Instances)
		}
		if len(d.Instances[0].Flows) != 0 {
			return fmt.Errorf("a memory-adaptive flow rule was sent: %+v", d.Instances[0].Flows)
		}
		if tm, _ := c.Totals("pay-1", "db"); tm.Complete != 3 || tm.Slow != 2 {
			return fmt.Errorf("complete %d slow %d", tm.Complete, tm.Slow)
		}
		return nil
	})
	if s := a.Stats(); s.SkippedRules != 1 {
		t.Errorf("stats %+v", s)
	}
}

// A count whose bucket's slot already holds a newer bucket (the clock
// stepped back, or a goroutine paused 10 s between reading it and
// counting) is not recorded, and Stats says how many were not.
// manualAdapter is an adapter shipping only when told, on a virtual clock,
// with a slot chain of its statistic slot alone (closed at the test's end).
func manualAdapter(t *testing.T) (*Adapter, *sgbase.SlotChain, *core.VirtualClock) {
	t.Helper()
	vc := core.NewVirtualClock(time.UnixMilli(1764460800000))
	a, err := New(Options{App: "pay", Instance: "pay-1", Manual: true, Clock: vc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	chain := sgbase.NewSlotChain()
	chain.AddStatSlot(a.Slot())
	return a, chain, vc
}

func TestStatsCountWhatCannotBeRecorded(t *testing.T) {
	a, chain, vc := manualAdapter(t)
	call := func() {
		e, b := api.Entry("db", api.WithSlotChain(chain))
		if b != nil {
			t.Fatal(b)
		}
		e.Exit()
	}
	call()
	vc.Advance(15 * time.Second) // takes the slot of the bucket 10 s before
	call()
	if s := a.Stats(); s.Unrecorded != 0 || s.Skipped != 0 {
		t.Fatalf("stats %+v after calls in their time", s)
	}
	vc.Set(vc.Now().Add(-10 * time.Second))
	call()
	if s := a.Stats(); s.Unrecorded != 2 {
		t.Errorf("Unrecorded = %d, want the pass and the completion", s.Unrecorded)
	}
}

// TestLateCollectorSeesTheOpenBreaker: a collector that connects after a
// real sentinel-golang breaker opened shows it open, since its trip: the
// adapter's backlog keeps each breaker's last transition; once a rule
// change replaced the breaker, it does not.
func TestLateCollectorSeesTheOpenBreaker(t *testing.T) {
	a, err := New(Options{App: "order", Instance: "order-1"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	const res = "inventory"
	if _, err := sgcb.LoadRules([]*sgcb.Rule{{Id: "errors", Resource: res, Strategy: sgcb.ErrorCount, RetryTimeoutMs: 60_000,
		MinRequestAmount: 1, StatIntervalMs: 1000, StatSlidingWindowBucketCount: 1, Threshold: 3}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sgcb.ClearRules() })
	a.RefreshRules()
	for range 4 {
		call(res, true)
	}
	if !call(res, false) {
		t.Fatal("the breaker did not open")
	}
	shows := func(c *collector.Collector, state core.State, transitions int) {
		t.Helper()
		eventually(t, "the breaker "+state.String(), func() error {
			d := c.Detail("order", res, time.Now().UnixMilli()-60_000, time.Now().UnixMilli()+1000)
			if len(d.Instances) != 1 || d.Instances[0].State != state || len(d.Instances[0].Transitions) != transitions {
				return fmt.Errorf("%+v", d.Instances)
			}
			if transitions > 0 && d.Instances[0].StateSince != d.Instances[0].Transitions[0].AtMs {
				return fmt.Errorf("since %d", d.Instances[0].StateSince)
			}
			return nil
		})
	}
	shows(serve(t, a), core.Open, 1)
	// Another resource's rule changes: this breaker is the same one, open
	// (the key of its transitions is the rule sentinel-golang gives them).
	errorsRule := &sgcb.Rule{Id: "errors", Resource: res, Strategy: sgcb.ErrorCount, RetryTimeoutMs: 60_000,
		MinRequestAmount: 1, StatIntervalMs: 1000, StatSlidingWindowBucketCount: 1, Threshold: 3}
	if _, err := sgcb.LoadRules([]*sgcb.Rule{errorsRule, {Resource: "other", Strategy: sgcb.ErrorCount, RetryTimeoutMs: 1000,
		MinRequestAmount: 1, StatIntervalMs: 1000, Threshold: 9}}); err != nil {
		t.Fatal(err)
	}
	a.RefreshRules()
	if !call(res, false) {
		t.Fatal("the breaker closed when another rule changed")
	}
	shows(serve(t, a), core.Open, 1)
	// A changed rule: sentinel-golang starts a new breaker, CLOSED, and
	// says nothing; a collector that connects then does not show the old
	// breaker's state.
	if _, err := sgcb.LoadRules([]*sgcb.Rule{{Id: "errors", Resource: res, Strategy: sgcb.ErrorCount, RetryTimeoutMs: 60_000,
		MinRequestAmount: 1, StatIntervalMs: 1000, StatSlidingWindowBucketCount: 1, Threshold: 5}}); err != nil {
		t.Fatal(err)
	}
	a.RefreshRules()
	if call(res, false) {
		t.Fatal("the new breaker is not closed")
	}
	shows(serve(t, a), core.Closed, 0)
}

// TestStatsTellEveryWrite: the adapter's every count in a resource's
// statistic is told to it (core.Window.Wrote), as the shipper needs to
// read a bucket it shipped again when a caller paused between reading the
// clock and counting. Every bucket is sealed here, so each write is late.
func TestStatsTellEveryWrite(t *testing.T) {
	a, chain, _ := manualAdapter(t)
	e, b := api.Entry("db", api.WithSlotChain(chain)) // makes the resource
	if b != nil {
		t.Fatal(b)
	}
	e.Exit()
	w := a.resource("db").Stat()
	w.Seal(math.MaxInt64)
	e, b = api.Entry("db", api.WithSlotChain(chain))
	if b != nil {
		t.Fatal(b)
	}
	e.Exit()
	if n := w.LateWrites(); n != 2 {
		t.Errorf("a pass and a completion told %d writes, want 2", n)
	}
	ctx := &sgbase.EntryContext{Resource: sgbase.NewResourceWrapper("db", sgbase.ResTypeCommon, sgbase.Outbound)}
	a.Slot().OnEntryBlocked(ctx, nil)
	if n := w.LateWrites(); n != 3 {
		t.Errorf("a block told %d writes, want 1", n-2)
	}
}
