package triage

import (
	"cmp"
	"slices"
	"strings"

	"github.com/sentinel-top/sentinel-top/collector/fleet"
	"github.com/sentinel-top/sentinel-top/core"
)

// Rule advice is judged per series, again only when its inputs changed: at
// once after a bucket (adviceDetector.bucket), and at the next Findings after a
// transition, its instance's rules or hello. An app x resource keeps the
// sums its finding is made of (see arAdvice), which a series' new judgment
// updates; the firing list and its names are made again only when a
// series joins or leaves it. A finding is made again only when one of its
// series changed, at a cost that does not grow with its instances (but for
// its timelines): Findings costs what changed, not the fleet.

// seriesAdvice is a series' last judgment; list is the app x resource
// whose firing list holds it (nil: none), and c what it added to that
// app x resource's sums (when counted).
type seriesAdvice struct {
	// dirty (every bucket reads it) first, beside the series' fields a
	// bucket touches.
	dirty   bool
	fires   bool
	counted bool
	gen     uint32 // Engine.advice.gen when a bucket last judged it (adviceDetector.bucket)
	list    *appRes
	j       adviceJudgment
	c       adviceSum
}

// adviceSum is what one firing series adds to its app x resource's sums.
type adviceSum struct {
	qps        float64
	p99        int64
	first, end int64
	window, rt bool
}

// arAdvice is an app x resource's rule advice: its firing series (sorted
// by instance when sorted is set; entries that stopped firing or moved
// away are dropped at the next refresh, when members is set), their
// instances and names as of the last refresh, the sums of their
// judgments, and its finding as of the last time it was made (has: there
// is one).
//
// The sums: the QPS sorted (for the median), the highest p99, the earliest
// first report and the latest last one, and how many have a window or RT
// that does not fit. A series' new judgment moves its QPS within the sorted
// slice only as far as it changed, and a p99 or last report that did not go
// down (nor a first report up) only raises the extreme, so a judgment costs
// O(1) for a fleet whose numbers drift, however many instances; an extreme
// taken away (a series leaving, a p99 going down) is found again from the
// firing series when the finding is made (extremes set).
type arAdvice struct {
	firing  []*series
	sorted  bool
	members bool
	stale   bool
	listed  bool
	has     bool
	f       Finding

	names           []string
	qps             []float64 // sorted
	p99, first, end int64
	extremes        bool // p99, first and end are to be found again
	nWindow, nRt    int
}

// add counts a firing series' judgment in the sums.
func (a *arAdvice) add(c *adviceSum) {
	if len(a.qps) == 0 { // the first one counted sets the extremes
		a.p99, a.first, a.end, a.extremes = c.p99, c.first, c.end, false
	}
	a.qps = insertSorted(a.qps, c.qps)
	a.widen(c)
	a.tally(c, 1)
}

// widen takes c's p99, first and last reports into the extremes.
func (a *arAdvice) widen(c *adviceSum) {
	a.p99, a.first, a.end = max(a.p99, c.p99), min(a.first, c.first), max(a.end, c.end)
}

// sub takes a judgment counted by add out of the sums.
func (a *arAdvice) sub(c *adviceSum) {
	a.qps = removeSorted(a.qps, c.qps)
	a.extremes = a.extremes || c.p99 == a.p99 || c.first == a.first || c.end == a.end
	a.tally(c, -1)
}

// replace is sub(was) then add(c), for a series judged again.
func (a *arAdvice) replace(was, c *adviceSum) {
	a.qps = replaceSorted(a.qps, was.qps, c.qps)
	a.extremes = a.extremes || c.p99 < was.p99 && was.p99 == a.p99 ||
		c.first > was.first && was.first == a.first || c.end < was.end && was.end == a.end
	a.widen(c)
	a.tally(was, -1)
	a.tally(c, 1)
}

func (a *arAdvice) tally(c *adviceSum, sign int) {
	a.nWindow += sign * int(b2i(c.window))
	a.nRt += sign * int(b2i(c.rt))
}

// findExtremes takes p99, first and end again from the firing series (after
// a refresh: every one of them is counted).
func (a *arAdvice) findExtremes() {
	if !a.extremes {
		return
	}
	a.extremes = false
	c0 := &a.firing[0].advice.c
	a.p99, a.first, a.end = c0.p99, c0.first, c0.end
	for _, s := range a.firing[1:] {
		a.widen(&s.advice.c)
	}
}

// changed marks a series to be judged again. A series with no ratio
// breaker that is in no finding is not: its judgment is "does not fire"
// whatever its traffic (judgeAdvice), and most series of a fleet have no
// breaker; every change of rules marks each series of the instance (the
// rules it is judged by may be new).
func (d *adviceDetector) changed(s *series) {
	if (s.ratio || s.listed) && !s.advice.dirty {
		s.advice.dirty = true
		d.dirty = append(d.dirty, s)
	}
}

// rules marks the instance's series to judge again: the rules they are
// judged by may be new.
func (d *adviceDetector) rules(in *instState, _ int64, _ *fleet.Rules) {
	for _, s := range in.seriesList {
		d.e.advice.changed(s)
	}
}

// transition marks the series to judge again: its healthy traffic may
// have changed.
func (d *adviceDetector) transition(b *breaker, _ *core.Transition) { d.e.advice.changed(b.s) }

// bucket judges a series again after a bucket, at once: what the
// judgment reads (its rules, traffic, healthy histogram and last judgment)
// is in the caches then, where the next Findings would read it back from
// memory for every series that changed, a fleet's worth. A live series
// sends a bucket or two between two Findings; one that sends more (a
// backlog, a replay) is judged at once for the first, and marked for the
// next Findings after that, so that a minute's backlog or an hour's replay
// is not judged bucket by bucket.
func (d *adviceDetector) bucket(s *series, _ *takenBucket) {
	e := d.e
	switch {
	case !(s.ratio || s.listed) || s.advice.dirty:
	case s.advice.gen == e.advice.gen:
		e.advice.changed(s)
	default:
		s.advice.gen = e.advice.gen
		e.judgeSeriesAdvice(s)
	}
}

// judgeDirtyAdvice judges the series marked.
func (e *Engine) judgeDirtyAdvice() {
	for i, s := range e.advice.dirty {
		e.advice.dirty[i] = nil
		s.advice.dirty = false
		e.judgeSeriesAdvice(s)
	}
	e.advice.dirty = e.advice.dirty[:0]
}

// judgeSeriesAdvice judges a series, moving it in and out of its app x
// resource's firing list and sums.
func (e *Engine) judgeSeriesAdvice(s *series) {
	e.advice.judged++
	sa := &s.advice
	j, fires := judgeAdvice(s.inst, s)
	c := adviceSum{qps: j.qps, p99: j.p99, first: s.firstAt, end: s.endAt, window: j.window, rt: j.rt}
	if sa.counted && fires && s.ar == sa.list {
		// Judged again where it was: its sums move.
		sa.list.advice.replace(&sa.c, &c)
		sa.list.advice.stale = true
		sa.j, sa.c = j, c
		return
	}
	if sa.counted {
		sa.list.advice.sub(&sa.c)
		sa.list.advice.stale, sa.counted = true, false
	}
	if sa.list != nil && (!fires || s.ar != sa.list) {
		sa.list.advice.stale, sa.list.advice.members = true, true
	}
	sa.j, sa.fires = j, fires
	if !fires {
		return
	}
	ar := s.ar
	ar.advice.stale = true
	if sa.list != ar {
		sa.list, s.listed = ar, true
		ar.advice.firing = append(ar.advice.firing, s)
		ar.advice.sorted, ar.advice.members = false, true
		if !ar.advice.listed {
			ar.advice.listed = true
			e.advice.ars = append(e.advice.ars, ar)
		}
	}
	sa.c = c
	ar.advice.add(&sa.c)
	sa.counted = true
}

// firingSeries reports whether a series is in ar's firing list (after a
// refresh).
func (ar *appRes) firingSeries(s *series) bool {
	return s.ar == ar && s.advice.fires && s.advice.list == ar
}

// refresh drops the series that stopped firing or moved to another app x
// resource, sorts the rest by instance and takes their names again; false when none is left.
func (a *arAdvice) refresh(ar *appRes) bool {
	if !a.members {
		return len(a.firing) > 0
	}
	a.members = false
	keep := a.firing[:0]
	for _, s := range a.firing {
		if ar.firingSeries(s) {
			keep = append(keep, s)
		} else if s.advice.list == ar {
			s.advice.list, s.listed = nil, false
		}
	}
	clear(a.firing[len(keep):])
	a.firing = keep
	if !a.sorted {
		slices.SortFunc(a.firing, func(x, y *series) int {
			return cmp.Or(strings.Compare(x.inst.id.Name, y.inst.id.Name), cmp.Compare(x.inst.seq, y.inst.seq))
		})
		a.sorted = true
	}
	// New slices: the findings already returned keep the old ones.
	insts := make([]*instState, len(a.firing))
	for i, s := range a.firing {
		insts[i] = s.inst
	}
	a.names = names(insts)
	return len(a.firing) > 0
}

// hasRatioBreaker reports whether rr has a breaker rule advice judges.
func hasRatioBreaker(rr *resRules) bool {
	if rr == nil {
		return false
	}
	for i := range rr.Breakers {
		if rr.Breakers[i].Strategy.IsRatio() {
			return true
		}
	}
	return false
}

// adviceDetector is the rule-advice detector's own state: the e it
// observes, the app x resource that had advice (ars), the series to judge
// again (dirty), the findings made (gen, for bucket) and the series
// judged (judged, for the tests).
type adviceDetector struct {
	e      *Engine
	ars    []*appRes
	dirty  []*series
	gen    uint32
	judged int
}

func (d *adviceDetector) init(e *Engine) detector { d.e = e; return d }
func (*adviceDetector) kind() Kind                { return KindRuleAdvice }
