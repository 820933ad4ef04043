package collector

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sentinel-top/sentinel-top/collector/feed"
	"github.com/sentinel-top/sentinel-top/collector/triage"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// Reasons are the stable tokens that name why something was refused: the
// Reason of a RejectCount, and the label values of the Prometheus counters.
// Words for people (and the flag that raises a limit) belong to whoever
// shows them.
const (
	// Rejected messages, by the class of their decoding error.
	ReasonWrongVersion = "wrong_version"
	ReasonTooLarge     = "too_large"
	ReasonNameTooLong  = "name_too_long"
	ReasonUnknownKind  = "unknown_kind"
	ReasonMalformed    = "malformed"
	ReasonInvalid      = "invalid"
	ReasonOther        = "other"
	// What the collector's own limits turned away.
	ReasonMaxInstances = "max_instances" // Options.MaxInstances
	ReasonMaxResources = "max_resources" // Options.MaxResourcesPerInstance
	ReasonDedupeSpan   = "dedupe_span"   // a bucket older than dedupe can tell
	ReasonMaxRate      = "max_rate"      // a source's rate limit (OverRate)
	// Rejected messages that were well formed but not believable.
	ReasonImpersonation = "impersonation" // every name its instance could take is another target's (instanceOf)
	ReasonClockSkew     = "clock_skew"    // ts further than Options.MaxClockSkew from the collector's clock; a bucket's start from its ts too (startsWithin)
)

// DefaultMaxClockSkew is what sentinel-top sets Options.MaxClockSkew to:
// one peer's year-9999 timestamps must not stretch every report's range.
const DefaultMaxClockSkew = 24 * time.Hour

// Bound returns a sink for one connection (a dialed target, owner its
// name): an instance it announces is the target and the name together,
// so a name another target announced first is another instance, shown
// as NAME@TARGET (see instanceOf), never merged with it nor refused.
func (c *Collector) Bound(owner string) feed.BoundSink { return &boundSink{c: c, owner: owner} }

type boundSink struct {
	c     *Collector
	owner string
	// share is what the store looked up for the connection's messages,
	// kept for its next ones.
	share heldShare
}

// heldShare is what a connection's sink keeps of the store between its
// messages, under c.mu: its owner's share of the budget as looked up after
// resets Resets (shares are dropped only all together, by Reset), and
// the instance its messages naming inName reached while the store's names
// were at generation names (Collector.namesGen), so that a target's
// messages look up neither again at every message.
type heldShare struct {
	sh     *budgetShare
	resets uint64
	in     *instance
	inName string
	names  uint64
}

func (b *boundSink) Ingest(place string, m wire.Message) bool {
	return b.c.ingestFrom(b.owner, &b.share, place, m, feed.Origin{})
}
func (b *boundSink) Hello(place string, h *wire.Hello, o feed.Origin) bool {
	return b.c.ingestFrom(b.owner, &b.share, place, h, o)
}
func (b *boundSink) Reject(place string, err error) { b.c.Reject(place, err) }
func (b *boundSink) Unreceived(instance string, from, to int64) {
	b.c.unreceivedOf(b.owner, instance, from, to)
}
func (b *boundSink) NameCollision(instance, resource string, at int64) {
	b.c.nameCollisionOf(b.owner, instance, resource, at)
}

// Reject counts a message that could not be used: err's class is the
// reason, place says where (file:line or target).
func (c *Collector) Reject(place string, err error) { c.rejectReason(place, reasonOf(err), err) }

func (c *Collector) rejectReason(place, reason string, err error) {
	c.mu.Lock()
	c.rejected++
	count(c.rejects, reason, place+": "+err.Error())
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
		return ReasonWrongVersion
	case errors.Is(err, wire.ErrNameTooLong): // a name or a hot value; before ErrTooLarge, which it also is
		return ReasonNameTooLong
	case errors.Is(err, wire.ErrTooLarge):
		return ReasonTooLarge
	case errors.Is(err, wire.ErrUnknownKind):
		return ReasonUnknownKind
	case errors.Is(err, wire.ErrMalformed):
		return ReasonMalformed
	case errors.Is(err, wire.ErrInvalid):
		return ReasonInvalid
	}
	return ReasonOther
}

// Ingest accepts one decoded, valid message from place. The message is not
// kept: callers may reuse it afterwards. It reports whether the message was
// accepted (false: turned away by a limit, and counted).
//
// What was accepted goes on to the recording and the re-served stream (the
// tees), outside the store's lock: a buckets message only with the items
// the store took, so each (instance, resource, start) is written once
// whatever the reconnects re-sent.
func (c *Collector) Ingest(place string, m wire.Message) bool {
	return c.ingestFrom("", nil, place, m, feed.Origin{})
}

// Hello is Ingest for a hello, with what its source states of the process
// that sent it (feed.Origin).
func (c *Collector) Hello(place string, h *wire.Hello, o feed.Origin) bool {
	return c.ingestFrom("", nil, place, h, o)
}

// ingestFrom is Ingest for a message that came over the connection owner
// ("" for sources without one: files, the demo's own recordings), o what
// the source stated of a hello's sender; share, when not nil, keeps the
// owner's share of the budget for the connection's next messages.
func (c *Collector) ingestFrom(owner string, share *heldShare, place string, m wire.Message, o feed.Origin) bool {
	if _, ok := m.(*wire.Meta); ok {
		return true // fixture annotations: nothing to aggregate
	}
	now := c.clock.UnixMilli()
	if skew := c.opts.MaxClockSkew.Milliseconds(); owner != "" && skew > 0 {
		if d := m.Head().Ts - now; d > skew || -d > skew {
			c.rejectReason(place, ReasonClockSkew, fmt.Errorf("ts %d is %s the collector's clock", m.Head().Ts, skewText(d)))
			return false
		}
	}
	if err := startsWithin(m, c.opts.MaxClockSkew.Milliseconds(), owner != "", now); err != nil {
		c.rejectReason(place, ReasonClockSkew, err)
		return false
	}
	c.mu.Lock()
	// What is new is charged to its owner's share.
	if share == nil || share.sh == nil || share.resets != c.resets {
		c.cur = c.shareOf(owner)
		if share != nil {
			*share = heldShare{sh: c.cur, resets: c.resets}
		}
	} else {
		c.cur = share.sh
	}
	tee := c.teeing.Load()
	var kept []int
	if tee {
		kept = c.keptBuf[:0]
	}
	c.keepWhole, c.dupState = false, false
	ok, name, refused := c.ingest(owner, share, place, m, o, now, tee, &kept)
	if c.dupState {
		tee = false // held already: not recorded twice
	}
	if tee {
		c.keptBuf = kept[:0]
	}
	out := m
	if b, isBuckets := m.(*wire.Buckets); ok && tee && isBuckets && len(kept) < len(b.Items) && !c.keepWhole {
		// What was a re-send or refused is left out; a message left with no
		// item is kept as a heartbeat, so that a replay knows, as the store
		// did, that the instance's data is complete up to its ts.
		nb := *b
		nb.Items = make([]wire.BucketItem, len(kept))
		for i, k := range kept {
			nb.Items[i] = b.Items[k]
		}
		out = &nb
	}
	if ok && tee && name != m.Head().Instance {
		// An instance kept apart from another target's of its name is
		// recorded and re-served under its own name, so that a replay or
		// a downstream collector keeps them apart too.
		out = renamed(out, name)
	}
	c.mu.Unlock()
	if refused != nil && c.opts.OnReject != nil {
		c.opts.OnReject(place, refused)
	}
	if ok && tee && out != nil {
		c.tee(out, now)
	}
	return ok
}

// ingest applies m, from owner's connection ("": none), to the fleet
// model (o: what its source stated of a hello's sender); c.mu is held.
// With tee set, kept collects the indexes of the bucket items taken. A
// message rejected (not merely turned away by a limit) is counted here and
// returned as refused, for OnReject once the lock is let go. name is the
// instance's, which differs from the message's for one kept apart from
// another target's of the same name. held, when not nil, is what owner's
// connection keeps of the store.
func (c *Collector) ingest(owner string, held *heldShare, place string, m wire.Message, o feed.Origin, now int64, tee bool, kept *[]int) (ok bool, name string, refused error) {
	h := m.Head()
	in, refused := c.heldInstanceOf(owner, held, place, h.Instance, h.Ts)
	if refused != nil {
		c.rejected++
		count(c.rejects, ReasonImpersonation, place+": "+refused.Error())
		return false, "", refused
	}
	if in == nil {
		return false, "", nil
	}
	c.touch(in)
	in.lastArrive = now
	c.arriveFloor = min(c.arriveFloor, now)
	in.lastTs = max(in.lastTs, h.Ts)
	if _, isBuckets := m.(*wire.Buckets); in.Gone || !isBuckets {
		c.breakersGen++ // back, or a message that may change a breaker state
		in.changed = true
	}
	back := in.Gone
	in.Gone = false
	if in.hidden {
		in.hidden, in.changed = false, true
		c.breakersGen++
	}
	switch m.(type) {
	case *wire.Rules, *wire.State:
		if back {
			c.engine.Returned(in.tri, h.Ts) // a hello or buckets tells it below
		}
	}
	switch m := m.(type) {
	case *wire.Hello:
		in.relay = ""
		if o.Relayed {
			in.relay = place
		}
		if !c.hello(in, m, o, now, back) {
			err := fmt.Errorf("instance %q moved to another app more than %d times a minute", in.Name, MaxAppChangesPerMinute)
			c.rejected++
			count(c.rejects, ReasonAppFlap, place+": "+err.Error())
			return false, "", err
		}
	case *wire.Rules:
		c.rules(place, in, m)
	case *wire.Buckets:
		c.buckets(place, in, m, now, tee, kept, back)
		c.bucketsParts(in)
	case *wire.State:
		c.state(place, in, m)
	case *wire.Bye:
		in.Gone, in.LeftAt, in.goneAt = true, m.Ts, now
		c.noteGone(now)
		c.engine.Left(in.tri, m.Ts)
	}
	c.messages++
	return true, in.Name, nil
}

// renamed is a copy of m naming the instance name (m itself for a kind
// that names none).
func renamed(m wire.Message, name string) wire.Message {
	switch x := m.(type) {
	case *wire.Hello:
		return renamedCopy(x, name)
	case *wire.Rules:
		return renamedCopy(x, name)
	case *wire.Buckets:
		return renamedCopy(x, name)
	case *wire.State:
		return renamedCopy(x, name)
	case *wire.Bye:
		return renamedCopy(x, name)
	}
	return m
}

// renamedCopy is a shallow copy of *x whose header names the instance name.
func renamedCopy[T any, P interface {
	*T
	wire.Message
}](x P, name string) wire.Message {
	y := P(new(T))
	*y = *x
	y.Head().Instance = name
	return y
}

// seriesFor returns the instance's series for resource, creating it within
// the limits; nil when a limit turned it away.
func (c *Collector) seriesFor(place string, in *instance, resource string) *series {
	if s := in.series[resource]; s != nil {
		return s
	}
	if len(in.series) >= c.opts.MaxResourcesPerInstance {
		count(c.overflow, ReasonMaxResources, place+": "+in.Name+" "+resource)
		return nil
	}
	key := arKey{in.App, resource}
	coarse := c.coarseSlots()
	a := c.apps[key]
	cost := c.seriesBytes()
	if a == nil {
		cost += c.appSeriesBytes()
	}
	if !c.charge(in.share, cost, place, in.Name+" "+resource) {
		return nil
	}
	if a != nil {
		a.share = c.shared(a.share, in.share, c.appSeriesBytes())
	}
	if a == nil {
		a = &appSeries{key: key, appRings: newAppRings(appFineSlots, coarse), share: in.share}
		c.apps[key] = a
		c.pub.appOrder = nil
	}
	a.refs++
	s := &series{resource: resource, app: a, idx: int32(len(in.seriesList))}
	s.setRules(in.Rules)
	s.initFine(c.instanceFineSlots())
	in.series[resource] = s
	in.seriesList = append(in.seriesList, s)
	in.changed = true
	c.breakersGen++
	return s
}

// itemSeries is seriesFor for a bucket item: the series after the previous
// item's is tried first, without a map lookup.
func (c *Collector) itemSeries(place string, in *instance, resource string) *series {
	if j := in.next; j < len(in.seriesList) {
		if s := in.seriesList[j]; s.resource == resource {
			in.next = j + 1
			return s
		}
	}
	s := c.seriesFor(place, in, resource)
	if s != nil {
		in.next = int(s.idx) + 1
	}
	return s
}

// triSeries is the triage engine's handle of s, begun at ts when s has
// none yet (a series the store began again after a first hello moved its
// instance gets the engine's series back).
func (c *Collector) triSeries(in *instance, s *series, ts int64) triage.Series {
	if s.tri == (triage.Series{}) {
		s.tri = c.engine.Series(in.tri, s.resource, ts)
	}
	return s.tri
}

// buckets applies a buckets message; back says the instance was gone until
// it, and comes back for triage at its first item taken (or at the
// message's ts when it brought none).
func (c *Collector) buckets(place string, in *instance, m *wire.Buckets, now int64, tee bool, kept *[]int, back bool) {
	c.dropped += m.Dropped
	if in.resumeTo > 0 {
		c.resumeBacklog(in, m)
		c.keepWhole = true
	}
	in.observeOffset(now - m.Ts)
	if m.BucketMs > 0 {
		in.bucketMs = m.BucketMs
		end := m.Ts - floorMod(m.Ts, m.BucketMs)
		in.dataEnd = max(in.dataEnd, end)
	}
	in.next = 0
	c.touched += touchSeries(in, m)
	// The triage engine takes the message's items at the end, under one
	// lock: tri[i] is item i's series there, zero for an item not taken.
	tri := c.triBuf[:0]
	for i := range m.Items {
		tri = append(tri, triage.Series{})
		it := &m.Items[i]
		s := c.itemSeries(place, in, it.Resource)
		if s == nil {
			continue
		}
		if s.seenMs != m.BucketMs {
			// Indexes of another bucket length would collide (start 1000 of
			// 500 ms and 2000 of 1000 ms are both 2): start over.
			s.seen, s.seenMs = dedupe{}, m.BucketMs
		}
		dup, old := s.seen.mark(floorDiv(it.Start, m.BucketMs))
		if dup {
			c.dups++
			continue
		}
		if old {
			count(c.overflow, ReasonDedupeSpan, place+": "+in.Name+" "+it.Resource)
			continue
		}
		if tee {
			*kept = append(*kept, i)
		}
		in.dataEnd = max(in.dataEnd, it.Start+m.BucketMs)
		if !in.dirty || it.Start < in.dirtyFrom {
			in.dirty, in.dirtyFrom = true, it.Start
		}
		s.app.lastData = now
		if s.first == 0 || it.Start < s.first {
			s.first = it.Start
		}
		if in.statesUnknown {
			s.noteLine(it.Start, m.BucketMs)
		}
		s.total.add(&it.Metrics)
		s.app.total.add(&it.Metrics)
		if it.Block > 0 {
			s.app.act.blocked(s, it.Start, it.Block, !in.statesUnknown)
		}
		s.fine.addSpread(it.Start, m.BucketMs, &it.Metrics)
		var counted uint16
		if it.HasHist {
			counted = core.HistogramCounted(&it.Hist)
		}
		s.app.appRings.add(it.Start, m.BucketMs, &it.Metrics, counted)
		c.addHot(place, in, s, it.Start, it.Hot)
		if back {
			c.engine.Returned(in.tri, it.Start+m.BucketMs)
			back = false
		}
		tri[i] = c.triSeries(in, s, it.Start+m.BucketMs)
	}
	if back {
		c.engine.Returned(in.tri, m.Ts)
	}
	c.engine.Buckets(m.BucketMs, m.Items, tri)
	c.triBuf = tri[:0]
}

func (c *Collector) state(place string, in *instance, m *wire.State) {
	s := c.seriesFor(place, in, m.Resource)
	if s == nil {
		return
	}
	var t *track
	for _, x := range s.tracks {
		if x.RuleID == m.RuleID {
			t = x
		}
	}
	if t == nil {
		if len(s.tracks) >= MaxTracksPerSeries {
			count(c.overflow, ReasonMaxRuleIDs, place+": "+in.Name+" "+m.Resource)
			return
		}
		if !c.charge(in.share, trackCost(m.RuleID), place, in.Name+" "+m.Resource) {
			return
		}
		t = &track{RuleID: m.RuleID, State: core.Closed}
		s.tracks = append(s.tracks, t)
	}
	tr := Transition{AtMs: m.Ts, From: m.From, To: m.To, RuleID: m.RuleID, Inferred: m.Inferred}
	if n := len(t.Steps); n > 0 && m.Ts <= t.Steps[n-1].AtMs {
		// Not after the latest held: a reconnect's backlog sends the
		// transitions of its time again, and each breaker's last.
		if t.Holds(tr) {
			c.dups++
			c.dupState = true
			return
		}
		if m.Ts < t.Steps[n-1].AtMs {
			// One never received, older than what was: in its place in
			// the timeline; the current state is the latest's.
			c.insertStep(s, t, tr)
			return
		}
	}
	if s.first == 0 || m.Ts < s.first {
		s.first = m.Ts
	}
	s.inferred = s.inferred || m.Inferred
	if m.Inferred && m.RetryTimeoutMs > 0 {
		s.retryMs = m.RetryTimeoutMs
	}
	ct := core.Transition{Resource: m.Resource, RuleID: m.RuleID, Strategy: m.Strategy, From: m.From, To: m.To,
		AtMs: m.Ts, Threshold: m.Threshold, RetryTimeoutMs: uint32(min(max(m.RetryTimeoutMs, 0), 1<<32-1)), Inferred: m.Inferred}
	if m.Snapshot != nil {
		// Bad is what the breaker judged: slow calls for a slow-ratio
		// breaker, errors for the others.
		bad := m.Snapshot.Error
		if m.Strategy == core.SlowRequestRatio {
			bad = m.Snapshot.Slow
		}
		ws := core.WindowSnapshot{Total: m.Snapshot.Total, Bad: bad, Value: m.Snapshot.Value}
		tr.Snapshot, ct.Snapshot = &ws, ws
	}
	if m.Probe != nil {
		p := core.Probe{RtMs: m.Probe.RtMs, Error: m.Probe.Error}
		tr.Probe, ct.Probe = &p, &p
	}
	// Triage is told first: it reads the state before the step.
	c.engine.Transition(c.triSeries(in, s, m.Ts), t, ct)
	if len(t.Steps) == maxTrackSteps {
		t.Steps = slices.Delete(t.Steps, 0, maxTrackSteps/4)
	}
	t.Steps = append(t.Steps, tr)
	s.app.act.spell(t.State, m.Ts-t.Since) // CLOSED, the state before any step, is not counted
	t.State, t.Since = m.To, m.Ts
	s.app.last = max(s.app.last, m.Ts)
	if s.app.transitions == nil {
		s.app.transitions = map[[2]core.State]int64{}
	}
	s.app.transitions[[2]core.State{m.From, m.To}]++
	c.transition()
}

// tee hands an accepted message to the recording and the re-served stream;
// c.mu is not held, so a slow disk or reader never stalls the store (two
// sources' messages may reach the tees in the other order than the store
// took them: neither depends on it). A recording error is
// sticky: nothing more is written, and the error is shown and reported.
func (c *Collector) tee(m wire.Message, now int64) {
	c.teeMu.Lock()
	defer c.teeMu.Unlock()
	if c.opts.Record != nil && c.recordErr == nil {
		if err := c.opts.Record.Write(c.sinceRecording(m)); err != nil {
			c.recordErr = err
		} else if now-c.recFlushed >= recordFlushMs {
			// At least once a second (a gzip sync flush): a recording killed
			// with the process loses at most its last second.
			c.recFlushed = now
			if err := c.opts.Record.Flush(); err != nil {
				c.recordErr = err
			}
		}
	}
	if c.restream != nil {
		c.restream.publish(m, now)
	}
}

// recordFlushMs is how often, at most, the recording is flushed to disk.
const recordFlushMs = 1000

// sinceRecording places a hello or rules message that carries a time
// before the recording began (when the process started, when its rules were
// loaded) at the recording's start: a recording covers what was recorded,
// not the services' uptime. Other messages are written as they came.
func (c *Collector) sinceRecording(m wire.Message) wire.Message {
	switch x := m.(type) {
	case *wire.Hello:
		if x.Ts < c.recStart {
			y := *x
			y.Ts = c.recStart
			return &y
		}
	case *wire.Rules:
		if x.Ts < c.recStart {
			y := *x
			y.Ts = c.recStart
			return &y
		}
	}
	return m
}

// RecordError is the first error writing the recording, if any.
func (c *Collector) RecordError() error {
	c.teeMu.Lock()
	defer c.teeMu.Unlock()
	return c.recordErr
}

// touchSeries reads, for each item of m, the parts of the series it will
// write, in a loop of reads that do not wait for each other, so that a
// fleet's series (cold in the caches when their next item comes) miss the
// caches at once rather than one after another as the items are taken. The
// series are guessed in the order the instance sent them last (as
// itemSeries does first); a wrong guess costs a read. It returns a sum of
// what it read, kept so that the reads are not left out.
func touchSeries(in *instance, m *wire.Buckets) int64 {
	var sum int64
	for i := range min(len(m.Items), len(in.seriesList)) {
		s := in.seriesList[i]
		start := m.Items[i].Start
		r := &s.fine
		k := r.index(r.align(start), len(r.starts))
		sum += s.first + s.total.pass + r.starts[k] + int64(r.slots[k].pass) + int64(s.part.pass)
		if m.BucketMs > 0 {
			sum += int64(s.seen.bits[floorMod(floorDiv(start, m.BucketMs), dedupeSpan)/64])
		}
		sum += s.tri.Touch()
	}
	return sum
}
