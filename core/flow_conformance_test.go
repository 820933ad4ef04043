package core

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sgapi "github.com/alibaba/sentinel-golang/api"
	sgbase "github.com/alibaba/sentinel-golang/core/base"
	sgflow "github.com/alibaba/sentinel-golang/core/flow"
	sgstat "github.com/alibaba/sentinel-golang/core/stat"
	sglog "github.com/alibaba/sentinel-golang/logging"
	sgutil "github.com/alibaba/sentinel-golang/util"

	"github.com/sentinel-top/sentinel-top/internal/racetest"
)

// The flow conformance tests drive sentinel-golang v1.0.4 (api.Entry through
// a slot chain of only what flow control needs) and FlowController (driven
// the way a Guard drives it) through the same seeded random request
// sequences on one virtual clock, and require identical decisions and
// identical throttling waits at every step.
//
// sentinel-golang's rule manager, resource nodes and clock are global: these
// tests must not run in parallel with anything else that uses them.

const (
	// flowConfSeeds: sequences per behaviour, every tenth under the race
	// detector (racetest.Share), which finds nothing in these
	// single-goroutine sequences and makes them ten times slower; CI plays
	// them all without it (.ci/run) besides the -race run.
	flowConfSeeds = 300
	flowConfSteps = 400 // entries per sequence
)

// flowConfRun makes resource names unique across -count runs, since
// sentinel-golang keeps resource nodes for the life of the process.
var flowConfRun atomic.Int64

// flowConfClock is the shared virtual clock: sentinel-golang reads it through
// util.SetClock and the FlowController side through its accessors. Sleep
// advances it (and counts the time slept), so a throttled entry comes back
// later on both sides. Readings are truncated to res, which models a clock
// of millisecond resolution when res is 1 ms.
type flowConfClock struct {
	ns    atomic.Int64
	slept atomic.Int64
	res   int64
}

var _ sgutil.Clock = (*flowConfClock)(nil)

func (c *flowConfClock) readNano() int64 {
	n := c.ns.Load()
	return n - n%c.res
}
func (c *flowConfClock) readMilli() int64 { return c.readNano() / int64(time.Millisecond) }

func (c *flowConfClock) Now() time.Time            { return time.Unix(0, c.readNano()) }
func (c *flowConfClock) CurrentTimeMillis() uint64 { return uint64(c.readMilli()) }
func (c *flowConfClock) CurrentTimeNano() uint64   { return uint64(c.readNano()) }
func (c *flowConfClock) Sleep(d time.Duration) {
	if d <= 0 {
		return
	}
	c.ns.Add(int64(d))
	c.slept.Add(int64(d))
}

// flowConfGuard drives FlowControllers exactly as core's Guard does.
type flowConfGuard struct {
	clock *flowConfClock
	stat  *MetricWindow
	ctls  []*FlowController
	milli bool // use Check (ms) rather than CheckNano
}

func (g *flowConfGuard) entry(batch int64) bool {
	for _, c := range g.ctls {
		var pass bool
		var wait time.Duration
		if g.milli {
			pass, wait = c.Check(g.clock.readMilli(), batch)
		} else {
			pass, wait = c.CheckNano(g.clock.readNano(), batch)
		}
		if !pass {
			if b := g.stat.Current(g.clock.readMilli()); b != nil {
				b.AddBlock(batch)
			}
			return false
		}
		if wait > 0 {
			g.clock.Sleep(wait) // before the next rule is checked, as sentinel-golang does
		}
	}
	now := g.clock.readMilli() // after every wait
	if b := g.stat.Current(now); b != nil {
		b.AddPass(batch)
	}
	for _, c := range g.ctls {
		c.OnPass(now, batch)
	}
	return true
}

func flowConfSentinelRule(r FlowRule) *sgflow.Rule {
	return &sgflow.Rule{
		ID:                     r.ID,
		Resource:               r.Resource,
		TokenCalculateStrategy: sgflow.TokenCalculateStrategy(r.TokenCalculateStrategy),
		ControlBehavior:        sgflow.ControlBehavior(r.ControlBehavior),
		Threshold:              r.Threshold,
		MaxQueueingTimeMs:      r.MaxQueueingTimeMs,
		WarmUpPeriodSec:        r.WarmUpPeriodSec,
		WarmUpColdFactor:       r.WarmUpColdFactor,
		StatIntervalInMs:       r.StatIntervalInMs,
	}
}

// flowConfSetup installs the virtual clock and the slot chain, and restores
// sentinel-golang's global state when the test ends.
func flowConfSetup(t *testing.T) (*flowConfClock, *sgbase.SlotChain) {
	t.Helper()
	clock := &flowConfClock{res: 1}
	level := sglog.GetGlobalLoggerLevel()
	sglog.ResetGlobalLoggerLevel(sglog.ErrorLevel + 1) // silent: a backwards clock makes it log every dropped sample
	sgutil.SetClock(clock)
	t.Cleanup(func() {
		if err := sgflow.ClearRules(); err != nil {
			t.Errorf("clear flow rules: %v", err)
		}
		sgutil.SetClock(sgutil.NewRealClock())
		sglog.ResetGlobalLoggerLevel(level)
	})
	sc := sgbase.NewSlotChain()
	sc.AddStatPrepareSlot(sgstat.DefaultResourceNodePrepareSlot)
	sc.AddRuleCheckSlot(sgflow.DefaultSlot)
	sc.AddStatSlot(sgstat.DefaultSlot)
	sc.AddStatSlot(sgflow.DefaultStandaloneStatSlot)
	return clock, sc
}

// flowConfCase is one behaviour: it draws the rules of a sequence.
type flowConfCase struct {
	name     string
	seedBase uint64
	rules    func(r *rand.Rand) []FlowRule
	maxBatch int64
	// backwards lets the clock jump back now and then, once the sequence is
	// past the first resource-window span (sentinel-golang pre-fills its
	// rings with buckets from creation time on, core starts them empty: the
	// two differ only for times before creation plus one window span).
	backwards bool
}

func flowConfPick[T any](r *rand.Rand, xs ...T) T { return xs[r.IntN(len(xs))] }

// flowConfThreshold draws from edge values (0, fractions, small integers) and
// from arbitrary floats.
func flowConfThreshold(r *rand.Rand, scale float64) float64 {
	switch r.IntN(4) {
	case 0:
		return flowConfPick(r, 0, 0.3, 0.5, 1, 1.5, 2, 2.5, 3, 4.99, 5, 7, 10, 13.7)
	case 1:
		return float64(r.IntN(int(scale)) + 1)
	case 2:
		return float64(r.IntN(int(scale*10))+1) / 10
	default:
		return r.Float64() * scale
	}
}

func flowConfDirectReject(r *rand.Rand) FlowRule {
	return FlowRule{
		TokenCalculateStrategy: Direct, ControlBehavior: Reject,
		Threshold:        flowConfThreshold(r, 30),
		StatIntervalInMs: flowConfPick[uint32](r, 0, 0, 0, 1000),
	}
}

func flowConfCustomReject(r *rand.Rand) FlowRule {
	interval := flowConfPick[uint32](r, 1, 100, 200, 300, 499, 500, 750, 1250, 1500, 2000, 2500, 2600, 3700, 9999,
		3000, 4000, 5000, 7000, 10000, 12000, 20000, 60000)
	return FlowRule{
		TokenCalculateStrategy: Direct, ControlBehavior: Reject,
		Threshold:        flowConfThreshold(r, 1+float64(interval)/100),
		StatIntervalInMs: interval,
	}
}

func flowConfThrottling(r *rand.Rand) FlowRule {
	th := flowConfThreshold(r, 40)
	if r.IntN(8) == 0 {
		th = flowConfPick[float64](r, 250, 1000, 3000, 333.3)
	}
	return FlowRule{
		TokenCalculateStrategy: Direct, ControlBehavior: Throttling,
		Threshold:         th,
		MaxQueueingTimeMs: flowConfPick[uint32](r, 0, 1, 10, 100, 333, 500, 1000, 2000, 5000),
		StatIntervalInMs:  flowConfPick[uint32](r, 0, 0, 0, 1000, 100, 500, 2000, 3000),
	}
}

func flowConfWarmUp(r *rand.Rand, behavior ControlBehavior) FlowRule {
	th := flowConfThreshold(r, 60)
	if r.IntN(6) == 0 {
		th = flowConfPick[float64](r, 100, 200, 0.1, 0.9)
	}
	rule := FlowRule{
		TokenCalculateStrategy: WarmUp, ControlBehavior: behavior,
		Threshold:        th,
		WarmUpPeriodSec:  flowConfPick[uint32](r, 1, 2, 3, 5, 10, 20),
		WarmUpColdFactor: flowConfPick[uint32](r, 0, 0, 2, 3, 4, 10),
		StatIntervalInMs: flowConfPick[uint32](r, 0, 0, 0, 0, 1000, 2000, 300, 500, 1250, 3000),
	}
	if behavior == Throttling {
		rule.MaxQueueingTimeMs = flowConfPick[uint32](r, 0, 10, 100, 500, 1000, 3000)
	}
	return rule
}

var flowConfCases = []flowConfCase{
	{name: "DirectRejectDefaultInterval", seedBase: 1_000_000, maxBatch: 1,
		rules: func(r *rand.Rand) []FlowRule { return []FlowRule{flowConfDirectReject(r)} }},
	{name: "DirectRejectCustomInterval", seedBase: 2_000_000, maxBatch: 1,
		rules: func(r *rand.Rand) []FlowRule { return []FlowRule{flowConfCustomReject(r)} }},
	{name: "DirectThrottling", seedBase: 3_000_000, maxBatch: 1,
		rules: func(r *rand.Rand) []FlowRule { return []FlowRule{flowConfThrottling(r)} }},
	{name: "WarmUpReject", seedBase: 4_000_000, maxBatch: 1,
		rules: func(r *rand.Rand) []FlowRule { return []FlowRule{flowConfWarmUp(r, Reject)} }},
	{name: "WarmUpThrottling", seedBase: 5_000_000, maxBatch: 1,
		rules: func(r *rand.Rand) []FlowRule { return []FlowRule{flowConfWarmUp(r, Throttling)} }},
	// Several rules on one resource, in order, with batches: proves where
	// the Guard waits and which time it records at.
	{name: "MixedRulesAndBatches", seedBase: 6_000_000, maxBatch: 3,
		rules: func(r *rand.Rand) []FlowRule {
			n := 2 + r.IntN(2)
			rules := make([]FlowRule, n)
			for i := range rules {
				switch r.IntN(5) {
				case 0:
					rules[i] = flowConfDirectReject(r)
				case 1:
					rules[i] = flowConfCustomReject(r)
				case 2:
					rules[i] = flowConfThrottling(r)
				case 3:
					rules[i] = flowConfWarmUp(r, Reject)
				default:
					rules[i] = flowConfWarmUp(r, Throttling)
				}
			}
			return rules
		}},
	{name: "ClockBackwards", seedBase: 7_000_000, maxBatch: 1, backwards: true,
		rules: func(r *rand.Rand) []FlowRule {
			switch r.IntN(5) {
			case 0:
				return []FlowRule{flowConfDirectReject(r)}
			case 1:
				return []FlowRule{flowConfCustomReject(r)}
			case 2:
				return []FlowRule{flowConfThrottling(r)}
			case 3:
				return []FlowRule{flowConfWarmUp(r, Reject)}
			default:
				return []FlowRule{flowConfWarmUp(r, Throttling)}
			}
		}},
}

// flowConfGap draws the time to the next entry: bursts, small and large
// gaps, idle periods, and landings exactly on bucket boundaries.
func flowConfGap(r *rand.Rand, clock *flowConfClock, backwards bool) int64 {
	const ms = int64(time.Millisecond)
	if backwards && r.IntN(25) == 0 {
		return -(1 + r.Int64N(4000)) * ms
	}
	var gap int64
	switch p := r.IntN(100); {
	case p < 35:
		gap = 0
	case p < 60:
		gap = (1 + r.Int64N(20)) * ms
	case p < 75:
		gap = (20 + r.Int64N(280)) * ms
	case p < 85: // to a 500 ms boundary, or just either side of it
		now := clock.ns.Load()
		step := 500 * ms
		gap = step - now%step + flowConfPick[int64](r, 0, 0, -ms, ms)
		if gap < 0 {
			gap += step
		}
	case p < 93:
		gap = (300 + r.Int64N(1700)) * ms
	case p < 98:
		gap = (2000 + r.Int64N(13000)) * ms
	default:
		gap = flowConfPick[int64](r, 1000, 10000, 10500) * ms
	}
	if clock.res == 1 && r.IntN(3) == 0 {
		gap += r.Int64N(ms) // sub-millisecond arrival
	}
	return gap
}

func TestFlowConformance(t *testing.T) { flowConformance(t, false) }

// flowConformance plays every case's seeded sequences, through the bare
// controllers or (viaGuard) through a real Guard.
func flowConformance(t *testing.T, viaGuard bool) {
	clock, sc := flowConfSetup(t)
	run := flowConfRun.Add(1)
	for _, tc := range flowConfCases {
		t.Run(tc.name, func(t *testing.T) {
			var tally flowConfTally
			seeds := uint64(racetest.Share(flowConfSeeds, 10))
			for i := range seeds {
				seed := tc.seedBase + i
				if msg := flowConfSequence(clock, sc, tc, seed, run, &tally, viaGuard); msg != "" {
					t.Fatalf("%s seed=%d: %s", tc.name, seed, msg)
				}
			}
			t.Logf("%d sequences (through Guard.Entry: %v), %d entries: %d passed (%d after a wait), %d blocked",
				seeds, viaGuard, tally.pass+tally.block, tally.pass, tally.waited, tally.block)
			if tally.pass == 0 || tally.block == 0 {
				t.Errorf("sequences never both pass and block: %+v", tally)
			}
		})
	}
}

// flowConfSequence runs one seeded sequence and describes the first
// difference, or returns "".
//
// With viaGuard, core's side is a real Guard (batches of 1, which is what
// Guard.Entry asks for) instead of the controllers driven directly.
func flowConfSequence(clock *flowConfClock, sc *sgbase.SlotChain, tc flowConfCase, seed uint64, run int64, tally *flowConfTally, viaGuard bool) string {
	r := rand.New(rand.NewPCG(seed, 0x5e4711e1))
	res := fmt.Sprintf("flowconf-%d-%s-%d", run, tc.name, seed)

	// Half the sequences read a millisecond-resolution clock and call Check;
	// the others read nanoseconds and call CheckNano.
	clock.res = 1
	milli := r.IntN(2) == 0
	if milli {
		clock.res = int64(time.Millisecond)
	}
	start := (1_700_000_000_000 + r.Int64N(1_000_000_000)) * int64(time.Millisecond)
	switch r.IntN(3) {
	case 0:
		start -= start % int64(time.Second)
	case 1:
		start -= start % (500 * int64(time.Millisecond))
	}
	clock.ns.Store(start)

	rules := tc.rules(r)
	sgRules := make([]*sgflow.Rule, len(rules))
	g := &flowConfGuard{clock: clock, stat: NewResourceWindow(), milli: milli}
	for i := range rules {
		rules[i].Resource = res
		rules[i].ID = fmt.Sprint(i)
		c, err := NewFlowController(rules[i], g.stat)
		if err != nil {
			return fmt.Sprintf("NewFlowController(%+v): %v", rules[i], err)
		}
		g.ctls = append(g.ctls, c)
		sgRules[i] = flowConfSentinelRule(rules[i])
	}
	entry := g.entry
	if viaGuard {
		guard := NewGuard(GuardOptions{Clock: flowConfGuardClock{clock}})
		if err := guard.LoadFlowRules(rules); err != nil {
			return fmt.Sprintf("LoadFlowRules(%+v): %v", rules, err)
		}
		entry = func(int64) bool {
			e, err := guard.Entry(res)
			if err != nil {
				return false
			}
			e.Exit(nil)
			return true
		}
	}
	if _, err := sgflow.LoadRules(sgRules); err != nil {
		return fmt.Sprintf("sentinel LoadRules: %v", err)
	}
	if got := len(sgflow.GetRulesOfResource(res)); got != len(rules) {
		return fmt.Sprintf("sentinel accepted %d of %d rules %+v", got, len(rules), rules)
	}

	var trace [12]flowConfStep // the last steps, for the failure message
	for step := range flowConfSteps {
		clock.ns.Add(flowConfGap(r, clock, tc.backwards && clock.ns.Load()-start > 2*ResourceIntervalMs*int64(time.Millisecond)))
		batch := 1 + r.Int64N(tc.maxBatch)
		if viaGuard {
			batch = 1
		}
		at := clock.ns.Load()

		clock.slept.Store(0)
		e, blocked := sgapi.Entry(res, sgapi.WithSlotChain(sc), sgapi.WithBatchCount(uint32(batch)))
		sgPass := blocked == nil
		if sgPass {
			e.Exit()
		}
		sgWait := clock.slept.Load()

		clock.ns.Store(at)
		clock.slept.Store(0)
		pass := entry(batch)
		wait := clock.slept.Load()

		trace[step%len(trace)] = flowConfStep{step, at, batch, sgPass, pass, sgWait, wait}
		if pass != sgPass || wait != sgWait {
			return fmt.Sprintf("first difference at step %d (t=%d ns, batch %d, millisecond clock %v): sentinel pass=%v wait=%v, core pass=%v wait=%v\nrules: %+v\nlast steps:\n%s",
				step, at, batch, milli, sgPass, time.Duration(sgWait), pass, time.Duration(wait), rules, flowConfTrace(trace[:], step))
		}
		switch {
		case !pass:
			tally.block++
		case wait > 0:
			tally.pass++
			tally.waited++
		default:
			tally.pass++
		}
	}
	return ""
}

type flowConfTally struct{ pass, block, waited int }

type flowConfStep struct {
	step         int
	at, batch    int64
	sgPass, pass bool
	sgWait, wait int64
}

// flowConfTrace formats the ring of last steps, oldest first, ending at last.
func flowConfTrace(ring []flowConfStep, last int) string {
	var b strings.Builder
	for i := max(0, last-len(ring)+1); i <= last; i++ {
		s := ring[i%len(ring)]
		fmt.Fprintf(&b, "  step %d t=%d.%06dms (true time) batch=%d sentinel=%v/%v core=%v/%v\n",
			s.step, s.at/int64(time.Millisecond), s.at%int64(time.Millisecond), s.batch,
			s.sgPass, time.Duration(s.sgWait), s.pass, time.Duration(s.wait))
	}
	return b.String()
}

// flowConfGuardClock lets a Guard read the conformance clock.
type flowConfGuardClock struct{ *flowConfClock }

func (c flowConfGuardClock) UnixMilli() int64 { return c.readMilli() }
func (c flowConfGuardClock) AfterFunc(time.Duration, func()) Timer {
	panic("the guard does not set timers")
}
func (c flowConfGuardClock) NewTicker(time.Duration) Ticker { panic("the guard does not tick") }

// TestGuardFlowConformance plays the same seeded sequences, with batches
// of 1, through a real Guard: Guard.Entry must decide and wait exactly as
// sentinel-golang's api.Entry does.
func TestGuardFlowConformance(t *testing.T) { flowConformance(t, true) }
