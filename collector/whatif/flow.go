package whatif

import (
	"fmt"
	"time"

	"github.com/sentinel-top/sentinel-top/core"
)

// Flow rules are replayed through core's Guard (the Entry/Exit path an
// agent runs) on a virtual clock: every call a bucket was offered (its
// passes and its blocks, spread evenly over it) asks for an entry at its
// time; a throttled entry queues (the rule keeps the queue's end), and the
// calls after it still arrive at their own times, as a service's many
// callers do. What a flow rule changes is how
// many calls pass, so that is what is counted.

// FlowCase is one instance's trace with the flow rule it ran (nil: none)
// and the one proposed.
type FlowCase struct {
	Trace    *Trace
	Current  *core.FlowRule
	Proposed core.FlowRule
}

// FlowMetrics is what one flow rule let through of the calls offered.
type FlowMetrics struct {
	Passed  int64 `json:"passed"`
	Blocked int64 `json:"blocked"`
}

// FlowResult compares two flow rules on the same traces.
type FlowResult struct {
	StepMs   int64       `json:"stepMs"`
	Offered  int64       `json:"offered"`
	Current  FlowMetrics `json:"current"`
	Proposed FlowMetrics `json:"proposed"`
}

// CompareFlow replays every case with its current and its proposed flow
// rule.
func CompareFlow(cases []FlowCase) (*FlowResult, error) {
	res := &FlowResult{}
	for _, c := range cases {
		var total int64
		for i := range c.Trace.Buckets {
			b := &c.Trace.Buckets[i]
			res.StepMs = max(res.StepMs, b.Ms)
			total += min(max(b.Pass, 0)+max(b.Block, 0), MaxCallsPerBucket)
		}
		if total > MaxCalls {
			return nil, fmt.Errorf("%w: %d calls on %q, at most %d", ErrTooLarge, total, c.Trace.Instance, MaxCalls)
		}
		res.Offered += total
		cur, err := replayFlow(c.Trace, c.Current)
		if err != nil {
			return nil, fmt.Errorf("current flow rule of %q: %w", c.Trace.Instance, err)
		}
		prop, err := replayFlow(c.Trace, &c.Proposed)
		if err != nil {
			return nil, fmt.Errorf("proposed flow rule of %q: %w", c.Trace.Instance, err)
		}
		res.Current.Passed += cur.Passed
		res.Current.Blocked += cur.Blocked
		res.Proposed.Passed += prop.Passed
		res.Proposed.Blocked += prop.Blocked
	}
	return res, nil
}

func replayFlow(t *Trace, rule *core.FlowRule) (FlowMetrics, error) {
	var m FlowMetrics
	if len(t.Buckets) == 0 {
		return m, nil
	}
	clock := newReplayClock(t.Buckets[0].Start)
	g := core.NewGuard(core.GuardOptions{Clock: clock, MaxResources: 1})
	res := "r"
	if rule != nil {
		r := *rule
		res = r.Resource
		if err := g.LoadFlowRules([]core.FlowRule{r}); err != nil {
			return m, err
		}
	}
	restarts := t.Restarts
	for i := range t.Buckets {
		b := &t.Buckets[i]
		n := min(max(b.Pass, 0)+max(b.Block, 0), MaxCallsPerBucket)
		for k := range n {
			at := b.Start + (2*k+1)*b.Ms/(2*n)
			if len(restarts) > 0 && at >= restarts[0] && rule != nil {
				for len(restarts) > 0 && at >= restarts[0] {
					restarts = restarts[1:]
				}
				g = core.NewGuard(core.GuardOptions{Clock: clock, MaxResources: 1})
				if err := g.LoadFlowRules([]core.FlowRule{*rule}); err != nil {
					return m, err
				}
			}
			if now := clock.UnixMilli(); at > now {
				clock.Set(time.UnixMilli(at))
			}
			e, err := g.Entry(res)
			if err != nil {
				m.Blocked++
				continue
			}
			m.Passed++
			e.Exit(nil)
		}
	}
	return m, nil
}

// replayClock is the virtual clock of a flow or hot-parameter replay. A
// throttled entry's wait is time that call spends queued; the calls after
// it arrive when they arrive (callers are many), so Sleep does not move
// the clock, where a VirtualClock's would wait for someone to.
type replayClock struct{ *core.VirtualClock }

func newReplayClock(startMs int64) replayClock {
	return replayClock{core.NewVirtualClock(time.UnixMilli(max(startMs, 1)))}
}

// Sleep returns at once: the call has waited its turn in the queue.
func (replayClock) Sleep(time.Duration) {}

// Rows lists the replay's measures, the current rule's beside the
// proposed one's.
func (r *FlowResult) Rows() []Row {
	return []Row{
		{Label: "calls offered", Current: fmt.Sprint(r.Offered), Proposed: fmt.Sprint(r.Offered)},
		{Label: "calls passed", Current: fmt.Sprint(r.Current.Passed), Proposed: fmt.Sprint(r.Proposed.Passed)},
		{Label: "calls blocked", Current: fmt.Sprint(r.Current.Blocked), Proposed: fmt.Sprint(r.Proposed.Blocked)},
	}
}

// Basis says what the replay rests on.
func (r *FlowResult) Basis() string {
	return fmt.Sprintf("the calls of each %d ms bucket (passed and blocked) replayed through core's flow rule, spread evenly over the bucket", r.StepMs)
}
