package sentinelgolang

import (
	"cmp"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/alibaba/sentinel-golang/api"
	sgbase "github.com/alibaba/sentinel-golang/core/base"
	sgcb "github.com/alibaba/sentinel-golang/core/circuitbreaker"
	sgflow "github.com/alibaba/sentinel-golang/core/flow"
	sghotspot "github.com/alibaba/sentinel-golang/core/hotspot"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/internal/hotvalues"
	"github.com/sentinel-top/sentinel-top/internal/wsstream"
)

// SDK is the adapter's name and version, sent in hello.
const SDK = "sentinel-top-sentinelgolang/0.1.0 (sentinel-golang v1.0.4)"

// StatSlotOrder places the adapter's slot after sentinel-golang's own
// statistic slots and before the circuit breakers' (5000), so a completion
// is counted before the transition it may cause is reported.
const StatSlotOrder = 4500

// Defaults of Options.
const (
	DefaultBacklog       = time.Duration(wire.BacklogMs) * time.Millisecond
	DefaultQueueLen      = wsstream.DefaultQueueLen
	DefaultMaxReaders    = wsstream.DefaultMaxReaders
	DefaultWriteTimeout  = wsstream.DefaultWriteTimeout
	DefaultPingInterval  = wsstream.DefaultPingInterval
	DefaultItemsPerFrame = 1000
	// DefaultAddr is where ListenAndServe listens when given no address:
	// loopback only, so nothing is exposed by accident.
	DefaultAddr = "127.0.0.1:8720"
	// StreamPath is where Serve serves the stream.
	StreamPath = "/sentinel/stream"
)

// Options configures an Adapter. Every field is optional.
type Options struct {
	// App groups the instances of one service. Default: the executable's name.
	App string
	// Instance uniquely names this process. Default: "HOSTNAME-PID".
	Instance string
	// Host is this process's address as reported in hello. Default: the hostname.
	Host string
	// Token, when set, is required from every stream client as
	// "Authorization: Bearer TOKEN"; others get HTTP 401. Default: none.
	Token string
	// TLSConfig, when set, makes Serve speak TLS (wss://). Default: plain TCP.
	TLSConfig *tls.Config
	// AllowOrigins lists the browser origins ("https://dash.example.com")
	// whose pages may read the stream; "*" allows any. Clients that send no
	// Origin header, as collectors do, need no listing. Default: none (HTTP
	// 403 to every web page).
	AllowOrigins []string
	// AllowHosts lists the names collectors use to reach the stream
	// ("svc-1.internal", or with a port); "*" allows any. A request whose
	// Host header gives another name than these, the address it arrived on,
	// or localhost on loopback gets HTTP 403: a web page that rebinds its
	// own name to this address (DNS rebinding) cannot read the stream.
	// Default: none (addresses, and localhost on loopback, only).
	AllowHosts []string
	// Clock stamps messages and closes buckets. Default: core.NewRealClock().
	// sentinel-golang keeps its own clock (util.SetClock); give both the
	// same time.
	Clock core.Clock
	// Backlog is how much closed-bucket history a new connection receives
	// first. Default: 60 s, what wire v1 promises (wire.BacklogMs): a
	// collector away for longer counts what is older than that as never
	// received, so a shorter backlog makes it count less than it lost.
	Backlog time.Duration
	// QueueLen is each reader's queue, in messages. Default: 256.
	QueueLen int
	// MaxReaders caps simultaneous stream connections; more get HTTP 503.
	// Default: 16.
	MaxReaders int
	// MaxResources caps the resources counted; further ones are counted in
	// Stats.Overflow only. Default: core.DefaultMaxResources.
	MaxResources int
	// ItemsPerFrame caps the items of one buckets message. Default: 1000.
	ItemsPerFrame int
	// WriteTimeout bounds one websocket write. Default: 10 s.
	WriteTimeout time.Duration
	// PingInterval is how often idle connections are pinged. Default: 15 s.
	PingInterval time.Duration
	// Manual, when set, leaves sentinel-golang's global slot chain and
	// listeners alone: the caller adds Slot to its chain and registers
	// Listener. Default: New registers both.
	Manual bool
}

func (o Options) withDefaults() Options {
	host, _ := os.Hostname()
	if host == "" {
		host = "localhost"
	}
	o.App = cmp.Or(o.App, filepath.Base(os.Args[0]))
	o.Instance = cmp.Or(o.Instance, host+"-"+strconv.Itoa(os.Getpid()))
	o.Host = cmp.Or(o.Host, host)
	if o.Clock == nil {
		o.Clock = core.NewRealClock()
	}
	if o.Backlog <= 0 {
		o.Backlog = DefaultBacklog
	}
	if o.QueueLen <= 0 {
		o.QueueLen = DefaultQueueLen
	}
	if o.MaxReaders <= 0 {
		o.MaxReaders = DefaultMaxReaders
	}
	if o.MaxResources <= 0 {
		o.MaxResources = core.DefaultMaxResources
	}
	if o.ItemsPerFrame <= 0 {
		o.ItemsPerFrame = DefaultItemsPerFrame
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.PingInterval <= 0 {
		o.PingInterval = DefaultPingInterval
	}
	return o
}

// Adapter listens to sentinel-golang and serves what it hears as a wire v1
// stream. Create it with New and Close it on shutdown.
type Adapter struct {
	opts      Options
	clock     core.Clock
	startedAt int64
	bucketMs  int64

	resMu      sync.Mutex // serializes resource creation
	resources  atomic.Pointer[map[string]*resource]
	overflow   atomic.Int64
	unrecorded atomic.Int64 // see Stats.Unrecorded

	rulesMu sync.Mutex // serializes rule refreshes
	rules   atomic.Pointer[ruleSet]
	skipped atomic.Int64

	stream  *wsstream.Server
	backlog *wsstream.Backlog
	shipper *wsstream.Shipper

	closed    atomic.Bool
	closeOnce sync.Once
	done      chan struct{}
	wg        sync.WaitGroup // the ship loop
	panics    atomic.Int64
}

// resource is what the adapter counts for one resource name.
type resource struct {
	name     string
	stat     *core.MetricWindow
	inflight atomic.Int64
	// The latest completion, for the probe of a breaker leaving HALF_OPEN.
	lastRt     atomic.Int64
	lastFailed atomic.Bool
	completed  atomic.Bool
}

// ruleSet is the rule set last read from sentinel-golang.
type ruleSet struct {
	rawBreakers []sgcb.Rule
	rawFlows    []sgflow.Rule
	rawParams   []sghotspot.Rule
	hot         map[string]*hotvalues.Tracker // by resource, those with hotspot rules
	frame       *wsstream.Frame
	version     string
	slowRt      map[string]int64 // smallest MaxAllowedRtMs of a resource's slow-ratio breakers
	shadows     map[sgcb.Rule]*shadow
	byResource  map[string][]*shadow
}

// shadow counts the completions one breaker sees, in the breaker's own
// window shape, to tell how many requests a trip rested on.
type shadow struct {
	rule sgcb.Rule
	win  *core.MetricWindow
}

// New starts an adapter: it registers the slot and the listener (unless
// Options.Manual), reads the current rules and ships buckets from now on.
// Nothing listens until Serve, ListenAndServe or Handler is used.
func New(opts Options) (*Adapter, error) {
	opts = opts.withDefaults()
	if len(opts.Instance) > 256 || len(opts.App) > 256 {
		return nil, errors.New("sentinelgolang: App and Instance must be at most 256 bytes")
	}
	a := &Adapter{opts: opts, clock: opts.Clock, bucketMs: core.ResourceBucketMs, done: make(chan struct{})}
	a.startedAt = a.clock.UnixMilli()
	empty := map[string]*resource{}
	a.resources.Store(&empty)
	a.stream = wsstream.New(wsstream.Options{
		Token:        opts.Token,
		TLS:          opts.TLSConfig,
		AllowOrigins: opts.AllowOrigins,
		AllowHosts:   opts.AllowHosts,
		QueueLen:     opts.QueueLen,
		MaxReaders:   opts.MaxReaders,
		WriteTimeout: opts.WriteTimeout,
		PingInterval: opts.PingInterval,
		Initial:      a.initialFrames,
		OnPanic:      func(any) { a.panics.Add(1) },
	})
	a.backlog = wsstream.NewBacklog(int(opts.Backlog.Milliseconds() / a.bucketMs))
	a.shipper = &wsstream.Shipper{Clock: a.clock, BucketMs: a.bucketMs, Instance: opts.Instance,
		ItemsPerFrame: opts.ItemsPerFrame, Server: a.stream, Backlog: a.backlog, Series: a.series,
		OnPanic: func(any) { a.panics.Add(1) }}
	a.rules.Store(&ruleSet{})
	a.RefreshRules()
	if !opts.Manual {
		api.GlobalSlotChain().AddStatSlot(a.Slot())
		sgcb.RegisterStateChangeListeners(a.Listener())
	}
	a.shipper.Start(a.done, a.RefreshRules, &a.wg)
	return a, nil
}

// Instance is the instance id sent in every message.
func (a *Adapter) Instance() string { return a.opts.Instance }

// Slot is the adapter's statistic slot, for services that build their own
// slot chain (see Options.Manual).
func (a *Adapter) Slot() sgbase.StatSlot { return statSlot{a} }

// Listener is the adapter's breaker state listener (see Options.Manual).
func (a *Adapter) Listener() sgcb.StateChangeListener { return listener{a} }

// resource returns the named resource, creating it (once) if there is room.
func (a *Adapter) resource(name string) *resource {
	if r, ok := (*a.resources.Load())[name]; ok {
		return r
	}
	a.resMu.Lock()
	defer a.resMu.Unlock()
	old := *a.resources.Load()
	if r, ok := old[name]; ok {
		return r
	}
	if len(old) >= a.opts.MaxResources {
		return nil
	}
	r := &resource{name: name, stat: core.NewResourceWindow()}
	next := make(map[string]*resource, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	next[name] = r
	a.resources.Store(&next)
	return r
}

// statSlot counts entries as sentinel-golang's slot chain decides them.
type statSlot struct{ a *Adapter }

func (s statSlot) Order() uint32 { return StatSlotOrder }

func batchOf(ctx *sgbase.EntryContext) int64 {
	if ctx.Input != nil && ctx.Input.BatchCount > 0 {
		return int64(ctx.Input.BatchCount)
	}
	return 1
}

func (s statSlot) OnEntryPassed(ctx *sgbase.EntryContext) {
	a := s.a
	if a.closed.Load() || ctx.Resource == nil {
		return
	}
	defer a.recoverPanic()
	r := a.resource(ctx.Resource.Name())
	if r == nil {
		a.overflow.Add(1)
		return
	}
	n := r.inflight.Add(1)
	now := a.clock.UnixMilli()
	if b := r.stat.Current(now); b != nil {
		b.AddPass(batchOf(ctx))
		b.ObserveConcurrency(n)
		r.stat.Wrote(now)
	} else {
		a.unrecorded.Add(1)
	}
	a.countHot(ctx, true)
}

func (s statSlot) OnEntryBlocked(ctx *sgbase.EntryContext, _ *sgbase.BlockError) {
	a := s.a
	if a.closed.Load() || ctx.Resource == nil {
		return
	}
	defer a.recoverPanic()
	r := a.resource(ctx.Resource.Name())
	if r == nil {
		a.overflow.Add(1)
		return
	}
	now := a.clock.UnixMilli()
	if b := r.stat.Current(now); b != nil {
		b.AddBlock(batchOf(ctx))
		r.stat.Wrote(now)
	} else {
		a.unrecorded.Add(1)
	}
	a.countHot(ctx, false)
}

func (s statSlot) OnCompleted(ctx *sgbase.EntryContext) {
	a := s.a
	if a.closed.Load() || ctx.Resource == nil {
		return
	}
	defer a.recoverPanic()
	name := ctx.Resource.Name()
	r := (*a.resources.Load())[name]
	if r == nil {
		return // its pass was not counted either
	}
	now := a.clock.UnixMilli()
	rt := int64(min(ctx.Rt(), 1<<62))
	failed := ctx.Err() != nil
	r.inflight.Add(-1)
	rs := a.rules.Load()
	slowMs, hasSlow := rs.slowRt[name]
	if b := r.stat.Current(now); b != nil {
		for range batchOf(ctx) {
			b.AddComplete(rt, failed, hasSlow && rt > slowMs)
		}
		r.stat.Wrote(now)
	} else {
		a.unrecorded.Add(1)
	}
	// Breakers count a completion once, whatever its batch.
	for _, sh := range rs.byResource[name] {
		if b := sh.win.Current(now); b != nil {
			b.AddComplete(rt, failed, rt > int64(min(sh.rule.MaxAllowedRtMs, 1<<62)))
		}
	}
	r.lastRt.Store(rt)
	r.lastFailed.Store(failed)
	r.completed.Store(true)
}

// listener turns sentinel-golang's breaker transitions into state messages.
type listener struct{ a *Adapter }

func (l listener) OnTransformToClosed(prev sgcb.State, rule sgcb.Rule) {
	l.a.transition(prev, sgcb.Closed, rule, nil)
}

func (l listener) OnTransformToOpen(prev sgcb.State, rule sgcb.Rule, snapshot any) {
	l.a.transition(prev, sgcb.Open, rule, snapshot)
}

func (l listener) OnTransformToHalfOpen(prev sgcb.State, rule sgcb.Rule) {
	l.a.transition(prev, sgcb.HalfOpen, rule, nil)
}

// transition runs on the goroutine of the entry that caused it: it encodes
// and queues, never waits on a reader.
func (a *Adapter) transition(from, to sgcb.State, rule sgcb.Rule, snapshot any) {
	if a.closed.Load() {
		return
	}
	defer a.recoverPanic()
	now := a.clock.UnixMilli()
	m := &wire.State{
		Header:         wire.Header{Ts: now, Instance: a.opts.Instance},
		Resource:       rule.Resource,
		Strategy:       core.Strategy(rule.Strategy),
		From:           core.State(from),
		To:             core.State(to),
		RuleID:         rule.Id,
		Threshold:      rule.Threshold,
		RetryTimeoutMs: int64(rule.RetryTimeoutMs),
	}
	sh := a.rules.Load().shadows[rule]
	switch {
	case from == sgcb.Closed && to == sgcb.Open:
		s := &wire.Snapshot{}
		switch v := snapshot.(type) {
		case float64:
			s.Value = v
		case uint64:
			s.Value = float64(v)
		}
		if sh != nil {
			sum := core.SumWindow(sh.win, now)
			s.Total = sum.Complete
			if rule.Strategy == sgcb.SlowRequestRatio {
				s.Slow = sum.Slow
			} else {
				s.Error = sum.Error
			}
		}
		m.Snapshot = s
	case from == sgcb.HalfOpen:
		if r := (*a.resources.Load())[rule.Resource]; r != nil && r.completed.Load() {
			m.Probe = &wire.Probe{RtMs: r.lastRt.Load(), Error: r.lastFailed.Load()}
		}
		if to == sgcb.Closed && sh != nil {
			sh.win.Reset(now) // sentinel-golang forgets the window when it closes
		}
	}
	if wire.Validate(m, wire.Limits{}) != nil {
		return // a strategy of its own (SetCircuitBreakerGenerator): not wire v1
	}
	f, err := encodeFrame(m)
	if err != nil {
		return
	}
	// Kept for new readers as it goes to the current ones: a collector
	// that connects later learns the breaker's state.
	a.stream.Locked(func() {
		a.backlog.AddState(breakerKey(rule), now, f)
		a.stream.Broadcast(f)
	})
}

// RefreshRules reads sentinel-golang's rules and, when they changed, sends
// the new set to every reader. The adapter calls it at every bucket
// boundary; call it after loading rules to have them sent at once.
func (a *Adapter) RefreshRules() {
	defer a.recoverPanic()
	a.rulesMu.Lock()
	defer a.rulesMu.Unlock()
	rawB := sgcb.GetRules()
	rawF := sgflow.GetRules()
	slices.SortStableFunc(rawB, func(x, y sgcb.Rule) int {
		return cmp.Or(cmp.Compare(x.Resource, y.Resource), cmp.Compare(x.Id, y.Id))
	})
	slices.SortStableFunc(rawF, func(x, y sgflow.Rule) int {
		return cmp.Or(cmp.Compare(x.Resource, y.Resource), cmp.Compare(x.ID, y.ID))
	})
	rawP := sortedHotspotRules()
	old := a.rules.Load()
	if old.frame != nil && slices.Equal(rawB, old.rawBreakers) && slices.Equal(rawF, old.rawFlows) && sameHotspotRules(rawP, old.rawParams) {
		return
	}
	// sentinel-golang replaced the breakers of changed rules with new ones
	// that start CLOSED without a transition: their past transitions must
	// not tell new readers their states (a transition names its rule).
	current := map[string]bool{}
	for _, r := range rawB {
		current[breakerKey(r)] = true
	}
	a.backlog.ForgetBreakers(func(b string) bool { return current[b] }, math.MaxInt64)
	next := &ruleSet{rawBreakers: rawB, rawFlows: rawF, rawParams: rawP, slowRt: map[string]int64{},
		shadows: map[sgcb.Rule]*shadow{}, byResource: map[string][]*shadow{}}
	params, hot, skipped := hotParamRules(rawP, a.bucketMs)
	next.hot = hot
	var breakers []core.BreakerRule
	var flows []core.FlowRule
	for _, r := range rawB {
		c := core.BreakerRule{ID: r.Id, Resource: r.Resource, Strategy: core.Strategy(r.Strategy),
			RetryTimeoutMs: r.RetryTimeoutMs, MinRequestAmount: r.MinRequestAmount, StatIntervalMs: r.StatIntervalMs,
			StatSlidingWindowBucketCount: r.StatSlidingWindowBucketCount, MaxAllowedRtMs: r.MaxAllowedRtMs,
			Threshold: r.Threshold, ProbeNum: r.ProbeNum}
		if c.Validate() != nil || !validNames(c.Resource, c.ID) {
			skipped++
			continue
		}
		breakers = append(breakers, c)
		if c.Strategy == core.SlowRequestRatio {
			ms := int64(min(c.MaxAllowedRtMs, 1<<62))
			if cur, ok := next.slowRt[c.Resource]; !ok || ms < cur {
				next.slowRt[c.Resource] = ms
			}
		}
		if _, dup := next.shadows[r]; dup {
			continue
		}
		sh := old.shadows[r]
		if sh == nil {
			win, err := core.NewMetricWindow(c.BucketCount(), int64(c.StatIntervalMs))
			if err != nil {
				continue
			}
			sh = &shadow{rule: r, win: win}
		}
		next.shadows[r] = sh
		next.byResource[r.Resource] = append(next.byResource[r.Resource], sh)
	}
	for _, r := range rawF {
		c := core.FlowRule{ID: r.ID, Resource: r.Resource, TokenCalculateStrategy: core.TokenCalculateStrategy(r.TokenCalculateStrategy),
			ControlBehavior: core.ControlBehavior(r.ControlBehavior), Threshold: r.Threshold,
			RelationStrategy: int32(r.RelationStrategy), RefResource: r.RefResource, MaxQueueingTimeMs: r.MaxQueueingTimeMs,
			WarmUpPeriodSec: r.WarmUpPeriodSec, WarmUpColdFactor: r.WarmUpColdFactor, StatIntervalInMs: r.StatIntervalInMs}
		if c.Validate() != nil || !validNames(c.Resource, c.ID) {
			skipped++
			continue
		}
		flows = append(flows, c)
	}
	a.skipped.Store(skipped)
	next.version = wire.RulesVersion(breakers, flows, params...)
	if old.frame != nil && next.version == old.version {
		next.frame = old.frame
		next.hot = old.hot // the same rules: keep counting the bucket under way
		a.rules.Store(next)
		return
	}
	f, err := encodeFrame(&wire.Rules{Header: wire.Header{Ts: a.clock.UnixMilli(), Instance: a.opts.Instance},
		Version: next.version, Breakers: breakers, Flows: flows, Params: params})
	if err != nil {
		return
	}
	next.frame = f
	a.stream.Locked(func() {
		a.rules.Store(next)
		a.stream.Broadcast(f)
	})
}

// breakerKey names a breaker in the backlog: its whole rule, which
// sentinel-golang gives each transition.
func breakerKey(r sgcb.Rule) string { return fmt.Sprintf("%s\x00%s\x00%+v", r.Resource, r.Id, r) }

func validNames(names ...string) bool {
	for _, n := range names {
		if len(n) > wire.DefaultMaxNameBytes {
			return false
		}
	}
	return true
}

// recoverPanic keeps a bug in the adapter from taking the service down:
// the panic is counted (Stats.Panics) and the adapter carries on.
func (a *Adapter) recoverPanic() {
	if r := recover(); r != nil {
		a.panics.Add(1)
	}
}

// Stats describes the adapter.
type Stats struct {
	Readers      int   // connected stream clients
	Dropped      int64 // messages dropped for slow readers, all readers, ever
	Overflow     int64 // entries not counted because MaxResources was reached
	SkippedRules int64 // rules of the current set left out of the rules message
	Panics       int64 // internal panics recovered (each one is a bug)
	// Skipped counts the resources' buckets never shipped: overwritten
	// while the adapter's shipper ran more than 10 s late, starved of CPU
	// (wsstream.Shipper.Skipped). Readers are told, as dropped messages.
	Skipped int64
	// Unrecorded counts the passes, blocks and completions the statistics
	// could not record: the slot of their time's bucket already held a
	// newer one (a goroutine paused between reading the clock and
	// counting, or a clock stepped back).
	Unrecorded int64
}

// Stats returns the adapter's counters.
func (a *Adapter) Stats() Stats {
	readers, dropped := a.stream.Stats()
	return Stats{Readers: readers, Dropped: dropped, Overflow: a.overflow.Load(),
		SkippedRules: a.skipped.Load(), Panics: a.panics.Load(), Skipped: a.shipper.Skipped(),
		Unrecorded: a.unrecorded.Load()}
}
