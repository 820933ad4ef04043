package collector

import (
	"slices"
	"time"

	"github.com/sentinel-top/sentinel-top/collector/triage"
	"github.com/sentinel-top/sentinel-top/core"
)

// DefaultPlanEvery is Options.PlanEvery's default.
const DefaultPlanEvery = 10 * time.Second

// livePlanCalls bounds the calls one live snapshot replays for plans
// (about 0.4 s of replay, under the store's lock): a fleet's proposals
// beyond it are checked by the snapshots after, and say so meanwhile.
const livePlanCalls = 4_000_000

// planCache keeps the latest plans, so that snapshots (4 a second) do not
// replay the input each: they are made again when the findings propose
// other values (at most ten times in PlanEvery), when PlanEvery of input
// time has passed, and when the input stopped since they were made (the
// end of a replay): then the dashboard shows what a report of the input
// so far would.
type planCache struct {
	plans    []triage.Plan
	at       int64
	sig      []triage.Proposal
	made     bool
	dataTo   int64 // the input's latest time when they were made
	lastSeen int64 // the input's latest time at the last snapshot
	lastNow  int64 // and that snapshot's time
}

// of returns the plans of findings at now, from the cache when it still
// holds, and brings the findings in line with them; dataTo is the input's
// latest time.
func (p *planCache) of(e *triage.Engine, now, dataTo int64, findings []triage.Finding, every time.Duration) []triage.Plan {
	if every == 0 {
		every = DefaultPlanEvery
	}
	sig := triage.Proposals(findings)
	// Quiet: nothing moved since the last snapshot, neither the clock nor
	// the input (a replay at its end), and the plans predate the input's
	// last data.
	quiet := now == p.lastNow && dataTo == p.lastSeen && dataTo != p.dataTo
	p.lastSeen, p.lastNow = dataTo, now
	fresh := every > 0 && now >= p.at && now-p.at < every.Milliseconds()
	// New proposals are replayed at once, but no more than ten times in
	// PlanEvery: a rule advice's numbers move with every second of traffic.
	settled := every > 0 && now >= p.at && now-p.at < every.Milliseconds()/10
	if p.made && !quiet && fresh && (settled || slices.Equal(sig, p.sig)) {
		triage.AgreeWithPlans(findings, p.plans)
		return p.plans
	}
	o := triage.PlanOptions{ReuseMs: every.Milliseconds(), MaxCalls: livePlanCalls}
	if quiet || every < 0 {
		o = triage.PlanOptions{} // the input's end, or a report: every plan checked afresh
	}
	p.plans, p.at, p.sig, p.made, p.dataTo = e.PlansWith(now, findings, o), now, sig, true, dataTo
	return p.plans
}

// CheckRules replays proposed breaker rules on the input so far, under
// the store's lock (triage reads the fleet model's records): the
// `whatif` command's check (triage.Engine.CheckRules).
func (c *Collector) CheckRules(breakers []core.BreakerRule, flows []core.FlowRule) triage.RuleChecks {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.engine.CheckRules(breakers, flows)
}

// Assess judges the input at the collector's current time and makes the
// findings' plans afresh (no cache), under the store's lock: what a report
// at this moment would say.
func (c *Collector) Assess() ([]triage.Finding, []triage.Plan) {
	now := c.clock.UnixMilli()
	c.mu.Lock()
	defer c.mu.Unlock()
	fs := c.engine.Findings(now)
	return fs, c.engine.Plans(now, fs)
}
