package core

import (
	"errors"
	"math"
	"sync"
	"testing"
	"time"
)

// flowT0 is a whole second, so bucket arithmetic in the tests is easy to read.
const flowT0 int64 = 1_764_460_800_000

// flowHarness drives one controller the way the Guard does.
type flowHarness struct {
	t    *testing.T
	stat *MetricWindow
	c    *FlowController
}

func newFlowHarness(t *testing.T, rule FlowRule) *flowHarness {
	t.Helper()
	if rule.Resource == "" {
		rule.Resource = "res"
	}
	stat := NewResourceWindow()
	c, err := NewFlowController(rule, stat)
	if err != nil {
		t.Fatalf("NewFlowController(%+v): %v", rule, err)
	}
	return &flowHarness{t: t, stat: stat, c: c}
}

// entry checks at nowMs and records the outcome; the returned time is when
// the entry proceeds (after any wait).
func (h *flowHarness) entry(nowMs, batch int64) (bool, time.Duration) {
	pass, wait := h.c.Check(nowMs, batch)
	if !pass {
		if b := h.stat.Current(nowMs); b != nil {
			b.AddBlock(batch)
		}
		return false, 0
	}
	after := nowMs + wait.Milliseconds()
	if b := h.stat.Current(after); b != nil {
		b.AddPass(batch)
	}
	h.c.OnPass(after, batch)
	return true, wait
}

// passes counts how many of n entries at nowMs pass.
func (h *flowHarness) passes(nowMs int64, n int) int {
	got := 0
	for range n {
		if ok, _ := h.entry(nowMs, 1); ok {
			got++
		}
	}
	return got
}

func TestFlowDirectRejectExactlyAtThreshold(t *testing.T) {
	for _, tc := range []struct {
		threshold float64
		want      int
	}{{3, 3}, {2.5, 2}, {2.9999, 2}, {1, 1}, {0.5, 0}, {0, 0}} {
		h := newFlowHarness(t, FlowRule{Threshold: tc.threshold})
		if got := h.passes(flowT0, 10); got != tc.want {
			t.Errorf("threshold %v: %d of 10 passed, want %d (pass while count+batch <= threshold)", tc.threshold, got, tc.want)
		}
	}
}

func TestFlowDirectRejectBatch(t *testing.T) {
	h := newFlowHarness(t, FlowRule{Threshold: 5})
	if ok, _ := h.entry(flowT0, 3); !ok {
		t.Fatal("batch 3 of 5 blocked")
	}
	if ok, _ := h.entry(flowT0, 3); ok {
		t.Fatal("3+3 > 5 passed")
	}
	if ok, _ := h.entry(flowT0, 2); !ok {
		t.Fatal("3+2 = 5 blocked")
	}
	if ok, _ := h.c.Check(flowT0, 0); ok {
		// 5+0 > 5 is false: a zero batch passes even when full.
	} else {
		t.Fatal("batch 0 blocked at the threshold")
	}
	if ok, _ := h.c.Check(flowT0, -4); !ok {
		t.Fatal("negative batch (treated as 0) blocked")
	}
}

// The default statistic is the current and the previous 500 ms bucket, by
// bucket start: passes at t0 count until t0+1000 exclusive.
func TestFlowDirectRejectDefaultWindowSlides(t *testing.T) {
	h := newFlowHarness(t, FlowRule{Threshold: 2})
	if got := h.passes(flowT0+100, 2); got != 2 {
		t.Fatalf("%d passed, want 2", got)
	}
	for _, now := range []int64{flowT0 + 499, flowT0 + 500, flowT0 + 999} {
		if ok, _ := h.c.Check(now, 1); ok {
			t.Errorf("t0+%d: passed while the bucket of t0 is in the window", now-flowT0)
		}
	}
	if ok, _ := h.c.Check(flowT0+1000, 1); !ok {
		t.Error("t0+1000: blocked although the bucket of t0 left the window")
	}
}

func TestFlowStatisticChoice(t *testing.T) {
	for _, tc := range []struct {
		interval   uint32
		standalone bool
		buckets    int64
		bucketMs   int64
	}{
		{0, false, 2, 500},
		{1000, false, 2, 500},
		{500, false, 1, 500},
		{2000, false, 4, 500},
		{2500, false, 5, 500},
		{10000, false, 20, 500},
		{3000, true, 6, 500},    // 10000 % 3000 != 0
		{1250, true, 1, 1250},   // not whole 500 ms buckets
		{300, true, 1, 300},     // shorter than a bucket
		{20000, true, 1, 20000}, // longer than the resource window
		{1, true, 1, 1},
	} {
		h := newFlowHarness(t, FlowRule{Threshold: 1, StatIntervalInMs: tc.interval})
		c := h.c
		if (c.own != nil) != tc.standalone || c.readBuckets != tc.buckets || c.readBucketMs != tc.bucketMs {
			t.Errorf("interval %d: standalone=%v buckets=%d x %d ms, want %v %d x %d ms",
				tc.interval, c.own != nil, c.readBuckets, c.readBucketMs, tc.standalone, tc.buckets, tc.bucketMs)
		}
	}
}

// A standalone statistic counts only what OnPass reports.
func TestFlowStandaloneStatisticNeedsOnPass(t *testing.T) {
	stat := NewResourceWindow()
	c, err := NewFlowController(FlowRule{Resource: "r", Threshold: 2, StatIntervalInMs: 3000}, stat)
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if ok, _ := c.Check(flowT0, 1); !ok {
			t.Fatal("blocked without any OnPass")
		}
		stat.Current(flowT0).AddPass(1) // the resource window does not count for this rule
	}
	c.OnPass(flowT0, 1)
	c.OnPass(flowT0+2999, 1)
	if ok, _ := c.Check(flowT0+2999, 1); ok {
		t.Fatal("passed with 2 passes in the 3 s window")
	}
	if ok, _ := c.Check(flowT0+3000, 1); !ok {
		t.Fatal("blocked after the first pass left the window")
	}
}

func TestFlowThrottlingSpacing(t *testing.T) {
	h := newFlowHarness(t, FlowRule{ControlBehavior: Throttling, Threshold: 10, MaxQueueingTimeMs: 250})
	want := []struct {
		pass bool
		wait time.Duration
	}{{true, 0}, {true, 100 * time.Millisecond}, {true, 200 * time.Millisecond}, {false, 0}}
	for i, w := range want {
		pass, wait := h.c.Check(flowT0, 1)
		if pass != w.pass || wait != w.wait {
			t.Errorf("entry %d: pass=%v wait=%v, want %v %v", i, pass, wait, w.pass, w.wait)
		}
	}
	// The queue drains with time: at t0+200 the next slot is t0+300.
	if pass, wait := h.c.Check(flowT0+200, 1); !pass || wait != 100*time.Millisecond {
		t.Errorf("t0+200: pass=%v wait=%v, want true 100ms", pass, wait)
	}
	// Idle long enough, an entry passes at once and restarts the spacing.
	if pass, wait := h.c.Check(flowT0+5000, 1); !pass || wait != 0 {
		t.Errorf("after idle: pass=%v wait=%v, want true 0", pass, wait)
	}
}

func TestFlowThrottlingQueueBoundIsInclusive(t *testing.T) {
	h := newFlowHarness(t, FlowRule{ControlBehavior: Throttling, Threshold: 10, MaxQueueingTimeMs: 100})
	h.c.Check(flowT0, 1)
	if pass, wait := h.c.Check(flowT0, 1); !pass || wait != 100*time.Millisecond {
		t.Errorf("wait exactly maxQueueingTimeMs: pass=%v wait=%v, want true 100ms", pass, wait)
	}
	if pass, _ := h.c.Check(flowT0, 1); pass {
		t.Error("wait above maxQueueingTimeMs passed")
	}
}

func TestFlowThrottlingNanosecondInterval(t *testing.T) {
	h := newFlowHarness(t, FlowRule{ControlBehavior: Throttling, Threshold: 3, MaxQueueingTimeMs: 1000})
	h.c.CheckNano(flowT0*1e6, 1)
	// ceil(1/3 * 1e9) ns
	if pass, wait := h.c.CheckNano(flowT0*1e6, 1); !pass || wait != 333333334 {
		t.Errorf("pass=%v wait=%d, want true 333333334ns", pass, wait)
	}
	// Check(ms) is CheckNano(ms*1e6).
	a := newFlowHarness(t, FlowRule{ControlBehavior: Throttling, Threshold: 7, MaxQueueingTimeMs: 500})
	b := newFlowHarness(t, FlowRule{ControlBehavior: Throttling, Threshold: 7, MaxQueueingTimeMs: 500})
	for i := range int64(50) {
		now := flowT0 + i*37
		p1, w1 := a.c.Check(now, 1)
		p2, w2 := b.c.CheckNano(now*1e6, 1)
		if p1 != p2 || w1 != w2 {
			t.Fatalf("step %d: Check=%v/%v CheckNano=%v/%v", i, p1, w1, p2, w2)
		}
	}
}

func TestFlowThrottlingCustomInterval(t *testing.T) {
	// 2 per 500 ms: 250 ms apart.
	h := newFlowHarness(t, FlowRule{ControlBehavior: Throttling, Threshold: 2, StatIntervalInMs: 500, MaxQueueingTimeMs: 1000})
	h.c.Check(flowT0, 1)
	if _, wait := h.c.Check(flowT0, 1); wait != 250*time.Millisecond {
		t.Errorf("wait %v, want 250ms", wait)
	}
}

func TestFlowThrottlingThresholdAtOrBelowZeroAndBelowBatch(t *testing.T) {
	for _, th := range []float64{0, 0.5, 0.999} {
		h := newFlowHarness(t, FlowRule{ControlBehavior: Throttling, Threshold: th, MaxQueueingTimeMs: 60000})
		if pass, _ := h.c.Check(flowT0, 1); pass {
			t.Errorf("threshold %v: batch 1 passed (sentinel-golang blocks batch > threshold)", th)
		}
		if pass, wait := h.c.Check(flowT0, 0); !pass || wait != 0 {
			t.Errorf("threshold %v: batch 0 blocked", th)
		}
	}
	h := newFlowHarness(t, FlowRule{ControlBehavior: Throttling, Threshold: 2, MaxQueueingTimeMs: 60000})
	if pass, _ := h.c.Check(flowT0, 3); pass {
		t.Error("batch 3 > threshold 2 passed")
	}
}

// warmUpRule: warningToken = 10*10/(3-1) = 50, maxToken = 50 + 2*10*10/4 = 100,
// slope = 2/10/50. Cold, the allowed rate is 1/(50*slope + 1/10) = 3.33.
func warmUpRule(cf uint32) FlowRule {
	return FlowRule{TokenCalculateStrategy: WarmUp, Threshold: 10, WarmUpPeriodSec: 10, WarmUpColdFactor: cf}
}

func TestFlowWarmUpBucketSizes(t *testing.T) {
	h := newFlowHarness(t, warmUpRule(0))
	w := &h.c.warmUp
	if w.coldFactor != 3 || w.warningToken != 50 || w.maxToken != 100 || w.slope != 2.0/10/50 {
		t.Errorf("cold factor %d, warning %d, max %d, slope %v", w.coldFactor, w.warningToken, w.maxToken, w.slope)
	}
}

func TestFlowWarmUpRampsFromColdToThreshold(t *testing.T) {
	h := newFlowHarness(t, warmUpRule(3))
	// Cold: 3 per second pass (3+1 > 3.33).
	if got := h.passes(flowT0, 20); got != 3 {
		t.Fatalf("cold second: %d passed, want 3", got)
	}
	// Offer 20 per second, 50 ms apart; the allowed rate climbs to 10 and
	// never beyond.
	var perSecond []int
	for s := int64(1); s <= 40; s++ {
		n := 0
		for i := range int64(20) {
			if ok, _ := h.entry(flowT0+s*1000+i*50, 1); ok {
				n++
			}
		}
		perSecond = append(perSecond, n)
	}
	warm := false
	for i, n := range perSecond {
		if n > 10 {
			t.Fatalf("second %d: %d passed, above the threshold", i+1, n)
		}
		if n == 10 {
			warm = true
		}
	}
	t.Logf("per second: %v", perSecond)
	if !warm || perSecond[len(perSecond)-1] != 10 {
		t.Errorf("never warmed up to 10 per second: %v", perSecond)
	}
	if perSecond[0] >= 10 {
		t.Errorf("warm at once: %v", perSecond)
	}
	// A long idle refills the bucket: cold again.
	if got := h.passes(flowT0+300_000, 20); got != 3 {
		t.Errorf("after idle: %d passed, want 3", got)
	}
}

func TestFlowWarmUpDefaultColdFactor(t *testing.T) {
	a := newFlowHarness(t, warmUpRule(0))
	b := newFlowHarness(t, warmUpRule(3))
	for i := range int64(2000) {
		now := flowT0 + i*i%97*13 + i*7
		p1, _ := a.entry(now, 1)
		p2, _ := b.entry(now, 1)
		if p1 != p2 {
			t.Fatalf("step %d: cold factor 0 %v, 3 %v", i, p1, p2)
		}
	}
	if a.c.Rule().WarmUpColdFactor != 0 {
		t.Error("Rule() changed the cold factor given")
	}
}

// With a degenerate token bucket (maxToken == warningToken, e.g. a threshold
// of 0 or a tiny one) sentinel-golang computes a NaN rate at the warning
// line and, since its check is count+batch > NaN, lets everything pass.
func TestFlowWarmUpDegenerateBucketPasses(t *testing.T) {
	for _, th := range []float64{0, 0.1} {
		h := newFlowHarness(t, FlowRule{TokenCalculateStrategy: WarmUp, Threshold: th, WarmUpPeriodSec: 5})
		if got := h.passes(flowT0, 50); got != 50 {
			t.Errorf("threshold %v: %d of 50 passed, want all (sentinel-golang quirk)", th, got)
		}
	}
}

func TestFlowWarmUpThrottling(t *testing.T) {
	h := newFlowHarness(t, FlowRule{TokenCalculateStrategy: WarmUp, ControlBehavior: Throttling,
		Threshold: 10, WarmUpPeriodSec: 10, MaxQueueingTimeMs: 1000})
	h.c.Check(flowT0, 1)
	// Cold rate 3.33/s: ceil(1/nextafter(3.33..) * 1e9) ns apart.
	_, wait := h.c.Check(flowT0, 1)
	cold := math.Nextafter(1.0/(50*(2.0/10/50)+1.0/10), math.MaxFloat64)
	if want := time.Duration(math.Ceil(1 / cold * 1e9)); wait != want {
		t.Errorf("wait %v, want %v", wait, want)
	}
}

func TestFlowClockBackwards(t *testing.T) {
	rules := []FlowRule{
		{Threshold: 5},
		{Threshold: 5, StatIntervalInMs: 3000},
		{ControlBehavior: Throttling, Threshold: 10, MaxQueueingTimeMs: 500},
		warmUpRule(3),
		{TokenCalculateStrategy: WarmUp, ControlBehavior: Throttling, Threshold: 10, WarmUpPeriodSec: 10, MaxQueueingTimeMs: 500},
	}
	for _, r := range rules {
		h := newFlowHarness(t, r)
		for i := range int64(30) {
			h.entry(flowT0+10_000+i*100, 1)
		}
		// Jump back 5 s, then before the epoch: no panic.
		for i := range int64(30) {
			h.entry(flowT0+5_000+i*10, 1)
		}
		h.c.Check(-1_000, 1)
		h.c.OnPass(-1_000, 1)
		h.c.CheckNano(math.MinInt64, 1)
	}

	// Throttling keeps the last pass time from the future: after a jump back
	// beyond maxQueueingTimeMs everything is blocked until the clock
	// catches up.
	h := newFlowHarness(t, rules[2])
	h.c.Check(flowT0+10_000, 1)
	if pass, _ := h.c.Check(flowT0+5_000, 1); pass {
		t.Error("throttling passed 5 s before its last pass")
	}
	if pass, wait := h.c.Check(flowT0+10_100, 1); !pass || wait != 0 {
		t.Errorf("throttling once caught up: pass=%v wait=%v", pass, wait)
	}

	// Reject reads the buckets of the earlier time that are still in the
	// ring; a pass recorded where the slot holds a newer bucket is dropped.
	h = newFlowHarness(t, FlowRule{Threshold: 2, StatIntervalInMs: 3000})
	h.entry(flowT0+10_000, 1)
	h.entry(flowT0+10_000, 1)
	if ok, _ := h.c.Check(flowT0+7_000, 1); !ok {
		t.Error("reject at an earlier time counted later passes")
	}
	h.c.OnPass(flowT0+7_000, 1) // slot holds t0+10000: dropped
	if ok, _ := h.c.Check(flowT0+10_000, 1); ok {
		t.Error("the two passes at t0+10000 were lost")
	}
}

func TestNewFlowControllerErrors(t *testing.T) {
	stat := NewResourceWindow()
	for _, r := range []FlowRule{
		{Resource: "", Threshold: 1},
		{Resource: "r", Threshold: -1},
		{Resource: "r", Threshold: math.NaN()},
		{Resource: "r", TokenCalculateStrategy: WarmUp, Threshold: 1},
		{Resource: "r", TokenCalculateStrategy: WarmUp, Threshold: 1, WarmUpPeriodSec: 1, WarmUpColdFactor: 1},
		{Resource: "r", ControlBehavior: 7, Threshold: 1},
	} {
		if _, err := NewFlowController(r, stat); !errors.Is(err, ErrInvalidRule) {
			t.Errorf("%+v: err %v, want ErrInvalidRule", r, err)
		}
	}
	if _, err := NewFlowController(FlowRule{Resource: "r", Threshold: 1}, nil); !errors.Is(err, ErrInvalidRule) {
		t.Errorf("reject without statistic: err %v", err)
	}
	if _, err := NewFlowController(FlowRule{Resource: "r", ControlBehavior: Throttling, Threshold: 1}, nil); err != nil {
		t.Errorf("direct throttling without statistic: %v", err)
	}
	// A resource window whose buckets cannot make up the default second.
	odd, _ := NewMetricWindow(3, 3000)
	if _, err := NewFlowController(FlowRule{Resource: "r", Threshold: 1}, odd); !errors.Is(err, ErrInvalidRule) {
		t.Errorf("default interval on a 3 x 1000 ms window: err %v", err)
	}
	r := FlowRule{Resource: "r", ID: "x", Threshold: 4, StatIntervalInMs: 2000}
	c, err := NewFlowController(r, stat)
	if err != nil || c.Rule() != r {
		t.Errorf("Rule() = %+v, %v; want %+v", c.Rule(), err, r)
	}
}

func TestFlowConcurrentUse(t *testing.T) {
	for _, r := range []FlowRule{
		{Resource: "r", Threshold: 50, StatIntervalInMs: 3000},
		{Resource: "r", ControlBehavior: Throttling, Threshold: 1000, MaxQueueingTimeMs: 50},
		{Resource: "r", TokenCalculateStrategy: WarmUp, Threshold: 50, WarmUpPeriodSec: 2},
	} {
		stat := NewResourceWindow()
		c, err := NewFlowController(r, stat)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for g := range int64(4) {
			wg.Go(func() {
				for i := range int64(2000) {
					now := flowT0 + i + g
					if pass, _ := c.Check(now, 1); pass {
						stat.Current(now).AddPass(1)
						c.OnPass(now, 1)
					}
				}
			})
		}
		wg.Wait()
	}
}

func TestFlowCheckDoesNotAllocate(t *testing.T) {
	for _, r := range []FlowRule{
		{Threshold: 1e9},
		{Threshold: 1e9, StatIntervalInMs: 3000},
		{ControlBehavior: Throttling, Threshold: 1e9, MaxQueueingTimeMs: 1000},
		{TokenCalculateStrategy: WarmUp, Threshold: 1e9, WarmUpPeriodSec: 10},
	} {
		h := newFlowHarness(t, r)
		now := flowT0
		allocs := testing.AllocsPerRun(1000, func() {
			now++
			h.c.Check(now, 1)
			h.c.OnPass(now, 1)
		})
		if allocs != 0 {
			t.Errorf("%+v: %v allocations per Check+OnPass", r, allocs)
		}
	}
}
