package core_test

import (
	"container/heap"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/alibaba/sentinel-golang/api"
	sgbase "github.com/alibaba/sentinel-golang/core/base"
	sgcb "github.com/alibaba/sentinel-golang/core/circuitbreaker"
	"github.com/alibaba/sentinel-golang/logging"
	sgutil "github.com/alibaba/sentinel-golang/util"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/internal/racetest"
)

// The conformance tests drive sentinel-golang v1.0.4 and core with the same
// virtual time and the same operations, and require identical decisions and
// identical transitions at identical times. sentinel-golang keeps global
// state, so these tests never run in parallel.

// sgClock lets sentinel-golang read the shared virtual clock.
type sgClock struct{ c *core.VirtualClock }

func (s sgClock) Now() time.Time            { return s.c.Now() }
func (s sgClock) Sleep(d time.Duration)     { s.c.Advance(d) }
func (s sgClock) CurrentTimeMillis() uint64 { return uint64(s.c.UnixMilli()) }
func (s sgClock) CurrentTimeNano() uint64   { return uint64(s.c.Now().UnixNano()) }

// useSentinelClock points sentinel-golang at c for the rest of the test.
func useSentinelClock(t *testing.T, c *core.VirtualClock) {
	t.Helper()
	logging.ResetGlobalLoggerLevel(logging.ErrorLevel)
	sgutil.SetClock(sgClock{c})
	t.Cleanup(func() { sgutil.SetClock(sgutil.NewRealClock()) })
}

// observed is one transition as both sides can report it.
type observed struct {
	at       int64
	resource string
	strategy core.Strategy
	from, to core.State
	value    float64 // for CLOSED -> OPEN: the ratio or error count that tripped it
}

func (o observed) String() string {
	return fmt.Sprintf("%d %s/%s %s->%s %.6g", o.at, o.resource, o.strategy, o.from, o.to, o.value)
}

// sgListener records sentinel-golang's transitions.
type sgListener struct {
	mu    sync.Mutex
	clock *core.VirtualClock
	log   []observed
}

func (l *sgListener) add(prev, to sgcb.State, r sgcb.Rule, snapshot any) {
	o := observed{at: l.clock.UnixMilli(), resource: r.Resource, strategy: core.Strategy(r.Strategy),
		from: core.State(prev), to: core.State(to)}
	if prev == sgcb.Closed {
		switch v := snapshot.(type) {
		case float64:
			o.value = v
		case uint64:
			o.value = float64(v)
		}
	}
	l.mu.Lock()
	l.log = append(l.log, o)
	l.mu.Unlock()
}

func (l *sgListener) OnTransformToClosed(prev sgcb.State, r sgcb.Rule) {
	l.add(prev, sgcb.Closed, r, nil)
}
func (l *sgListener) OnTransformToOpen(prev sgcb.State, r sgcb.Rule, s any) {
	l.add(prev, sgcb.Open, r, s)
}
func (l *sgListener) OnTransformToHalfOpen(prev sgcb.State, r sgcb.Rule) {
	l.add(prev, sgcb.HalfOpen, r, nil)
}

func toSentinelRule(r core.BreakerRule) *sgcb.Rule {
	return &sgcb.Rule{Id: r.ID, Resource: r.Resource, Strategy: sgcb.Strategy(r.Strategy),
		RetryTimeoutMs: r.RetryTimeoutMs, MinRequestAmount: r.MinRequestAmount, StatIntervalMs: r.StatIntervalMs,
		StatSlidingWindowBucketCount: r.StatSlidingWindowBucketCount, MaxAllowedRtMs: r.MaxAllowedRtMs,
		Threshold: r.Threshold, ProbeNum: r.ProbeNum}
}

// breakerChain is a sentinel-golang slot chain with circuit breaking only.
func breakerChain() *sgbase.SlotChain {
	sc := sgbase.NewSlotChain()
	sc.AddRuleCheckSlot(sgcb.DefaultSlot)
	sc.AddStatSlot(sgcb.DefaultMetricStatSlot)
	return sc
}

// request is one call in a generated sequence.
type request struct {
	gapMs  int64 // after the previous request started
	rtMs   int64
	failed bool
}

// scenario is a generated rule set and request sequence.
type scenario struct {
	seed  uint64
	rules []core.BreakerRule
	reqs  []request
}

func pick[T any](r *rand.Rand, xs ...T) T { return xs[r.IntN(len(xs))] }

// genBreakerScenario draws rules for one resource (usually one breaker of the
// given strategy, sometimes a second one of any strategy) and a request
// sequence with bursts, idle gaps, latencies around the slow limit, and errors.
func genBreakerScenario(seed uint64, strategy core.Strategy) scenario {
	r := rand.New(rand.NewPCG(seed, uint64(strategy)+1))
	rule := func(s core.Strategy, id string) core.BreakerRule {
		interval := pick(r, uint32(1000), 2000, 500)
		rr := core.BreakerRule{ID: id, Resource: "res", Strategy: s,
			RetryTimeoutMs:               pick(r, uint32(200), 1000, 3000, 10000),
			MinRequestAmount:             pick(r, uint64(0), 1, 3, 5, 10, 20),
			StatIntervalMs:               interval,
			StatSlidingWindowBucketCount: pick(r, uint32(0), 1, 10, 2, 3),
			MaxAllowedRtMs:               pick(r, uint64(50), 200),
		}
		if r.IntN(2) == 1 {
			rr.ProbeNum = uint64(1 + r.IntN(3))
		}
		if s == core.ErrorCount {
			rr.Threshold = float64(pick(r, 0, 1, 2, 3, 5, 8))
		} else {
			rr.Threshold = pick(r, 0.1, 0.2, 0.3, 0.5, 0.6, 0.75, 1.0, math.Round(r.Float64()*100)/100)
		}
		return rr
	}
	sc := scenario{seed: seed, rules: []core.BreakerRule{rule(strategy, "a")}}
	if r.IntN(5) == 0 {
		sc.rules = append(sc.rules, rule(core.Strategy(r.IntN(3)), "b"))
	}
	maxRt := int64(sc.rules[0].MaxAllowedRtMs)
	errP := pick(r, 0.0, 0.05, 0.3, 0.6)
	slowP := pick(r, 0.0, 0.1, 0.4, 0.7)
	n := 200 + r.IntN(500)
	for i := 0; i < n; i++ {
		var q request
		switch x := r.Float64(); {
		case x < 0.55:
			q.gapMs = int64(r.IntN(20))
		case x < 0.85:
			q.gapMs = 0
		case x < 0.97:
			q.gapMs = 100 + int64(r.IntN(1400))
		default:
			q.gapMs = 2000 + int64(r.IntN(13000))
		}
		switch x := r.Float64(); {
		case x < slowP/2:
			q.rtMs = maxRt + 1 + int64(r.IntN(int(3*maxRt)))
		case x < slowP:
			q.rtMs = maxRt - 2 + int64(r.IntN(5)) // right at the limit
		default:
			q.rtMs = int64(r.IntN(int(maxRt)))
		}
		q.failed = r.Float64() < errP
		sc.reqs = append(sc.reqs, q)
	}
	return sc
}

// completion is an admitted request waiting to finish.
type completion struct {
	endMs int64
	seq   int
	sg    *sgbase.SentinelEntry
	ours  *core.Entry
	err   error
}

type completions []completion

func (h completions) Len() int { return len(h) }
func (h completions) Less(i, j int) bool {
	if h[i].endMs != h[j].endMs {
		return h[i].endMs < h[j].endMs
	}
	return h[i].seq < h[j].seq
}
func (h completions) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *completions) Push(x any)   { *h = append(*h, x.(completion)) }
func (h *completions) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

var errBusiness = fmt.Errorf("business error")

// runBreakerScenario plays sc on both implementations and reports the first
// difference.
func runBreakerScenario(t *testing.T, sc scenario, clock *core.VirtualClock, sgl *sgListener) {
	t.Helper()
	start := time.UnixMilli(1764460800000 + int64(sc.seed%997)*37)
	clock.Set(start)

	sgl.mu.Lock()
	sgl.log = nil
	sgl.mu.Unlock()
	sgRules := make([]*sgcb.Rule, len(sc.rules))
	for i, r := range sc.rules {
		sgRules[i] = toSentinelRule(r)
	}
	if _, err := sgcb.LoadRules(sgRules); err != nil {
		t.Fatalf("seed %d: sentinel-golang LoadRules: %v", sc.seed, err)
	}
	defer sgcb.ClearRules()
	chain := breakerChain()

	var ours []observed
	guard := core.NewGuard(core.GuardOptions{Clock: clock, Listener: core.TransitionFunc(func(tr core.Transition) {
		o := observed{at: tr.AtMs, resource: tr.Resource, strategy: tr.Strategy, from: tr.From, to: tr.To}
		if tr.From == core.Closed {
			o.value = tr.Snapshot.Value
		}
		ours = append(ours, o)
	})})
	if err := guard.LoadBreakerRules(sc.rules); err != nil {
		t.Fatalf("seed %d: LoadBreakerRules: %v", sc.seed, err)
	}

	var inflight completions
	finishUntil := func(limit int64) {
		for inflight.Len() > 0 && inflight[0].endMs <= limit {
			c := heap.Pop(&inflight).(completion)
			clock.Set(time.UnixMilli(c.endMs))
			if c.err != nil {
				c.sg.Exit(sgbase.WithError(c.err))
			} else {
				c.sg.Exit()
			}
			c.ours.Exit(c.err)
		}
	}
	now := start.UnixMilli()
	for i, q := range sc.reqs {
		now += q.gapMs
		finishUntil(now)
		clock.Set(time.UnixMilli(now))
		sgEntry, sgBlock := api.Entry("res", api.WithSlotChain(chain))
		ourEntry, ourErr := guard.Entry("res")
		if (sgBlock == nil) != (ourErr == nil) {
			t.Fatalf("seed %d rules %+v: request %d at +%d ms: sentinel-golang passed=%v, core passed=%v\nsentinel-golang transitions: %v\ncore transitions: %v",
				sc.seed, sc.rules, i, now-start.UnixMilli(), sgBlock == nil, ourErr == nil, sgl.log, ours)
		}
		if sgBlock != nil {
			continue
		}
		var err error
		if q.failed {
			err = errBusiness
		}
		heap.Push(&inflight, completion{endMs: now + q.rtMs, seq: i, sg: sgEntry, ours: ourEntry, err: err})
	}
	finishUntil(math.MaxInt64)

	sgl.mu.Lock()
	theirs := sgl.log
	sgl.mu.Unlock()
	if len(theirs) != len(ours) {
		t.Fatalf("seed %d rules %+v: %d transitions in sentinel-golang, %d in core\nsentinel-golang: %v\ncore: %v",
			sc.seed, sc.rules, len(theirs), len(ours), theirs, ours)
	}
	for i := range ours {
		a, b := theirs[i], ours[i]
		if a.at != b.at || a.from != b.from || a.to != b.to || a.strategy != b.strategy || math.Abs(a.value-b.value) > 1e-12 {
			t.Fatalf("seed %d rules %+v: transition %d differs:\nsentinel-golang %v\ncore            %v", sc.seed, sc.rules, i, a, b)
		}
	}
}

func TestBreakerConformance(t *testing.T) {
	clock := core.NewVirtualClock(time.UnixMilli(1764460800000))
	useSentinelClock(t, clock)
	sgl := &sgListener{clock: clock}
	sgcb.RegisterStateChangeListeners(sgl)
	t.Cleanup(sgcb.ClearStateChangeListeners)

	const perStrategy = 300
	for _, strategy := range []core.Strategy{core.SlowRequestRatio, core.ErrorRatio, core.ErrorCount} {
		t.Run(strategy.String(), func(t *testing.T) {
			// Every tenth under -race, as the flow conformance tests;
			// all of them in CI's run without it.
			transitions, seeds := 0, uint64(racetest.Share(perStrategy, 10))
			for seed := uint64(1); seed <= seeds; seed++ {
				sc := genBreakerScenario(seed, strategy)
				runBreakerScenario(t, sc, clock, sgl)
				transitions += len(sgl.log)
			}
			// The generator must actually exercise the state machine.
			if transitions < int(seeds) {
				t.Fatalf("only %d transitions over %d sequences: the generator is too tame", transitions, seeds)
			}
			t.Logf("%d sequences, %d transitions, identical", seeds, transitions)
		})
	}
}
