package collector

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sentinel-top/sentinel-top/collector/feed"
	"github.com/sentinel-top/sentinel-top/collector/fleet"
	"github.com/sentinel-top/sentinel-top/collector/triage"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// Defaults of Options.
const (
	DefaultRetention          = 15 * time.Minute
	DefaultRateWindow         = 5 * time.Second
	DefaultStaleAfter         = 15 * time.Second
	DefaultPublishEvery       = 250 * time.Millisecond
	DefaultMaxInstances       = 10000
	DefaultMaxResourcesPerApp = 5000
)

// Series resolutions. Recent data is kept per second; older data, up to the
// retention, per coarseStepMs.
const (
	fineStepMs = 1000
	// appFineSlots is per app x resource: a little over 5 minutes per
	// second, so a 5-minute range stays fine; 341 cells of 96 bytes fill
	// the allocator's 32 KiB size class, where 310 left 2,976 bytes of it
	// unused (TestAppFineCellsFillTheirClass).
	appFineSlots = 341
	coarseStepMs = 15000
)

// Options configures a Collector. Every field is optional.
type Options struct {
	// Clock is the collector's time: arrival times, staleness, snapshots.
	// Default: core.NewRealClock(). A replay drives a virtual one.
	Clock core.Clock
	// Mode and Source describe the input for the header and reports.
	Mode   Mode
	Source string
	// Retention bounds how far back series and timelines reach. Default 15 min.
	Retention time.Duration
	// KeepGone keeps the instances gone for longer than Retention to the
	// end (within MaxInstances and MaxMemory), so that a report of a long
	// input draws the timelines of every finding's instances, as triage
	// judged them. Default false: a live collector forgets them.
	KeepGone bool
	// PlanEvery is how much input time may pass before a snapshot replays
	// the findings' plans again while the findings propose the same
	// values (a replay is far dearer than a snapshot; new proposals are
	// replayed at once). Default 10 s; negative: at every snapshot, as a
	// report does.
	PlanEvery time.Duration
	// RateWindow is what the table's rates and ratios average over. Default 5 s.
	RateWindow time.Duration
	// StaleAfter is how long an instance may be silent before it counts as
	// gone. Default 15 s.
	StaleAfter time.Duration
	// PublishEvery is the snapshot rate of Run. Default 250 ms (4 a second).
	PublishEvery time.Duration
	// MaxInstances caps the instances tracked; messages of further ones are
	// turned away and counted. Default 10,000.
	MaxInstances int
	// MaxResourcesPerInstance caps the resources of one instance; items of
	// further resources are turned away and counted. Default 5,000.
	MaxResourcesPerInstance int
	// MaxMemory bounds, in bytes, what peers can make the collector keep
	// (instances, series, breaker tracks: see budget.go); what does not fit
	// is turned away and counted (reason max_memory). Default 512 MiB.
	MaxMemory int64
	// MaxClockSkew, when positive, rejects a message from a dialed target
	// (see Bound) whose ts is further than this from Clock (reason
	// clock_skew). Default 0: no check; sentinel-top sets
	// DefaultMaxClockSkew.
	MaxClockSkew time.Duration
	// Triage tunes the triage engine.
	Triage triage.Config
	// Record, when set, receives every accepted message, in arrival order.
	Record *wire.Writer
	// OnReject, when set, is told of every rejected message, with its place
	// (file:line or target), outside the collector's lock. It must not block.
	OnReject func(place string, err error)
	// Resolution, when positive, is the input's time resolution when it is
	// coarser than a breaker's transitions (the Prometheus source's step:
	// counts per step, transitions inferred from counters): the kinds that
	// need exact transitions or response times (triage.NeedExact) are not
	// published, and a CoarseInput warning says so. Default 0: exact input.
	Resolution time.Duration
	// WallClock paces what happens in real time whatever Clock says:
	// publishing snapshots. Default: core.NewRealClock().
	WallClock core.Clock
}

// Coarse sets the options an input of time resolution step needs (the
// Prometheus source's step): its Resolution (the kinds it cannot judge),
// and rates and liveness measured over steps rather than seconds.
func (o *Options) Coarse(step time.Duration) {
	o.Resolution = step
	o.RateWindow = max(DefaultRateWindow, 2*step)
	o.StaleAfter = max(DefaultStaleAfter, 3*step+5*time.Second)
}

func (o Options) withDefaults() Options {
	if o.Clock == nil {
		o.Clock = core.NewRealClock()
	}
	if o.WallClock == nil {
		o.WallClock = core.NewRealClock()
	}
	if o.Retention <= 0 {
		o.Retention = DefaultRetention
	}
	if o.RateWindow <= 0 {
		o.RateWindow = DefaultRateWindow
	}
	if o.StaleAfter <= 0 {
		o.StaleAfter = DefaultStaleAfter
	}
	if o.PublishEvery <= 0 {
		o.PublishEvery = DefaultPublishEvery
	}
	if o.MaxInstances <= 0 {
		o.MaxInstances = DefaultMaxInstances
	}
	if o.MaxMemory <= 0 {
		o.MaxMemory = DefaultMaxMemory
	}
	if o.Triage.TraceBytes == 0 {
		o.Triage.TraceBytes = o.MaxMemory / 8 // the traffic kept to replay plans
	}
	if o.MaxResourcesPerInstance <= 0 {
		o.MaxResourcesPerInstance = DefaultMaxResourcesPerApp
	}
	return o
}

// Collector aggregates wire v1 messages from any number of sources. Its
// methods are safe for concurrent use: sources feed it from their own
// goroutines while the UI reads snapshots.
type Collector struct {
	opts  Options
	clock core.Clock

	// mu guards the fleet model and the counters. Lock order: mu, then
	// teeMu; nothing called under mu calls back into a source.
	mu       sync.Mutex
	engine   *triage.Engine
	plans    planCache      // the engine's latest plans
	book     fleet.RuleBook // one copy of each rule set instances share
	insts    map[string]*instance
	apps     map[arKey]*appSeries
	messages int64
	rejected int64
	dups     int64
	dropped  int64
	rejects  map[string]*RejectCount
	overflow map[string]*RejectCount
	targets  []*feed.TargetRecord // the dialed targets' records, read at publish
	// tpub is what the last snapshot took of each of targets (its index
	// in targetAt), taken again only from the records changed since
	// (tchanges, tbuf its scratch), and the tallied ones when talliedAt
	// and tallySnaps say (takeTargets); tnotes counts their remarks.
	tpub []*TargetStatus
	// tpubShared is tpub as the last snapshot published it, shared by the
	// snapshots after it until a status in tpub changes (nil then): most
	// snapshots between two tallies take no target's status, and copied
	// the list of every target all the same.
	tpubShared []*TargetStatus
	talliedAt  int64
	tallySnaps int
	targetAt   map[*feed.TargetRecord]int
	tchanges   feed.TargetChanges
	tbuf       []*feed.TargetRecord
	tnotes     map[TargetRemark]int
	// qualifiedEver counts the instances ever named NAME@TARGET (another
	// target announced NAME first): until one is, no target's instance
	// is looked for under another name at publish.
	qualifiedEver int
	keptBuf       []int           // Ingest's scratch: the bucket items taken
	triBuf        []triage.Series // and their triage series (buckets)
	touched       int64           // what touchSeries read: kept, never used
	memUsed       int64           // bytes charged to the budget (budget.go)
	// sharesGen counts the changes to the shares (budget.go); listedShares
	// is what memoryShares chose of them at one.
	sharesGen    uint64
	listedShares sharesListed
	resets       uint64 // Resets so far
	// namesGen counts the changes to insts and to its instances' owners:
	// a connection's sink keeps the instance its messages reached while
	// it stands (heldShare).
	namesGen uint64
	// shares are the owners' shares of the budget (by owner: a dialed
	// target, "" for sources without one), and cur the share of the
	// message being ingested.
	shares map[string]*budgetShare
	cur    *budgetShare
	// transient is what the sources hold while they read (Hold): charged
	// even past the budget, so that what is new is turned away meanwhile.
	transient atomic.Int64
	// commonHeld is the part of memUsed no one owner pays for: app x
	// resource series and rules' resources several targets share.
	commonHeld int64
	// streamShare is the part of the budget the re-served stream took
	// (restream.go): the model's is what is left.
	streamShare int64
	// namesHeld is the part of memUsed the decoders' names take: the
	// shared pool's (poolHeld of it, charged at each Publish) and the
	// decoders' own (stream.nameBytes).
	namesHeld, poolHeld int64
	// traceHeld is the part of memUsed triage's traffic log for plans
	// takes (charged at each Publish).
	traceHeld int64
	ruleRes   map[arKey]*budgetShare // app x resource known with rules, and the share charged for it
	appsLeft  bool                   // an instance left or moved app since the last prune
	// replay is what a replay feeding this collector last told it
	// (Active false when none does), and replayGen that status's generation.
	replay    ReplayStatus
	replayGen uint64
	// unreceivedMs is the sender time whose buckets never arrived, of
	// every instance; gaps holds it by instance for the first
	// maxGapInstances, and gapsOthers names the rest (gaps.go).
	unreceivedMs int64
	gaps         map[string]*DataGap
	gapsOthers   map[string]struct{}
	// keepWhole: the message being ingested settled an awaited backlog, so
	// the recording keeps it whole (see resumeBacklog); dupState: it is a
	// transition held already, not recorded again.
	keepWhole, dupState bool
	// notices describe the input, so a reset keeps them (notice.go).
	notices map[noticeKey]*Notice

	// The tees: what was accepted goes on to the recording and the
	// re-served stream, under teeMu (never while waiting for mu).
	teeing     atomic.Bool
	teeMu      sync.Mutex
	recordErr  error
	recStart   int64 // the collector's clock when the recording began
	recFlushed int64 // when the recording was last flushed
	restream   *restream

	// breakersGen changes whenever a snapshot's breaker states may differ
	// from the last one's: a message other than buckets, a new series, an
	// instance leaving or coming back. pub is what Publish keeps between
	// snapshots (publish.go).
	breakersGen uint64
	pub         pubCache
	// arriveFloor: no instance that is not gone last arrived before it, so
	// that sweep need not look at each until StaleAfter has passed it.
	arriveFloor int64
	// goneFloor: no instance gone since the last prune went before it, so
	// that prune need not look at each until the retention has passed it
	// (noteGone lowers it; 0 at the start: the first prune looks).
	goneFloor int64

	// names are the resource and instance names its connections decode,
	// each kept once for the fleet (bounded: see wire.NamePool).
	names *wire.NamePool

	// transitioned wakes Run when a breaker changed state (buffered: one
	// pending wake is enough).
	transitioned chan struct{}
	// armed: Run has a wake armed for the transitions (Collector.wake).
	armed atomic.Bool

	seq  uint64
	snap atomic.Pointer[Snapshot]
	// published is closed by the next Publish, once someone waits for it
	// (see Published).
	published atomic.Pointer[chan struct{}]
}

// pubCache is what Publish keeps between snapshots: the instances to look
// at, what every instance adds to the counts, and the breaker states as of
// breakersGen, shared by the snapshots until they change.
type pubCache struct {
	// rows and resources are instanceRows' scratch.
	rows      []*appSeries
	resources map[string]struct{}
	// visit is the instances the next snapshot looks at (Collector.touch);
	// visiting is the last one's, kept for its room.
	visit, visiting []*instance
	// What the instances add up to, as of their last look (count): live
	// the instances counted, measured those whose clocks are, skewed those
	// off, guarded the counted ones with a breaker.
	live, measured  int
	skewed, guarded instSet
	appOrder        []*appSeries // every app x resource series, sorted (sortedApps)
	breakers        []BreakerState
	breakersGen     uint64
	// apps counts the listed instances of each app (instance.listedApp),
	// kept as instances are listed, unlisted or move app.
	apps map[string]int
	// skews is instanceRows' list of instances whose clocks are off.
	skews []skewed
}

// New returns an empty collector.
func New(opts Options) *Collector {
	opts = opts.withDefaults()
	c := &Collector{
		opts:     opts,
		clock:    opts.Clock,
		engine:   triage.New(opts.Triage),
		insts:    map[string]*instance{},
		apps:     map[arKey]*appSeries{},
		rejects:  map[string]*RejectCount{},
		overflow: map[string]*RejectCount{},
		ruleRes:  map[arKey]*budgetShare{},
		shares:   map[string]*budgetShare{},
		names:    wire.NewNamePool(0, 0),

		transitioned: make(chan struct{}, 1),
	}
	c.teeing.Store(opts.Record != nil)
	c.recStart = c.clock.UnixMilli()
	c.Publish()
	return c
}

// Options returns the collector's options, defaults filled in.
func (c *Collector) Options() Options { return c.opts }

// Clock is the collector's clock.
func (c *Collector) Clock() core.Clock { return c.clock }

// Engine is the collector's triage engine. Its findings read the fleet
// model's records, which the store writes under its lock: judge them
// through Publish or Findings while the collector is fed.
func (c *Collector) Engine() *triage.Engine {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.engine
}

// Reset forgets everything ingested (a replay seeking backwards starts
// over); the notices and the input's names stay.
func (c *Collector) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.engine = triage.New(c.opts.Triage)
	c.plans = planCache{}
	c.insts = map[string]*instance{}
	c.namesGen++
	c.apps = map[arKey]*appSeries{}
	c.messages, c.rejected, c.dups, c.dropped = 0, 0, 0, 0
	c.unreceivedMs, c.gaps, c.gapsOthers = 0, nil, nil
	c.memUsed, c.goneFloor = c.namesHeld, 0 // the names stay held
	c.ruleRes = map[arKey]*budgetShare{}
	c.shares, c.cur, c.commonHeld = map[string]*budgetShare{}, nil, 0
	c.listedShares = sharesListed{}
	c.resets++
	c.rejects = map[string]*RejectCount{}
	c.overflow = map[string]*RejectCount{}
	c.pub = pubCache{}
}

// SetReplay records the status a replay told; an older generation than the
// one held is ignored.
func (c *Collector) SetReplay(st ReplayStatus, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen > c.replayGen {
		c.replay, c.replayGen = st, gen
	}
}

// Totals returns the sums of every bucket accepted for instance x resource:
// Pass, Block, Complete, Error and Slow, exact below 2^63 (they saturate
// there); the response times, histogram and concurrency are not summed.
// ok is false when the collector has no such series.
func (c *Collector) Totals(instance, resource string) (m core.Metrics, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	in := c.insts[instance]
	if in == nil || in.series[resource] == nil {
		return core.Metrics{}, false
	}
	return in.series[resource].total.metrics(), true
}

// Counters returns messages accepted, rejected, and duplicates dropped.
func (c *Collector) Counters() (messages, rejected, duplicates int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.messages, c.rejected, c.dups
}

// Findings judges the input at the collector's current time, under the
// store's lock (triage reads the fleet model's records).
func (c *Collector) Findings() []triage.Finding {
	now := c.clock.UnixMilli()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.engine.Findings(now)
}

func floorDiv(a, b int64) int64 {
	if b <= 0 {
		return a
	}
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// Snapshot returns the latest published snapshot.
func (c *Collector) Snapshot() *Snapshot { return c.snap.Load() }

// Published returns a channel closed when the next snapshot is published,
// after Snapshot returns it. A reader that takes the channel before it
// reads Snapshot misses none: read, wait, and read again.
func (c *Collector) Published() <-chan struct{} {
	for {
		if ch := c.published.Load(); ch != nil {
			return *ch
		}
		// Another reader may install one first, and a Publish take it
		// away again before it is read: look again.
		ch := make(chan struct{})
		if c.published.CompareAndSwap(nil, &ch) {
			return ch
		}
	}
}

var nan = func() float64 { z := 0.0; return z / z }()

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Run publishes a snapshot every Options.PublishEvery on the wall clock
// (Options.WallClock) until ctx ends, and sooner when a breaker changed
// state: at once, or as soon as PublishEvery x 2/5 has passed since the
// last snapshot (100 ms by default), so a transition is shown within about
// that, not a whole period later. A tick less than half a period after a
// snapshot is let go: while breakers trip, the ticks on top of the
// transitions' snapshots made 12 a second where 10 show them as soon
// (docs/BENCHMARKS.md), and the next tick comes before the data is a
// period and a half old.
//
// A snapshot that would say the same as the last one (nothing arrived, the
// clock has not moved: a paused replay) is not published again.
func (c *Collector) Run(ctx context.Context) {
	wall := c.opts.WallClock
	tk := wall.NewTicker(c.opts.PublishEvery)
	defer tk.Stop()
	gap := c.opts.PublishEvery * 2 / 5
	var last [5]int64
	var lastAt time.Time
	var later core.Timer // a transition waits for the gap, until laterAt
	var laterAt time.Time
	defer func() {
		if later != nil {
			later.Stop()
		}
		c.armed.Store(false) // the wake stopped: a Run after this one is told of transitions
	}()
	publish := func() {
		if sig := c.signature(last); sig != last {
			last, lastAt = sig, wall.Now()
			c.publish(true)
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tk.C():
			if wall.Now().Sub(lastAt) >= c.opts.PublishEvery/2 {
				publish()
			}
		case <-c.transitioned:
			now := wall.Now()
			switch wait := gap - now.Sub(lastAt); {
			case wait <= 0:
				publish()
			case !now.Before(laterAt): // no wake armed yet
				c.armed.Store(true) // before the wake may come
				later, laterAt = wall.AfterFunc(wait, c.wake), now.Add(wait)
			}
		}
	}
}

// transition tells Run that a breaker changed state; it never blocks.
// While Run has a wake armed, the transition waits for it: telling Run of
// each (dozens a second while a fleet's breakers trip) woke its goroutine
// for nothing.
func (c *Collector) transition() {
	if c.armed.Load() {
		return
	}
	select {
	case c.transitioned <- struct{}{}:
	default:
	}
}

// wake is Run's armed wake: the transitions since it was armed are to be
// published.
func (c *Collector) wake() {
	c.armed.Store(false)
	c.transition()
}

// signature changes whenever a snapshot could differ from last, the
// signature of the last one. The targets' statuses are read only when
// nothing else moved (a live collector's clock always has): at thousands
// of targets, reading them is most of what a signature costs, and its
// differing anyway makes the next one differ once more, at worst.
func (c *Collector) signature(last [5]int64) [5]int64 {
	sig := [5]int64{c.clock.UnixMilli()}
	c.mu.Lock()
	sig[1], sig[2], sig[3] = c.messages, c.rejected, c.dups
	targets := c.targets
	sig[4] = int64(c.replayGen)
	c.mu.Unlock()
	if [4]int64(sig[:4]) != [4]int64(last[:4]) {
		return sig
	}
	for _, t := range targets {
		st := t.Published() // the value the snapshot then shares, not a copy
		sig[4] = sig[4]*31 + st.Messages + int64(st.State) + st.Reconnects + st.Rejected
	}
	return sig
}
