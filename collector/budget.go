package collector

import (
	"time"

	"github.com/sentinel-top/sentinel-top/core/wire"
)

// The memory budget: everything a peer can make the collector keep is
// charged here when it is created and released when it is pruned, so no
// peer, however hostile, can grow the collector past Options.MaxMemory.
// The figures are estimates of the structures' sizes, checked by the scale
// test (TestMemoryFiftyThousandSeries) against the heap measured.

// DefaultMaxMemory is Options.MaxMemory when it is zero.
const DefaultMaxMemory = 512 << 20

// Estimated bytes of what the budget charges.
const (
	instanceBytes   = 1 << 10 // an instance: names, rules, offsets
	seriesBaseBytes = 2000    // a series beyond its ring: dedupe, totals, maps, triage's view (with the packed healthy buckets of a 10 s window held)
	ringSlotBytes   = 40      // a ring slot: its start and its counts
	histSlotBytes   = 56      // a histogram beside an app ring's slot
	trackBytes      = 200     // a breaker track beyond its steps
	// hotItemBytes is one kept hot value: the item and a value of the
	// longest text the wire allows.
	hotItemBytes = 40 + wire.MaxHotValueBytes
	// ruleResourceBytes is an app x resource known from rules alone:
	// triage's comparison state and the rules' copies.
	ruleResourceBytes = 1 << 10
	// MaxTracksPerSeries bounds the breakers (rule ids) followed on one
	// instance x resource; transitions of further rule ids are counted
	// (reason max_rule_ids) and dropped.
	MaxTracksPerSeries = 16
	// MaxAppChangesPerMinute bounds how often one instance may move to
	// another app: each move starts its series anew, and a peer renaming
	// its app on every frame would otherwise churn memory without end.
	MaxAppChangesPerMinute = 2
)

// What the budget turned away, by reason.
const (
	ReasonMaxMemory  = "max_memory"
	ReasonMaxRuleIDs = "max_rule_ids"
	ReasonAppFlap    = "app_flapping"
)

// seriesBytes is the estimate for one instance x resource series.
func (c *Collector) seriesBytes() int64 {
	return seriesBaseBytes + int64(c.instanceFineSlots())*ringSlotBytes
}

// hotRingBytes is the estimate for one series' hot values (hotRing).
func (c *Collector) hotRingBytes() int64 {
	return int64(c.hotSlots()) * (wire.MaxHotValues + 1) * hotItemBytes
}

// appSeriesBytes is the estimate for one app x resource series.
func (c *Collector) appSeriesBytes() int64 {
	return int64(appFineSlots+c.coarseSlots()) * (ringSlotBytes + histSlotBytes)
}

// instanceFineSlots is the per-second slots an instance x resource keeps:
// its rates over RateWindow, with room for data arriving late. The history
// the detail draws is the app x resource's, summed over instances.
func (c *Collector) instanceFineSlots() int {
	return int(c.opts.RateWindow/time.Second) + 8
}

// inlineFineSlots is how many fine slot starts a series holds in itself
// (series.initFine): the default rate window's instanceFineSlots. A longer
// rate window's ring has its starts apart.
const inlineFineSlots = int(DefaultRateWindow/time.Second) + 8

func (c *Collector) coarseSlots() int {
	return int(c.opts.Retention.Milliseconds()/coarseStepMs) + 1
}

// charge takes n bytes from the budget; false (and counted against place)
// when they do not fit. c.mu is held.
func (c *Collector) charge(n int64, place, what string) bool {
	if c.memUsed+n > c.opts.MaxMemory-c.streamShare-c.traceReserved() {
		count(c.overflow, ReasonMaxMemory, place+": "+what)
		return false
	}
	c.memUsed += n
	return true
}

// chargeNames charges n bytes (or gives back -n) of the names the
// connections' decoders keep: the shared pool's (c.names), and each
// decoder's own when the pool has no room (both bounded, wire.NamePool).
// They are held already, so the charge is taken even past the budget,
// which then turns away what comes next.
func (c *Collector) chargeNames(n int64) {
	if n == 0 {
		return
	}
	c.mu.Lock()
	c.memUsed += n
	c.namesHeld += n
	c.mu.Unlock()
}

// traceReserved is the part of the budget triage's traffic log for plans
// may still take (its bound, Options.Triage.TraceBytes, less what it holds
// as last charged): the model admits what fits beside it, so that the two
// together stay within MaxMemory.
func (c *Collector) traceReserved() int64 {
	return max(c.opts.Triage.TraceBytes-c.traceHeld, 0)
}

// chargePool charges the shared name pool's growth since the last call.
// c.mu is held.
func (c *Collector) chargePool() {
	held := c.names.Stats().Held()
	c.memUsed += held - c.poolHeld
	c.namesHeld += held - c.poolHeld
	c.poolHeld = held
	// The traffic triage keeps for replaying plans, within its own bound
	// (Options.Triage.TraceBytes, an eighth of MaxMemory by default).
	traces := c.engine.TraceBytes()
	c.memUsed += traces - c.traceHeld
	c.traceHeld = traces
}

// releaseSeries gives back an instance's series (it left, or moved to
// another app). c.mu is held.
func (c *Collector) releaseSeries(in *instance) {
	for _, s := range in.series {
		c.memUsed -= c.seriesBytes() + int64(len(s.tracks))*trackBytes
		if s.hot != nil {
			c.memUsed -= c.hotRingBytes()
		}
		s.app.sums.apply(&s.part, -1)
		s.app.refs--
	}
	in.series = map[string]*series{}
	in.seriesList, in.guardedList = nil, nil
	c.breakersGen++
}

// prune forgets instances gone for longer than the retention, app x
// resource series that no instance reports and whose data is older than the
// retention, and the rules' resources of apps no instance belongs to any
// more, giving their bytes back. c.mu is held.
func (c *Collector) prune(now int64) {
	keep := c.opts.Retention.Milliseconds()
	if now-c.goneFloor > keep && !c.opts.KeepGone {
		c.pruneInstances(now, keep)
		c.engine.ForgetTraffic(now - keep)
	}
	if c.appsLeft && len(c.ruleRes) > 0 {
		apps := map[string]bool{}
		for _, in := range c.insts {
			apps[in.App] = true
		}
		for k := range c.ruleRes {
			if !apps[k.app] {
				delete(c.ruleRes, k)
				c.memUsed -= ruleResourceBytes
			}
		}
	}
	c.appsLeft = false
	for k, a := range c.apps {
		if a.refs <= 0 && now-a.lastData > keep {
			c.memUsed -= c.appSeriesBytes()
			delete(c.apps, k)
			c.pub.appOrder = nil
		}
	}
}

// pruneInstances forgets the instances gone for longer than keep, and
// moves goneFloor to the earliest goneAt of those left gone. c.mu is held.
func (c *Collector) pruneInstances(now, keep int64) {
	floor := now
	for name, in := range c.insts {
		if !in.Gone {
			continue
		}
		if now-in.goneAt <= keep {
			floor = min(floor, in.goneAt)
			continue
		}
		if in.listed { // no snapshot since it stopped being listed
			c.pub.countApp(in, false)
			in.listed = false
		}
		c.releaseSeries(in)
		c.memUsed -= instanceBytes
		delete(c.insts, name)
		c.pub.order = nil
		c.appsLeft = true
	}
	c.goneFloor = floor
}

// noteGone records that an instance went at goneAt: prune looks at the
// instances again once the retention has passed it. c.mu is held.
func (c *Collector) noteGone(goneAt int64) {
	c.goneFloor = min(c.goneFloor, goneAt)
}

// appChangeAllowed reports whether an instance may move to another app
// now, counting the move. c.mu is held.
func (in *instance) appChangeAllowed(now int64) bool {
	if now-in.appChangesSince > time.Minute.Milliseconds() {
		in.appChangesSince, in.appChanges = now, 0
	}
	in.appChanges++
	return in.appChanges <= MaxAppChangesPerMinute
}
