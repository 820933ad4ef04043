package collector

import (
	"slices"

	"github.com/sentinel-top/sentinel-top/collector/fleet"
	"github.com/sentinel-top/sentinel-top/collector/triage"
	"github.com/sentinel-top/sentinel-top/core"
)

// One history per breaker: a track's steps (fleet.go), with what is not
// known of it, are what the detail's bands, the findings' timelines in the
// report and the transitions listed all read. Nothing is known of a
// breaker before its instance's first data for the resource, while its
// data never arrived (unrecv), while no process ran under the name
// (absent: between a process's last data and its restart's start), and
// after the instance left (from its last message on), nor of an inferred
// CLOSED over a silence (silence.go).

// timelineOf is the history of track t of the instance's series s over
// [from, to]. c.mu is held.
func timelineOf(in *instance, s *series, t *track, from, to int64) triage.Timeline {
	tl := triage.Timeline{Instance: in.Name, RuleID: t.RuleID, Start: core.Closed}
	first := len(t.Steps)
	for i, st := range t.Steps {
		switch {
		case st.AtMs < from:
			tl.Start = st.To
		case st.AtMs <= to:
			first = min(first, i)
			tl.Steps = append(tl.Steps, triage.Step{AtMs: st.AtMs, To: st.To})
		}
	}
	tl.KnownFrom, tl.KnownTo, tl.Unknown = in.known(s, t.Steps[first:], tl.Start, from, to)
	return tl
}

// known is what is known of a breaker of the instance's series s over
// [from, to], for a history whose state at from is start and whose steps
// from then on are steps (in time order): from when
// (knownFrom), until when (knownTo, 0 while the instance is there), and
// the spans between whose state is not known. Known from the series'
// first data, or from its first transition in the range when that leaves
// another state than start (a collector that connects mid-incident sees a
// HALF_OPEN -> OPEN first, and the state before it is not CLOSED).
func (in *instance) known(s *series, steps []Transition, start core.State, from, to int64) (knownFrom, knownTo int64, unknown []Span) {
	knownFrom = to + 1
	if s.first > 0 {
		knownFrom = s.first
	}
	if len(steps) > 0 && steps[0].AtMs <= to && steps[0].From != start {
		knownFrom = max(knownFrom, steps[0].AtMs)
	}
	if in.Gone {
		knownTo = in.lastTs
	}
	unknown = append(spansIn(in.Absent, from, to+1), spansIn(in.Unreceived, from, to+1)...)
	unknown = append(unknown, in.silent(s, start, steps, from, to)...)
	return knownFrom, knownTo, unknown
}

// spansIn are the spans that overlap [from, to).
func spansIn(spans []Span, from, to int64) []Span {
	var out []Span
	for _, sp := range spans {
		if sp.To > from && sp.From < to {
			out = append(out, sp)
		}
	}
	return out
}

// firstStepFrom is the index of the first step at or after from.
func firstStepFrom(steps []Transition, from int64) int {
	i, _ := slices.BinarySearchFunc(steps, from, func(x Transition, at int64) int {
		switch {
		case x.AtMs < at:
			return -1
		case x.AtMs > at:
			return 1
		}
		return 0
	})
	return i
}

// restart ends the instance's old process at a hello that restarted it
// at startedAt: no process ran from its last data until then, and each
// breaker starts CLOSED, a step of its history (Transition.Restart) that
// no count of transitions includes. c.mu is held.
func (in *instance) restart(startedAt int64) {
	if in.dataEnd > 0 && startedAt > in.dataEnd {
		in.Absent = fleet.AddSpan(in.Absent, Span{From: in.dataEnd, To: startedAt})
	}
	for _, s := range in.series {
		for _, t := range s.tracks {
			if t.State == core.Closed {
				continue
			}
			if n := len(t.Steps); n == 0 || t.Steps[n-1].AtMs <= startedAt {
				if n == maxTrackSteps {
					t.Steps = slices.Delete(t.Steps, 0, maxTrackSteps/4)
				}
				t.Steps = append(t.Steps, Transition{AtMs: startedAt, From: t.State, To: core.Closed, RuleID: t.RuleID, Restart: true})
			}
			// The spell ended with the old process, no later than its
			// last data.
			s.app.act.spell(t.State, min(startedAt, max(in.dataEnd, t.Since))-t.Since)
			t.State, t.Since = core.Closed, startedAt
		}
	}
}

// Timelines returns findings with the timelines of their instances over
// each one's [From, To] (widened by pad on both sides), from the fleet
// model's breaker histories: up to triage.MaxTimelines instances a
// finding, in its instance order, those whose breaker for the resource
// changed state. The findings are copied; the model is read under its
// lock, so the timelines are those of now, which a report taken at the end
// of its input reads.
func (c *Collector) Timelines(findings []triage.Finding, pad func(from, to int64) int64) []triage.Finding {
	out := slices.Clone(findings)
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range out {
		f := &out[i]
		p := int64(0)
		if pad != nil {
			p = pad(f.From, f.To)
		}
		f.Timelines = nil
		for _, name := range f.Instances {
			if len(f.Timelines) == triage.MaxTimelines {
				break
			}
			in := c.insts[name]
			if in == nil {
				continue
			}
			s := in.series[f.Resource]
			if s == nil {
				continue
			}
			if t := busiestTrack(s, f.From-p, f.To+p); t != nil {
				f.Timelines = append(f.Timelines, timelineOf(in, s, t, f.From-p, f.To+p))
			}
		}
	}
	return out
}

// busiestTrack is the series' track with the most steps in [from, to]
// among those that changed state at or before to; nil for none.
func busiestTrack(s *series, from, to int64) *track {
	var best *track
	most := -1
	for _, t := range s.tracks {
		if len(t.Steps) == 0 || t.Steps[0].AtMs > to {
			continue
		}
		n := 0
		for i := firstStepFrom(t.Steps, from); i < len(t.Steps) && t.Steps[i].AtMs <= to; i++ {
			n++
		}
		if n > most {
			best, most = t, n
		}
	}
	return best
}
