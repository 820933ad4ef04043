package collector

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

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
	// DefaultMaxMessageRate is Options.MaxMessageRate when it is zero: far
	// above an agent's 2 messages a second, far below a flood.
	DefaultMaxMessageRate = 1000
	// TrendLen is the number of seconds of ResourceRow.Trend.
	TrendLen = 60
)

// Series resolutions. Recent data is kept per second; older data, up to the
// retention, per coarseStepMs.
const (
	fineStepMs        = 1000
	instanceFineSlots = 60  // per instance x resource: the last minute per second
	appFineSlots      = 310 // per app x resource: a little over 5 minutes per second, so a 5-minute range stays fine
	coarseStepMs      = 15000
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
	// Limits bound every message (wire.Limits; zero fields take its defaults).
	Limits wire.Limits
	// MaxMessageRate caps the messages a second taken from one dialed
	// connection (a token bucket holding 10 seconds' worth, so a
	// reconnect's backlog passes); the excess is dropped unread and counted.
	// Default 1,000; negative: no limit.
	MaxMessageRate float64
	// Triage tunes the triage engine.
	Triage triage.Config
	// Record, when set, receives every accepted message, in arrival order.
	Record *wire.Writer
	// OnReject, when set, is told of every rejected message, with its place
	// (file:line or target), outside the collector's lock. It must not block.
	OnReject func(place string, err error)
	// WallClock paces what happens in real time whatever Clock says:
	// publishing snapshots, and a replay's speed. Default: core.NewRealClock().
	WallClock core.Clock
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
	if o.MaxResourcesPerInstance <= 0 {
		o.MaxResourcesPerInstance = DefaultMaxResourcesPerApp
	}
	if o.MaxMessageRate == 0 {
		o.MaxMessageRate = DefaultMaxMessageRate
	}
	return o
}

// Collector aggregates wire v1 messages from any number of sources. Its
// methods are safe for concurrent use: sources feed it from their own
// goroutines while the UI reads snapshots.
type Collector struct {
	opts  Options
	clock core.Clock

	mu        sync.Mutex
	engine    *triage.Engine
	insts     map[string]*instance
	apps      map[arKey]*appSeries
	messages  int64
	rejected  int64
	dups      int64
	dropped   int64
	rejects   map[string]*RejectCount
	overflow  map[string]*RejectCount
	recordErr error
	targets   []*targetState
	restream  *restream
	// replay is what a replay feeding this collector last told it
	// (Active false when none does), and replayGen that status's generation.
	replay    ReplayStatus
	replayGen uint64

	seq  uint64
	snap atomic.Pointer[Snapshot]
}

type arKey struct{ app, resource string }

// instance is what the collector knows of one emitting process.
type instance struct {
	name, app  string
	startedAt  int64
	bucketMs   int64
	version    string
	breakers   map[string][]core.BreakerRule
	flows      map[string][]core.FlowRule
	series     map[string]*series
	lastArrive int64 // collector clock
	lastTs     int64 // sender clock, latest message
	dataEnd    int64 // sender clock: buckets are complete up to here
	offsets    [16]int64
	nOffsets   int
	offset     int64
	gone       bool
}

// series is one instance x resource.
type series struct {
	resource string
	app      *appSeries
	seen     dedupe
	fine     ring
	coarse   ring
	tracks   []*track // one per breaker rule id, "" first
	// Totals of everything accepted, for exact accounting.
	total counts
}

// track is one breaker's timeline on one instance.
type track struct {
	ruleID string
	state  core.State
	since  int64
	steps  []Transition // bounded: the oldest are dropped first
}

const maxTrackSteps = 512

// appSeries is one app x resource, summed over its instances.
type appSeries struct {
	key    arKey
	fine   ring
	coarse ring
	last   int64 // latest transition
	// Exact totals since the collector started, for counters.
	total       totals
	transitions map[[2]string]int64 // (from, to) -> count
}

// totals are exact 64-bit sums.
type totals struct {
	pass, block, complete, err, slow int64
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
	}
	c.Publish()
	return c
}

// Options returns the collector's options, defaults filled in.
func (c *Collector) Options() Options { return c.opts }

// Clock is the collector's clock.
func (c *Collector) Clock() core.Clock { return c.clock }

// Engine is the collector's triage engine.
func (c *Collector) Engine() *triage.Engine {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.engine
}

// reset forgets everything ingested (a replay seeking backwards starts over).
func (c *Collector) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.engine = triage.New(c.opts.Triage)
	c.insts = map[string]*instance{}
	c.apps = map[arKey]*appSeries{}
	c.messages, c.rejected, c.dups, c.dropped = 0, 0, 0, 0
	c.rejects = map[string]*RejectCount{}
	c.overflow = map[string]*RejectCount{}
}

// Reject counts a message that could not be used: err's class is the
// reason, place says where (file:line or target).
func (c *Collector) Reject(place string, err error) {
	c.mu.Lock()
	c.rejected++
	count(c.rejects, reasonOf(err), place+": "+err.Error())
	c.mu.Unlock()
	if c.opts.OnReject != nil {
		c.opts.OnReject(place, err)
	}
}

func count(m map[string]*RejectCount, reason, last string) {
	rc := m[reason]
	if rc == nil {
		rc = &RejectCount{Reason: reason}
		m[reason] = rc
	}
	rc.Count++
	rc.Last = last
}

// reasonOf names the class of a decode error for the reject counters.
func reasonOf(err error) string {
	switch {
	case errors.Is(err, wire.ErrVersion):
		return "wrong version"
	case errors.Is(err, wire.ErrTooLarge):
		var de *wire.DecodeError
		if errors.As(err, &de) && de.Field != "" && de.Field != "items" && de.Field != "breakers" && de.Field != "flows" {
			return "name over --max-name-bytes" // every other sized field is a name
		}
		return "too large"
	case errors.Is(err, wire.ErrUnknownKind):
		return "unknown kind"
	case errors.Is(err, wire.ErrMalformed):
		return "malformed"
	case errors.Is(err, wire.ErrInvalid):
		return "invalid"
	}
	return "other"
}

// Ingest accepts one decoded, valid message from place. The message is not
// kept: callers may reuse it afterwards. It reports whether the message was
// accepted (false: turned away by a limit, and counted).
func (c *Collector) Ingest(place string, m wire.Message) bool {
	now := c.clock.UnixMilli()
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := m.(*wire.Meta); ok {
		return true // fixture annotations: nothing to aggregate
	}
	h := m.Head()
	in := c.insts[h.Instance]
	if in == nil {
		if len(c.insts) >= c.opts.MaxInstances {
			count(c.overflow, "instances over --max-instances", place+": "+h.Instance)
			return false
		}
		in = &instance{name: h.Instance, app: h.Instance, breakers: map[string][]core.BreakerRule{},
			flows: map[string][]core.FlowRule{}, series: map[string]*series{}, bucketMs: core.ResourceBucketMs}
		c.insts[h.Instance] = in
	}
	in.lastArrive = now
	in.lastTs = max(in.lastTs, h.Ts)
	in.gone = false
	switch m := m.(type) {
	case *wire.Hello:
		c.hello(in, m)
	case *wire.Rules:
		c.rules(in, m)
	case *wire.Buckets:
		c.buckets(place, in, m, now)
	case *wire.State:
		c.state(place, in, m)
	case *wire.Bye:
		in.gone = true
		c.engine.Bye(in.name, m.Ts)
	}
	c.messages++
	if c.opts.Record != nil && c.recordErr == nil {
		c.recordErr = c.opts.Record.Write(m)
	}
	if c.restream != nil {
		c.restream.publish(m, now)
	}
	return true
}

func (c *Collector) hello(in *instance, m *wire.Hello) {
	app := m.App
	if app == "" {
		app = m.Instance
	}
	restarted := in.startedAt != 0 && m.StartedAt > in.startedAt
	if in.app != app {
		// Series belong to the app they were counted for; a renamed app
		// starts fresh.
		in.series = map[string]*series{}
	}
	in.app = app
	if m.BucketMs > 0 {
		in.bucketMs = m.BucketMs
	}
	if restarted {
		// A new process: its breakers start CLOSED and its buckets are new
		// even where their starts repeat the old process's last ones.
		for _, s := range in.series {
			s.seen = dedupe{}
			for _, t := range s.tracks {
				if t.state != core.Closed {
					t.state, t.since = core.Closed, m.StartedAt
				}
			}
		}
	}
	if m.StartedAt > in.startedAt {
		in.startedAt = m.StartedAt
	}
	c.engine.Hello(in.name, app, m.Ts, m.StartedAt)
}

func (c *Collector) rules(in *instance, m *wire.Rules) {
	in.version = m.Version
	in.breakers = map[string][]core.BreakerRule{}
	in.flows = map[string][]core.FlowRule{}
	for _, r := range m.Breakers {
		in.breakers[r.Resource] = append(in.breakers[r.Resource], r)
	}
	for _, r := range m.Flows {
		in.flows[r.Resource] = append(in.flows[r.Resource], r)
	}
	c.engine.Rules(in.name, m.Ts, m.Version, m.Breakers, m.Flows)
}

// seriesFor returns the instance's series for resource, creating it within
// the limits; nil when a limit turned it away.
func (c *Collector) seriesFor(place string, in *instance, resource string) *series {
	if s := in.series[resource]; s != nil {
		return s
	}
	if len(in.series) >= c.opts.MaxResourcesPerInstance {
		count(c.overflow, "resources over --max-resources", place+": "+in.name+" "+resource)
		return nil
	}
	key := arKey{in.app, resource}
	a := c.apps[key]
	if a == nil {
		coarse := int(c.opts.Retention.Milliseconds()/coarseStepMs) + 1
		a = &appSeries{key: key, fine: newRing(fineStepMs, appFineSlots, true), coarse: newRing(coarseStepMs, coarse, true)}
		c.apps[key] = a
	}
	coarse := int(c.opts.Retention.Milliseconds()/coarseStepMs) + 1
	s := &series{resource: resource, app: a, fine: newRing(fineStepMs, instanceFineSlots, false), coarse: newRing(coarseStepMs, coarse, false)}
	in.series[resource] = s
	return s
}

func (c *Collector) buckets(place string, in *instance, m *wire.Buckets, now int64) {
	c.dropped += m.Dropped
	in.observeOffset(now - m.Ts)
	if m.BucketMs > 0 {
		in.bucketMs = m.BucketMs
		end := m.Ts - floorMod(m.Ts, m.BucketMs)
		in.dataEnd = max(in.dataEnd, end)
	}
	for i := range m.Items {
		it := &m.Items[i]
		s := c.seriesFor(place, in, it.Resource)
		if s == nil {
			continue
		}
		dup, old := s.seen.mark(floorDiv(it.Start, m.BucketMs))
		if dup {
			c.dups++
			continue
		}
		if old {
			count(c.overflow, "buckets older than the dedupe span", place+": "+in.name+" "+it.Resource)
			continue
		}
		in.dataEnd = max(in.dataEnd, it.Start+m.BucketMs)
		s.total.add(it.Pass, it.Block, it.Complete, it.Error, it.Slow, it.RtSum, it.RtMax)
		at := &s.app.total
		at.pass, at.block, at.complete, at.err, at.slow = at.pass+it.Pass, at.block+it.Block, at.complete+it.Complete, at.err+it.Error, at.slow+it.Slow
		for _, r := range []*ring{&s.fine, &s.coarse} {
			if sl, _ := r.slot(it.Start); sl != nil {
				sl.add(it.Pass, it.Block, it.Complete, it.Error, it.Slow, it.RtSum, it.RtMax)
			}
		}
		for _, r := range []*ring{&s.app.fine, &s.app.coarse} {
			if sl, h := r.slot(it.Start); sl != nil {
				sl.add(it.Pass, it.Block, it.Complete, it.Error, it.Slow, it.RtSum, it.RtMax)
				if it.RtHist != nil {
					for k, v := range it.RtHist {
						h[k] = sat32(h[k], v)
					}
				}
			}
		}
		bs := triage.BucketStat{Resource: it.Resource, Start: it.Start, BucketMs: m.BucketMs,
			Pass: it.Pass, Block: it.Block, Complete: it.Complete, Error: it.Error, Slow: it.Slow,
			RtSum: it.RtSum, RtMax: it.RtMax}
		if it.RtHist != nil {
			bs.RtHist, bs.HasHist = *it.RtHist, true
		}
		c.engine.Bucket(in.name, bs)
	}
}

// observeOffset keeps the smallest arrival-minus-ts of recent buckets
// messages: network delay and backlog only ever add to it.
func (in *instance) observeOffset(d int64) {
	in.offsets[in.nOffsets%len(in.offsets)] = d
	in.nOffsets++
	n := min(in.nOffsets, len(in.offsets))
	in.offset = in.offsets[0]
	for _, o := range in.offsets[1:n] {
		in.offset = min(in.offset, o)
	}
}

func (c *Collector) state(place string, in *instance, m *wire.State) {
	s := c.seriesFor(place, in, m.Resource)
	if s == nil {
		return
	}
	var t *track
	for _, x := range s.tracks {
		if x.ruleID == m.RuleID {
			t = x
		}
	}
	if t == nil {
		t = &track{ruleID: m.RuleID, state: core.Closed}
		s.tracks = append(s.tracks, t)
	}
	tr := Transition{AtMs: m.Ts, From: m.From, To: m.To, RuleID: m.RuleID}
	ct := core.Transition{Resource: m.Resource, RuleID: m.RuleID, Strategy: m.Strategy, From: m.From, To: m.To,
		AtMs: m.Ts, Threshold: m.Threshold, RetryTimeoutMs: uint32(min(max(m.RetryTimeoutMs, 0), 1<<32-1))}
	if m.Snapshot != nil {
		ws := core.WindowSnapshot{Total: m.Snapshot.Total, Bad: m.Snapshot.Slow + m.Snapshot.Error, Value: m.Snapshot.Value}
		tr.Snapshot, ct.Snapshot = &ws, ws
	}
	if m.Probe != nil {
		p := core.Probe{RtMs: m.Probe.RtMs, Error: m.Probe.Error}
		tr.Probe, ct.Probe = &p, &p
	}
	if len(t.steps) == maxTrackSteps {
		t.steps = slices.Delete(t.steps, 0, maxTrackSteps/4)
	}
	t.steps = append(t.steps, tr)
	t.state, t.since = m.To, m.Ts
	s.app.last = max(s.app.last, m.Ts)
	if s.app.transitions == nil {
		s.app.transitions = map[[2]string]int64{}
	}
	s.app.transitions[[2]string{m.From.String(), m.To.String()}]++
	c.engine.Transition(in.name, ct)
}

// setReplay records the status a replay told; an older generation than the
// one held is ignored.
func (c *Collector) setReplay(st ReplayStatus, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen > c.replayGen {
		c.replay, c.replayGen = st, gen
	}
}

// Totals returns the sums of every bucket accepted for instance x resource.
func (c *Collector) Totals(instance, resource string) (pass, block, complete, errs, slow int64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	in := c.insts[instance]
	if in == nil || in.series[resource] == nil {
		return 0, 0, 0, 0, 0, false
	}
	t := in.series[resource].total
	return int64(t.pass), int64(t.block), int64(t.complete), int64(t.err), int64(t.slow), true
}

// Counters returns messages accepted, rejected, and duplicates dropped.
func (c *Collector) Counters() (messages, rejected, duplicates int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.messages, c.rejected, c.dups
}

// RecordError is the first error writing the recording, if any.
func (c *Collector) RecordError() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.recordErr
}

// Findings judges the input at the collector's current time.
func (c *Collector) Findings() []triage.Finding {
	return c.Engine().Findings(c.clock.UnixMilli())
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

// alive reports whether an instance still counts.
func (c *Collector) alive(in *instance, now int64) bool {
	return !in.gone && now-in.lastArrive <= c.opts.StaleAfter.Milliseconds()
}

// shown reports whether an instance's rows stay in the table: an instance
// that said bye or went silent stays for StaleAfter, so a shutdown is seen
// rather than vanishing, and at the end of a replay everything stays.
func (c *Collector) shown(in *instance, now int64) bool {
	if c.replay.Done {
		return true
	}
	return now-in.lastArrive <= c.opts.StaleAfter.Milliseconds()
}

// window sums the fine slots of r over [from, to) (times aligned to seconds).
func window(r *ring, from, to int64) (sum counts, hist [histLen]uint32) {
	for t := r.align(from); t < to; t += r.stepMs {
		if sl, h := r.at(t); sl != nil {
			sum.addCounts(sl)
			if h != nil {
				for i, v := range h {
					hist[i] = sat32(hist[i], int64(v))
				}
			}
		}
	}
	return sum, hist
}

// Publish builds a snapshot now and makes it the latest.
func (c *Collector) Publish() *Snapshot {
	now := c.clock.UnixMilli()
	findings := c.Engine().Findings(now)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	s := &Snapshot{At: now, Seq: c.seq, Mode: c.opts.Mode, Source: c.opts.Source,
		Messages: c.messages, Rejected: c.rejected, Dropped: c.dropped, Findings: findings}
	if c.replay.Active {
		s.Replay = c.replay
		s.Replay.Pos = now
	}
	notes := map[string]int{}
	for _, t := range c.targets {
		st := t.status()
		s.Targets = append(s.Targets, st)
		if st.Note != "" {
			notes[st.Note]++
		}
	}
	s.Rejects = sortedCounts(c.rejects)
	s.Overflow = sortedCounts(c.overflow)
	worst := map[arKey]triage.Severity{}
	for _, f := range findings {
		k := arKey{f.App, f.Resource}
		if w, ok := worst[k]; !ok || f.Severity > w {
			worst[k] = f.Severity
		}
	}
	rateMs := c.opts.RateWindow.Milliseconds()
	rows := map[arKey]*ResourceRow{}
	ends := map[arKey]int64{}
	apps := map[string]bool{}
	resources := map[string]bool{}
	var warnings []string
	names := make([]string, 0, len(c.insts))
	for name := range c.insts {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		in := c.insts[name]
		if !c.shown(in, now) {
			continue
		}
		if c.alive(in, now) || c.replay.Done {
			s.Instances++
		}
		apps[in.app] = true
		if off := in.offset; in.nOffsets > 0 && (off > in.bucketMs || -off > in.bucketMs) && c.opts.Mode == ModeLive {
			dir := "behind"
			if off < 0 {
				dir, off = "ahead of", -off
			}
			warnings = append(warnings, fmt.Sprintf("clock of %s is %.1f s %s the collector's", in.name, float64(off)/1000, dir))
		}
		end := in.dataEnd - floorMod(in.dataEnd, fineStepMs)
		for res, se := range in.series {
			k := arKey{in.app, res}
			resources[res] = true
			row := rows[k]
			if row == nil {
				row = &ResourceRow{App: in.app, Resource: res}
				rows[k] = row
			}
			row.Instances++
			sum, _ := window(&se.fine, end-rateMs, end)
			row.PassQPS += float64(sum.pass) * 1000 / float64(rateMs)
			row.BlockQPS += float64(sum.block) * 1000 / float64(rateMs)
			ends[k] = max(ends[k], end)
			if len(in.breakers[res]) > 0 {
				row.HasBreaker = true
				switch worstState(se.tracks) {
				case core.Open:
					row.Breakers.Open++
				case core.HalfOpen:
					row.Breakers.HalfOpen++
				default:
					row.Breakers.Closed++
				}
			}
			row.LastTransition = max(row.LastTransition, se.app.last)
		}
	}
	noteList := make([]string, 0, len(notes))
	for note, n := range notes {
		noteList = append(noteList, fmt.Sprintf("%d %s: %s", n, plural(n, "target", "targets"), note))
	}
	slices.Sort(noteList)
	warnings = append(warnings, noteList...)
	s.Apps, s.Resources, s.Warnings = len(apps), len(resources), warnings
	s.Rows = make([]ResourceRow, 0, len(rows))
	for k, row := range rows {
		a := c.apps[k]
		end := ends[k]
		sum, hist := window(&a.fine, end-rateMs, end)
		if sum.complete > 0 {
			row.SlowRatio = float64(sum.slow) / float64(sum.complete)
			row.ErrorRatio = float64(sum.err) / float64(sum.complete)
			row.AvgRtMs = float64(sum.rtSum) / float64(sum.complete)
		}
		row.P50Ms, row.P99Ms = quantiles(&hist, int64(sum.rtMax))
		row.Trend = make([]float64, TrendLen)
		for i := range row.Trend {
			t := end - int64(TrendLen-i)*fineStepMs
			if sl, _ := a.fine.at(t); sl != nil {
				row.Trend[i] = float64(sl.pass)
			}
		}
		row.Worst, row.HasFinding = worst[k]
		s.Rows = append(s.Rows, *row)
	}
	slices.SortFunc(s.Rows, func(x, y ResourceRow) int {
		return cmp.Or(cmp.Compare(x.App, y.App), cmp.Compare(x.Resource, y.Resource))
	})
	c.snap.Store(s)
	return s
}

func quantiles(h *[histLen]uint32, rtMax int64) (p50, p99 int64) {
	var hh [core.HistogramSlots]int64
	for i, v := range h {
		hh[i] = int64(v)
	}
	return core.HistogramQuantile(&hh, 0.5, rtMax), core.HistogramQuantile(&hh, 0.99, rtMax)
}

func worstState(tracks []*track) core.State {
	st := core.Closed
	for _, t := range tracks {
		if t.state == core.Open || (t.state == core.HalfOpen && st == core.Closed) {
			st = t.state
		}
	}
	return st
}

func sortedCounts(m map[string]*RejectCount) []RejectCount {
	out := make([]RejectCount, 0, len(m))
	for _, rc := range m {
		out = append(out, *rc)
	}
	slices.SortFunc(out, func(a, b RejectCount) int { return cmp.Compare(a.Reason, b.Reason) })
	return out
}

// Detail describes one app x resource over [from, to).
func (c *Collector) Detail(app, resource string, from, to int64) *Detail {
	findings := c.Engine().Findings(c.clock.UnixMilli())
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.UnixMilli()
	d := &Detail{App: app, Resource: resource, From: from, To: to}
	a := c.apps[arKey{app, resource}]
	if a == nil || to <= from {
		return d
	}
	r := &a.fine
	if now-from > a.fine.span() || to-from > a.fine.span() {
		r = &a.coarse
	}
	d.StepMs = r.stepMs
	start := r.align(from)
	for t := start; t < to; t += r.stepMs {
		sl, h := r.at(t)
		perSec := 1000 / float64(r.stepMs)
		var cnt counts
		var hist [histLen]uint32
		if sl != nil {
			cnt, hist = *sl, *h
		}
		d.PassQPS = append(d.PassQPS, float64(cnt.pass)*perSec)
		d.BlockQPS = append(d.BlockQPS, float64(cnt.block)*perSec)
		if cnt.complete > 0 {
			d.SlowRatio = append(d.SlowRatio, float64(cnt.slow)/float64(cnt.complete))
			d.ErrorRatio = append(d.ErrorRatio, float64(cnt.err)/float64(cnt.complete))
			_, p99 := quantiles(&hist, int64(cnt.rtMax))
			d.P99Ms = append(d.P99Ms, float64(p99))
		} else {
			d.SlowRatio = append(d.SlowRatio, nan)
			d.ErrorRatio = append(d.ErrorRatio, nan)
			d.P99Ms = append(d.P99Ms, nan)
		}
	}
	// The rule most instances have decides the threshold lines and drift.
	ruleVotes := map[string]int{}
	ruleOf := map[string][]core.BreakerRule{}
	var names []string
	for name, in := range c.insts {
		if in.app == app && in.series[resource] != nil {
			names = append(names, name)
			key := fmt.Sprint(in.breakers[resource], in.flows[resource])
			ruleVotes[key]++
			ruleOf[key] = in.breakers[resource]
		}
	}
	sort.Strings(names)
	majority, best := "", -1
	for _, name := range names { // ties go to the first instance by name
		in := c.insts[name]
		key := fmt.Sprint(in.breakers[resource], in.flows[resource])
		if ruleVotes[key] > best {
			majority, best = key, ruleVotes[key]
		}
	}
	if rules := ruleOf[majority]; len(rules) > 0 {
		d.HasBreaker, d.Strategy, d.Threshold, d.MaxAllowedRtMs = true, rules[0].Strategy, rules[0].Threshold, rules[0].MaxAllowedRtMs
	}
	rateMs := c.opts.RateWindow.Milliseconds()
	for _, name := range names {
		in := c.insts[name]
		se := in.series[resource]
		id := InstanceDetail{Instance: name, State: worstState(se.tracks), HasBreaker: len(in.breakers[resource]) > 0,
			Breakers: in.breakers[resource], Flows: in.flows[resource], RulesVersion: in.version,
			Drift: fmt.Sprint(in.breakers[resource], in.flows[resource]) != majority, ClockOffsetMs: in.offset,
			Gone: !c.alive(in, now), Start: core.Closed}
		for _, t := range se.tracks {
			if t.state == id.State {
				id.StateSince = max(id.StateSince, t.since)
			}
			for _, st := range t.steps {
				switch {
				case st.AtMs < from:
					id.Start = st.To
				case st.AtMs < to:
					id.Transitions = append(id.Transitions, st)
				}
			}
		}
		slices.SortStableFunc(id.Transitions, func(x, y Transition) int { return cmp.Compare(x.AtMs, y.AtMs) })
		end := in.dataEnd - floorMod(in.dataEnd, fineStepMs)
		sum, _ := window(&se.fine, end-rateMs, end)
		id.PassQPS = float64(sum.pass) * 1000 / float64(rateMs)
		id.BlockQPS = float64(sum.block) * 1000 / float64(rateMs)
		if sum.complete > 0 {
			id.SlowRatio = float64(sum.slow) / float64(sum.complete)
			id.ErrorRatio = float64(sum.err) / float64(sum.complete)
		}
		d.Instances = append(d.Instances, id)
	}
	for _, f := range findings {
		if f.App == app && f.Resource == resource {
			d.Findings = append(d.Findings, f)
		}
	}
	return d
}

var nan = func() float64 { z := 0.0; return z / z }()

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// itoa is strconv.Itoa for int64.
func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// Run publishes a snapshot every Options.PublishEvery on the wall clock
// (Options.WallClock) until ctx ends.
//
// A snapshot that would say the same as the last one (nothing arrived, the
// clock has not moved: a paused replay) is not published again.
func (c *Collector) Run(ctx context.Context) {
	tk := c.opts.WallClock.NewTicker(c.opts.PublishEvery)
	defer tk.Stop()
	var last [5]int64
	for {
		select {
		case <-ctx.Done():
			return
		case <-tk.C():
			if sig := c.signature(); sig != last {
				last = sig
				c.Publish()
			}
		}
	}
}

// signature changes whenever a snapshot could differ from the last one.
func (c *Collector) signature() [5]int64 {
	sig := [5]int64{c.clock.UnixMilli()}
	c.mu.Lock()
	sig[1], sig[2], sig[3] = c.messages, c.rejected, c.dups
	targets := c.targets
	sig[4] = int64(c.replayGen)
	c.mu.Unlock()
	for _, t := range targets {
		st := t.status()
		sig[4] = sig[4]*31 + st.Messages + int64(st.State) + st.Reconnects + st.Rejected
	}
	return sig
}
