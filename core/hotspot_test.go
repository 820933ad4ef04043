package core

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func qpsRule(threshold, burst, dur int64) HotParamRule {
	return HotParamRule{Resource: "api", MetricType: HotParamQPS, Threshold: threshold, BurstCount: burst, DurationInSec: dur}
}

func mustHot(t *testing.T, rule HotParamRule) *HotParamController {
	t.Helper()
	c, err := NewHotParamController(rule)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// passes checks n entries of v at now and returns how many passed.
func passes(c *HotParamController, now int64, v any, n int) int {
	k := 0
	for range n {
		if ok, _ := c.Check(now, v, 1); ok {
			k++
		}
	}
	return k
}

func TestHotParamRuleValidate(t *testing.T) {
	ok := []HotParamRule{
		{Resource: "a"}, // concurrency, threshold 0
		qpsRule(10, 0, 1),
		{Resource: "a", MetricType: HotParamQPS, ControlBehavior: Throttling, Threshold: 5, DurationInSec: 1, BurstCount: -1},
		{Resource: "a", ParamKey: "user", ParamIndex: -1},
		{Resource: "a", ParamsMaxCapacity: -5, DurationInSec: -3},
	}
	for _, r := range ok {
		if err := r.Validate(); err != nil {
			t.Errorf("%+v: %v", r, err)
		}
	}
	bad := map[string]HotParamRule{
		"resource":          {},
		"threshold":         {Resource: "a", Threshold: -1},
		"metricType":        {Resource: "a", MetricType: 2},
		"controlBehavior":   {Resource: "a", ControlBehavior: 2},
		"durationInSec":     {Resource: "a", MetricType: HotParamQPS},
		"too long":          {Resource: "a", MetricType: HotParamQPS, DurationInSec: math.MaxInt64/1000 + 1},
		"mutually":          {Resource: "a", ParamIndex: 1, ParamKey: "k"},
		"burstCount":        {Resource: "a", BurstCount: -1},
		"maxQueueingTimeMs": {Resource: "a", ControlBehavior: Throttling, MaxQueueingTimeMs: -1},
		"pattern":           {Resource: "a", Pattern: "("},
	}
	for want, r := range bad {
		err := r.Validate()
		if !errors.Is(err, ErrInvalidRule) || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: %v, want an invalid-rule error naming %q", r, err, want)
		}
	}
}

func TestHotParamRuleWarningsAndCapacity(t *testing.T) {
	r := HotParamRule{Resource: "a", DurationInSec: 3, BurstCount: 2, MaxQueueingTimeMs: 10, ParamKey: "k", ParamIndex: -1, ParamsMaxCapacity: -1}
	if w := r.Warnings(); len(w) != 5 {
		t.Errorf("warnings %q", w)
	}
	if w := qpsRule(1, 2, 1); len(w.Warnings()) != 0 {
		t.Errorf("a plain QPS reject rule warns: %q", w.Warnings())
	}
	for _, c := range []struct {
		r    HotParamRule
		want int
	}{
		{HotParamRule{}, 4000},
		{HotParamRule{ParamsMaxCapacity: 7}, 7},
		{qpsRule(1, 0, 1), 4000},
		{qpsRule(1, 0, 4), 16000},
		{qpsRule(1, 0, 6), 20000},
		{qpsRule(1, 0, math.MaxInt64/1000), 20000}, // 4000*d overflows: sentinel-golang falls back to 20000
	} {
		if got := c.r.Capacity(); got != c.want {
			t.Errorf("%+v: capacity %d, want %d", c.r, got, c.want)
		}
	}
}

// The JSON is sentinel-golang's hotspot.Rule's, with specificItems as an
// object from the value's text to its threshold.
func TestHotParamRuleJSON(t *testing.T) {
	src := `{"resource":"getUser","metricType":1,"controlBehavior":0,"paramIndex":0,"paramKey":"",
		"threshold":10,"maxQueueingTimeMs":0,"burstCount":5,"durationInSec":1,"paramsMaxCapacity":100,
		"specificItems":{"vip-1":1000,"42":0}}`
	var r HotParamRule
	if err := json.Unmarshal([]byte(src), &r); err != nil {
		t.Fatal(err)
	}
	want := HotParamRule{Resource: "getUser", MetricType: HotParamQPS, Threshold: 10, BurstCount: 5, DurationInSec: 1,
		ParamsMaxCapacity: 100, SpecificItems: map[string]int64{"vip-1": 1000, "42": 0}}
	if !r.Equal(&want) {
		t.Fatalf("got %+v", r)
	}
	out, _ := json.Marshal(r)
	for _, field := range []string{`"metricType":1`, `"paramKey":""`, `"durationInSec":1`, `"specificItems":{"42":0,"vip-1":1000}`} {
		if !strings.Contains(string(out), field) {
			t.Errorf("%s lacks %s", out, field)
		}
	}
}

// The token bucket: threshold+burst at first sight; a refill only once more
// than DurationInSec has passed, of the elapsed share of the threshold.
func TestHotParamQPSRejectBucket(t *testing.T) {
	c := mustHot(t, qpsRule(3, 2, 1))
	if got := passes(c, flowT0, "a", 6); got != 5 {
		t.Fatalf("first second: %d passed, want threshold 3 + burst 2", got)
	}
	if got := passes(c, flowT0+1000, "a", 1); got != 0 {
		t.Fatal("exactly DurationInSec later: refilled already")
	}
	// 1001 ms: 1001*3/1000 = 3 tokens.
	if got := passes(c, flowT0+1001, "a", 5); got != 3 {
		t.Fatalf("after 1001 ms: %d passed, want 3", got)
	}
	// A long idle spell fills the bucket to threshold+burst, no more.
	if got := passes(c, flowT0+60_000, "a", 9); got != 5 {
		t.Fatalf("after a minute: %d passed, want 5", got)
	}
	if got := passes(c, flowT0+60_000, "b", 9); got != 5 {
		t.Fatalf("another value: %d passed, want its own 5", got)
	}
	if ok, _ := c.Check(flowT0, "c", 6); ok {
		t.Fatal("a batch above threshold+burst passed")
	}
	if v, ok := c.Value("a"); !ok || v.Tokens != 0 || v.LastMs != flowT0+60_000 || v.Threshold != 3 {
		t.Fatalf("Value(a) = %+v, %v", v, ok)
	}
}

func TestHotParamQPSRejectZeroThresholdBlocksWithoutTracking(t *testing.T) {
	c := mustHot(t, qpsRule(0, 5, 1))
	if got := passes(c, flowT0, "a", 3); got != 0 || c.Len() != 0 {
		t.Fatalf("%d passed, %d tracked; want 0, 0", got, c.Len())
	}
}

// Throttling spaces a value's entries DurationInSec*1000/threshold ms apart
// (integer division); a wait must be strictly shorter than
// MaxQueueingTimeMs.
func TestHotParamThrottling(t *testing.T) {
	c := mustHot(t, HotParamRule{Resource: "api", MetricType: HotParamQPS, ControlBehavior: Throttling,
		Threshold: 4, DurationInSec: 1, MaxQueueingTimeMs: 500})
	var got []time.Duration
	for range 4 {
		pass, wait := c.Check(flowT0, "a", 1)
		if !pass {
			wait = -1
		}
		got = append(got, wait)
	}
	want := []time.Duration{0, 250 * time.Millisecond, -1, -1} // 500 ms is not < 500
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("waits %v, want %v (-1: blocked)", got, want)
		}
	}
	if pass, wait := c.Check(flowT0+500, "a", 1); !pass || wait != 0 {
		t.Fatalf("at the slot: pass=%v wait=%v", pass, wait)
	}
	// 3 per second: 333 ms apart, not 333.33.
	c3 := mustHot(t, HotParamRule{Resource: "api", MetricType: HotParamQPS, ControlBehavior: Throttling,
		Threshold: 3, DurationInSec: 1, MaxQueueingTimeMs: 1000})
	c3.Check(flowT0, 1, 1)
	if _, wait := c3.Check(flowT0, 1, 1); wait != 333*time.Millisecond {
		t.Fatalf("wait %v, want 333ms", wait)
	}
}

// A concurrency rule lets a value's first entry through whatever the
// threshold, and counts entries in flight between OnPass and OnExit.
func TestHotParamConcurrency(t *testing.T) {
	c := mustHot(t, HotParamRule{Resource: "api", Threshold: 1})
	for i := range 2 {
		if ok, _ := c.Check(flowT0, "a", 1); !ok {
			t.Fatalf("entry %d blocked with nothing in flight", i)
		}
	}
	c.OnPass("a")
	if ok, _ := c.Check(flowT0, "a", 1); ok {
		t.Fatal("second entry in flight passed at threshold 1")
	}
	c.OnExit("a")
	if ok, _ := c.Check(flowT0, "a", 1); !ok {
		t.Fatal("blocked after the exit")
	}
	zero := mustHot(t, HotParamRule{Resource: "api"})
	if passes(zero, flowT0, "z", 3) != 1 {
		t.Fatal("threshold 0: only the first sight passes")
	}
}

// SpecificItems keys match values by their text, for every kind core
// tracks; integers only in their canonical decimal form.
func TestHotParamSpecificItemsByText(t *testing.T) {
	type userID string
	c := mustHot(t, HotParamRule{Resource: "api", MetricType: HotParamQPS, Threshold: 1, DurationInSec: 1,
		SpecificItems: map[string]int64{"vip": 3, "42": 3, "007": 3, "2.5": 3, "true": 3, "18446744073709551615": 3, "0.1": 3}})
	for _, v := range []any{"vip", userID("vip"), 42, int8(42), int64(42), uint(42), uint8(42), "42", 2.5, float32(2.5),
		true, uint64(math.MaxUint64), "007", 0.1, float32(0.1)} {
		if got := passes(c, flowT0, v, 4); got != 3 {
			t.Errorf("%T %v: %d passed, want its specific threshold 3", v, v, got)
		}
	}
	for _, v := range []any{7, "other", false, 2.25, uint64(math.MaxUint64 - 1)} {
		if got := passes(c, flowT0, v, 4); got != 1 {
			t.Errorf("%T %v: %d passed, want the rule's threshold 1", v, v, got)
		}
	}
}

// Values are told apart as Go's == tells them apart: by type and value.
func TestHotParamValuesAreTyped(t *testing.T) {
	type userID string
	c := mustHot(t, qpsRule(1, 0, 1))
	for _, v := range []any{"7", 7, int64(7), userID("7"), 7.0} {
		if got := passes(c, flowT0, v, 2); got != 1 {
			t.Errorf("%T %v: %d passed, want 1 of its own", v, v, got)
		}
	}
	if c.Len() != 5 {
		t.Fatalf("%d values tracked, want 5", c.Len())
	}
}

// nil, NaN, and kinds core does not track pass without being tracked, and
// an uncomparable value does not panic.
func TestHotParamUntrackedValuesPass(t *testing.T) {
	c := mustHot(t, qpsRule(0, 0, 1))
	for _, v := range []any{nil, math.NaN(), struct{ a int }{1}, []int{1}, map[string]int{}, &struct{}{}, complex(1, 2)} {
		if ok, _ := c.Check(flowT0, v, 1); !ok {
			t.Errorf("%T blocked", v)
		}
		c.OnPass(v)
		c.OnExit(v)
	}
	if c.Len() != 0 {
		t.Fatalf("%d values tracked", c.Len())
	}
}

// The cache forgets the least recently used value; OnPass and OnExit count
// as uses, as sentinel-golang's Get does.
func TestHotParamLRU(t *testing.T) {
	c := mustHot(t, HotParamRule{Resource: "api", MetricType: HotParamQPS, Threshold: 1, DurationInSec: 1, ParamsMaxCapacity: 2})
	passes(c, flowT0, "a", 1)
	passes(c, flowT0, "b", 1)
	passes(c, flowT0, "a", 1) // a is the most recent again
	passes(c, flowT0, "c", 1) // b goes
	if _, ok := c.Value("b"); ok {
		t.Fatal("b still tracked")
	}
	if got := passes(c, flowT0, "a", 1); got != 0 {
		t.Fatal("a was forgotten")
	}
	if got := passes(c, flowT0, "b", 1); got != 1 {
		t.Fatal("b returned with an empty bucket; it starts afresh")
	}
	var order []any
	c.Values(func(v any, _ HotParamValue) bool { order = append(order, v); return true })
	if len(order) != 2 || order[0] != "b" || order[1] != "a" {
		t.Fatalf("values, most recent first: %v", order)
	}

	conc := mustHot(t, HotParamRule{Resource: "api", Threshold: 5, ParamsMaxCapacity: 2})
	conc.Check(flowT0, "a", 1)
	conc.Check(flowT0, "b", 1)
	conc.OnPass("a") // a is the most recent
	conc.Check(flowT0, "c", 1)
	if _, ok := conc.Value("a"); !ok {
		t.Fatal("OnPass did not make a the most recent")
	}
}

// A value forgotten while in flight and seen again counts from 0, and the
// old entry's exit takes it below zero, as in sentinel-golang.
func TestHotParamConcurrencyExitAfterEviction(t *testing.T) {
	c := mustHot(t, HotParamRule{Resource: "api", Threshold: 1, ParamsMaxCapacity: 1})
	c.Check(flowT0, "a", 1)
	c.OnPass("a")
	c.Check(flowT0, "b", 1) // a forgotten
	c.Check(flowT0, "a", 1) // a returns at 0
	c.OnExit("a")
	if v, _ := c.Value("a"); v.Concurrency != -1 {
		t.Fatalf("concurrency %d, want -1", v.Concurrency)
	}
}

func TestHotParamParamExtraction(t *testing.T) {
	p := &Params{Args: []any{"a0", "a1", nil}, Attachments: map[string]any{"user": "u", "nil": nil}}
	for _, c := range []struct {
		r    HotParamRule
		want any
	}{
		{HotParamRule{}, "a0"},
		{HotParamRule{ParamIndex: 1}, "a1"},
		{HotParamRule{ParamIndex: 2}, nil},
		{HotParamRule{ParamIndex: 3}, nil},
		{HotParamRule{ParamIndex: -2}, "a1"},
		{HotParamRule{ParamIndex: -4}, nil},
		{HotParamRule{ParamKey: "user"}, "u"},
		{HotParamRule{ParamKey: "missing"}, "a0"}, // falls back to ParamIndex
		{HotParamRule{ParamKey: "nil", ParamIndex: -2}, "a1"},
	} {
		if got := c.r.Param(p); got != c.want {
			t.Errorf("%+v: %v, want %v", c.r, got, c.want)
		}
	}
	if (&HotParamRule{}).Param(nil) != nil {
		t.Error("nil params")
	}
}

// Throttling spaces entries by an integer number of milliseconds: above one
// per millisecond (threshold > 1000*DurationInSec) the spacing is 0 and
// nothing is limited, as in sentinel-golang.
func TestHotParamThrottlingAboveOnePerMillisecondIsUnlimited(t *testing.T) {
	c := mustHot(t, HotParamRule{Resource: "api", MetricType: HotParamQPS, ControlBehavior: Throttling,
		Threshold: 2000, DurationInSec: 1})
	if got := passes(c, flowT0, "a", 10_000); got != 10_000 {
		t.Fatalf("%d of 10000 passed in one millisecond", got)
	}
	c = mustHot(t, HotParamRule{Resource: "api", MetricType: HotParamQPS, ControlBehavior: Throttling,
		Threshold: 1000, DurationInSec: 1})
	if got := passes(c, flowT0, "b", 3); got != 1 {
		t.Fatalf("1000 per second: %d of 3 passed in one millisecond", got)
	}
}
