package core_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/alibaba/sentinel-golang/api"
	sgbase "github.com/alibaba/sentinel-golang/core/base"
	sghot "github.com/alibaba/sentinel-golang/core/hotspot"
	sgstat "github.com/alibaba/sentinel-golang/core/stat"
	"github.com/alibaba/sentinel-golang/logging"
	sgutil "github.com/alibaba/sentinel-golang/util"

	"github.com/sentinel-top/sentinel-top/core"
)

// Hot-parameter benchmarks of core beside sentinel-golang v1.0.4's hotspot
// package, in the same run. Every call passes: thresholds are too high to
// block, and the values (strings the caller built, as a service's user IDs
// are) are already tracked. docs/BENCHMARKS.md has the command and figures.

// hotBenchValues is how many values the calls rotate through.
const hotBenchValues = 100

func hotBenchStrings() []string {
	s := make([]string, hotBenchValues)
	for i := range s {
		s[i] = fmt.Sprintf("user-%d", i)
	}
	return s
}

// sgWallClock is sentinel-golang's clock reading time.Now on every call,
// whether or not its time ticker runs (the cached-clock benchmarks start it
// for the rest of the process).
type sgWallClock struct{}

func (sgWallClock) Now() time.Time            { return time.Now() }
func (sgWallClock) Sleep(d time.Duration)     { time.Sleep(d) }
func (sgWallClock) CurrentTimeMillis() uint64 { return uint64(time.Now().UnixMilli()) }
func (sgWallClock) CurrentTimeNano() uint64   { return uint64(time.Now().UnixNano()) }

func useSentinelClockForBench(b *testing.B, c sgutil.Clock) {
	old := sgutil.CurrentClock()
	sgutil.SetClock(c)
	b.Cleanup(func() { sgutil.SetClock(old) })
}

var hotBenchRules = []struct {
	name string
	rule core.HotParamRule
}{
	{"qps-reject", core.HotParamRule{MetricType: core.HotParamQPS, Threshold: 1 << 50, DurationInSec: 1}},
	{"qps-throttling", core.HotParamRule{MetricType: core.HotParamQPS, ControlBehavior: core.Throttling,
		Threshold: 1 << 50, DurationInSec: 1, MaxQueueingTimeMs: 1000}},
	{"concurrency", core.HotParamRule{MetricType: core.HotParamConcurrency, Threshold: 1 << 50}},
}

func hotBenchSentinelRule(r core.HotParamRule) *sghot.Rule {
	return &sghot.Rule{Resource: r.Resource, MetricType: sghot.MetricType(r.MetricType),
		ControlBehavior: sghot.ControlBehavior(r.ControlBehavior), Threshold: r.Threshold,
		MaxQueueingTimeMs: r.MaxQueueingTimeMs, DurationInSec: r.DurationInSec, ParamsMaxCapacity: r.ParamsMaxCapacity}
}

// hotBenchSentinel loads rule into sentinel-golang and returns a slot chain
// with what hot-parameter rules need (the default chain's order).
func hotBenchSentinel(b *testing.B, rule core.HotParamRule) *sgbase.SlotChain {
	logging.ResetGlobalLoggerLevel(logging.ErrorLevel)
	if _, err := sghot.LoadRules([]*sghot.Rule{hotBenchSentinelRule(rule)}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = sghot.ClearRules() })
	sc := sgbase.NewSlotChain()
	sc.AddStatPrepareSlot(sgstat.DefaultResourceNodePrepareSlot)
	sc.AddRuleCheckSlot(sghot.DefaultSlot)
	sc.AddStatSlot(sgstat.DefaultSlot)
	sc.AddStatSlot(sghot.DefaultConcurrencyStatSlot)
	return sc
}

// hotBenchSentinelCheck loads rule into sentinel-golang on a stub clock
// reading now and returns its hot-parameter slot's check of one call with
// one argument: true when it passes.
func hotBenchSentinelCheck(b *testing.B, rule core.HotParamRule, now int64) func(v any) bool {
	useSentinelClockForBench(b, &sgStubClock{base: uint64(now)})
	hotBenchSentinel(b, rule)
	args := make([]any, 1)
	ctx := &sgbase.EntryContext{Resource: sgbase.NewResourceWrapper(rule.Resource, sgbase.ResTypeCommon, sgbase.Inbound),
		Input: &sgbase.SentinelInput{BatchCount: 1, Args: args}}
	return func(v any) bool {
		args[0] = v
		r := sghot.DefaultSlot.Check(ctx)
		return r == nil || !r.IsBlocked()
	}
}

// BenchmarkHotParamEntryExit is a guarded call with one parameter:
// Guard.EntryWithParam + Exit beside api.Entry(WithArgs) + Exit. Both read
// time.Now on every clock read.
func BenchmarkHotParamEntryExit(b *testing.B) { benchHotEntryExit(b, false) }

// BenchmarkHotParamEntryExitParallel is the same under RunParallel, both
// goroutines on one resource and one rule.
func BenchmarkHotParamEntryExitParallel(b *testing.B) { benchHotEntryExit(b, true) }

func benchHotEntryExit(b *testing.B, parallel bool) {
	vals := hotBenchStrings()
	for _, rc := range hotBenchRules {
		if parallel && rc.name != "qps-reject" {
			continue
		}
		rule := rc.rule
		rule.Resource = "hotbench-" + rc.name
		b.Run("rule="+rc.name+"/impl=core", func(b *testing.B) {
			g := core.NewGuard(core.GuardOptions{Clock: wallClock{core.NewRealClock()}})
			if err := g.LoadHotParamRules([]core.HotParamRule{rule}); err != nil {
				b.Fatal(err)
			}
			i := 0
			serialAndParallel(b, parallel, func() {
				i++ // racy under RunParallel: any value will do
				e, err := g.EntryWithParam(rule.Resource, vals[i%hotBenchValues])
				if err != nil {
					b.Fatal(err)
				}
				e.Exit(nil)
			})
		})
		b.Run("rule="+rc.name+"/impl=sentinel-golang", func(b *testing.B) {
			useSentinelClockForBench(b, sgWallClock{})
			sc := hotBenchSentinel(b, rule)
			i := 0
			serialAndParallel(b, parallel, func() {
				i++
				e, blk := api.Entry(rule.Resource, api.WithSlotChain(sc), api.WithArgs(vals[i%hotBenchValues]))
				if blk != nil {
					b.Fatal(blk)
				}
				e.Exit()
			})
		})
	}
}

// BenchmarkHotParamCheck is the decision alone, with the time given:
// HotParamController.Check beside sentinel-golang's hotspot slot Check on a
// reused context (argument extraction and PerformChecking), its clock a
// stub that returns a counter.
func BenchmarkHotParamCheck(b *testing.B) {
	vals := hotBenchStrings()
	now := time.Now().UnixMilli()
	for _, rc := range hotBenchRules {
		rule := rc.rule
		rule.Resource = "hotcheck-" + rc.name
		b.Run("rule="+rc.name+"/impl=core", func(b *testing.B) {
			c, err := core.NewHotParamController(rule)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				if ok, _ := c.Check(now+int64(i>>16), vals[i%hotBenchValues], 1); !ok {
					b.Fatal("blocked")
				}
			}
		})
		b.Run("rule="+rc.name+"/impl=sentinel-golang", func(b *testing.B) {
			check := hotBenchSentinelCheck(b, rule, now)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				if !check(vals[i%hotBenchValues]) {
					b.Fatal("blocked")
				}
			}
		})
	}
}

// BenchmarkHotParamNewValues is the cost of churn: every call brings a value
// the cache has not seen (or has forgotten), so the least recent one makes
// room for it. Both sides allocate here.
func BenchmarkHotParamNewValues(b *testing.B) {
	rule := core.HotParamRule{Resource: "hotchurn", MetricType: core.HotParamQPS, Threshold: 1 << 50, DurationInSec: 1, ParamsMaxCapacity: 1000}
	vals := make([]string, 100_000)
	for i := range vals {
		vals[i] = fmt.Sprintf("user-%d", i)
	}
	now := time.Now().UnixMilli()
	b.Run("impl=core", func(b *testing.B) {
		c, err := core.NewHotParamController(rule)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			c.Check(now, vals[i%len(vals)], 1)
		}
	})
	b.Run("impl=sentinel-golang", func(b *testing.B) {
		check := hotBenchSentinelCheck(b, rule, now)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			check(vals[i%len(vals)])
		}
	})
}
