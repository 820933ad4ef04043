package triage

import (
	"math"
	"strings"
	"sync"

	"github.com/sentinel-top/sentinel-top/collector/fleet"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// Thresholds of spec/findings-v1.md.
const (
	// SawtoothRun is the shortest run of failed probes that is a sawtooth.
	SawtoothRun = 3
	// HerdSize is the fewest instances entering HALF_OPEN together that make
	// a recovery flood; HerdWindowMs how close together they must be; and
	// HerdOccasions how often it must happen.
	HerdSize      = 3
	HerdWindowMs  = 1000
	HerdOccasions = 2
	// AdviceMinRequests is the fewest requests a statistic window should
	// hold, and AdviceRtFactor how far maxAllowedRtMs should sit above p99.
	AdviceMinRequests = 20
	AdviceRtFactor    = 2
)

// Defaults of Config.
const (
	DefaultStaleMs = 10_000
	DefaultGraceMs = 5_000
	DefaultHoldMs  = 45_000
)

// Bounds of the state kept per breaker and per series.
const (
	spacingLen   = 32     // OPEN->OPEN spacings kept per breaker
	maxGapFillMs = 60_000 // silence between buckets still counted as idle traffic
)

// Config tunes an Engine. The zero value gives the defaults.
type Config struct {
	// StaleMs is how long after its last evidence a condition still counts
	// as lasting to the end of the input, and how long an instance that said
	// bye keeps its place among its app's instances. 0 means DefaultStaleMs.
	StaleMs int64
	// GraceMs is how long rule drift or unprotected traffic must last
	// before it is reported, so that a rule push reaching the instances a
	// moment apart is not a finding. 0 means DefaultGraceMs.
	GraceMs int64
	// HoldMs is how long a sawtooth or a recovery flood must have been over
	// before its finding stops being critical: an incident between two
	// probe cycles is not over, and a finding that turned warning at every
	// pause would flap. 0 means DefaultHoldMs.
	HoldMs int64
	// TraceBytes bounds the traffic kept for the what-if replay of plans
	// (tracelog.go): 0 means DefaultTraceBytes, a negative value keeps
	// none (and plans are not checked, so none is proposed).
	TraceBytes int64
}

// BucketStat is one completed bucket of one resource on one instance (an
// item of a wire v1 "buckets" message), its counts a core.Metrics.
type BucketStat struct {
	Resource string
	// Start is the bucket's start and BucketMs its length (<= 0 means
	// core.ResourceBucketMs).
	Start, BucketMs int64
	core.Metrics
	// HasHist says that Hist counts completions by response time
	// (core.HistogramBounds); without it Hist is not read.
	HasHist bool
	// Hot are the bucket's hot values (wire v1 "hot"), for a resource with
	// hot-parameter rules: the parameter values with the most entries, at
	// most wire.MaxHotValues, each with its pass and block, and one
	// wire.HotOther item summing the rest. Nil when the source sent none:
	// Java Sentinel and metric logs cannot tell values apart, so nil is
	// not "no hot value". Values are untrusted text (sanitize before
	// printing). The slice belongs to the caller and is reused after
	// Bucket returns: copy what is kept.
	Hot []wire.HotItem

	// counted names the slots of Hist that count calls
	// (core.HistogramCounted; 0 without HasHist), set by the engine as it
	// takes the bucket: the loops over the histogram visit only those.
	counted uint16
}

// Counts summarises what the engine has seen.
type Counts struct {
	Apps, Instances, Resources int
	// From and To are the earliest and latest time seen, Unix ms.
	From, To int64
}

// Engine turns wire-level facts, fed in time order, into findings. It keeps
// a bounded state per instance and resource and answers Findings from it
// without rescanning history. It is safe for concurrent use.
type Engine struct {
	mu  sync.Mutex
	cfg Config

	seen        bool
	first, last int64

	seq       int
	instList  []*instState // every instance ever, in creation order
	appMoves  int          // instances moved to another app (moveApp)
	instNames map[string]struct{}
	apps      map[string]*appState
	appNames  map[string]struct{}
	res       map[string]*resState
	resNames  map[string]struct{}
	ars       map[arKey]*appRes

	sortRefs []findingRef // Findings' sorting (sortFindings)
	// lastFindings is how many findings Findings returned last: the next
	// list is made that long at once, not grown by doubling (a snapshot's
	// findings are most of the time the last one's).
	lastFindings int
	// taken and told are the bucket and the transition being told to the
	// detectors (under mu).
	taken takenBucket
	told  core.Transition

	// The detectors, one of each kind (detector.go), each with the state
	// it keeps; det lists them and those told of each event.
	sawtooth   sawtoothDetector
	herd       herdDetector
	low        lowDetector
	drift      driftDetector
	unprot     unprotectedDetector
	lost       rulesLostDetector
	inert      inertDetector
	warm       warmUpDetector
	self       selfDetector
	hot        hotDetector
	shared     sharedDetector
	misaligned misalignedDetector
	advice     adviceDetector
	det        detectors

	traces traces // the traffic kept for replays (tracelog.go)
	// planMemo is each rule's plans as last made, one per proposal
	// (PlansWith).
	planMemo map[planKey]*planMemos
}

type instState struct {
	// id is the fleet model's record of the process: its name, start,
	// liveness and what never arrived, written by the store alone.
	id       *fleet.Instance
	seq      int
	app      *appState
	attached bool // counted among its app's instances (rule counts, drift, reporters)

	ruleHist ruleHistory
	versions versionLog // every version it ran (history.go)
	warm     *warmInst  // warm-up: when its warm-up controllers were made (warmup.go)

	series     map[string]*series
	seriesList []*series
}

// unreceived reports whether [from, to) overlaps the instance's data known
// never to have arrived.
func (in *instState) unreceived(from, to int64) bool {
	return fleet.Overlaps(in.id.Unreceived, from, to)
}

// alive reports whether the instance still counts as present at now: not
// gone, or gone no longer than StaleMs ago.
func (e *Engine) alive(in *instState, now int64) bool { return in.id.Alive(now, e.cfg.StaleMs) }

// end is when the instance's evidence stops: now, or when it left.
func (in *instState) end(now int64) int64 { return in.id.End(now) }

type appState struct {
	name  string
	insts map[string]*instState // attached instances
	ars   map[string]*appRes    // by resource
	// versions are when its instances first ran each rule version;
	// forgotten counts those dropped past maxAppVersions, forgottenTo is
	// the latest of their times (history.go).
	versions    map[string]int64
	forgotten   int64
	forgottenTo int64
}

type arKey struct{ app, resource string }

// appRes is the state of one resource within one app.
type appRes struct {
	app        *appState
	resource   string
	reporters  map[*instState]struct{} // attached instances that sent buckets or transitions
	ruleCount  int                     // attached instances with a rule for the resource
	ruledTo    int64                   // when ruleCount last fell to 0
	ruledSince int64                   // when ruleCount last rose from 0

	herd   herd
	advice arAdvice
	low    lowConf
	drift  drift
	mis    misaligned

	// log is the traffic of its series, every instance's, for replays
	// (tracelog.go).
	log resLog
}

type resState struct {
	name   string
	apps   map[string]struct{}
	insts  []*instState
	since  int64 // when a second app reported it
	last   int64
	listed bool
	// members are insts of the apps in apps, sorted, as of the numbers
	// of insts, apps and the engine's app moves in membersAt.
	members   []*instState
	names     []string // names(members)
	membersAt [3]int
	finding   sharedFinding
}

// New returns an engine; see Config for the zero value.
func New(cfg Config) *Engine {
	if cfg.StaleMs <= 0 {
		cfg.StaleMs = DefaultStaleMs
	}
	if cfg.GraceMs <= 0 {
		cfg.GraceMs = DefaultGraceMs
	}
	if cfg.HoldMs <= 0 {
		cfg.HoldMs = DefaultHoldMs
	}
	e := &Engine{
		cfg:       cfg,
		instNames: map[string]struct{}{},
		apps:      map[string]*appState{},
		appNames:  map[string]struct{}{},
		res:       map[string]*resState{},
		resNames:  map[string]struct{}{},
		ars:       map[arKey]*appRes{},
	}
	e.det = newDetectors(e)
	e.traces.init(cfg.TraceBytes)
	return e
}

func (e *Engine) observe(ts int64) {
	if !e.seen {
		e.seen, e.first, e.last = true, ts, ts
		return
	}
	e.first = min(e.first, ts)
	e.last = max(e.last, ts)
}

// observeState notes the time of a message that describes standing state
// (hello, rules): it may move the input's end, never its start, since it
// may carry the time that state began, long before the input (a service up
// for days sends its rules with the time they were loaded).
func (e *Engine) observeState(ts int64) {
	if e.seen {
		e.last = max(e.last, ts)
	}
}

func (e *Engine) appFor(name string) *appState {
	a := e.apps[name]
	if a == nil {
		a = &appState{name: strings.Clone(name), insts: map[string]*instState{}, ars: map[string]*appRes{}}
		e.apps[a.name] = a
	}
	return a
}

// moveApp moves an instance that had no hello yet into its app.
func (e *Engine) moveApp(in *instState, appName string, ts int64) {
	e.detach(in, ts)
	e.appMoves++
	in.app = e.appFor(appName)
	e.noteMoved(in, in.app)
	for _, s := range in.seriesList {
		if s.advice.list != nil {
			s.advice.list.advice.stale = true // it leaves that finding
		}
		e.advice.changed(s)
		s.ar = e.appRes(in.app, s.resource)
		e.shared.reported(s.res, in.app.name, ts)
	}
	if in.hasRules() {
		for r := range in.rules() {
			e.appRes(in.app, r)
		}
		e.updateMisaligned(in, ts)
	}
}

// attach counts the instance among its app's instances.
func (e *Engine) attach(in *instState, ts int64) {
	if in.attached {
		return
	}
	in.attached = true
	a := in.app
	replaced := a.insts[in.id.Name]
	a.insts[in.id.Name] = in
	for _, s := range in.seriesList {
		s.ar.reporters[in] = struct{}{}
	}
	for r := range in.rules() {
		e.appRes(a, r).addRule(ts)
	}
	for _, o := range e.det.members {
		o.joined(in, ts, replaced)
	}
}

// detach removes the instance from its app's instances at time ts.
func (e *Engine) detach(in *instState, ts int64) {
	if !in.attached {
		return
	}
	in.attached = false
	a := in.app
	if a.insts[in.id.Name] == in {
		delete(a.insts, in.id.Name)
	}
	for _, s := range in.seriesList {
		delete(s.ar.reporters, in)
	}
	for r := range in.rules() {
		e.appRes(a, r).dropRule(ts)
	}
	for _, o := range e.det.members {
		o.left(in, ts)
	}
}

func (e *Engine) appRes(a *appState, resource string) *appRes {
	if ar := a.ars[resource]; ar != nil {
		return ar
	}
	ar := &appRes{app: a, resource: strings.Clone(resource), reporters: map[*instState]struct{}{}}
	a.ars[ar.resource] = ar
	e.ars[arKey{a.name, ar.resource}] = ar
	e.resNames[ar.resource] = struct{}{}
	return ar
}

// seriesFor returns the instance's series of a resource, creating it; a new
// series makes the instance a reporter of the resource.
func (e *Engine) seriesFor(in *instState, resource string, ts int64) *series {
	if s := in.series[resource]; s != nil {
		return s
	}
	ar := e.appRes(in.app, resource)
	r := e.res[ar.resource]
	if r == nil {
		r = &resState{name: ar.resource, apps: map[string]struct{}{}}
		e.res[r.name] = r
	}
	s := &series{inst: in, resource: ar.resource, ar: ar, res: r, rr: in.rulesOf(resource), log: &ar.log}
	s.slowBound = slowBoundOf(s.rr)
	s.ratio = hasRatioBreaker(s.rr)
	s.javaRatio = hasJavaRatioBreaker(s.rr)
	s.setHold()
	in.series[s.resource] = s
	in.seriesList = append(in.seriesList, s)
	if in.attached {
		ar.reporters[in] = struct{}{}
	}
	r.insts = append(r.insts, in)
	e.shared.reported(r, in.app.name, ts)
	return s
}

// Bucket records one completed bucket of series h (b.Resource is not
// read: the series names it). A bucket that does not start after the
// series' previous one is a duplicate (or a replay) and is ignored. It does
// not allocate.
func (e *Engine) Bucket(h Series, b *BucketStat) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.taken.BucketStat = *b
	e.bucket(h.s)
}

// Buckets records the items of one wire v1 buckets message of bucketMs
// under one lock, as Bucket would one by one: items[i] is a bucket of
// series[i], and an item whose series is the zero Series (one the fleet
// model did not take: a re-send, a limit) is skipped. It does not allocate.
func (e *Engine) Buckets(bucketMs int64, items []wire.BucketItem, series []Series) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := range items {
		if s := series[i].s; s != nil {
			it := &items[i]
			e.taken.BucketStat = BucketStat{Resource: it.Resource, Start: it.Start, BucketMs: bucketMs, Metrics: it.Metrics,
				HasHist: it.HasHist, Hot: it.Hot}
			e.bucket(s)
		}
	}
}

// bucket takes the bucket in e.taken on series s and tells the detectors.
func (e *Engine) bucket(s *series) {
	b := &e.taken.BucketStat
	defer func() { e.taken.Hot = nil }() // the caller's, reused after
	bm := b.BucketMs
	if bm <= 0 {
		bm = core.ResourceBucketMs
	}
	end := b.Start + bm
	b.counted = 0
	if b.HasHist {
		b.counted = core.HistogramCounted(&b.Hist)
	}
	e.observe(b.Start)
	e.observe(end)
	if s.hasBucket && b.Start <= s.lastStart {
		return
	}
	pass := max(b.Pass, 0)
	// The load a statistic window sees is what the resource was offered:
	// while a breaker is open its requests are blocked, not absent.
	offered := pass + max(b.Block, 0)
	switch {
	case int64(s.bucketMs) != bm:
		s.bucketMs = int32(min(bm, math.MaxInt32))
		s.setHold()
	case s.hasBucket:
		// Buckets are sent only for active resources: a short silence is idle
		// traffic, a long one an instance that was away.
		if gap := b.Start - s.lastStart; gap > bm && gap <= maxGapFillMs && !s.inst.unreceived(s.lastStart+bm, b.Start) {
			s.reportedMs += gap - bm // idle between reports, not away nor lost
		}
	}
	s.hasBucket, s.lastStart = true, b.Start
	s.offered += offered
	s.reportedMs += bm
	s.hz.bucket(b.Start, end, b)
	s.si.add(b)
	e.traceBucket(s, b, bm)
	if len(b.Hot) > 0 {
		e.traceHot(s, b, bm)
	}
	s.res.last = max(s.res.last, end)
	if pass > 0 {
		if !s.traffic {
			s.traffic, s.firstAt = true, b.Start
		}
		s.endAt = max(s.endAt, end)
	}
	// The detectors are told through the engine's own copy: a pointer to a
	// local would escape through their interfaces, an allocation a bucket.
	e.taken.bm, e.taken.end, e.taken.pass, e.taken.offered = bm, end, pass, offered
	for _, o := range e.det.buckets {
		o.bucket(s, &e.taken)
	}
}

// takenBucket is a bucket a series took, as its detectors are told it:
// its length (bm), end, entries passed and offered (pass + block), all
// non-negative.
type takenBucket struct {
	BucketStat
	bm, end, pass, offered int64
}

// Transition records one breaker state change of series h (t.Resource is
// not read: the series names it) on the breaker whose history is track,
// told before the fleet model's track takes it (track.State is the state
// before t). In steady state it does not allocate.
func (e *Engine) Transition(h Series, track *fleet.Track, t core.Transition) {
	if !validState(t.From) || !validState(t.To) || t.From == t.To {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.observe(t.AtMs)
	s := h.s
	t.Resource = s.resource
	s.res.last = max(s.res.last, t.AtMs)
	b := s.breaker(t.RuleID)
	b.track = track
	wasOpen := s.open()
	open := t.To != core.Closed || s.openBut(b)
	s.healthyTransition(b, &t, wasOpen, open)
	switch {
	case open && !wasOpen:
		e.traceRecord(s, recSpellFrom, t.AtMs)
	case !open && wasOpen:
		e.traceRecord(s, recSpellTo, t.AtMs)
	}
	b.moved = true
	if t.RetryTimeoutMs > 0 {
		b.retry = t.RetryTimeoutMs
	}
	e.told = t // as taken: not a pointer to t, which would escape
	for _, o := range e.det.transitions {
		o.transition(b, &e.told)
	}
}

// Counts reports how many apps (named in a hello), instances and resources
// the engine has seen, and the time range of its input.
func (e *Engine) Counts() Counts {
	e.mu.Lock()
	defer e.mu.Unlock()
	return Counts{
		Apps:      len(e.appNames),
		Instances: len(e.instNames),
		Resources: len(e.resNames),
		From:      e.first,
		To:        e.last,
	}
}
