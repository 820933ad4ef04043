package triage

import (
	"cmp"
	"slices"
	"strings"
)

// Rule advice is judged per series, again only for the series whose inputs
// changed since the last Findings (a bucket, a transition, its instance's
// rules or hello). A series keeps what its judgment adds to its app x
// resource's finding (QPS, p99, first and last reports, whether its window
// or RT does not fit); the firing list and its names are made again only
// when a series joins or leaves it. A finding is made again only when one
// of its series changed, at a cost of one pass over its firing series (as
// its timelines take anyway): Findings costs what changed, not the fleet.

// seriesAdvice is a series' last judgment; list is the app x resource
// whose firing list holds it (nil: none), and c what it added to that
// app x resource's sums (when counted).
type seriesAdvice struct {
	// dirty (every bucket reads it) first, beside the series' fields a
	// bucket touches.
	dirty   bool
	fires   bool
	counted bool
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
// instances and names as of the last refresh, and its finding as of the
// last time it was made (has: there is one). The finding's sums are taken
// from the firing series' judgments when it is made again, as its
// timelines are: a series' new judgment costs O(1), however many
// instances the app has (qps is the buffer the median is found in).
type arAdvice struct {
	firing  []*series
	sorted  bool
	members bool
	stale   bool
	listed  bool
	has     bool
	f       Finding

	insts []*instState
	names []string
	qps   []float64
}

// adviceChanged marks a series to be judged again.
func (e *Engine) adviceChanged(s *series) {
	if !s.advice.dirty {
		s.advice.dirty = true
		e.adviceDirty = append(e.adviceDirty, s)
	}
}

// judgeDirtyAdvice judges the series marked, moving them in and out of
// their app x resource's firing lists and sums.
func (e *Engine) judgeDirtyAdvice() {
	for i, s := range e.adviceDirty {
		e.adviceDirty[i] = nil
		sa := &s.advice
		sa.dirty = false
		j, fires := judgeAdvice(s.inst, s)
		if sa.counted {
			sa.list.advice.stale, sa.counted = true, false
		}
		if sa.list != nil && (!fires || s.ar != sa.list) {
			sa.list.advice.stale, sa.list.advice.members = true, true
		}
		sa.j, sa.fires = j, fires
		if !fires {
			continue
		}
		ar := s.ar
		ar.advice.stale = true
		if sa.list != ar {
			sa.list = ar
			ar.advice.firing = append(ar.advice.firing, s)
			ar.advice.sorted, ar.advice.members = false, true
			if !ar.advice.listed {
				ar.advice.listed = true
				e.adviceARs = append(e.adviceARs, ar)
			}
		}
		sa.c = adviceSum{qps: j.qps, p99: j.p99, first: s.firstAt, end: s.endAt, window: j.window, rt: j.rt}
		sa.counted = true
	}
	e.adviceDirty = e.adviceDirty[:0]
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
			s.advice.list = nil
		}
	}
	clear(a.firing[len(keep):])
	a.firing = keep
	if !a.sorted {
		slices.SortFunc(a.firing, func(x, y *series) int {
			return cmp.Or(strings.Compare(x.inst.name, y.inst.name), cmp.Compare(x.inst.seq, y.inst.seq))
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
