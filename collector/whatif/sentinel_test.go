package whatif

import (
	"cmp"
	"container/heap"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/alibaba/sentinel-golang/api"
	sgbase "github.com/alibaba/sentinel-golang/core/base"
	sgcb "github.com/alibaba/sentinel-golang/core/circuitbreaker"
	"github.com/alibaba/sentinel-golang/logging"
	sgutil "github.com/alibaba/sentinel-golang/util"

	"github.com/sentinel-top/sentinel-top/core"
)

// The replay's breakers are core's; this test replays the same calls
// through sentinel-golang v1.0.4's own circuit breaker (its slot chain,
// on a virtual clock) and requires the same trips, trips on fewer than
// SoundCalls calls, probes and passes, on both sides of every estimate.
// sentinel-golang keeps global state: this test never runs in parallel.

type sgClock struct{ c *core.VirtualClock }

func (s sgClock) Now() time.Time            { return s.c.Now() }
func (s sgClock) Sleep(d time.Duration)     { s.c.Advance(d) }
func (s sgClock) CurrentTimeMillis() uint64 { return uint64(s.c.UnixMilli()) }
func (s sgClock) CurrentTimeNano() uint64   { return uint64(s.c.Now().UnixNano()) }

type sgCount struct {
	mu            sync.Mutex
	trips, probes int64
}

func (l *sgCount) OnTransformToClosed(sgcb.State, sgcb.Rule) {}
func (l *sgCount) OnTransformToOpen(prev sgcb.State, _ sgcb.Rule, snapshot any) {
	if prev != sgcb.Closed {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.trips++
	_ = snapshot // sentinel-golang's snapshot is the ratio, not the window's size
}
func (l *sgCount) OnTransformToHalfOpen(prev sgcb.State, _ sgcb.Rule) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.probes++
}

type sgDone struct {
	at    int64
	seq   int
	entry *sgbase.SentinelEntry
	err   error
}

type sgDoneHeap []sgDone

func (h sgDoneHeap) Len() int { return len(h) }
func (h sgDoneHeap) Less(i, j int) bool {
	return cmp.Or(cmp.Compare(h[i].at, h[j].at), cmp.Compare(h[i].seq, h[j].seq)) < 0
}
func (h sgDoneHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *sgDoneHeap) Push(x any)   { *h = append(*h, x.(sgDone)) }
func (h *sgDoneHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

var errCall = errors.New("call failed")

// sentinelReplay offers the prepared trace's calls on side s, in the order
// they arrived, to sentinel-golang's breaker for rule.
func sentinelReplay(t testing.TB, p *prepared, rule core.BreakerRule, s side) (trips, probes, passed int64) {
	t.Helper()
	clock := core.NewVirtualClock(time.UnixMilli(1))
	sgutil.SetClock(sgClock{clock})
	defer sgutil.SetClock(sgutil.NewRealClock())
	logging.ResetGlobalLoggerLevel(logging.ErrorLevel)
	count := &sgCount{}
	sgcb.ClearStateChangeListeners()
	sgcb.RegisterStateChangeListeners(count)
	defer sgcb.ClearStateChangeListeners()
	sr := &sgcb.Rule{Resource: "r", Strategy: sgcb.Strategy(rule.Strategy), RetryTimeoutMs: rule.RetryTimeoutMs,
		MinRequestAmount: rule.MinRequestAmount, StatIntervalMs: rule.StatIntervalMs,
		StatSlidingWindowBucketCount: rule.StatSlidingWindowBucketCount, MaxAllowedRtMs: rule.MaxAllowedRtMs,
		Threshold: rule.Threshold, ProbeNum: rule.ProbeNum}
	if _, err := sgcb.LoadRules([]*sgcb.Rule{sr}); err != nil {
		t.Fatal(err)
	}
	defer sgcb.ClearRules()
	chain := sgbase.NewSlotChain()
	chain.AddRuleCheckSlot(sgcb.DefaultSlot)
	chain.AddStatSlot(sgcb.DefaultMetricStatSlot)

	type arrival struct {
		at, rt int64
		err    bool
	}
	calls := make([]arrival, len(p.calls))
	for i := range p.calls {
		rt, failed := p.outcome(i, s)
		at := p.calls[i].at
		if p.calls[i].known {
			at -= rt
		}
		calls[i] = arrival{at, rt, failed}
	}
	slices.SortStableFunc(calls, func(a, b arrival) int { return cmp.Compare(a.at, b.at) })
	var h sgDoneHeap
	finish := func(until int64) {
		for len(h) > 0 && h[0].at <= until {
			d := heap.Pop(&h).(sgDone)
			clock.Set(time.UnixMilli(d.at))
			if d.err != nil {
				d.entry.Exit(sgbase.WithError(d.err))
			} else {
				d.entry.Exit()
			}
		}
	}
	for i, c := range calls {
		finish(c.at)
		clock.Set(time.UnixMilli(max(c.at, clock.UnixMilli())))
		e, block := api.Entry("r", api.WithSlotChain(chain))
		if block != nil {
			continue
		}
		passed++
		var err error
		if c.err {
			err = errCall
		}
		heap.Push(&h, sgDone{at: c.at + c.rt, seq: i, entry: e, err: err})
	}
	finish(1<<62 - 1)
	return count.trips, count.probes, passed
}

// passes counts the calls a replay let through.
func passes(t *testing.T, p *prepared, rule core.BreakerRule, s side) (trips, probes, passed int64) {
	t.Helper()
	r, err := p.replay(rule, s)
	if err != nil {
		t.Fatal(err)
	}
	return r.trips, r.probes, r.passedAll
}

func TestReplayIsSentinelGolangs(t *testing.T) {
	slow := slowRule(300)
	errs := core.BreakerRule{Resource: "r", Strategy: core.ErrorRatio, Threshold: 0.5, MinRequestAmount: 5,
		StatIntervalMs: 1000, StatSlidingWindowBucketCount: 2, RetryTimeoutMs: 5_000}
	count := errs
	count.Strategy, count.Threshold = core.ErrorCount, 10
	cases := []struct {
		name  string
		qps   float64
		w     world
		rule  core.BreakerRule
		other func(core.BreakerRule) core.BreakerRule
	}{
		{"brownout", 20, brownout, slow, func(r core.BreakerRule) core.BreakerRule { r.MaxAllowedRtMs = 400; return r }},
		{"brownout-min", 20, brownout, slow, func(r core.BreakerRule) core.BreakerRule { r.MinRequestAmount, r.StatIntervalMs = 20, 4000; return r }},
		{"db-down", 20, dbDown, errs, func(r core.BreakerRule) core.BreakerRule { r.RetryTimeoutMs = 30_000; return r }},
		{"db-down-count", 20, dbDown, count, func(r core.BreakerRule) core.BreakerRule { r.Threshold = 30; return r }},
		{"jittery", 4, jittery, slowRule(500), func(r core.BreakerRule) core.BreakerRule { r.MinRequestAmount, r.ProbeNum = 20, 2; return r }},
	}
	for _, c := range cases {
		tr, _ := record(t, c.name, c.rule, c.w, c.qps, 600_000, 500, 5)
		p, err := prepare(tr, &c.rule)
		if err != nil {
			t.Fatal(err)
		}
		var tripped int64
		for _, rule := range []core.BreakerRule{c.rule, c.other(c.rule)} {
			for _, s := range sides {
				ot, op, opass := passes(t, p, rule, s)
				st, sp, spass := sentinelReplay(t, p, rule, s)
				if ot != st || op != sp || opass != spass {
					t.Errorf("%s, rule %+v, side %d: replay trips %d probes %d passed %d; sentinel-golang %d, %d, %d",
						c.name, rule, s, ot, op, opass, st, sp, spass)
				}
				tripped += ot
			}
		}
		if tripped == 0 {
			t.Errorf("%s: no replay tripped: the comparison proves little", c.name)
		}
	}
}
