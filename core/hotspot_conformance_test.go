package core

import (
	"container/heap"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	sgapi "github.com/alibaba/sentinel-golang/api"
	sgbase "github.com/alibaba/sentinel-golang/core/base"
	sgcb "github.com/alibaba/sentinel-golang/core/circuitbreaker"
	sgflow "github.com/alibaba/sentinel-golang/core/flow"
	sghot "github.com/alibaba/sentinel-golang/core/hotspot"
	sgstat "github.com/alibaba/sentinel-golang/core/stat"
	sglog "github.com/alibaba/sentinel-golang/logging"
	sgutil "github.com/alibaba/sentinel-golang/util"

	"github.com/sentinel-top/sentinel-top/internal/racetest"
)

// The hot-parameter conformance tests drive sentinel-golang v1.0.4
// (api.Entry with WithArgs and WithAttachments, through its default slot
// chain's order: flow, hotspot, circuit breaker, then the statistic slots)
// and a core Guard (EntryWithParam, EntryWithParams) through the same seeded
// random sequences on one virtual clock, with entries in flight that exit
// later, and require the same decision and the same throttling wait at every
// step.
//
// sentinel-golang's rule managers and clock are global: these tests must
// not run in parallel with anything else that uses them.

const (
	hotConfSeeds = 300 // sequences per behaviour
	hotConfSteps = 400 // entries per sequence
)

// hotConfID is a named string type: both sides track it apart from string.
type hotConfID string

// hotConfPool draws a sequence's parameter values: a few hot ones and a
// tail. Values of different kinds never read as the same text, so that
// SpecificItems (text keys in core, typed keys in sentinel-golang) match the
// same values on both sides.
type hotConfPool struct {
	values []any
	hot    int // the first hot values get most of the traffic
}

func newHotConfPool(r *rand.Rand, n int, mixedKinds bool) *hotConfPool {
	p := &hotConfPool{hot: min(n, 1+r.IntN(4))}
	for i := range n {
		kind := 0
		if mixedKinds {
			kind = r.IntN(7)
		} else if r.IntN(2) == 0 {
			kind = 1
		}
		var v any
		switch kind {
		case 0:
			v = fmt.Sprintf("u%d", i)
		case 1:
			v = i
		case 2:
			v = int64(1_000_000 + i)
		case 3:
			v = float64(i) + 0.5
		case 4:
			v = hotConfID(fmt.Sprintf("n%d", i))
		case 5:
			v = uint8(200 + i%50) // may repeat: the same value twice in the pool
		default:
			v = i%2 == 0
		}
		p.values = append(p.values, v)
	}
	return p
}

func (p *hotConfPool) draw(r *rand.Rand) any {
	if r.IntN(100) < 60 {
		return p.values[r.IntN(p.hot)]
	}
	return p.values[r.IntN(len(p.values))]
}

// hotConfSpecific gives some of the pool's values thresholds of their own:
// core's keys are the values' text, sentinel-golang's the values.
func hotConfSpecific(r *rand.Rand, p *hotConfPool, scale int64) (map[string]int64, map[any]int64) {
	ours, theirs := map[string]int64{}, map[any]int64{}
	for range 1 + r.IntN(4) {
		v := p.values[r.IntN(min(len(p.values), p.hot+3))]
		th := flowConfPick(r, 0, 1, 2, scale, 3*scale, r.Int64N(scale+1))
		ours[fmt.Sprint(v)] = th
		theirs[v] = th
	}
	return ours, theirs
}

// hotConfRule draws one rule of the given metric and behaviour.
func hotConfRule(r *rand.Rand, metric HotParamMetric, behavior ControlBehavior) HotParamRule {
	rule := HotParamRule{MetricType: metric, ControlBehavior: behavior}
	switch {
	case metric == HotParamConcurrency:
		rule.Threshold = flowConfPick[int64](r, 0, 1, 1, 2, 3, 5, 8)
	case behavior == Reject:
		rule.Threshold = flowConfPick(r, 0, 1, 2, 3, 5, 10, 20, 1+r.Int64N(50))
		rule.BurstCount = flowConfPick(r, 0, 0, 0, 1, 2, 5, r.Int64N(20))
		rule.DurationInSec = flowConfPick[int64](r, 1, 1, 1, 2, 3, 5, 10)
	default:
		rule.Threshold = flowConfPick(r, 0, 1, 2, 3, 4, 5, 7, 10, 20, 33, 100, 1000, 1+r.Int64N(50))
		rule.DurationInSec = flowConfPick[int64](r, 1, 1, 1, 2, 3, 5)
		rule.MaxQueueingTimeMs = flowConfPick(r, 0, 1, 10, 100, 250, 500, 1000, 3000, r.Int64N(2000))
	}
	return rule
}

func hotConfAnyRule(r *rand.Rand) HotParamRule {
	switch r.IntN(3) {
	case 0:
		return hotConfRule(r, HotParamQPS, Reject)
	case 1:
		return hotConfRule(r, HotParamQPS, Throttling)
	}
	return hotConfRule(r, HotParamConcurrency, ControlBehavior(r.IntN(2)))
}

// hotConfSeq is one drawn sequence: rules, the value pool, the extra rules
// of other kinds, and how entries carry their parameters.
type hotConfSeq struct {
	rules    []HotParamRule
	specific []map[any]int64 // sentinel-golang's SpecificItems, per rule
	pool     *hotConfPool
	flows    []FlowRule
	breakers []BreakerRule
	shaped   bool // entries carry several args and attachments (EntryWithParams)
	back     bool // the clock jumps back now and then
}

type hotConfCase struct {
	name     string
	seedBase uint64
	draw     func(r *rand.Rand) hotConfSeq
}

func hotConfOne(rule func(r *rand.Rand) HotParamRule, values func(r *rand.Rand) int, capacity func(r *rand.Rand) int64, specific bool) func(r *rand.Rand) hotConfSeq {
	return func(r *rand.Rand) hotConfSeq {
		s := hotConfSeq{pool: newHotConfPool(r, values(r), false), shaped: r.IntN(4) == 0}
		rule := rule(r)
		rule.ParamsMaxCapacity = capacity(r)
		var theirs map[any]int64
		if specific {
			rule.SpecificItems, theirs = hotConfSpecific(r, s.pool, max(rule.Threshold, 3))
		}
		s.rules, s.specific = []HotParamRule{rule}, []map[any]int64{theirs}
		return s
	}
}

func hotConfFew(r *rand.Rand) int     { return 1 + r.IntN(12) }
func hotConfMany(r *rand.Rand) int    { return 40 + r.IntN(260) }
func hotConfNoCap(r *rand.Rand) int64 { return flowConfPick[int64](r, 0, 0, 0, 50) }
func hotConfSmallCap(r *rand.Rand) int64 {
	return flowConfPick(r, 1, 2, 3, 5, 8, 13, 20, 30, 1+r.Int64N(40))
}

var hotConfCases = []hotConfCase{
	{name: "QPSReject", seedBase: 11_000_000,
		draw: hotConfOne(func(r *rand.Rand) HotParamRule { return hotConfRule(r, HotParamQPS, Reject) }, hotConfFew, hotConfNoCap, false)},
	{name: "QPSThrottling", seedBase: 12_000_000,
		draw: hotConfOne(func(r *rand.Rand) HotParamRule { return hotConfRule(r, HotParamQPS, Throttling) }, hotConfFew, hotConfNoCap, false)},
	{name: "Concurrency", seedBase: 13_000_000,
		draw: hotConfOne(func(r *rand.Rand) HotParamRule {
			return hotConfRule(r, HotParamConcurrency, ControlBehavior(r.IntN(2)))
		}, hotConfFew, hotConfNoCap, false)},
	{name: "SpecificItems", seedBase: 14_000_000,
		draw: func(r *rand.Rand) hotConfSeq {
			s := hotConfOne(hotConfAnyRule, hotConfFew, hotConfNoCap, true)(r)
			s.pool = newHotConfPool(r, len(s.pool.values), true)
			s.rules[0].SpecificItems, s.specific[0] = hotConfSpecific(r, s.pool, max(s.rules[0].Threshold, 3))
			return s
		}},
	{name: "CapacityEviction", seedBase: 15_000_000,
		draw: hotConfOne(hotConfAnyRule, hotConfMany, hotConfSmallCap, false)},
	// Several rules on one resource, each reading its own parameter, with
	// specific items, small caches, and sometimes a flow rule and a
	// breaker around them: proves the slot order and where waits happen.
	{name: "MixedRulesFlowAndBreaker", seedBase: 16_000_000,
		draw: func(r *rand.Rand) hotConfSeq {
			s := hotConfSeq{pool: newHotConfPool(r, 2+r.IntN(60), true), shaped: true}
			for range 2 + r.IntN(2) {
				rule := hotConfAnyRule(r)
				rule.ParamsMaxCapacity = flowConfPick(r, 0, 0, hotConfSmallCap(r))
				var theirs map[any]int64
				if r.IntN(2) == 0 {
					rule.SpecificItems, theirs = hotConfSpecific(r, s.pool, max(rule.Threshold, 3))
				}
				s.rules, s.specific = append(s.rules, rule), append(s.specific, theirs)
			}
			if r.IntN(2) == 0 {
				s.flows = []FlowRule{flowConfPick(r, flowConfDirectReject(r), flowConfThrottling(r))}
			}
			if r.IntN(2) == 0 {
				s.breakers = []BreakerRule{{Strategy: ErrorCount, Threshold: float64(1 + r.IntN(3)),
					StatIntervalMs: 1000, RetryTimeoutMs: flowConfPick[uint32](r, 200, 1000, 3000), ProbeNum: uint64(r.IntN(2))}}
			}
			return s
		}},
	{name: "ClockBackwards", seedBase: 17_000_000,
		draw: func(r *rand.Rand) hotConfSeq {
			s := hotConfOne(hotConfAnyRule, hotConfFew, hotConfNoCap, r.IntN(2) == 0)(r)
			s.back = true
			return s
		}},
}

// hotConfSetup installs the virtual clock and sentinel-golang's default
// slot chain order (without system and isolation rules, which are not
// loaded), and restores the global state when the test ends.
func hotConfSetup(t *testing.T) (*flowConfClock, *sgbase.SlotChain) {
	t.Helper()
	clock := &flowConfClock{res: int64(time.Millisecond)}
	level := sglog.GetGlobalLoggerLevel()
	sglog.ResetGlobalLoggerLevel(sglog.ErrorLevel + 1)
	sgutil.SetClock(clock)
	t.Cleanup(func() {
		if err := sghot.ClearRules(); err != nil {
			t.Errorf("clear hotspot rules: %v", err)
		}
		_ = sgflow.ClearRules()
		_ = sgcb.ClearRules()
		sgutil.SetClock(sgutil.NewRealClock())
		sglog.ResetGlobalLoggerLevel(level)
	})
	sc := sgbase.NewSlotChain()
	sc.AddStatPrepareSlot(sgstat.DefaultResourceNodePrepareSlot)
	sc.AddRuleCheckSlot(sgflow.DefaultSlot)
	sc.AddRuleCheckSlot(sghot.DefaultSlot)
	sc.AddRuleCheckSlot(sgcb.DefaultSlot)
	sc.AddStatSlot(sgstat.DefaultSlot)
	sc.AddStatSlot(sgflow.DefaultStandaloneStatSlot)
	sc.AddStatSlot(sghot.DefaultConcurrencyStatSlot)
	sc.AddStatSlot(sgcb.DefaultMetricStatSlot)
	return clock, sc
}

func hotConfSentinelRule(r HotParamRule, specific map[any]int64) *sghot.Rule {
	return &sghot.Rule{ID: r.ID, Resource: r.Resource, MetricType: sghot.MetricType(r.MetricType),
		ControlBehavior: sghot.ControlBehavior(r.ControlBehavior), ParamIndex: r.ParamIndex, ParamKey: r.ParamKey,
		Threshold: r.Threshold, MaxQueueingTimeMs: r.MaxQueueingTimeMs, BurstCount: r.BurstCount,
		DurationInSec: r.DurationInSec, ParamsMaxCapacity: r.ParamsMaxCapacity, SpecificItems: specific}
}

// hotConfGap draws the time to the next entry: bursts, gaps of a few ms,
// landings on and next to whole seconds (where buckets refill), long idle
// spells, and now and then a jump back.
func hotConfGap(r *rand.Rand, clock *flowConfClock, back bool) int64 {
	const ms = int64(time.Millisecond)
	if back && r.IntN(25) == 0 {
		return -(1 + r.Int64N(3000)) * ms
	}
	switch p := r.IntN(100); {
	case p < 35:
		return 0
	case p < 60:
		return (1 + r.Int64N(30)) * ms
	case p < 75:
		return (30 + r.Int64N(400)) * ms
	case p < 88:
		step := flowConfPick[int64](r, 1000, 2000, 5000) * ms
		return step - clock.ns.Load()%step + flowConfPick(r, 0, 0, -ms, ms, 2*ms)
	case p < 97:
		return (500 + r.Int64N(3000)) * ms
	default:
		return (3000 + r.Int64N(12000)) * ms
	}
}

// hotConfParams lays the rules' parameters out as an entry would carry
// them: one argument, or (shaped) several arguments and attachments from
// which each rule picks its own, some missing, some nil.
func hotConfParams(r *rand.Rand, s *hotConfSeq) ([]any, map[string]any) {
	if !s.shaped {
		return []any{s.pool.draw(r)}, nil
	}
	args := make([]any, r.IntN(4))
	for i := range args {
		if r.IntN(8) != 0 {
			args[i] = s.pool.draw(r)
		}
	}
	var att map[string]any
	if r.IntN(2) == 0 {
		att = map[string]any{}
		for _, k := range []string{"user", "tenant", "other"} {
			switch r.IntN(6) {
			case 0: // absent
			case 1:
				att[k] = nil // present but nil: the rule falls back to its index
			default:
				att[k] = s.pool.draw(r)
			}
		}
	}
	return args, att
}

// hotConfPlaceParams gives shaped sequences' rules their parameter sources.
func hotConfPlaceParams(r *rand.Rand, s *hotConfSeq) {
	if !s.shaped {
		return
	}
	for i := range s.rules {
		switch r.IntN(4) {
		case 0:
			s.rules[i].ParamIndex = r.IntN(3)
		case 1:
			s.rules[i].ParamIndex = -1 - r.IntN(2)
		case 2:
			s.rules[i].ParamKey = flowConfPick(r, "user", "tenant", "absent")
			s.rules[i].ParamIndex = flowConfPick(r, 0, 0, -1)
		}
	}
}

type hotConfInflight struct {
	seq  int
	end  int64
	err  error
	sg   *sgbase.SentinelEntry
	ours *Entry
}

type hotConfHeap []hotConfInflight

func (h hotConfHeap) Len() int { return len(h) }
func (h hotConfHeap) Less(i, j int) bool {
	return h[i].end < h[j].end || h[i].end == h[j].end && h[i].seq < h[j].seq
}
func (h hotConfHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *hotConfHeap) Push(x any)   { *h = append(*h, x.(hotConfInflight)) }
func (h *hotConfHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

type hotConfTally struct{ pass, block, waited, values int }

func TestHotParamConformance(t *testing.T) {
	clock, sc := hotConfSetup(t)
	run := flowConfRun.Add(1)
	total := 0
	for _, tc := range hotConfCases {
		t.Run(tc.name, func(t *testing.T) {
			var tally hotConfTally
			seeds := uint64(racetest.Share(hotConfSeeds, 10))
			for i := range seeds {
				seed := tc.seedBase + i
				if msg := hotConfSequence(clock, sc, tc, seed, run, &tally); msg != "" {
					t.Fatalf("%s seed=%d: %s", tc.name, seed, msg)
				}
			}
			total += tally.pass + tally.block
			t.Logf("%d sequences, %d entries compared: %d passed (%d after a wait), %d blocked; values seen per sequence: %.1f",
				seeds, tally.pass+tally.block, tally.pass, tally.waited, tally.block, float64(tally.values)/float64(seeds))
			if tally.pass == 0 || tally.block == 0 {
				t.Errorf("sequences never both pass and block: %+v", tally)
			}
			if tc.name == "QPSThrottling" && tally.waited == 0 {
				t.Errorf("no throttling wait: %+v", tally)
			}
		})
	}
	t.Logf("%d entries compared in all", total)
}

// hotConfSequence runs one seeded sequence and describes the first
// difference, or returns "".
func hotConfSequence(clock *flowConfClock, sc *sgbase.SlotChain, tc hotConfCase, seed uint64, run int64, tally *hotConfTally) string {
	r := rand.New(rand.NewPCG(seed, 0x407_9a7a))
	res := fmt.Sprintf("hotconf-%d-%s-%d", run, tc.name, seed)
	s := tc.draw(r)
	hotConfPlaceParams(r, &s)
	start := (1_700_000_000_000 + r.Int64N(1_000_000_000)) * int64(time.Millisecond)
	if r.IntN(2) == 0 {
		start -= start % int64(time.Second)
	}
	clock.ns.Store(start)

	guard := NewGuard(GuardOptions{Clock: flowConfGuardClock{clock}})
	sgRules := make([]*sghot.Rule, len(s.rules))
	for i := range s.rules {
		s.rules[i].Resource, s.rules[i].ID = res, fmt.Sprint(i)
		sgRules[i] = hotConfSentinelRule(s.rules[i], s.specific[i])
	}
	for i := range s.flows {
		s.flows[i].Resource = res
	}
	for i := range s.breakers {
		s.breakers[i].Resource = res
	}
	if err := errors.Join(guard.LoadHotParamRules(s.rules), guard.LoadFlowRules(s.flows), guard.LoadBreakerRules(s.breakers)); err != nil {
		return fmt.Sprintf("core load: %v", err)
	}
	if err := hotConfLoadSentinel(sgRules, s.flows, s.breakers); err != nil {
		return err.Error()
	}
	if got := len(sghot.GetRulesOfResource(res)); got != len(s.rules) {
		return fmt.Sprintf("sentinel-golang accepted %d of %d rules %+v", got, len(s.rules), s.rules)
	}

	var inflight hotConfHeap
	var trace [10]string
	seen := map[any]bool{}
	for step := range hotConfSteps {
		clock.ns.Add(hotConfGap(r, clock, s.back))
		at := clock.ns.Load()
		for inflight.Len() > 0 && inflight[0].end <= at {
			f := heap.Pop(&inflight).(hotConfInflight)
			f.sg.Exit(sgbase.WithError(f.err))
			f.ours.Exit(f.err)
		}
		args, att := hotConfParams(r, &s)
		for _, a := range args {
			seen[a] = true
		}

		clock.slept.Store(0)
		opts := []sgapi.EntryOption{sgapi.WithSlotChain(sc), sgapi.WithArgs(args...)}
		if att != nil {
			sgAtt := make(map[any]any, len(att))
			for k, v := range att {
				sgAtt[k] = v
			}
			opts = append(opts, sgapi.WithAttachments(sgAtt))
		}
		sgEntry, blocked := sgapi.Entry(res, opts...)
		sgWait := clock.slept.Load()

		clock.ns.Store(at)
		clock.slept.Store(0)
		var ours *Entry
		var err error
		if s.shaped {
			ours, err = guard.EntryWithParams(res, Params{Args: args, Attachments: att})
		} else {
			ours, err = guard.EntryWithParam(res, args[0])
		}
		wait := clock.slept.Load()

		trace[step%len(trace)] = fmt.Sprintf("  step %d t=%d ms args=%v att=%v sentinel=%v/%v core=%v/%v",
			step, at/int64(time.Millisecond), args, att, blocked == nil, time.Duration(sgWait), err == nil, time.Duration(wait))
		if (blocked == nil) != (err == nil) || sgWait != wait {
			return fmt.Sprintf("first difference at step %d: sentinel pass=%v wait=%v, core pass=%v wait=%v (%v)\nrules: %+v\nflows: %+v\nbreakers: %+v\nlast steps:\n%s",
				step, blocked == nil, time.Duration(sgWait), err == nil, time.Duration(wait), err,
				s.rules, s.flows, s.breakers, hotConfTrace(trace[:], step))
		}
		if err != nil {
			tally.block++
			continue
		}
		tally.pass++
		if wait > 0 {
			tally.waited++
		}
		var fail error
		if r.IntN(5) == 0 {
			fail = errBusinessHot
		}
		rt := flowConfPick[int64](r, 0, 1, 5, 20, 100, 300, 1000, 2500) * int64(time.Millisecond)
		heap.Push(&inflight, hotConfInflight{seq: step, end: clock.ns.Load() + rt, err: fail, sg: sgEntry, ours: ours})
	}
	for inflight.Len() > 0 {
		f := heap.Pop(&inflight).(hotConfInflight)
		f.sg.Exit(sgbase.WithError(f.err))
		f.ours.Exit(f.err)
	}
	tally.values += len(seen)
	return ""
}

var errBusinessHot = errors.New("business error")

func hotConfLoadSentinel(hot []*sghot.Rule, flows []FlowRule, breakers []BreakerRule) error {
	if _, err := sghot.LoadRules(hot); err != nil {
		return fmt.Errorf("sentinel-golang hotspot LoadRules: %w", err)
	}
	sgFlows := make([]*sgflow.Rule, len(flows))
	for i, f := range flows {
		sgFlows[i] = flowConfSentinelRule(f)
	}
	if _, err := sgflow.LoadRules(sgFlows); err != nil {
		return fmt.Errorf("sentinel-golang flow LoadRules: %w", err)
	}
	sgBreakers := make([]*sgcb.Rule, len(breakers))
	for i, b := range breakers {
		sgBreakers[i] = &sgcb.Rule{Resource: b.Resource, Strategy: sgcb.Strategy(b.Strategy), RetryTimeoutMs: b.RetryTimeoutMs,
			StatIntervalMs: b.StatIntervalMs, Threshold: b.Threshold, ProbeNum: b.ProbeNum}
	}
	if _, err := sgcb.LoadRules(sgBreakers); err != nil {
		return fmt.Errorf("sentinel-golang circuitbreaker LoadRules: %w", err)
	}
	return nil
}

func hotConfTrace(ring []string, last int) string {
	var b strings.Builder
	for i := max(0, last-len(ring)+1); i <= last; i++ {
		b.WriteString(ring[i%len(ring)])
		b.WriteByte('\n')
	}
	return b.String()
}
