package whatif

import (
	"errors"
	"fmt"
	"time"

	"github.com/sentinel-top/sentinel-top/core"
)

// Hot-parameter rules are replayed through core's Guard as flow rules are:
// one parameter value's entries of each bucket (its passes and its
// blocks, spread evenly over the bucket) ask for an entry with that value
// at their time, on a virtual clock, once under the current rule and once
// under the proposed one. What changes is how many of the value's calls
// pass; the calls the proposal adds are what the resource would have
// served more, and those it adds while the resource's breaker was not
// CLOSED went to a downstream already failing.

// ParamBucket is one bucket of one parameter value's entries on one
// instance. Listed is false where the bucket named other values but not
// this one (the value's entries are then among those it summed, unknown:
// taken as none, and the replay is Estimated).
type ParamBucket struct {
	Start, Ms   int64
	Pass, Block int64
	Listed      bool
}

// ParamTrace is one parameter value's traffic on one instance.
type ParamTrace struct {
	Instance string
	// Value is the parameter value, as the instance sent it.
	Value   string
	Buckets []ParamBucket
	// Spells are the spans during which the instance's breakers of the
	// resource were not CLOSED, in order.
	Spells []Span
	// Restarts are the times the instance's process restarted: its
	// parameter statistics began again empty.
	Restarts []int64
}

// ParamCase is one instance's value trace with the hot-parameter rule it
// ran and the one proposed (the same rule with its own exception).
type ParamCase struct {
	Trace             *ParamTrace
	Current, Proposed core.HotParamRule
}

// ParamMetrics is what one rule let through of the value's calls.
type ParamMetrics struct {
	Passed  int64 `json:"passed"`
	Blocked int64 `json:"blocked"`
}

// ParamResult compares two hot-parameter rules on one value's traffic.
type ParamResult struct {
	StepMs int64 `json:"stepMs"`
	// Estimated: some buckets did not list the value (see ParamBucket).
	Estimated bool `json:"estimated"`
	// Offered is the value's calls, passed and blocked.
	Offered  int64        `json:"offered"`
	Current  ParamMetrics `json:"current"`
	Proposed ParamMetrics `json:"proposed"`
	// AddedPeak is the most calls the proposal passes beyond the current
	// rule's in one second on one instance: the load it adds.
	AddedPeak int64 `json:"addedPeakPerSecond"`
	// AddedInSpells are the calls the proposal adds while the resource's
	// breaker was not CLOSED on their instance.
	AddedInSpells int64 `json:"addedWhileBreakerOpen"`
	// SpellInstance is the first instance with such calls.
	SpellInstance string `json:"-"`
}

// ErrConcurrency is returned for a concurrency hot-parameter rule: what it
// admits depends on each call's response time, which an input does not
// give per value.
var ErrConcurrency = errors.New("a concurrency hot-parameter rule cannot be replayed: it depends on each call's response time, which the input does not give per value")

// CompareParam replays every case with its current and its proposed rule.
func CompareParam(cases []ParamCase) (*ParamResult, error) {
	res := &ParamResult{}
	for _, c := range cases {
		if c.Current.MetricType == core.HotParamConcurrency || c.Proposed.MetricType == core.HotParamConcurrency {
			return nil, ErrConcurrency
		}
		var total int64
		for i := range c.Trace.Buckets {
			b := &c.Trace.Buckets[i]
			res.StepMs = max(res.StepMs, b.Ms)
			total += min(max(b.Pass, 0)+max(b.Block, 0), MaxCallsPerBucket)
			if !b.Listed {
				res.Estimated = true
			}
		}
		if total > MaxCalls {
			return nil, fmt.Errorf("%w: %d calls of one value on %q, at most %d", ErrTooLarge, total, c.Trace.Instance, MaxCalls)
		}
		res.Offered += total
		cur, err := replayParam(c.Trace, c.Current, nil)
		if err != nil {
			return nil, fmt.Errorf("current hot-parameter rule of %q: %w", c.Trace.Instance, err)
		}
		prop, err := replayParam(c.Trace, c.Proposed, cur)
		if err != nil {
			return nil, fmt.Errorf("proposed hot-parameter rule of %q: %w", c.Trace.Instance, err)
		}
		res.Current.Passed += cur.m.Passed
		res.Current.Blocked += cur.m.Blocked
		res.Proposed.Passed += prop.m.Passed
		res.Proposed.Blocked += prop.m.Blocked
		res.AddedPeak = max(res.AddedPeak, prop.addedPeak)
		if prop.inSpells > 0 && res.AddedInSpells == 0 {
			res.SpellInstance = c.Trace.Instance
		}
		res.AddedInSpells += prop.inSpells
	}
	return res, nil
}

// paramRun is one replay: its totals, and the seconds (Unix s) each call
// passed in, for the next replay to compare with.
type paramRun struct {
	m         ParamMetrics
	perSecond map[int64]int64
	addedPeak int64
	inSpells  int64
}

// replayParam replays t through rule; with base (the current rule's run),
// it counts what this one passes beyond it.
func replayParam(t *ParamTrace, rule core.HotParamRule, base *paramRun) (*paramRun, error) {
	run := &paramRun{perSecond: map[int64]int64{}}
	if len(t.Buckets) == 0 {
		return run, nil
	}
	clock := newReplayClock(t.Buckets[0].Start)
	newGuard := func() (*core.Guard, error) {
		g := core.NewGuard(core.GuardOptions{Clock: clock, MaxResources: 1})
		return g, g.LoadHotParamRules([]core.HotParamRule{rule})
	}
	g, err := newGuard()
	if err != nil {
		return nil, err
	}
	restarts, spells := t.Restarts, t.Spells
	for i := range t.Buckets {
		b := &t.Buckets[i]
		n := min(max(b.Pass, 0)+max(b.Block, 0), MaxCallsPerBucket)
		for k := range n {
			at := b.Start + (2*k+1)*b.Ms/(2*n)
			if len(restarts) > 0 && at >= restarts[0] {
				for len(restarts) > 0 && at >= restarts[0] {
					restarts = restarts[1:]
				}
				if g, err = newGuard(); err != nil {
					return nil, err
				}
			}
			if now := clock.UnixMilli(); at > now {
				clock.Set(time.UnixMilli(at))
			}
			e, err := g.EntryWithParam(rule.Resource, t.Value)
			if err != nil {
				run.m.Blocked++
				continue
			}
			e.Exit(nil)
			run.m.Passed++
			sec := clock.UnixMilli() / 1000
			run.perSecond[sec]++
			if base == nil {
				continue
			}
			if run.perSecond[sec] > base.perSecond[sec] {
				run.addedPeak = max(run.addedPeak, run.perSecond[sec]-base.perSecond[sec])
				for len(spells) > 0 && spells[0].To <= at {
					spells = spells[1:]
				}
				if len(spells) > 0 && spells[0].From <= at {
					run.inSpells++
				}
			}
		}
	}
	return run, nil
}

// Rows lists the replay's measures, the current rule's beside the
// proposed one's.
func (r *ParamResult) Rows() []Row {
	return []Row{
		{Label: "calls of the value offered", Current: fmt.Sprint(r.Offered), Proposed: fmt.Sprint(r.Offered)},
		{Label: "calls of the value passed", Current: fmt.Sprint(r.Current.Passed), Proposed: fmt.Sprint(r.Proposed.Passed)},
		{Label: "calls of the value blocked", Current: fmt.Sprint(r.Current.Blocked), Proposed: fmt.Sprint(r.Proposed.Blocked)},
		{Label: "most calls added in one second", Current: "-", Proposed: fmt.Sprint(r.AddedPeak)},
		{Label: "calls added while the breaker was open", Current: "-", Proposed: fmt.Sprint(r.AddedInSpells)},
	}
}

// Basis says what the replay rests on.
func (r *ParamResult) Basis() string {
	s := fmt.Sprintf("the value's calls of each %d ms bucket replayed through core's hot-parameter rule, spread evenly over the bucket", r.StepMs)
	if r.Estimated {
		s += "; estimated: some buckets did not list the value among their busiest, and its calls there are taken as none"
	}
	return s
}
