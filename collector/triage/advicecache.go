package triage

import (
	"cmp"
	"slices"
	"strings"
)

// Rule advice is judged per series, again only for the series whose inputs
// changed since the last Findings (a bucket, a transition, its instance's
// rules or hello), and an app x resource's finding is made again only when
// one of its series changed: Findings costs what changed, not the fleet.

// seriesAdvice is a series' last judgment; list is the app x resource
// whose firing list holds it (nil: none).
type seriesAdvice struct {
	j     adviceJudgment
	fires bool
	dirty bool
	list  *appRes
}

// arAdvice is an app x resource's rule advice: its firing series (sorted
// by instance when sorted is set; entries that stopped firing or moved
// away are dropped at the next refresh), and its finding as of the last
// refresh (has: there is one).
type arAdvice struct {
	firing []*series
	sorted bool
	stale  bool
	listed bool
	has    bool
	f      Finding
}

// adviceChanged marks a series to be judged again.
func (e *Engine) adviceChanged(s *series) {
	if !s.advice.dirty {
		s.advice.dirty = true
		e.adviceDirty = append(e.adviceDirty, s)
	}
}

// judgeDirtyAdvice judges the series marked, moving them in and out of
// their app x resource's firing lists.
func (e *Engine) judgeDirtyAdvice() {
	for i, s := range e.adviceDirty {
		e.adviceDirty[i] = nil
		sa := &s.advice
		sa.dirty = false
		j, fires := judgeAdvice(s.inst, s)
		if sa.list != nil && (sa.fires || fires) {
			sa.list.advice.stale = true
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
			ar.advice.sorted = false
			if !ar.advice.listed {
				ar.advice.listed = true
				e.adviceARs = append(e.adviceARs, ar)
			}
		}
	}
	e.adviceDirty = e.adviceDirty[:0]
}

// refresh drops the series that stopped firing or moved to another app x
// resource, and sorts the rest by instance; false when none is left.
func (a *arAdvice) refresh(ar *appRes) bool {
	keep := a.firing[:0]
	for _, s := range a.firing {
		if s.advice.fires && s.advice.list == ar && s.ar == ar {
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
	return len(a.firing) > 0
}
