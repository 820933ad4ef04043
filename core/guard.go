package core

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// maxRulesPerResource bounds the breakers (and flow rules) of one resource;
// the probe bookkeeping of an entry is a 64-bit mask.
const maxRulesPerResource = 64

// DefaultMaxResources is GuardOptions.MaxResources when it is zero. It is
// sentinel-golang's default resource cap.
const DefaultMaxResources = 6000

// GuardOptions configures a Guard. Every field is optional.
type GuardOptions struct {
	// Clock is the time source. Default: RealClock.
	Clock Clock
	// Listener receives every breaker transition of every resource,
	// synchronously. It must not block. Default: none.
	Listener TransitionListener
	// MaxResources caps how many distinct resources are tracked; entries for
	// further resources pass unguarded and are counted by Overflow.
	// Default: DefaultMaxResources.
	MaxResources int
}

// Guard is the Entry/Exit API: it checks a resource's flow rules, then its
// hot-parameter rules (for an entry with parameters), then its circuit
// breakers, records the outcome in the resource's statistic window, and
// feeds completions back to the breakers, as sentinel-golang's slot chain
// does. The pass path does not allocate.
type Guard struct {
	clock     Clock
	listener  []TransitionListener
	maxRes    int
	resources atomic.Pointer[map[string]*Resource]
	mu        sync.Mutex // serializes rule loads and resource creation
	overflow  atomic.Int64
	lost      atomic.Int64 // see Unrecorded
	pool      sync.Pool
}

// Resource is the state a Guard keeps for one resource name.
type Resource struct {
	name        string
	stat        *MetricWindow
	concurrency atomic.Int64
	slowRtMs    atomic.Int64 // smallest MaxAllowedRtMs of its slow-ratio breakers; -1: none
	breakers    atomic.Pointer[[]*Breaker]
	flows       atomic.Pointer[[]*flowGate]
	hots        atomic.Pointer[[]*HotParamController]
}

// flowGate is a flow controller with the error it blocks with.
type flowGate struct {
	*FlowController
	blocked *BlockError
}

// Name is the resource's name.
func (r *Resource) Name() string { return r.name }

// Stat is the resource's statistic window (NewResourceWindow's shape).
func (r *Resource) Stat() *MetricWindow { return r.stat }

// Concurrency is the number of entries in flight.
func (r *Resource) Concurrency() int64 { return r.concurrency.Load() }

// countBlock counts a rejected entry at now in the resource's statistics.
func (r *Resource) countBlock(g *Guard, now int64) {
	if b := r.stat.Current(now); b != nil {
		b.AddBlock(1)
		r.stat.Wrote(now)
	} else {
		g.lost.Add(1) // see Unrecorded
	}
}

// SlowRtMs is the response time above which a completion counts as slow in
// the resource's statistics: the smallest MaxAllowedRtMs among its
// slow-ratio breakers. ok is false when it has none (then nothing is slow).
func (r *Resource) SlowRtMs() (ms int64, ok bool) {
	ms = r.slowRtMs.Load()
	return ms, ms >= 0
}

// Breakers returns the resource's breakers, in rule order. Do not modify.
func (r *Resource) Breakers() []*Breaker {
	if p := r.breakers.Load(); p != nil {
		return *p
	}
	return nil
}

// Flows returns the resource's flow controllers, in rule order.
func (r *Resource) Flows() []*FlowController {
	p := r.flows.Load()
	if p == nil {
		return nil
	}
	out := make([]*FlowController, len(*p))
	for i, f := range *p {
		out[i] = f.FlowController
	}
	return out
}

// NewGuard returns a Guard with no rules.
func NewGuard(opts GuardOptions) *Guard {
	g := &Guard{clock: opts.Clock, maxRes: opts.MaxResources}
	if g.clock == nil {
		g.clock = NewRealClock()
	}
	if g.maxRes <= 0 {
		g.maxRes = DefaultMaxResources
	}
	if opts.Listener != nil {
		g.listener = []TransitionListener{opts.Listener}
	}
	empty := map[string]*Resource{}
	g.resources.Store(&empty)
	g.pool.New = func() any { return new(Entry) }
	return g
}

// Clock returns the guard's clock.
func (g *Guard) Clock() Clock { return g.clock }

// Overflow is how many entries passed unguarded because MaxResources was
// reached.
func (g *Guard) Overflow() int64 { return g.overflow.Load() }

// Unrecorded counts the passes, blocks and completions the statistics
// could not record: the slot of the bucket of the time the call read had
// already been taken for a newer bucket. The goroutine paused for the
// statistic's whole interval (10 s) between reading the clock and
// counting (a process starved of CPU), or the clock stepped back. As in
// Sentinel, such a count is dropped from the statistic (breakers judge
// with their own windows); this says how many were.
func (g *Guard) Unrecorded() int64 { return g.lost.Load() }

// Resource returns the state of a tracked resource.
func (g *Guard) Resource(name string) (*Resource, bool) {
	r, ok := (*g.resources.Load())[name]
	return r, ok
}

// ResourceCount is how many resources are tracked. A resource, once
// tracked, stays so: the count changes exactly when Resources does.
func (g *Guard) ResourceCount() int { return len(*g.resources.Load()) }

// Resources returns every tracked resource, in no particular order.
func (g *Guard) Resources() []*Resource {
	m := *g.resources.Load()
	out := make([]*Resource, 0, len(m))
	for _, r := range m {
		out = append(out, r)
	}
	return out
}

// resource returns the named resource, creating it (once) if there is room.
func (g *Guard) resource(name string) *Resource {
	if r, ok := (*g.resources.Load())[name]; ok {
		return r
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.resourceLocked(name)
}

func (g *Guard) resourceLocked(name string) *Resource {
	old := *g.resources.Load()
	if r, ok := old[name]; ok {
		return r
	}
	if len(old) >= g.maxRes {
		return nil
	}
	r := &Resource{name: name, stat: NewResourceWindow()}
	r.slowRtMs.Store(-1)
	next := make(map[string]*Resource, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	next[name] = r
	g.resources.Store(&next)
	return r
}

// LoadBreakerRules replaces every breaker rule, as sentinel-golang's
// circuitbreaker.LoadRules does: a breaker whose rule is unchanged keeps its
// state and window; a changed rule with the same statistic shape keeps the
// window and starts CLOSED; resources left without rules lose their breakers.
// Invalid rules are rejected as a whole (nothing changes) with an error
// naming the first bad rule.
func (g *Guard) LoadBreakerRules(rules []BreakerRule) error {
	byRes := map[string][]BreakerRule{}
	for i := range rules {
		if err := rules[i].Validate(); err != nil {
			return fmt.Errorf("breaker rule %d: %w", i, err)
		}
		if err := rules[i].enforceable(); err != nil {
			return fmt.Errorf("breaker rule %d: %w", i, err)
		}
		byRes[rules[i].Resource] = append(byRes[rules[i].Resource], rules[i])
		if len(byRes[rules[i].Resource]) > maxRulesPerResource {
			return fmt.Errorf("breaker rule %d: %w: more than %d breakers for %q", i, ErrInvalidRule, maxRulesPerResource, rules[i].Resource)
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for name := range byRes {
		if g.resourceLocked(name) == nil {
			return fmt.Errorf("breaker rules for %q: more than %d resources", name, g.maxRes)
		}
	}
	for name, r := range *g.resources.Load() {
		old := r.Breakers()
		next := make([]*Breaker, 0, len(byRes[name]))
		slow := int64(-1)
		for _, rule := range byRes[name] {
			next = append(next, g.rebuildBreaker(rule, &old))
			if rule.Strategy == SlowRequestRatio && (slow < 0 || int64(rule.MaxAllowedRtMs) < slow) {
				slow = int64(rule.MaxAllowedRtMs)
			}
		}
		r.slowRtMs.Store(slow)
		if len(next) == 0 {
			r.breakers.Store(nil)
		} else {
			r.breakers.Store(&next)
		}
	}
	return nil
}

// rebuildBreaker reuses an old breaker with an identical rule, or the window
// of one with the same statistic shape, removing what it took from *old.
func (g *Guard) rebuildBreaker(rule BreakerRule, old *[]*Breaker) *Breaker {
	take := func(i int) *Breaker {
		b := (*old)[i]
		*old = append((*old)[:i:i], (*old)[i+1:]...)
		return b
	}
	for i, b := range *old {
		if b.rule == rule {
			return take(i)
		}
	}
	for i, b := range *old {
		if b.rule.sameStat(&rule) {
			return newBreakerWithStat(rule, take(i).stat, g.listener)
		}
	}
	b, err := NewBreaker(rule, g.listener...)
	if err != nil {
		panic(err) // validated above
	}
	return b
}

// LoadFlowRules replaces every flow rule. Invalid rules are rejected as a
// whole (nothing changes) with an error naming the first bad rule.
func (g *Guard) LoadFlowRules(rules []FlowRule) error {
	byRes, err := byResource("flow", rules, (*FlowRule).Validate, func(r *FlowRule) string { return r.Resource })
	if err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := trackLocked(g, "flow", byRes); err != nil {
		return err
	}
	for name, r := range *g.resources.Load() {
		var old []*flowGate
		if p := r.flows.Load(); p != nil {
			old = *p
		}
		var next []*flowGate
		for _, rule := range byRes[name] {
			var gate *flowGate
			for _, o := range old {
				if o.Rule() == rule {
					gate = o
					break
				}
			}
			if gate == nil {
				fc, err := NewFlowController(rule, r.stat)
				if err != nil {
					return fmt.Errorf("flow rule for %q: %w", name, err)
				}
				gate = &flowGate{FlowController: fc}
				gate.blocked = &BlockError{Resource: name, Cause: BlockedByFlow, Flow: &rule}
			}
			next = append(next, gate)
		}
		if len(next) == 0 {
			r.flows.Store(nil)
		} else {
			r.flows.Store(&next)
		}
	}
	return nil
}

// Entry is one admitted call of a resource. Call Exit exactly once when the
// call finishes; the Entry must not be used after that.
type Entry struct {
	g       *Guard
	res     *Resource
	startMs int64
	hot     []hotHeld // the values counted in flight by concurrency hot-parameter rules
}

// Entry asks to run one call of resource. It returns a *BlockError (matching
// ErrBlocked, and ErrOpen or ErrFlow) when a rule blocks the call; the caller
// then must not call Exit. Throttling flow rules may make Entry wait.
// Hot-parameter rules see no parameters: use EntryWithParam.
func (g *Guard) Entry(resource string) (*Entry, error) { return g.entry(resource, nil) }

// entry is Entry with the entry's parameters (nil: none).
func (g *Guard) entry(resource string, p *Params) (*Entry, error) {
	r := g.resource(resource)
	if r == nil {
		g.overflow.Add(1)
		e := g.pool.Get().(*Entry)
		e.g, e.res, e.startMs = g, nil, g.clock.UnixMilli()
		return e, nil
	}
	var start, now int64
	if fp := r.flows.Load(); fp != nil {
		// Throttling spaces requests in nanoseconds, as sentinel-golang
		// does; the other rules and the statistics count milliseconds of
		// the same reading.
		nowNano := g.clock.Now().UnixNano()
		start = floorDiv(nowNano, 1e6)
		now = start
		for _, fc := range *fp {
			pass, wait := fc.CheckNano(nowNano, 1)
			if !pass {
				r.countBlock(g, now)
				return nil, fc.blocked
			}
			if wait > 0 {
				g.clock.Sleep(wait)
				nowNano = g.clock.Now().UnixNano()
				now = floorDiv(nowNano, 1e6)
			}
		}
	} else {
		start = g.clock.UnixMilli()
		now = start
	}
	var e *Entry // taken early when a hot-parameter rule counts the entry in flight
	if p != nil {
		if hp := r.hots.Load(); hp != nil {
			var err error
			if e, now, err = g.checkHotParams(r, *hp, p, now); err != nil {
				return nil, err
			}
		}
	}
	if bp := r.breakers.Load(); bp != nil {
		var probes uint64
		for i, b := range *bp {
			pass, probe := b.TryPass(now)
			if !pass {
				for j := 0; j < i; j++ {
					if probes&(1<<j) != 0 {
						(*bp)[j].AbortProbe(now)
					}
				}
				r.countBlock(g, now)
				g.release(e)
				return nil, b.blocked
			}
			if probe {
				probes |= 1 << i
			}
		}
	}
	if bucket := r.stat.Current(now); bucket != nil {
		bucket.AddPass(1)
		bucket.ObserveConcurrency(r.concurrency.Add(1))
		r.stat.Wrote(now)
	} else {
		r.concurrency.Add(1)
		g.lost.Add(1) // see Unrecorded
	}
	if fp := r.flows.Load(); fp != nil {
		for _, fc := range *fp {
			fc.OnPass(now, 1)
		}
	}
	if e == nil {
		e = g.pool.Get().(*Entry)
	}
	for i := range e.hot {
		e.hot[i].c.OnPass(e.hot[i].key)
	}
	e.g, e.res, e.startMs = g, r, start
	return e, nil
}

// Exit finishes the call: err non-nil counts it as a business error. The
// response time is measured from the start of Entry, throttling wait
// included, as in sentinel-golang.
func (e *Entry) Exit(err error) {
	g, r := e.g, e.res
	now := g.clock.UnixMilli()
	rt := now - e.startMs
	for i := range e.hot {
		e.hot[i].c.OnExit(e.hot[i].key)
	}
	g.release(e)
	if r == nil {
		return
	}
	r.concurrency.Add(-1)
	failed := err != nil
	slowMs := r.slowRtMs.Load()
	if bucket := r.stat.Current(now); bucket != nil {
		bucket.AddComplete(rt, failed, slowMs >= 0 && rt > slowMs)
		r.stat.Wrote(now)
	} else {
		g.lost.Add(1) // see Unrecorded
	}
	if bp := r.breakers.Load(); bp != nil {
		for _, b := range *bp {
			b.OnComplete(now, rt, failed)
		}
	}
}

// Elapsed is how long the entry has been running.
func (e *Entry) Elapsed() time.Duration {
	return time.Duration(e.g.clock.UnixMilli()-e.startMs) * time.Millisecond
}
