package collector

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/sentinel-top/sentinel-top/collector/feed"
	"github.com/sentinel-top/sentinel-top/collector/fleet"
	"github.com/sentinel-top/sentinel-top/collector/triage"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// The fleet model: one place for instance identity, restarts, liveness,
// rules and breaker tracks. The table, the detail screen, triage and
// /metrics all read it, so they agree on which instances are there and what
// rules they have.

// instance is what the collector knows of one emitting process.
type instance struct {
	// Instance is the process's record that every view and triage read:
	// name, app, start, liveness, what is not known of its history. A
	// name another process takes (another app after a hello) gets a new
	// record; the old one stays gone for what triage keeps of it.
	*fleet.Instance

	// What a snapshot reads of every instance comes first, in the first
	// cache lines (a fleet's instances are not in any cache when the next
	// snapshot comes; see instanceRows).
	//
	// changed: a message other than buckets arrived, a series began, or
	// it left or came back, since the last snapshot took its series' parts
	// of the rows (see rows.go); dirty: buckets arrived, the earliest
	// starting at dirtyFrom. rowsEnd is the data end (on a second) of the
	// parts taken last; listed and guarded (its series with a breaker) are
	// as that snapshot found them.
	changed, dirty bool
	listed         bool
	// queued: in the next snapshot's visit (Collector.touch); counted,
	// measured, skewed, inGuarded: what it added to the counts at its last
	// visit (pubCache.count); dropped: forgotten by the store.
	queued, counted, measured, skewed, inGuarded, dropped bool
	// Gone (the record's) is the one liveness rule: set when the instance
	// said bye or was silent for longer than Options.StaleAfter (see
	// sweep), cleared by its next message. goneAt is when, on the
	// collector's clock (the record's LeftAt is on the instance's).
	// polled: the collector polls it (Java Sentinel's transport) and
	// stamps its messages' ts itself, so ts tells how far its data lags,
	// not its clock: no clock-skew warning.
	polled      bool
	goneAt      int64
	dirtyFrom   int64
	rowsEnd     int64
	dataEnd     int64 // sender clock: buckets are complete up to here
	offset      int64 // the least of offsets (see observeOffset)
	nOffsets    int
	bucketMs    int64
	listedApp   string    // the app it is counted in while listed (pubCache.apps)
	guardedList []*series // its series with a breaker, in seriesList's order, as guarded counts them
	guarded     int

	// tri is the triage engine's handle of the process: the store tells
	// the engine what it decided of its identity (see hello, sweep, ingest)
	// and feeds it facts through this handle and its series'.
	tri triage.Instance
	// Its rules are its record's (fleet.Instance.Rules): one copy, in
	// canonical order, that the detail and rule drift both read.
	series     map[string]*series
	seriesList []*series // the values of series, for passes without map lookups
	// next is the index in seriesList after the series of the latest
	// bucket item: an agent sends a bucket's items in name order, so the
	// next item's series is most often there (see itemSeries).
	next       int
	lastArrive int64 // collector clock
	lastTs     int64 // sender clock, latest message
	// resumeFrom, resumeTo: a hello of a process the collector had data
	// from came, and the backlog it brings is awaited to tell whether it
	// reaches back to resumeFrom; wire v1 promises it reaches resumeTo
	// (0: none awaited; see gaps.go).
	resumeFrom, resumeTo int64
	offsets              [16]int64
	// helloed: a hello named its app; appChanges counts its moves to
	// another app since appChangesSince (see appChangeAllowed).
	helloed                     bool
	appChanges, appChangesSince int64
	// owner is the connection (dialed target) that announced it, "" for
	// sources without one; see Bound. An instance is (owner, wire name):
	// wire is the name its messages carry when another target held that
	// name first and Name is the name qualified by the target (see
	// instanceOf); "" when Name is the wire's. share is the budget's share
	// that what it keeps is charged to (budget.go): its owner's.
	owner, wire string
	share       *budgetShare
	// statesUnknown: its source cannot report breaker transitions (Java
	// Sentinel's transport or a metric log: feed.Origin, stated with its
	// hello).
	statesUnknown bool
	// slowUnknown: its source does not count slow calls (feed.Origin).
	slowUnknown bool
	// rtUnknown: its source reads no response times (Prometheus).
	rtUnknown bool
	// relay is the target (a Prometheus server) it is read through, ""
	// for none (feed.Origin.Relayed); hidden: that target is down and the
	// instance silent past StaleAfter: not gone, its states unknown.
	relay  string
	hidden bool
}

// series is one instance x resource. The fields every bucket item reads
// or writes come first, in the first cache lines of the struct (a fleet's
// series are not in any cache when their next item comes): its name and
// handles, the fine ring's header, the totals, the fine ring's slot starts,
// the dedupe span's newest index; then the dedupe bits (one word of them
// an item).
type series struct {
	resource string
	app      *appSeries
	// tri is the triage engine's handle of the series, begun at its first
	// fact fed to the engine (see triSeries).
	tri    triage.Series
	first  int64 // the earliest bucket start or transition seen (0: none)
	seenMs int64 // the bucket length seen's indexes are in
	fine   ring  // the last seconds, for the per-instance rates (instanceFineSlots)
	// Totals of everything accepted, for exact accounting.
	total totals
	// fineStarts holds fine's slot starts when it has no more slots than
	// the default rate window's: one allocation less, and the start of
	// the slot an item goes to beside the ring's header (see initFine).
	fineStarts [inlineFineSlots]int64
	seen       dedupe
	tracks     []*track // one per breaker rule id, "" first
	inferred   bool     // some transition was inferred from counts
	// quiet: for an instance whose states are inferred (or unknown), the
	// seconds of the series without a line (no call passed, was blocked or
	// completed) between two seconds with one, at most maxQuietSpans of
	// them, the latest; lastLine is the latest second with one, and
	// retryMs the timeWindow of its latest inferred transition. See
	// silent (timeline.go).
	quiet    []Span
	lastLine int64
	retryMs  int64
	ruled    bool // the instance has a breaker rule for the resource
	// flowRuled, paramRuled: it has flow, hot-parameter rules for it (what
	// the table says guards a resource no breaker does).
	flowRuled, paramRuled bool
	idx                   int32    // its index in its instance's seriesList
	hot                   *hotRing // the hot values of its recent buckets (nil: none yet)
	part                  rowPart  // what it adds to its app x resource's row (rows.go)
}

// initFine makes the series' fine ring of n slots, over the starts it
// holds in itself when they fit.
func (s *series) initFine(n int) {
	var starts []int64
	if n <= len(s.fineStarts) {
		starts = s.fineStarts[:n:n]
	}
	s.fine = newRing(fineStepMs, n, starts)
}

// track is one breaker's history on one instance.
type track = fleet.Track

const maxTrackSteps = 512

// insertStep puts tr, older than the track's latest step, in its place
// among the steps, for the timelines; the current state and triage, which
// take transitions in order, are left as they are. One older than every
// step held of a full track is left out: it may be one dropped for room.
// c.mu is held.
func (c *Collector) insertStep(s *series, t *track, tr Transition) {
	i, _ := slices.BinarySearchFunc(t.Steps, tr.AtMs, func(x Transition, at int64) int { return cmp.Compare(x.AtMs, at) })
	if i == 0 && len(t.Steps) >= maxTrackSteps*3/4 {
		return
	}
	if len(t.Steps) == maxTrackSteps {
		t.Steps = slices.Delete(t.Steps, 0, maxTrackSteps/4)
		i = max(i-maxTrackSteps/4, 0)
	}
	t.Steps = slices.Insert(t.Steps, i, tr)
	s.app.act.timesPartial = true // its spells were counted without it
	s.first = min(s.first, tr.AtMs)
	s.app.transitions[[2]core.State{tr.From, tr.To}]++
	c.transition()
}

// appSeries is one app x resource, summed over its instances.
type appSeries struct {
	key arKey
	appRings
	last int64 // latest transition
	// refs counts the instance series summed here; lastData is the
	// collector's clock at the latest bucket (for pruning). share is the
	// budget's share it is charged to: its first instance's.
	refs     int
	lastData int64
	share    *budgetShare
	// someUnknown, someInferred: an instance reporting it could not tell
	// breaker states, or had them inferred (for ResourceTotals.States).
	someUnknown, someInferred bool
	// someSlowUnknown: an instance whose source counts no slow calls
	// sent it buckets (its slow ratio is unknown, not 0).
	someSlowUnknown bool
	// Exact totals since the collector started, for counters.
	total       totals
	transitions map[[2]core.State]int64 // (from, to) -> count
	// sums are what its listed instance series add up to (rows.go).
	sums rowSums
	// act sums its breakers' spells and its blocks by cause (activity.go).
	act activity
}

type arKey struct{ app, resource string }

// totals are 64-bit sums of core.Metrics' counts, exact below 2^63 and
// saturating there (a peer sending absurd counts cannot wrap a Prometheus
// counter negative).
type totals struct {
	pass, block, complete, err, slow int64
}

// add folds one bucket's counts into t.
func (t *totals) add(m *core.Metrics) {
	t.pass, t.block, t.complete = sat64(t.pass, m.Pass), sat64(t.block, m.Block), sat64(t.complete, m.Complete)
	t.err, t.slow = sat64(t.err, m.Error), sat64(t.slow, m.Slow)
}

// metrics returns the sums as core.Metrics: Pass, Block, Complete, Error
// and Slow; the response times, histogram and concurrency are not kept.
func (t *totals) metrics() core.Metrics {
	return core.Metrics{Pass: t.pass, Block: t.block, Complete: t.complete, Error: t.err, Slow: t.slow}
}

// sat64 is a + b for non-negative b, stopping at math.MaxInt64.
func sat64(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + max(b, 0)
}

// maxQualified bounds the qualified names tried for one instance (see
// instanceOf): past them, names squatted on purpose, its messages are
// rejected as impersonation.
const maxQualified = 8

// instanceOf returns the instance a message from owner (its target, ""
// for a source without one) names, creating it within --max-instances;
// nil when a limit turned it away, and refused when other targets'
// instances hold every name it could take (counted). c.mu is held.
//
// An instance of a dialed target is the target and the name together: a
// name another target announced first is another instance, named
// NAME@TARGET (NAME@TARGET#2 ... when that too is taken by another
// target's), with a NoticeInstanceConflict; nobody's messages are
// refused or merged, and a restart on its own target finds its own
// instance again. The first keeps the plain name: renaming it would split
// its series in /metrics, a recording and the re-served stream.
func (c *Collector) instanceOf(owner, place, name string, ts int64) (in *instance, refused error) {
	if owner == "" {
		return c.instanceFor(place, name, "", ""), nil
	}
	holder := c.insts[name]
	switch {
	case holder == nil:
	case holder.owner == owner && holder.wire == "":
		return holder, nil
	case holder.owner == "":
		holder.owner = owner // a file's instance, announced by the target now
		c.namesGen++
		return holder, nil
	}
	free := ""
	if holder == nil {
		free = name
	}
	for k := 1; k <= maxQualified; k++ {
		q := qualified(name, owner, k)
		x := c.insts[q]
		if x == nil {
			if free == "" {
				free = q
			}
			continue
		}
		if x.owner == owner && x.wire == name {
			return x, nil
		}
	}
	switch {
	case free == "":
		return nil, fmt.Errorf("instance %q: %d names for target %s's are taken by other targets' instances", name, maxQualified+1, owner)
	case free == name:
		return c.instanceFor(place, name, owner, ""), nil
	}
	in = c.instanceFor(place, free, owner, name)
	if in != nil {
		c.qualifiedEver++
		c.notice(Notice{Kind: NoticeInstanceConflict, Instance: free, Resource: name, Target: owner, Holder: holder.owner, At: ts, Count: 1})
	}
	return in, nil
}

// heldInstanceOf is instanceOf for a message of owner's connection, which
// keeps (held, when not nil) the instance its last message naming name
// reached: the same again while no instance came, went or changed owner
// since (namesGen), without hashing the name. c.mu is held.
func (c *Collector) heldInstanceOf(owner string, held *heldShare, place, name string, ts int64) (*instance, error) {
	if held == nil {
		return c.instanceOf(owner, place, name, ts)
	}
	if held.in != nil && held.names == c.namesGen && held.inName == name {
		return held.in, nil
	}
	in, refused := c.instanceOf(owner, place, name, ts)
	held.in, held.inName, held.names = in, name, c.namesGen
	return in, refused
}

// qualified is the k-th name (from 1) of a target's instance kept apart
// from another target's of its name: NAME@TARGET, then NAME@TARGET#k.
func qualified(name, owner string, k int) string {
	if k > 1 {
		return name + "@" + owner + "#" + strconv.Itoa(k)
	}
	return name + "@" + owner
}

// instanceFor returns the instance called name, creating it within
// --max-instances for owner, its messages naming it wire ("": name); nil
// when a limit turned it away. c.mu is held.
func (c *Collector) instanceFor(place, name, owner, wire string) *instance {
	if in := c.insts[name]; in != nil {
		return in
	}
	if len(c.insts) >= c.opts.MaxInstances {
		count(c.overflow, ReasonMaxInstances, place+": "+name)
		return nil
	}
	if !c.charge(nil, instanceCost(name), place, name) {
		return nil
	}
	in := &instance{Instance: &fleet.Instance{Name: name, App: name}, series: map[string]*series{},
		bucketMs: core.ResourceBucketMs, share: c.cur}
	in.owner, in.wire = owner, wire
	in.tri = c.engine.NewInstance(in.Instance)
	c.insts[name] = in
	c.namesGen++
	c.touch(in)
	return in
}

// sweep applies the liveness rule at now: an instance silent for longer
// than StaleAfter is gone from that moment, for every view at once (the
// table, the detail, triage and /metrics). c.mu is held.
//
// An instance can be stale only once now is StaleAfter past arriveFloor:
// until then a snapshot does not look at each instance.
func (c *Collector) sweep(now int64) {
	stale := c.opts.StaleAfter.Milliseconds()
	if now-c.arriveFloor <= stale {
		return
	}
	floor := now
	var down map[string]bool // the relays down: their instances are hidden, not gone
	for _, t := range c.targets {
		if st := t.Status(); st.State == feed.TargetDown {
			if down == nil {
				down = map[string]bool{}
			}
			down[st.Name] = true
		}
	}
	for _, in := range c.insts {
		if !in.Gone && now-in.lastArrive > stale && in.relay != "" && down[in.relay] {
			if !in.hidden {
				in.hidden, in.changed = true, true
				c.breakersGen++
				c.touch(in)
			}
			floor = min(floor, in.lastArrive)
			continue
		}
		if !in.Gone && now-in.lastArrive > stale {
			in.Gone, in.LeftAt, in.goneAt, in.changed = true, in.lastTs+stale, in.lastArrive+stale, true
			c.touch(in)
			c.noteGone(in.goneAt)
			c.breakersGen++
			c.engine.Left(in.tri, in.lastTs+stale)
		}
		if !in.Gone {
			floor = min(floor, in.lastArrive)
		}
	}
	c.arriveFloor = floor
}

// hello applies an instance's hello, judged by triage.JudgeHello (a first
// hello, a restart, another process under the name), and tells the triage
// engine what it decided; o is what its source stated of the sender, back
// says the instance was gone until this message. False when it moves the
// instance to another app more often than MaxAppChangesPerMinute
// (rejected).
func (c *Collector) hello(in *instance, m *wire.Hello, o feed.Origin, now int64, back bool) bool {
	app := m.App
	if app == "" {
		app = in.Name // the wire's name, or the one qualified by its target
	}
	ch := triage.JudgeHello(in.helloed, in.App, in.StartedAt, app, m.StartedAt)
	if ch == triage.HelloNewProcess && !in.appChangeAllowed(now) {
		return false
	}
	if in.App != app {
		// Series belong to the app they were counted for; a renamed app
		// starts fresh.
		c.releaseSeries(in)
		c.appsLeft = true
	}
	in.App, in.helloed = app, true
	in.statesUnknown, in.slowUnknown, in.polled, in.rtUnknown = o.StatesUnknown, o.SlowUnknown, o.Polled, o.RTUnknown
	if m.BucketMs > 0 {
		in.bucketMs = m.BucketMs
	}
	if ch == triage.HelloRestart {
		// A new process: its breakers start CLOSED and its buckets are new
		// even where their starts repeat the old process's last ones.
		for _, s := range in.series {
			s.seen = dedupe{}
		}
		in.restart(m.StartedAt)
	}
	if ch == triage.HelloNewProcess {
		// Another process took the name: the old one left now, and what
		// triage keeps of it stays with its record.
		in.Gone, in.LeftAt = true, m.Ts
		in.Instance = &fleet.Instance{Name: in.Name, App: app}
	}
	in.awaitBacklog(ch, m)
	in.StartedAt = max(in.StartedAt, m.StartedAt)
	if back && ch != triage.HelloNewProcess {
		c.engine.Returned(in.tri, m.Ts)
	}
	in.tri = c.engine.Hello(in.tri, ch, in.Instance, m.Ts)
	return true
}

// rules makes an instance's rules, those the budget admits, its record's
// (one copy each of the rule sets instances share: c.book), and tells the
// triage engine. c.mu is held.
func (c *Collector) rules(place string, in *instance, m *wire.Rules) {
	breakers, flows, params := m.Breakers, m.Flows, m.Params
	if c.ruleResourcesNew(in.App, m) {
		// Rules naming resources never seen with rules in this app are
		// charged to the memory budget (triage keeps each app x resource
		// with rules): a peer naming new ones in every rules message is
		// refused past it, rather than growing without end.
		breakers = admitRules(c, place, in, m.Breakers, func(r *core.BreakerRule) string { return r.Resource })
		flows = admitRules(c, place, in, m.Flows, func(r *core.FlowRule) string { return r.Resource })
		params = admitRules(c, place, in, m.Params, func(r *core.HotParamRule) string { return r.Resource })
	}
	prev := in.Rules
	in.Rules = c.book.Make(m.Version, breakers, flows, params)
	c.engine.Rules(in.tri, m.Ts, prev)
	for _, s := range in.seriesList {
		s.setRules(in.Rules)
	}
}

// setRules notes which rules of r guard the series' resource.
func (s *series) setRules(r *fleet.Rules) {
	rr := r.Of(s.resource)
	s.ruled = rr != nil && len(rr.Breakers) > 0
	s.flowRuled = rr != nil && len(rr.Flows) > 0
	s.paramRuled = len(r.ParamsOf(s.resource)) > 0
}

// admitRules keeps the rules whose resource ruleResource admits.
func admitRules[R any](c *Collector, place string, in *instance, rules []R, resource func(*R) string) []R {
	var out []R
	for i := range rules {
		if c.ruleResource(place, in, resource(&rules[i])) {
			out = append(out, rules[i])
		}
	}
	return out
}

// ruleResourcesNew reports whether a rules message names a resource not
// yet known with rules in the instance's app. c.mu is held.
func (c *Collector) ruleResourcesNew(app string, m *wire.Rules) bool {
	known := func(res string) bool { _, ok := c.ruleRes[arKey{app, res}]; return ok }
	for _, r := range m.Breakers {
		if !known(r.Resource) {
			return true
		}
	}
	for _, r := range m.Flows {
		if !known(r.Resource) {
			return true
		}
	}
	for _, r := range m.Params {
		if !known(r.Resource) {
			return true
		}
	}
	return false
}

// ruleResource admits an app x resource with rules, charging it to the
// budget when new; false when it does not fit (counted). c.mu is held.
func (c *Collector) ruleResource(place string, in *instance, resource string) bool {
	k := arKey{in.App, resource}
	if sh, ok := c.ruleRes[k]; ok {
		c.ruleRes[k] = c.shared(sh, in.share, ruleResourceCost(resource))
		return true
	}
	if !c.charge(in.share, ruleResourceCost(resource), place, in.Name+" rules for "+resource) {
		return false
	}
	c.ruleRes[k] = in.share
	return true
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

// dataEndSecond is the end of the instance's complete data, on a second.
func (in *instance) dataEndSecond() int64 {
	return in.dataEnd - floorMod(in.dataEnd, fineStepMs)
}

// states is where the app x resource's breaker states come from: unknown
// when an instance could not tell them, else inferred when some were.
func (a *appSeries) states() Provenance {
	switch {
	case a.someUnknown:
		return ProvenanceUnknown
	case a.someInferred:
		return ProvenanceInferred
	}
	return ProvenanceExact
}

// provenance is where the series' breaker state comes from.
func (s *series) provenance(in *instance) Provenance {
	switch {
	case s.inferred:
		return ProvenanceInferred
	case in.statesUnknown:
		return ProvenanceUnknown
	}
	return ProvenanceExact
}

func worstState(tracks []*track) core.State {
	st := core.Closed
	for _, t := range tracks {
		if t.State == core.Open || (t.State == core.HalfOpen && st == core.Closed) {
			st = t.State
		}
	}
	return st
}
