package agent

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/internal/hotvalues"
	"github.com/sentinel-top/sentinel-top/internal/wsstream"
)

// SDK is the agent's name and version, sent in hello.
const SDK = "sentinel-top-agent/0.1.0"

// Defaults of Options.
const (
	DefaultBacklog      = time.Duration(wire.BacklogMs) * time.Millisecond
	DefaultQueueLen     = wsstream.DefaultQueueLen // two minutes of buckets
	DefaultQueueBytes   = wsstream.DefaultQueueBytes
	DefaultMaxReaders   = wsstream.DefaultMaxReaders
	DefaultWriteTimeout = wsstream.DefaultWriteTimeout
	DefaultPingInterval = wsstream.DefaultPingInterval
	// DefaultMaxConns caps the connections the agent's server holds open.
	DefaultMaxConns = wsstream.DefaultMaxConns
	// DefaultRequestTimeout bounds the reading of a whole request.
	DefaultRequestTimeout = wsstream.DefaultRequestTimeout
	// DefaultItemsPerFrame bounds a buckets frame, so that a service with
	// thousands of resources still sends frames far below the 1 MiB limit.
	DefaultItemsPerFrame = 1000
)

// Options configures an Agent. Every field is optional.
type Options struct {
	// App groups the instances of one service. Default: the executable's name.
	App string
	// Instance uniquely names this process. Default: "HOSTNAME-PID".
	Instance string
	// Host is this process's address as reported in hello. Default: the hostname.
	Host string
	// Clock is the time source for the guard and the stream. Default:
	// core.NewRealClock(). core.NewCoarseClock halves the cost of Entry+Exit
	// (one atomic load per reading) for a goroutine waking every millisecond.
	Clock core.Clock
	// Token, when set, is required from every stream client as
	// "Authorization: Bearer TOKEN"; others get HTTP 401 before the upgrade.
	// Default: none (anyone who can reach the address may read the stream).
	Token string
	// TLSConfig, when set, makes Serve and ListenAndServe speak TLS (wss://).
	// Default: plain TCP.
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
	// Backlog is how much closed-bucket history a new connection receives
	// first, so a collector that reconnects fills its gap. Default: 60 s,
	// what wire v1 promises (wire.BacklogMs): a collector away for longer
	// counts what is older than that as never received, so a shorter
	// backlog makes it count less than it lost.
	Backlog time.Duration
	// QueueLen is each reader's queue, in messages. Default: 256 (two
	// minutes of buckets).
	QueueLen int
	// QueueBytes bounds each reader's queue in bytes, so that a slow reader
	// of a service with thousands of resources holds a bounded amount of
	// memory. Default: 8 MiB.
	QueueBytes int64
	// MaxReaders caps simultaneous stream connections; more get HTTP 503.
	// Default: 16.
	MaxReaders int
	// MaxResources caps the resources tracked (core.GuardOptions).
	// Default: core.DefaultMaxResources.
	MaxResources int
	// ItemsPerFrame caps the items of one buckets message; a bucket period
	// with more resources is split over several. Default: 1000.
	ItemsPerFrame int
	// WriteTimeout bounds one websocket write; a reader that takes longer is
	// disconnected. Default: 10 s.
	WriteTimeout time.Duration
	// PingInterval is how often idle connections are pinged. Default: 15 s.
	PingInterval time.Duration
	// MaxConns caps the connections Serve and ListenAndServe hold open at
	// once, streams and plain requests together: one more is closed as
	// soon as it is accepted, and counted (Stats.RefusedConns), so that a
	// peer opening thousands of connections cannot take the service's file
	// descriptors. Default: 128.
	MaxConns int
	// RequestTimeout bounds the reading of one request, headers and body
	// together, on Serve and ListenAndServe: a peer trickling either is cut
	// off. A stream, once upgraded, is under its own deadlines (pings).
	// Default: 10 s.
	RequestTimeout time.Duration
	// ManualShip, when set, starts no background shipping: the owner calls
	// Ship to send the buckets closed so far. Simulations on a virtual clock
	// use it to stay deterministic. Default: ship automatically at every
	// bucket boundary.
	ManualShip bool
	// Logf receives the agent's rare log lines: today, once, the warning
	// that the stream is served beyond loopback without a token.
	// Default: the standard library's log.Printf.
	Logf func(format string, args ...any)
	// ServeMetrics, when set, makes Serve and ListenAndServe also serve
	// the agent's Prometheus metrics at MetricsPath (MetricsHandler), under
	// the stream's token and origin and host policy. Default: the stream
	// alone.
	ServeMetrics bool
	// OnTransition, when set, also receives every breaker transition,
	// synchronously on the goroutine that caused it. It must not block. A
	// panic in it is recovered and counted (Stats.ListenerPanics): it
	// reaches neither Entry/Exit nor the stream.
	OnTransition func(core.Transition)
}

func (o Options) withDefaults() Options {
	host, _ := os.Hostname()
	if host == "" {
		host = "localhost"
	}
	if o.App == "" {
		o.App = filepath.Base(os.Args[0])
	}
	if o.Instance == "" {
		o.Instance = host + "-" + strconv.Itoa(os.Getpid())
	}
	if o.Host == "" {
		o.Host = host
	}
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
	if o.ItemsPerFrame <= 0 {
		o.ItemsPerFrame = DefaultItemsPerFrame
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.PingInterval <= 0 {
		o.PingInterval = DefaultPingInterval
	}
	if o.Logf == nil {
		o.Logf = log.Printf
	}
	return o
}

// Agent is an instrumented service's guard and stream. Create it with New
// and Close it on shutdown.
type Agent struct {
	opts      Options
	clock     core.Clock
	guard     *core.Guard
	startedAt int64
	bucketMs  int64

	rulesMu sync.Mutex // serializes LoadRules
	rules   atomic.Pointer[wsstream.Frame]
	hot     atomic.Pointer[map[string]*hotvalues.Tracker] // by resource, those with hot-parameter rules
	listed  listedSeries                                  // the shipper's last list (series), under its lock

	stream  *wsstream.Server
	backlog *wsstream.Backlog
	shipper *wsstream.Shipper

	closeOnce sync.Once
	closed    chan struct{}
	wg        sync.WaitGroup // the ship loop

	panics         atomic.Int64
	listenerPanics atomic.Int64
	warning        atomic.Pointer[string] // Stats.Warning

	// The metrics page (metrics.go): transitions counted by resource, the
	// renders under way, and those refused.
	transMu        sync.Mutex
	trans          map[string]*transitionCounts
	renders        chan struct{}
	metricsRefused atomic.Int64
}

// New returns a running Agent: its guard has no rules yet, and it ships
// buckets from now on. Nothing listens until Serve, ListenAndServe or
// Handler is used.
func New(opts Options) (*Agent, error) {
	opts = opts.withDefaults()
	if len(opts.Instance) > 256 || len(opts.App) > 256 {
		return nil, errors.New("agent: App and Instance must be at most 256 bytes")
	}
	a := &Agent{
		opts:     opts,
		clock:    opts.Clock,
		bucketMs: core.ResourceBucketMs,
		closed:   make(chan struct{}),
		renders:  make(chan struct{}, maxMetricsRenders),
	}
	a.startedAt = a.clock.UnixMilli()
	a.stream = wsstream.New(wsstream.Options{
		Token:          opts.Token,
		TLS:            opts.TLSConfig,
		AllowOrigins:   opts.AllowOrigins,
		AllowHosts:     opts.AllowHosts,
		QueueLen:       opts.QueueLen,
		QueueBytes:     opts.QueueBytes,
		MaxReaders:     opts.MaxReaders,
		WriteTimeout:   opts.WriteTimeout,
		PingInterval:   opts.PingInterval,
		MaxConns:       opts.MaxConns,
		RequestTimeout: opts.RequestTimeout,
		Initial:        a.initialFrames,
		OnPanic:        func(any) { a.panics.Add(1) },
	})
	a.backlog = wsstream.NewBacklog(int(opts.Backlog.Milliseconds() / a.bucketMs))
	a.shipper = &wsstream.Shipper{Clock: a.clock, BucketMs: a.bucketMs, Instance: opts.Instance,
		ItemsPerFrame: opts.ItemsPerFrame, Server: a.stream, Backlog: a.backlog, Series: a.series,
		OnPanic: func(any) { a.panics.Add(1) }}
	a.guard = core.NewGuard(core.GuardOptions{
		Clock:        opts.Clock,
		Listener:     core.TransitionFunc(a.onTransition),
		MaxResources: opts.MaxResources,
	})
	if err := a.LoadRules(nil, nil); err != nil {
		return nil, err
	}
	a.shipper.Begin(a.clock.UnixMilli())
	if !opts.ManualShip {
		a.shipper.Start(a.closed, nil, &a.wg)
	}
	return a, nil
}

// Guard returns the agent's guard.
func (a *Agent) Guard() *core.Guard { return a.guard }

// Instance is the instance id sent in every message.
func (a *Agent) Instance() string { return a.opts.Instance }

// Entry guards one call of resource; see core.Guard.Entry. Call Exit on the
// returned entry when the call finishes.
//
// params are the call's arguments, which hot-parameter rules read by
// paramIndex (core.Guard.EntryWithParam); for a resource with such rules,
// the entry is counted under each value a rule reads, and the values with
// the most entries of each bucket are sent as its hot values. Nothing of
// params is kept: a call with one string or integer argument already
// counted does not allocate.
func (a *Agent) Entry(resource string, params ...any) (*core.Entry, error) {
	switch len(params) {
	case 0:
		return a.guard.Entry(resource)
	case 1:
		e, err := a.guard.EntryWithParam(resource, params[0])
		a.countHot(resource, &core.Params{Args: params}, err == nil)
		return e, err
	}
	return a.EntryWithParams(resource, core.Params{Args: params})
}

// EntryWithParams is Entry for a call with attachments, which
// hot-parameter rules read by paramKey (core.Guard.EntryWithParams).
func (a *Agent) EntryWithParams(resource string, p core.Params) (*core.Entry, error) {
	e, err := a.guard.EntryWithParams(resource, p)
	a.countHot(resource, &p, err == nil)
	return e, err
}

// countHot counts an entry under its parameter values, when the resource
// has hot-parameter rules.
func (a *Agent) countHot(resource string, p *core.Params, passed bool) {
	if m := a.hot.Load(); m != nil {
		if t := (*m)[resource]; t != nil {
			t.Record(a.clock.UnixMilli(), p, passed, 1)
		}
	}
}

// LoadRules replaces the whole rule set, as Sentinel's loadRules does, and
// sends it to every reader. An invalid set is rejected whole: nothing
// changes. params are the hot-parameter rules (core.HotParamRule, whose
// JSON is sentinel-golang's hotspot.Rule).
func (a *Agent) LoadRules(breakers []core.BreakerRule, flows []core.FlowRule, params ...core.HotParamRule) error {
	for i := range breakers {
		if err := breakers[i].Validate(); err != nil {
			return fmt.Errorf("agent: breaker rule %d: %w", i, err)
		}
	}
	for i := range flows {
		if err := flows[i].Validate(); err != nil {
			return fmt.Errorf("agent: flow rule %d: %w", i, err)
		}
	}
	for i := range params {
		if err := params[i].Validate(); err != nil {
			return fmt.Errorf("agent: hot-parameter rule %d: %w", i, err)
		}
	}
	a.rulesMu.Lock()
	defer a.rulesMu.Unlock()
	// A breaker whose rule is unchanged keeps its state; the others start
	// CLOSED without a transition, so their past ones must not tell new
	// readers their states.
	kept := map[string]bool{}
	if f := a.rules.Load(); f != nil {
		for _, r := range breakers {
			if slices.Contains(f.Msg.(*wire.Rules).Breakers, r) {
				kept[breakerKey(r.Resource, r.ID)] = true
			}
		}
	}
	reloaded := a.clock.UnixMilli()
	if err := a.guard.LoadBreakerRules(breakers); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	a.backlog.ForgetBreakers(func(b string) bool { return kept[b] }, reloaded+1)
	if err := a.guard.LoadFlowRules(flows); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	if err := a.guard.LoadHotParamRules(params); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	byRes := map[string][]core.HotParamRule{}
	for _, r := range params {
		byRes[r.Resource] = append(byRes[r.Resource], r)
	}
	trackers := make(map[string]*hotvalues.Tracker, len(byRes))
	for res, rules := range byRes {
		trackers[res] = hotvalues.New(rules, a.bucketMs)
	}
	a.hot.Store(&trackers)
	msg := &wire.Rules{
		Header:   wire.Header{Ts: a.clock.UnixMilli(), Instance: a.opts.Instance},
		Version:  wire.RulesVersion(breakers, flows, params...),
		Breakers: append([]core.BreakerRule{}, breakers...),
		Flows:    append([]core.FlowRule{}, flows...),
	}
	if len(params) > 0 {
		msg.Params = make([]core.HotParamRule, len(params))
		for i, r := range params {
			r.SpecificItems = maps.Clone(r.SpecificItems)
			msg.Params[i] = r
		}
	}
	f, err := encodeFrame(msg)
	if err != nil {
		return fmt.Errorf("agent: encoding rules: %w", err)
	}
	a.rules.Store(f)
	a.stream.Broadcast(f)
	return nil
}

// RulesVersion is the content hash of the active rule set.
func (a *Agent) RulesVersion() string {
	return a.rules.Load().Msg.(*wire.Rules).Version
}

// onTransition runs on the goroutine of the Entry or Exit that caused the
// transition: it encodes and queues, never waits on a reader (the lock it
// takes is held only to queue, or to copy the backlog for a new reader).
func (a *Agent) onTransition(t core.Transition) {
	defer a.recoverPanic()
	if a.opts.OnTransition != nil {
		a.callListener(t)
	}
	a.countTransition(t)
	msg := &wire.State{
		Header:         wire.Header{Ts: t.AtMs, Instance: a.opts.Instance},
		Resource:       t.Resource,
		Strategy:       t.Strategy,
		From:           t.From,
		To:             t.To,
		RuleID:         t.RuleID,
		Threshold:      t.Threshold,
		RetryTimeoutMs: int64(t.RetryTimeoutMs),
	}
	if t.From == core.Closed && t.To == core.Open {
		s := &wire.Snapshot{Total: t.Snapshot.Total, Value: t.Snapshot.Value}
		if t.Strategy == core.SlowRequestRatio {
			s.Slow = t.Snapshot.Bad
		} else {
			s.Error = t.Snapshot.Bad
		}
		msg.Snapshot = s
	}
	if t.Probe != nil {
		msg.Probe = &wire.Probe{RtMs: t.Probe.RtMs, Error: t.Probe.Error}
	}
	f, err := encodeFrame(msg)
	if err != nil {
		return
	}
	// Kept for new readers as it goes to the current ones: a collector
	// that connects later learns the breaker's state (wsstream.Backlog).
	a.stream.Locked(func() {
		a.backlog.AddState(breakerKey(t.Resource, t.RuleID), t.AtMs, f)
		a.stream.Broadcast(f)
	})
}

// breakerKey names a breaker in the backlog: its resource and rule id.
func breakerKey(resource, ruleID string) string { return resource + "\x00" + ruleID }

// callListener runs Options.OnTransition; a panic in it stops there.
func (a *Agent) callListener(t core.Transition) {
	defer func() {
		if r := recover(); r != nil {
			a.listenerPanics.Add(1)
		}
	}()
	a.opts.OnTransition(t)
}

// recoverPanic keeps a bug in the agent from taking the service down: the
// panic is counted (Stats.Panics) and the agent carries on.
func (a *Agent) recoverPanic() {
	if r := recover(); r != nil {
		a.panics.Add(1)
	}
}

// Stats describes the agent's stream.
type Stats struct {
	Readers  int   // connected stream clients
	Dropped  int64 // messages dropped for slow readers, all readers, ever
	Panics   int64 // internal panics recovered (each one is a bug)
	Overflow int64 // entries that passed untracked because MaxResources was reached
	// ListenerPanics counts panics of Options.OnTransition, recovered.
	ListenerPanics int64
	// Evicted counts the stream connections the agent cut to protect the
	// service: they sent data or more than a few pings a second, or did
	// not read (never answered a ping) while another reader wanted a slot.
	Evicted int64
	// Skipped counts the resources' buckets the agent never shipped: it
	// ran more than 10 s (the statistic's interval) late, starved of CPU,
	// while the service went on counting, and they were overwritten.
	// Whatever they counted is lost, for every reader. A process that was
	// suspended counted nothing meanwhile and loses nothing.
	Skipped int64
	// Unrecorded counts the passes, blocks and completions the statistics
	// could not record: their goroutines read the clock 10 s or more
	// before counting (core.Guard.Unrecorded). No reader hears of them.
	Unrecorded int64
	// Conns is the connections Serve holds open now, streams and plain
	// requests together.
	Conns int
	// RefusedConns counts the connections closed on arrival because
	// MaxConns were open.
	RefusedConns int64
	// MetricsRefused counts the scrapes of the metrics page answered 503
	// because 2 were being rendered.
	MetricsRefused int64
	// Warning, when set, says how the stream is exposed: served beyond
	// loopback without a token. It is also logged once (Options.Logf).
	Warning string
}

// Stats returns the stream's counters.
func (a *Agent) Stats() Stats {
	readers, dropped := a.stream.Stats()
	st := Stats{Readers: readers, Dropped: dropped, Panics: a.panics.Load(), Overflow: a.guard.Overflow(),
		ListenerPanics: a.listenerPanics.Load(), Evicted: a.stream.Evicted(), Skipped: a.shipper.Skipped(),
		Unrecorded: a.guard.Unrecorded(), MetricsRefused: a.metricsRefused.Load()}
	st.Conns, st.RefusedConns = a.stream.Conns()
	if w := a.warning.Load(); w != nil {
		st.Warning = *w
	}
	return st
}

// Close sends bye to every reader, stops shipping buckets, closes the
// connections and waits for every goroutine of the agent to end. The guard
// keeps working for calls still in flight.
func (a *Agent) Close() error {
	a.closeOnce.Do(func() {
		bye, _ := encodeFrame(&wire.Bye{Header: wire.Header{Ts: a.clock.UnixMilli(), Instance: a.opts.Instance}, Reason: "shutdown"})
		close(a.closed)
		a.stream.Close(bye)
	})
	a.wg.Wait()
	return nil
}
