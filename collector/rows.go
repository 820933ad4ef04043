package collector

import (
	"cmp"
	"maps"
	"slices"

	"github.com/sentinel-top/sentinel-top/core"
)

// The table's rows, kept up to date by what changed: each instance series
// adds a part to its app x resource's sums (its rates over the rate window,
// whether it is listed, live, guarded, which rules guard it and whether
// they were read at all, its breaker state), and the parts
// are taken again only of the instances that sent something that shows in
// them, left, or came back: a message other than buckets, or buckets that
// moved the instance's data end (only a message moves it) or fell before
// it. With 500 ms buckets that is every other bucket. Buckets alone are
// taken as they arrive (bucketsParts), the rest by the next snapshot. A
// snapshot's cost is then the instances, the rows and the series that
// changed, not every series.

// rowPart is what one instance series adds to its row; on is set while it
// is added (the instance is listed: live, or gone within StaleAfter).
type rowPart struct {
	on          bool
	live        bool
	guarded     bool
	slowUnknown bool
	rtUnknown   bool
	// guards: which rules the instance has for the resource besides
	// breakers, and whether its rules were read at all (guardFlow ...).
	guards      uint8
	state       core.State
	prov        Provenance
	pass, block uint32 // over the rate window
	end         int64  // the instance's data end, on a second
}

// A part's guards, bits: the instance has flow, hot-parameter rules for
// the resource; no rules of it were ever read (a metric log carries none;
// a Java target whose /getRules failed).
const (
	guardFlow uint8 = 1 << iota
	guardParam
	guardUnknown
	guardKinds = 1 << iota
)

// partGuards are the guards of a series of instance in.
func partGuards(in *instance, se *series) uint8 {
	var g uint8
	if se.flowRuled {
		g |= guardFlow
	}
	if se.paramRuled {
		g |= guardParam
	}
	if in.Rules == nil {
		g |= guardUnknown
	}
	return g
}

// rowSums are the parts of an app x resource's listed series, summed.
type rowSums struct {
	listed, live, guarded, slowUnknown, rtUnknown int
	// byGuards counts the parts by their guards: one add a part, however
	// many bits it has.
	byGuards                        [guardKinds]int
	closed, halfOpen, open, unknown int
	pass, block                     uint64
	// ends counts the parts by data end; end is the latest of them.
	ends endCounts
	end  int64
}

// apply adds (sign 1) or takes back (sign -1) a part that is on.
func (r *rowSums) apply(p *rowPart, sign int) {
	if !p.on {
		return
	}
	r.listed += sign
	r.pass = uint64(int64(r.pass) + int64(sign)*int64(p.pass))
	r.block = uint64(int64(r.block) + int64(sign)*int64(p.block))
	switch n := r.ends.add(p.end, sign); {
	case n <= 0:
		if p.end == r.end {
			r.end = r.ends.latest()
		}
	case sign > 0:
		r.end = max(r.end, p.end)
	}
	if p.guarded {
		r.guarded += sign
	}
	r.byGuards[p.guards] += sign
	// Live or gone, a source that counts no slow calls lends the row no
	// slow ratio: its rates are in the row's.
	if p.slowUnknown {
		r.slowUnknown += sign
	}
	if p.rtUnknown {
		r.rtUnknown += sign
	}
	if !p.live {
		return
	}
	r.live += sign
	if !p.guarded {
		return
	}
	switch {
	case p.prov == ProvenanceUnknown:
		r.unknown += sign
	case p.state == core.Open:
		r.open += sign
	case p.state == core.HalfOpen:
		r.halfOpen += sign
	default:
		r.closed += sign
	}
}

// hasGuard reports whether a part counted has the guard bit.
func (r *rowSums) hasGuard(bit uint8) bool {
	for g, n := range r.byGuards {
		if uint8(g)&bit != 0 && n > 0 {
			return true
		}
	}
	return false
}

// endCounts counts a row's parts by data end. A live fleet's parts share
// one or two ends (the second now and the one before), counted in place:
// a part taken again as its instance's end moves costs no hashing. Other
// ends (instances gone quiet, clocks far off) go to a map.
type endCounts struct {
	few  [4]endCount // n == 0: free
	more map[int64]int
}

type endCount struct {
	end int64
	n   int
}

// add adds d to end's count and returns the count; an end whose count
// falls to 0 or below is forgotten.
func (e *endCounts) add(end int64, d int) int {
	free := -1
	for i := range e.few {
		c := &e.few[i]
		if c.n == 0 {
			if free < 0 {
				free = i
			}
			continue
		}
		if c.end == end {
			c.n += d
			if c.n <= 0 {
				n := c.n
				*c = endCount{}
				return n
			}
			return c.n
		}
	}
	if n, ok := e.more[end]; ok || d <= 0 || free < 0 {
		n += d
		if n <= 0 {
			delete(e.more, end)
			return n
		}
		if e.more == nil {
			e.more = map[int64]int{}
		}
		e.more[end] = n
		return n
	}
	e.few[free] = endCount{end: end, n: d}
	return d
}

// latest is the latest end counted, 0 when none is.
func (e *endCounts) latest() int64 {
	var l int64
	for _, c := range e.few {
		if c.n > 0 {
			l = max(l, c.end)
		}
	}
	for end := range e.more {
		l = max(l, end)
	}
	return l
}

// resourceRow is the row of the parts summed; the caller adds what comes
// from the app x resource's own rings.
func (a *appSeries) resourceRow(rateMs int64) ResourceRow {
	r := &a.sums
	return ResourceRow{App: a.key.app, Resource: a.key.resource, Instances: r.live,
		PassQPS: float64(r.pass) * 1000 / float64(rateMs), BlockQPS: float64(r.block) * 1000 / float64(rateMs),
		SlowUnknown: r.slowUnknown > 0, RTUnknown: r.rtUnknown > 0, HasBreaker: r.guarded > 0, LastTransition: a.last,
		HasFlow: r.hasGuard(guardFlow), HasParam: r.hasGuard(guardParam), RulesUnknown: r.hasGuard(guardUnknown),
		Breakers: StateCounts{Closed: r.closed, HalfOpen: r.halfOpen, Open: r.open, Unknown: r.unknown}}
}

// part is what the series of instance in adds to its row at now, its data
// ending at end. c.mu is held.
func (c *Collector) part(in *instance, se *series, listed bool, end, rateMs int64) rowPart {
	if !listed {
		return rowPart{}
	}
	p := rowPart{on: true, live: !in.Gone, slowUnknown: in.slowUnknown, rtUnknown: in.rtUnknown, prov: se.provenance(in), end: end,
		// A state inferred shows a breaker whose rules went unseen (a
		// metric log carries none).
		guarded: se.ruled || se.inferred, guards: partGuards(in, se)}
	p.pass, p.block = passBlock(&se.fine, end-rateMs, end)
	if p.guarded {
		p.state = worstState(se.tracks)
	}
	if in.slowUnknown {
		se.app.someSlowUnknown = true
	}
	switch p.prov {
	case ProvenanceUnknown:
		se.app.someUnknown = true
	case ProvenanceInferred:
		se.app.someInferred = true
	}
	if in.hidden && p.guarded {
		// read through a server that is down: the instance did not
		// leave, but nothing tells its state now
		p.prov = ProvenanceUnknown
	}
	if p.prov == ProvenanceInferred && p.state == core.Closed && in.silentNow(se) {
		p.prov = ProvenanceUnknown // a silence: it may have tripped unseen (silence.go)
	}
	if se.part.on && p.prov != se.part.prov {
		c.breakersGen++ // the breaker list shows the provenance
	}
	return p
}

// instanceRows brings the rows' sums up to date and returns the app x
// resource series that have a row, in app, resource order: those with a
// listed instance series.
// Rows count and show the breakers of live instances only; an instance gone
// for less than StaleAfter still lends its last data to the rates (so a
// fleet that stopped is seen stopping), but is not counted. The breaker
// states are rebuilt only when one may have changed (see breakersGen).
//
// Only the instances something happened to since the last snapshot are
// looked at (pubCache.visit: a message, the liveness rule, a listing to
// end): what every instance adds to the counts is kept between snapshots,
// so a fleet of thousands, cold in the caches, is not read whole ten
// times a second. c.mu is held.
func (c *Collector) instanceRows(s *Snapshot, now int64) (rows []*appSeries, warnings []Warning) {
	rateMs := c.opts.RateWindow.Milliseconds()
	stale := c.opts.StaleAfter.Milliseconds()
	p := &c.pub
	visit := p.visit
	p.visit = p.visiting[:0]
	for _, in := range visit {
		in.queued = false
		if in.dropped {
			continue
		}
		listed := !in.Gone || now-in.goneAt <= stale
		if listed != in.listed || listed && in.App != in.listedApp {
			p.countApp(in, listed)
		}
		c.takeParts(in, listed, rateMs)
		p.count(in, listed && !in.Gone, c.opts.Mode == ModeLive)
		if in.Gone && listed {
			c.touch(in) // until it is no longer listed
		}
	}
	clear(visit)
	p.visiting = visit
	s.Instances = p.live
	if p.breakers == nil || p.breakersGen != c.breakersGen {
		// The guarded instances alone: a fleet's other series are not
		// read again after every transition anywhere.
		breakers := make([]BreakerState, 0, len(p.breakers))
		for _, in := range p.guarded.sorted() {
			for _, se := range in.guardedList {
				breakers = append(breakers, BreakerState{App: in.App, Resource: se.resource, Instance: in.Name,
					State: se.part.state, Provenance: se.part.prov})
			}
		}
		p.breakers, p.breakersGen = breakers, c.breakersGen
	}
	s.Breakers = p.breakers
	skews := p.skews[:0]
	for _, in := range p.skewed.sorted() {
		skews = append(skews, skewed{in.Name, in.offset})
	}
	warnings = clockWarnings(skews, p.measured)
	clear(skews)
	p.skews = skews
	// The rows and the resources' set are the snapshot's scratch, kept for
	// their room: publish reads the rows before the next snapshot.
	if p.resources == nil {
		p.resources = map[string]struct{}{}
	}
	clear(p.resources)
	rows = p.rows[:0]
	clear(rows[:cap(rows)]) // the whole room: no app series pruned since is kept by it
	for _, a := range c.sortedApps() {
		if a.sums.listed > 0 {
			rows = append(rows, a)
			p.resources[a.key.resource] = struct{}{}
		}
	}
	p.rows = rows
	s.Apps, s.Resources = len(p.apps), len(p.resources)
	return rows, warnings
}

// touch has the next snapshot look at in (instanceRows). c.mu is held.
func (c *Collector) touch(in *instance) {
	if !in.queued {
		in.queued = true
		c.pub.visit = append(c.pub.visit, in)
	}
}

// count brings what in adds to the snapshot's counts in line with its
// state: counted (listed and not gone: Snapshot.Instances), its clock
// measured and off (the clock warnings), its breakers listed. live is
// the collector's mode: a replay's clocks are not judged.
func (p *pubCache) count(in *instance, counted, live bool) {
	if counted != in.counted {
		p.live += b2i(counted) - b2i(in.counted)
		in.counted = counted
	}
	measured := counted && live && in.nOffsets > 0 && !in.polled
	if measured != in.measured {
		p.measured += b2i(measured) - b2i(in.measured)
		in.measured = measured
	}
	off := in.offset
	if skew := measured && (off > in.bucketMs || -off > in.bucketMs); skew != in.skewed {
		in.skewed = skew
		p.skewed.set(in, skew)
	}
	if guarded := counted && len(in.guardedList) > 0; guarded != in.inGuarded {
		in.inGuarded = guarded
		p.guarded.set(in, guarded)
	}
}

// instSet is a set of instances, and its members in name order (sorted
// again only after one came or went).
type instSet struct {
	m     map[*instance]struct{}
	order []*instance
}

func (s *instSet) set(in *instance, member bool) {
	switch {
	case member:
		if s.m == nil {
			s.m = map[*instance]struct{}{}
		}
		s.m[in] = struct{}{}
	default:
		delete(s.m, in)
	}
	s.order = nil
}

func (s *instSet) sorted() []*instance {
	if s.order == nil {
		s.order = slices.SortedFunc(maps.Keys(s.m), func(x, y *instance) int { return cmp.Compare(x.Name, y.Name) })
	}
	return s.order
}

// forget takes out of the counts an instance the store forgets. c.mu is
// held.
func (p *pubCache) forget(in *instance) {
	p.count(in, false, false)
	in.dropped = true
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// takeParts takes the instance's parts of the rows again when what it sent
// or its listing changed what they hold. c.mu is held.
func (c *Collector) takeParts(in *instance, listed bool, rateMs int64) {
	end := in.dataEndSecond()
	// Buckets starting at or after the data end are outside every rate
	// window until the end moves: the parts stand.
	moved := end != in.rowsEnd || in.dirty && in.dirtyFrom < end
	in.dirty = false
	if !in.changed && listed == in.listed && !moved {
		return
	}
	in.changed, in.listed, in.guarded, in.rowsEnd = false, listed, 0, end
	in.guardedList = in.guardedList[:0]
	for _, se := range in.seriesList {
		se.app.sums.apply(&se.part, -1)
		se.part = c.part(in, se, listed, end, rateMs)
		se.app.sums.apply(&se.part, 1)
		if se.part.guarded {
			in.guarded++
			in.guardedList = append(in.guardedList, se)
		}
	}
}

// bucketsParts takes the parts of an instance that sent buckets at once,
// while its series are still in the processor's caches: its snapshot then
// finds them up to date. An instance not listed yet is left to the
// snapshot, which counts it among its app's first. c.mu is held.
func (c *Collector) bucketsParts(in *instance) {
	if in.listed {
		c.takeParts(in, true, c.opts.RateWindow.Milliseconds())
	}
}

// countApp moves in's count among the apps with a listed instance: from
// the app it was counted in (when listed) to its app now (when listed is).
func (p *pubCache) countApp(in *instance, listed bool) {
	if in.listed {
		if p.apps[in.listedApp]--; p.apps[in.listedApp] <= 0 {
			delete(p.apps, in.listedApp)
		}
	}
	if listed {
		if p.apps == nil {
			p.apps = map[string]int{}
		}
		p.apps[in.App]++
		in.listedApp = in.App
	}
}

// sortedApps is every app x resource series in app, resource order, kept
// between snapshots and sorted again only after one came or went. c.mu is
// held.
func (c *Collector) sortedApps() []*appSeries {
	if c.pub.appOrder == nil {
		c.pub.appOrder = slices.SortedFunc(maps.Values(c.apps), func(x, y *appSeries) int {
			return cmp.Or(cmp.Compare(x.key.app, y.key.app), cmp.Compare(x.key.resource, y.key.resource))
		})
	}
	return c.pub.appOrder
}

// passBlock is window's pass and block alone, without a division a slot.
func passBlock(r *ring, from, to int64) (pass, block uint32) {
	t := r.align(from)
	if t >= to {
		return 0, 0
	}
	n := len(r.starts)
	i := r.index(t, n)
	for ; t < to; t += r.stepMs {
		if r.starts[i] == t {
			sl := &r.slots[i]
			pass, block = sat32(pass, int64(sl.pass)), sat32(block, int64(sl.block))
		}
		if i++; i == n {
			i = 0
		}
	}
	return pass, block
}
