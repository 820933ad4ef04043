package triage

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/internal/worlds"
)

type world = worlds.World

type simCall struct {
	at, rt int64
	failed bool
}

type simHeap []simCall

func (h simHeap) Len() int           { return len(h) }
func (h simHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h simHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *simHeap) Push(x any)        { *h = append(*h, x.(simCall)) }
func (h *simHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

type simInst struct {
	name  string
	br    *core.Breaker
	r     *rand.Rand
	h     simHeap
	b     BucketStat
	trans []core.Transition
	bad   []int64 // bad calls let through, since the last bucket
	next  float64
}

func (s *simInst) OnTransition(t core.Transition) { s.trans = append(s.trans, t) }

// simulate runs an app of n instances, each with its own breaker for rule
// (retry timeouts from retry(i) when given), calling a downstream that
// behaves as w, at qps each, for durMs from t0: the engine is fed what
// agents would send, in time order: hello and rules first, then each
// 500 ms bucket (histogram, slow against the rule's bound) with the
// transitions that came in it. It returns the instances' names.
func simulate(t *testing.T, e *Feeder, app string, n int, rule core.BreakerRule, retry func(i int) uint32, w world, qps float64, durMs int64) []string {
	t.Helper()
	trips := simulateTrips(t, e, app, n, rule, retry, w, qps, durMs)
	names := make([]string, len(trips))
	for i := range trips {
		names[i] = fmt.Sprintf("%s-%d", app, i+1)
	}
	return names
}

// simTrip is a transition of a simulated breaker (to), or a failed call
// it let through (bad), ms since the start.
type simTrip struct {
	at  int64
	to  core.State
	bad bool
}

// simulateTrips is simulate, returning each instance's transitions.
func simulateTrips(t *testing.T, e *Feeder, app string, n int, rule core.BreakerRule, retry func(i int) uint32, w world, qps float64, durMs int64) [][]simTrip {
	t.Helper()
	tripsOf := make([][]simTrip, n)
	insts := make([]*simInst, n)
	for i := range insts {
		s := &simInst{name: fmt.Sprintf("%s-%d", app, i+1), r: rand.New(rand.NewPCG(uint64(i), 11))}
		r := rule
		if retry != nil {
			r.RetryTimeoutMs = retry(i)
		}
		br, err := core.NewBreaker(r, s)
		if err != nil {
			t.Fatal(err)
		}
		s.br = br
		e.Hello(s.name, app, t0, t0-60_000)
		e.Rules(s.name, t0, "v1", []core.BreakerRule{r}, nil)
		insts[i] = s
	}
	const bm = 500
	gap := 1000 / qps
	for start := int64(0); start < durMs; start += bm {
		end := start + bm
		for i, s := range insts {
			s.b = BucketStat{Resource: rule.Resource, Start: t0 + start, BucketMs: bm, HasHist: true}
			complete := func(upTo int64) {
				for len(s.h) > 0 && s.h[0].at < upTo {
					c := heap.Pop(&s.h).(simCall)
					s.br.OnComplete(t0+c.at, c.rt, c.failed)
					m := &s.b.Metrics
					if m.Complete == 0 || c.rt < m.RtMin {
						m.RtMin = c.rt
					}
					m.Complete++
					m.RtSum += c.rt
					m.RtMax = max(m.RtMax, c.rt)
					if c.failed {
						m.Error++
					}
					if rule.Strategy == core.SlowRequestRatio && c.rt > int64(rule.MaxAllowedRtMs) {
						m.Slow++
					}
					m.Hist[core.HistogramSlot(c.rt)]++
				}
			}
			for ; int64(s.next) < end; s.next += gap * (0.5 + s.r.Float64()) {
				at := int64(s.next)
				complete(at + 1)
				if pass, _ := s.br.TryPass(t0 + at); pass {
					s.b.Pass++
					// The call's outcome hangs on its instance and time alone, so
					// that the same world run with another rule answers each
					// call alike (arrivals draw from s.r, outcomes from here).
					rt, failed := w(at, rand.New(rand.NewPCG(uint64(at), uint64(i)+1000)))
					if failed || rule.Strategy == core.SlowRequestRatio && rt > int64(rule.MaxAllowedRtMs) {
						s.bad = append(s.bad, at)
					}
					heap.Push(&s.h, simCall{at + rt, rt, failed})
				} else {
					s.b.Block++
				}
			}
			complete(end)
		}
		for i, s := range insts {
			for _, at := range s.bad {
				tripsOf[i] = append(tripsOf[i], simTrip{at: at, bad: true})
			}
			s.bad = s.bad[:0]
			for _, tr := range s.trans {
				tripsOf[i] = append(tripsOf[i], simTrip{at: tr.AtMs - t0, to: tr.To})
				e.Transition(s.name, tr)
			}
			s.trans = s.trans[:0]
			e.Bucket(s.name, s.b)
		}
	}
	return tripsOf
}

// The incidents of these tests.
var (
	brownout = worlds.Brownout(120_000, 260_000)
	dbDown   = worlds.Down(60_000, 200_000, 0)
	jittery  = worlds.Jittery()
)

func planFor(t *testing.T, plans []Plan, resource string) Plan {
	t.Helper()
	for _, p := range plans {
		if p.Resource == resource {
			return p
		}
	}
	t.Fatalf("no plan for %q among %d", resource, len(plans))
	return Plan{}
}

// The brownout the rule caught: no plan raises maxAllowedRtMs, and a
// proposed raise over the brownout's response times is a lost outage.
func TestBrownoutPlanKeepsTheBound(t *testing.T) {
	const res = "GET:/member/info"
	rule := core.BreakerRule{Resource: res, Strategy: core.SlowRequestRatio, MaxAllowedRtMs: 300, Threshold: 0.5,
		MinRequestAmount: 20, StatIntervalMs: 10_000, StatSlidingWindowBucketCount: 10, RetryTimeoutMs: 10_000}
	e := NewFeeder(Config{})
	simulate(t, e, "order", 3, rule, nil, brownout, 40, 320_000)
	end := t0 + 320_000
	fs := e.Findings(end)
	plans := e.Plans(end, fs)
	for _, p := range plans {
		if p.Proposed.MaxAllowedRtMs > 0 {
			t.Errorf("plan raises maxAllowedRtMs to %d over a 340-390 ms brownout", p.Proposed.MaxAllowedRtMs)
		}
	}
	for _, f := range fs {
		if _, v, ok := findingValues(&f); ok && v.MaxAllowedRtMs > 0 {
			t.Errorf("%s proposes maxAllowedRtMs %d: %s", f.Kind, v.MaxAllowedRtMs, f.Advice)
		}
	}
	raise := rule
	raise.MaxAllowedRtMs = 400
	checks := e.CheckRules([]core.BreakerRule{raise}, nil).Breakers
	if len(checks) != 1 || !checks[0].LosesOutage || checks[0].WhatIf.Current.OutagesCaught != 3 || checks[0].WhatIf.Proposed.OutagesCaught != 0 {
		t.Fatalf("maxAllowedRtMs 400: %+v", checks)
	}
	keep := rule
	keep.RetryTimeoutMs = 30_000
	if checks := e.CheckRules([]core.BreakerRule{keep}, nil).Breakers; len(checks) != 1 || checks[0].LosesOutage {
		t.Fatalf("retryTimeoutMs 30000: %+v", checks)
	}
}

// A downstream down for 140 s behind six instances of one rule: one retry
// proposal, the sawtooth's 30 s spread per instance, safe, with fewer
// probes than the rule sent.
func TestHerdPlanSpreadsTheSawtoothsRetry(t *testing.T) {
	const res = "GET:/api/stock"
	rule := core.BreakerRule{Resource: res, Strategy: core.ErrorRatio, Threshold: 0.5,
		MinRequestAmount: 20, StatIntervalMs: 2000, StatSlidingWindowBucketCount: 2, RetryTimeoutMs: 10_000}
	e := NewFeeder(Config{})
	names := simulate(t, e, "cart", 6, rule, nil, dbDown, 30, 260_000)
	end := t0 + 260_000
	fs := e.Findings(end)
	plans := e.Plans(end, fs)
	p := planFor(t, plans, res)
	if !p.Safe || p.WhatIf == nil || p.Proposed.RetryTimeoutMs != 30_000 || len(p.PerInstance) != 6 {
		t.Fatalf("plan %+v", p)
	}
	var retries []uint32
	for _, n := range names {
		retries = append(retries, p.PerInstance[n].RetryTimeoutMs)
	}
	if retries[0] != 30_000 || retries[5] != 40_000 || !slices.IsSorted(retries) {
		t.Errorf("per instance %v, want 30000 to 40000", retries)
	}
	w := p.WhatIf
	if w.Current.OutagesCaught != 6 || w.Proposed.OutagesCaught != 6 || w.Proposed.Probes >= w.Current.Probes {
		t.Errorf("what-if current %+v, proposed %+v", w.Current, w.Proposed)
	}
	for _, f := range fs {
		if _, v, ok := findingValues(&f); ok && v.RetryTimeoutMs != 0 && v.RetryTimeoutMs != 30_000 {
			t.Errorf("%s proposes retryTimeoutMs %d beside the plan's 30000: %s", f.Kind, v.RetryTimeoutMs, f.Advice)
		}
	}
}

// A healthy, jittery service at 4 calls a second per instance: the
// low-confidence trips' plan asks for 20 calls in a window that holds
// them, and its replay trips on none with fewer.
func TestLowConfidencePlanStopsThinTrips(t *testing.T) {
	const res = "priceService:queryPrice"
	rule := core.BreakerRule{Resource: res, Strategy: core.SlowRequestRatio, MaxAllowedRtMs: 500, Threshold: 0.5,
		MinRequestAmount: 5, StatIntervalMs: 1000, StatSlidingWindowBucketCount: 2, RetryTimeoutMs: 10_000}
	e := NewFeeder(Config{})
	simulate(t, e, "gateway", 2, rule, nil, jittery, 4, 600_000)
	end := t0 + 600_000
	fs := e.Findings(end)
	p := planFor(t, e.Plans(end, fs), res)
	if !p.Safe || p.Proposed.MinRequestAmount != 20 || p.Proposed.StatIntervalMs == 0 {
		t.Fatalf("plan %+v", p)
	}
	if w := p.WhatIf; w.Current.LowConfidenceTrips == 0 || w.Proposed.LowConfidenceTrips != 0 || w.Proposed.Trips >= w.Current.Trips {
		t.Errorf("what-if current %+v, proposed %+v", w.Current, w.Proposed)
	}
	if !slices.Contains(p.Because, KindLowConfidenceTrip) || !strings.Contains(strings.Join(kindsOf(p.Because), ","), "low-confidence-trip") {
		t.Errorf("because %v", p.Because)
	}
}

func kindsOf(ks []Kind) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = string(k)
	}
	return out
}

// CheckRules replays a flow limit on the traffic, and says which rules
// it cannot check and why: no traffic for the resource, or a Java flow
// rule of a kind core does not enforce.
func TestCheckRulesFlowAndUnchecked(t *testing.T) {
	const res = "GET:/api/stock"
	rule := core.BreakerRule{Resource: res, Strategy: core.ErrorRatio, Threshold: 0.5,
		MinRequestAmount: 20, StatIntervalMs: 2000, StatSlidingWindowBucketCount: 2, RetryTimeoutMs: 10_000}
	e := NewFeeder(Config{})
	simulate(t, e, "cart", 2, rule, nil, dbDown, 30, 60_000)
	limit := core.FlowRule{Resource: res, Threshold: 20}
	java := core.FlowRule{ID: "java:threads", Resource: res, Threshold: 5}
	other := core.FlowRule{Resource: "nobody", Threshold: 5}
	got := e.CheckRules(nil, []core.FlowRule{limit, java, other})
	if len(got.Flows) != 1 || got.Flows[0].WhatIf == nil {
		t.Fatalf("flows %+v", got.Flows)
	}
	w := got.Flows[0].WhatIf
	if w.Current.Blocked != 0 || w.Proposed.Blocked == 0 || w.Proposed.Passed+w.Proposed.Blocked != w.Offered {
		t.Errorf("flow what-if %+v", w)
	}
	if want := w.Offered - 2*60*20; w.Proposed.Blocked < want-2*60 || w.Proposed.Blocked > want+2*60 {
		t.Errorf("a limit of 20/s on 2 x 30/s for 60 s blocks %d, want about %d", w.Proposed.Blocked, want)
	}
	if len(got.Unchecked) != 2 || !strings.Contains(got.Unchecked[0].Why, "thread grade") || !strings.Contains(got.Unchecked[1].Why, "no instance") {
		t.Errorf("unchecked %+v", got.Unchecked)
	}
}

// A dashboard bounds what a snapshot replays: past the bound, plans are
// "not checked yet" (and their findings show no value); the next makings
// check those first, and reuse the plans already made.
func TestPlansWithinABudget(t *testing.T) {
	e := NewFeeder(Config{})
	for i := range 3 {
		res := fmt.Sprintf("price-%d", i)
		rule := core.BreakerRule{Resource: res, Strategy: core.SlowRequestRatio, MaxAllowedRtMs: 500, Threshold: 0.5,
			MinRequestAmount: 5, StatIntervalMs: 1000, StatSlidingWindowBucketCount: 2, RetryTimeoutMs: 10_000}
		simulate(t, e, fmt.Sprintf("gateway%d", i), 1, rule, nil, jittery, 4, 300_000)
	}
	end := t0 + 300_000
	o := PlanOptions{ReuseMs: 10_000, MaxCalls: 1}
	checked := func(plans []Plan) (n int) {
		for _, p := range plans {
			if p.WhatIf != nil {
				n++
			} else if v, _ := p.Verdict(); !strings.HasPrefix(p.Why, "not checked yet") || v != "not checked yet" || p.Safe || !p.Proposed.IsZero() {
				t.Errorf("plan %+v", p)
			}
		}
		return n
	}
	fs := e.Findings(end)
	plans := e.PlansWith(end, fs, o)
	if len(plans) != 3 || checked(plans) != 1 {
		t.Fatalf("%d plans, %d checked; want 3, 1", len(plans), checked(plans))
	}
	for _, f := range fs {
		if _, v, ok := findingValues(&f); ok && !v.IsZero() {
			if p := plans[slices.IndexFunc(plans, func(p Plan) bool { return p.Resource == f.Resource })]; p.WhatIf == nil {
				t.Errorf("%s on %s shows %+v before its plan is checked: %s", f.Kind, f.Resource, v, f.Advice)
			}
		}
	}
	plans = e.PlansWith(end+250, e.Findings(end+250), o)
	if checked(plans) != 2 {
		t.Fatalf("second snapshot: %d checked, want 2 (one reused, one new)", checked(plans))
	}
	plans = e.PlansWith(end+500, e.Findings(end+500), o)
	if checked(plans) != 3 {
		t.Fatalf("third snapshot: %d checked, want 3", checked(plans))
	}
	if all := e.Plans(end+500, e.Findings(end+500)); !reflect.DeepEqual(stripPlans(all), stripPlans(plans)) {
		t.Errorf("made within the budget:\n%+v\nafresh:\n%+v", plans, all)
	}
}

// stripPlans drops what only sorting reads.
func stripPlans(ps []Plan) []Plan {
	out := slices.Clone(ps)
	for i := range out {
		out[i].severity, out[i].from = 0, 0
	}
	return out
}

// A plan replayed on traffic the budget cut says from when it was kept.
func TestPlanSaysWhatTrafficItReplayed(t *testing.T) {
	const res = "GET:/api/stock"
	rule := core.BreakerRule{Resource: res, Strategy: core.ErrorRatio, Threshold: 0.5,
		MinRequestAmount: 20, StatIntervalMs: 2000, StatSlidingWindowBucketCount: 2, RetryTimeoutMs: 10_000}
	e := NewFeeder(Config{TraceBytes: 8 << 10})
	simulate(t, e, "cart", 6, rule, nil, dbDown, 30, 260_000)
	end := t0 + 260_000
	p := planFor(t, e.Plans(end, e.Findings(end)), res)
	if !strings.Contains(p.Why, "replayed on the traffic kept since ") || !strings.Contains(p.Why, "memory budget") {
		t.Fatalf("why %q", p.Why)
	}
}

// A resource whose one breaker has an id: the flood (judged over all the
// resource's breakers, naming none) and the sawtooth (naming it) make one
// plan, and both findings agree with it.
func TestOnePlanForANamedRule(t *testing.T) {
	const res = "GET:/api/stock"
	rule := core.BreakerRule{ID: "stock-errors", Resource: res, Strategy: core.ErrorRatio, Threshold: 0.5,
		MinRequestAmount: 20, StatIntervalMs: 2000, StatSlidingWindowBucketCount: 2, RetryTimeoutMs: 10_000}
	e := NewFeeder(Config{})
	simulate(t, e, "cart", 6, rule, nil, dbDown, 30, 260_000)
	end := t0 + 260_000
	fs := e.Findings(end)
	plans := e.Plans(end, fs)
	if len(plans) != 1 || plans[0].RuleID != "stock-errors" || !slices.Contains(plans[0].Because, KindSyncHalfOpen) || !slices.Contains(plans[0].Because, KindSawtooth) {
		t.Fatalf("plans %+v", plans)
	}
	for _, f := range fs {
		if _, v, ok := findingValues(&f); ok && v.RetryTimeoutMs != 0 && v.RetryTimeoutMs != plans[0].Proposed.RetryTimeoutMs {
			t.Errorf("%s proposes retryTimeoutMs %d beside the plan's %d", f.Kind, v.RetryTimeoutMs, plans[0].Proposed.RetryTimeoutMs)
		}
	}
}

// A rule's proposal whose numbers move back and forth between two values
// (a QPS at the edge between two windows' sizes moves the suggested
// statIntervalMs by a second, back and forth) is replayed once for each
// value within ReuseMs, not at every move; past ReuseMs, again.
func TestPlansReusedAsProposalsAlternate(t *testing.T) {
	const res = "price"
	e := NewFeeder(Config{})
	rule := core.BreakerRule{Resource: res, Strategy: core.SlowRequestRatio, MaxAllowedRtMs: 500, Threshold: 0.5,
		MinRequestAmount: 5, StatIntervalMs: 1000, StatSlidingWindowBucketCount: 2, RetryTimeoutMs: 10_000}
	simulate(t, e, "gateway", 2, rule, nil, jittery, 4, 300_000)
	end := t0 + 300_000
	fs := e.Findings(end)
	// other is fs with the rule's proposed statIntervalMs a second longer.
	other := slices.Clone(fs)
	var key planKey
	moved := false
	for i := range other {
		switch x := other[i].Facts.(type) {
		case *RuleAdviceFacts:
			c := *x
			c.Suggest.StatIntervalMs += 1000
			other[i].Facts, moved = &c, true
		case *LowConfidenceFacts:
			c := *x
			c.Suggest.StatIntervalMs += 1000
			other[i].Facts, moved = &c, true
		default:
			continue
		}
		key, _, _ = findingValues(&other[i])
	}
	if !moved {
		t.Fatalf("no finding proposes a window: %+v", fs)
	}
	o := PlanOptions{ReuseMs: 10_000}
	at := func(fs []Finding) int64 { // when the plan of fs's proposal was made
		t.Helper()
		var sig string
		for _, p := range proposals(fs) {
			if p.key == key {
				d, _, ok := e.draft(p)
				if !ok {
					t.Fatal("no draft")
				}
				sig = d.sig
			}
		}
		m := e.planMemo[key].of(sig)
		if m == nil {
			t.Fatalf("no plan kept of %s", sig)
		}
		return m.at
	}
	steps := []struct {
		now  int64
		fs   []Finding
		made int64 // when the plan used was made
	}{
		{end, fs, end},
		{end + 1000, other, end + 1000},
		{end + 2000, fs, end}, // back: the first plan
		{end + 3000, other, end + 1000},
		{end + 10_500, fs, end + 10_500}, // past ReuseMs: replayed
		{end + 11_500, other, end + 11_500},
	}
	var first []Plan
	for i, st := range steps {
		fs := slices.Clone(st.fs)
		plans := e.PlansWith(st.now, fs, o)
		if got := at(st.fs); got != st.made {
			t.Fatalf("step %d: the plan used was made at +%d, want +%d", i, got-end, st.made-end)
		}
		if i == 0 {
			first = plans
		}
		if i == 2 && !reflect.DeepEqual(stripPlans(plans), stripPlans(first)) {
			t.Fatalf("the plan reused differs:\n%+v\nmade:\n%+v", plans, first)
		}
	}
	if n := len(*e.planMemo[key]); n != 2 {
		t.Fatalf("%d plans kept of the rule, want 2 (one per proposal)", n)
	}
}

// A rule keeps the plans of its last planMemoSigs proposals, the latest
// first.
func TestPlanMemosKeepTheLatest(t *testing.T) {
	var ms planMemos
	for i, sig := range []string{"a", "b", "c", "d", "e", "c"} {
		ms.put(planMemo{sig: sig, at: int64(i)})
	}
	var got []string
	for _, m := range ms {
		got = append(got, fmt.Sprint(m.sig, m.at))
	}
	if want := []string{"c5", "e4", "d3", "b1"}; !slices.Equal(got, want) {
		t.Fatalf("kept %v, want %v", got, want)
	}
	if ms.of("a") != nil || ms.of("d") == nil || ms.of("d").at != 3 {
		t.Fatalf("of: %+v", ms)
	}
}
