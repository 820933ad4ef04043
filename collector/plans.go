package collector

import (
	"slices"
	"time"

	"github.com/sentinel-top/sentinel-top/collector/triage"
	"github.com/sentinel-top/sentinel-top/core"
)

// DefaultPlanEvery is Options.PlanEvery's default.
const DefaultPlanEvery = 10 * time.Second

// planCache keeps the latest plans, so that snapshots (4 a second) do not
// replay the input each: they are made again when the findings propose
// other values, when PlanEvery of input time has passed, and when the
// input went quiet since they were made (the end of a replay, a fleet
// gone silent): then the dashboard shows what a report of the input so
// far would.
type planCache struct {
	plans    []triage.Plan
	at       int64
	sig      []triage.Proposal
	made     bool
	dataTo   int64 // the input's latest time when they were made
	lastSeen int64 // the input's latest time at the last snapshot
}

// of returns the plans of findings at now, from the cache when it still
// holds, and brings the findings in line with them; dataTo is the input's
// latest time.
func (p *planCache) of(e *triage.Engine, now, dataTo int64, findings []triage.Finding, every time.Duration) []triage.Plan {
	if every == 0 {
		every = DefaultPlanEvery
	}
	sig := triage.Proposals(findings)
	quiet := dataTo == p.lastSeen && dataTo != p.dataTo
	p.lastSeen = dataTo
	if p.made && !quiet && slices.Equal(sig, p.sig) && every > 0 && now-p.at < every.Milliseconds() && now >= p.at {
		triage.AgreeWithPlans(findings, p.plans)
		return p.plans
	}
	p.plans, p.at, p.sig, p.made, p.dataTo = e.Plans(now, findings), now, sig, true, dataTo
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
