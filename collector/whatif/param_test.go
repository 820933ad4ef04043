package whatif

import (
	"errors"
	"testing"
	"time"

	"github.com/alibaba/sentinel-golang/api"
	sgbase "github.com/alibaba/sentinel-golang/core/base"
	sghot "github.com/alibaba/sentinel-golang/core/hotspot"
	"github.com/alibaba/sentinel-golang/logging"
	sgutil "github.com/alibaba/sentinel-golang/util"

	"github.com/sentinel-top/sentinel-top/core"
)

// vipTrace is one value's traffic: rate calls a second of it in 500 ms
// buckets for secs seconds (a bucket in seven a few calls more, as real
// traffic is not even), with the passes and blocks a limit of limit a
// second gave it.
func vipTrace(rate, limit, secs int64) ParamTrace {
	t0 := int64(1_764_460_800_000)
	tr := ParamTrace{Instance: "order-1", Value: "cust-100042"}
	for i := range 2 * secs {
		n := rate / 2
		if i%7 == 3 {
			n += 9
		}
		pass := min(n, limit/2)
		tr.Buckets = append(tr.Buckets, ParamBucket{Start: t0 + i*500, Ms: 500, Pass: pass, Block: n - pass, Listed: i%11 != 5})
	}
	return tr
}

func vipRule(threshold int64) core.HotParamRule {
	return core.HotParamRule{Resource: "queryOrder", MetricType: core.HotParamQPS, Threshold: threshold, DurationInSec: 1, ParamsMaxCapacity: 100}
}

func withException(r core.HotParamRule, value string, n int64) core.HotParamRule {
	r.SpecificItems = map[string]int64{value: n}
	return r
}

// sgQueueClock is sentinel-golang's clock for a replay: a throttled
// entry's wait does not move the time the next call arrives (replayClock).
type sgQueueClock struct{ sgClock }

func (sgQueueClock) Sleep(time.Duration) {}

// sentinelParamPasses offers the trace's calls, at the times the replay
// offers them, to sentinel-golang v1.0.4's hot-parameter slot for rule,
// on a virtual clock, and counts those it passes.
func sentinelParamPasses(t *testing.T, tr *ParamTrace, rule core.HotParamRule) int64 {
	t.Helper()
	clock := core.NewVirtualClock(time.UnixMilli(1))
	sgutil.SetClock(sgQueueClock{sgClock{clock}})
	defer sgutil.SetClock(sgutil.NewRealClock())
	logging.ResetGlobalLoggerLevel(logging.ErrorLevel)
	items := map[any]int64{}
	for k, v := range rule.SpecificItems {
		items[k] = v
	}
	sr := &sghot.Rule{Resource: rule.Resource, MetricType: sghot.QPS, ControlBehavior: sghot.ControlBehavior(rule.ControlBehavior),
		ParamIndex: rule.ParamIndex, Threshold: rule.Threshold, DurationInSec: rule.DurationInSec, BurstCount: rule.BurstCount,
		MaxQueueingTimeMs: rule.MaxQueueingTimeMs, ParamsMaxCapacity: rule.ParamsMaxCapacity, SpecificItems: items}
	if _, err := sghot.LoadRules([]*sghot.Rule{sr}); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sghot.ClearRules() }()
	chain := sgbase.NewSlotChain()
	chain.AddRuleCheckSlot(sghot.DefaultSlot)
	var passed int64
	for _, b := range tr.Buckets {
		n := b.Pass + b.Block
		for k := range n {
			at := b.Start + (2*k+1)*b.Ms/(2*n)
			if at > clock.UnixMilli() {
				clock.Set(time.UnixMilli(at))
			}
			e, block := api.Entry(rule.Resource, api.WithSlotChain(chain), api.WithArgs(tr.Value))
			if block != nil {
				continue
			}
			passed++
			e.Exit()
		}
	}
	return passed
}

// The replay of a hot-parameter rule passes what sentinel-golang's own
// hot-parameter slot passes of the same calls at the same times, with the
// limit and with the exception, rejecting and throttling.
func TestParamReplayIsSentinelGolangs(t *testing.T) {
	tr := vipTrace(250, 200, 60)
	throttle := vipRule(200)
	throttle.ControlBehavior, throttle.MaxQueueingTimeMs = core.Throttling, 20
	for _, rule := range []core.HotParamRule{vipRule(200), withException(vipRule(200), tr.Value, 300), withException(vipRule(200), tr.Value, 240), throttle} {
		run, err := replayParam(&tr, rule, nil)
		if err != nil {
			t.Fatal(err)
		}
		if sg := sentinelParamPasses(t, &tr, rule); run.m.Passed != sg {
			t.Errorf("rule %+v: replay passes %d, sentinel-golang %d", rule, run.m.Passed, sg)
		}
		if run.m.Passed+run.m.Blocked != 2*60*125+9*int64((120+3)/7) {
			t.Errorf("rule %+v: %d calls replayed", rule, run.m.Passed+run.m.Blocked)
		}
		// 250 a second against 200 (or 240) blocks, queued or not; 300
		// does not.
		if limited := rule.SpecificItems[tr.Value] != 300; limited != (run.m.Blocked > 0) {
			t.Errorf("rule %+v: %d blocked", rule, run.m.Blocked)
		}
	}
}

func TestCompareParam(t *testing.T) {
	tr := vipTrace(250, 200, 60)
	cur := vipRule(200)
	res, err := CompareParam([]ParamCase{{Trace: &tr, Current: cur, Proposed: withException(cur, tr.Value, 300)}})
	if err != nil {
		t.Fatal(err)
	}
	offered := int64(2*60*125 + 9*((120+3)/7))
	if res.Offered != offered || res.Current.Passed+res.Current.Blocked != offered || res.Proposed.Blocked != 0 || res.Proposed.Passed != offered {
		t.Fatalf("%+v", res)
	}
	// 250 a second (259 in some) against 200: about 50 a second more,
	// never more than the exception's headroom.
	if res.Current.Passed < 200*59 || res.Current.Passed > 200*61 || res.AddedPeak < 50 || res.AddedPeak > 100 {
		t.Errorf("current passes %d, added peak %d", res.Current.Passed, res.AddedPeak)
	}
	if !res.Estimated || res.AddedInSpells != 0 {
		t.Errorf("estimated %v (a bucket did not list the value), added in spells %d", res.Estimated, res.AddedInSpells)
	}

	// While the resource's breaker was open from 0:20 to 0:30, the calls
	// the exception adds then went to a failing downstream.
	tr.Spells = []Span{{From: tr.Buckets[40].Start, To: tr.Buckets[60].Start}}
	res, err = CompareParam([]ParamCase{{Trace: &tr, Current: cur, Proposed: withException(cur, tr.Value, 300)}})
	if err != nil {
		t.Fatal(err)
	}
	if res.AddedInSpells < 10*40 || res.AddedInSpells > 10*70 || res.SpellInstance != "order-1" {
		t.Errorf("added while open: %d on %q", res.AddedInSpells, res.SpellInstance)
	}

	// A restart starts the value's statistics again: the replay's counts
	// stay whole.
	tr.Spells, tr.Restarts = nil, []int64{tr.Buckets[30].Start}
	if res, err = CompareParam([]ParamCase{{Trace: &tr, Current: cur, Proposed: cur}}); err != nil || res.Current != res.Proposed || res.AddedPeak != 0 {
		t.Errorf("the same rule twice: %+v, %v", res, err)
	}

	conc := cur
	conc.MetricType = core.HotParamConcurrency
	if _, err := CompareParam([]ParamCase{{Trace: &tr, Current: conc, Proposed: conc}}); !errors.Is(err, ErrConcurrency) {
		t.Errorf("concurrency rule: %v", err)
	}
	huge := ParamTrace{Instance: "x", Value: "v"}
	for i := range 100 {
		huge.Buckets = append(huge.Buckets, ParamBucket{Start: int64(i) * 1000, Ms: 1000, Pass: MaxCallsPerBucket, Listed: true})
	}
	if _, err := CompareParam([]ParamCase{{Trace: &huge, Current: cur, Proposed: cur}}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a trace over MaxCalls: %v", err)
	}
}
