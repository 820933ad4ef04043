package collector

import "github.com/sentinel-top/sentinel-top/core"

// What happened to each app x resource over everything accepted, for a
// report that has no finding to tell (it then says this instead of a bare
// "No findings"): its breakers' transitions, the time they spent OPEN and
// HALF_OPEN, and its blocks told apart by what blocked them, as far as the
// input can tell.

// ResourceActivity is what happened to one app x resource.
type ResourceActivity struct {
	App, Resource string
	// States is where its breaker states came from (ResourceTotals.States).
	States Provenance
	// Trips count CLOSED -> OPEN, Reopens HALF_OPEN -> OPEN (failed
	// probes), Closes HALF_OPEN -> CLOSED, over its instances.
	Trips, Reopens, Closes int64
	// OpenMs and HalfOpenMs are the time its breakers spent OPEN and
	// HALF_OPEN, summed over its instances (and breakers, where one has
	// several): from each transition into the state to the next, or to
	// the instance's latest message, or to its restart (no later than its
	// last data). A spell whose start was never received is not counted.
	// TimesPartial is set when a transition arrived after a later one of
	// its breaker (a reconnect's backlog): the spells around it are
	// counted as the transitions arrived, and may be off.
	OpenMs, HalfOpenMs int64
	TimesPartial       bool
	// Block is every entry blocked; BreakerBlock those blocked on an
	// instance whose only rules for the resource are breakers, or while
	// one of its breakers was OPEN or HALF_OPEN (as the transitions
	// received by the bucket's arrival tell); FlowBlock those blocked on
	// an instance whose only rules for it are flow and hot-parameter
	// rules, or while its breakers were all CLOSED (a CLOSED breaker
	// blocks nothing) as its source told. The rest were blocked where the
	// instance's rules were not known, or none named the resource (system
	// and authority rules block too), or where breakers and flow rules
	// both guard it and its source does not report breaker states (Java
	// Sentinel, a metric log, Prometheus) and inferred none not CLOSED:
	// wire v1 does not say what blocked an entry.
	Block, BreakerBlock, FlowBlock int64
}

// activity is what an app x resource's ResourceActivity sums as the
// input comes; the spells still running are added when it is read.
type activity struct {
	openMs, halfOpenMs      int64
	timesPartial            bool
	breakerBlock, flowBlock int64
}

// spell adds a spell of state lasting ms to the sums.
func (a *activity) spell(state core.State, ms int64) {
	if ms <= 0 {
		return
	}
	switch state {
	case core.Open:
		a.openMs = sat64(a.openMs, ms)
	case core.HalfOpen:
		a.halfOpenMs = sat64(a.halfOpenMs, ms)
	}
}

// blocked attributes a bucket item's blocks, of the series s, starting at
// start (see ResourceActivity.Block); statesTold says its instance's
// source reports breaker transitions.
func (a *activity) blocked(s *series, start, block int64, statesTold bool) {
	if block <= 0 {
		return
	}
	flow := s.flowRuled || s.paramRuled
	switch {
	case s.ruled && (!flow || s.breakerNotClosed(start)):
		a.breakerBlock = sat64(a.breakerBlock, block)
	case s.ruled && !statesTold:
		// Breakers and flow rules both guard it, and no transition says a
		// breaker was CLOSED: either may have blocked these.
	case flow:
		a.flowBlock = sat64(a.flowBlock, block)
	}
}

// breakerNotClosed reports whether a breaker of s was OPEN or HALF_OPEN
// at some time from start on, as the transitions received tell: one is
// not CLOSED now, or closed after start.
func (s *series) breakerNotClosed(start int64) bool {
	for _, t := range s.tracks {
		if t.State != core.Closed || len(t.Steps) > 0 && t.Since > start {
			return true
		}
	}
	return false
}

// Activity is what happened to every app x resource over everything
// accepted, in app, resource order; the spells still running run to
// their instance's latest message.
func (c *Collector) Activity() []ResourceActivity {
	c.mu.Lock()
	defer c.mu.Unlock()
	running := map[arKey]*activity{}
	for _, in := range c.insts {
		for _, s := range in.seriesList {
			for _, t := range s.tracks {
				if t.State == core.Closed {
					continue
				}
				r := running[s.app.key]
				if r == nil {
					r = &activity{}
					running[s.app.key] = r
				}
				r.spell(t.State, in.lastTs-t.Since)
			}
		}
	}
	out := make([]ResourceActivity, 0, len(c.apps))
	for _, a := range c.sortedApps() {
		x := ResourceActivity{App: a.key.app, Resource: a.key.resource,
			Trips:   a.transitions[[2]core.State{core.Closed, core.Open}],
			Reopens: a.transitions[[2]core.State{core.HalfOpen, core.Open}],
			Closes:  a.transitions[[2]core.State{core.HalfOpen, core.Closed}],
			OpenMs:  a.act.openMs, HalfOpenMs: a.act.halfOpenMs, TimesPartial: a.act.timesPartial,
			Block: a.total.block, BreakerBlock: a.act.breakerBlock, FlowBlock: a.act.flowBlock, States: a.states()}
		if r := running[a.key]; r != nil {
			x.OpenMs, x.HalfOpenMs = sat64(x.OpenMs, r.openMs), sat64(x.HalfOpenMs, r.halfOpenMs)
		}
		out = append(out, x)
	}
	return out
}
