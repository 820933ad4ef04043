package collector

import (
	"cmp"
	"slices"
	"time"

	"github.com/sentinel-top/sentinel-top/core/wire"
)

// The memory budget: everything a peer can make the collector keep is
// charged here when it is created and released when it is pruned, so no
// peer, however hostile, can grow the process past Options.MaxMemory.
// Options.MaxMemory is the process's: what peers make the collector keep
// may take ModelShare of it, the rest is the Go runtime's (its garbage not
// yet collected under the soft limit sentinel-top sets, stacks, the
// program itself). The figures are estimates of the structures' sizes,
// names included, checked kind by kind against the live heap the runtime
// measures (TestBudgetEstimatesMatchTheHeap) and at scale
// (TestMemoryFiftyThousandSeries).
//
// Each owner (a dialed target; "" for sources without one) may take a
// share of it: the model's budget over the owners known (the dialed
// targets), and never less than MinShare of it, so that a target filling
// the budget with new names leaves the others room, a target arriving
// late included. What an owner already holds is never taken back: past its
// share, what is new is refused and counted against it (Snapshot.Memory).

// DefaultMaxMemory is Options.MaxMemory when it is zero.
const DefaultMaxMemory = 512 << 20

// ModelShare is the part of Options.MaxMemory what peers make the
// collector keep may take (three quarters, ModelShare/4): the rest is the
// process's own, measured by TestHostilePeakRSS.
const ModelShare = 3

// MinShare is the least share of the model's budget one owner may take,
// 1/MinShare of it, however many targets there are: a fleet of more than
// MinShare targets shares the budget first come, first served, each
// within its eighth.
const MinShare = 8

// Estimated bytes of what the budget charges, calibrated against the live
// heap (TestBudgetEstimatesMatchTheHeap: names of 24 and 200 bytes).
const (
	instanceBytes   = 840  // an instance, beyond its name: records, offsets, triage's view
	seriesBaseBytes = 2000 // a series beyond its ring: dedupe, totals, maps, triage's view (with the packed healthy buckets of a 10 s window held)
	ringSlotBytes   = 40   // a ring slot: its start and its counts
	histCellBytes   = 96   // an app ring's slot: its start, its counts and its histogram (histCell)
	// trackBytes is a breaker track beyond its steps and its rule id
	// (kept twice: the track's and triage's).
	trackBytes = 930
	// hotItemBytes is one kept hot value: the item and a value of the
	// longest text the wire allows.
	hotItemBytes = 40 + wire.MaxHotValueBytes
	// ruleResourceBytes is an app x resource known from rules alone:
	// triage's comparison state and the rules' copies, beyond its name
	// (kept five times: the budget's key, triage's, the rules' and their
	// canonical keys).
	ruleResourceBytes = 3200
	ruleNameCopies    = 5
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

// instanceCost is the estimate for an instance of this name.
func instanceCost(name string) int64 { return instanceBytes + int64(len(name)) }

// ruleResourceCost is the estimate for an app x resource known from rules.
func ruleResourceCost(resource string) int64 {
	return ruleResourceBytes + ruleNameCopies*int64(len(resource))
}

// trackCost is the estimate for a breaker track of this rule id.
func trackCost(ruleID string) int64 { return trackBytes + 2*int64(len(ruleID)) }

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
	return int64(appFineSlots+c.coarseSlots()) * histCellBytes
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

// budgetShare is what one owner (a dialed target, "" for sources without
// one) holds of the budget, and what was refused it.
type budgetShare struct {
	owner   string
	used    int64
	refused int64
}

// MemoryShare is what one target holds of the memory budget: Used of at
// most Limit bytes (estimates), and Refused, how many things (instances,
// series, rules' resources, tracks, hot values) were turned away because
// its share or the budget was full.
type MemoryShare struct {
	Target               string
	Used, Limit, Refused int64
}

// shareOf is owner's share, made on first use. c.mu is held.
func (c *Collector) shareOf(owner string) *budgetShare {
	sh := c.shares[owner]
	if sh == nil {
		sh = &budgetShare{owner: owner}
		c.shares[owner] = sh
		c.sharesGen++
	}
	return sh
}

// modelBudget is what the model may hold in all: ModelShare of MaxMemory,
// less the stream's shares when serve re-serves and the part of the
// traffic log for plans not yet filled.
func (c *Collector) modelBudget() int64 {
	return c.opts.MaxMemory/4*ModelShare - c.streamShare - c.traceReserved()
}

// shareLimit is the most one owner may hold: what the model may hold
// beside what is no owner's (the names, the traffic log, the frames being
// read, the app x resource series several targets share), over the owners
// known (the dialed targets, or those that sent something), never under
// 1/MinShare of it. c.mu is held.
func (c *Collector) shareLimit() int64 {
	model := c.modelBudget() - c.namesHeld - c.traceHeld - c.transient.Load() - c.commonHeld
	owners := max(len(c.targets), len(c.shares), 1)
	return max(model/int64(owners), model/MinShare)
}

// charge takes n bytes from the budget for sh (nil: the owner of the
// message being ingested); false, and counted against place and the
// owner, when they do not fit the budget or the owner's share. What
// sources hold while they read (Hold) counts against what is left. c.mu is
// held.
func (c *Collector) charge(sh *budgetShare, n int64, place, what string) bool {
	if sh == nil {
		sh = c.cur
	}
	c.sharesGen++
	if c.memUsed+c.transient.Load()+n > c.modelBudget() || sh.used+n > c.shareLimit() {
		count(c.overflow, ReasonMaxMemory, place+": "+what)
		sh.refused++
		return false
	}
	c.memUsed += n
	sh.used += n
	return true
}

// release gives back n bytes sh held (nil: the fleet's common part). c.mu
// is held.
func (c *Collector) release(sh *budgetShare, n int64) {
	c.memUsed -= n
	if sh == nil {
		c.commonHeld -= n
		return
	}
	sh.used -= n
	c.sharesGen++
}

// shared moves n bytes charged to held to the fleet's common part when an
// instance of another owner (by) uses what they pay for: an app x resource
// two targets' instances share is neither's alone (the first would
// otherwise pay for a whole fleet's). It returns the share now charged,
// nil for the common part. c.mu is held.
func (c *Collector) shared(held, by *budgetShare, n int64) *budgetShare {
	if held == nil || held == by {
		return held
	}
	held.used -= n
	c.commonHeld += n
	c.sharesGen++
	return nil
}

// Hold charges n bytes (or gives back -n) a source holds while it reads:
// a frame being decoded and its message ingested, a rules answer being
// parsed. They are held already, so the charge is taken even past the
// budget, which turns away what is new meanwhile; a source gives back all
// it held.
func (c *Collector) Hold(n int64) { c.transient.Add(n) }

// listedShares is how many of the owners that were refused nothing a
// snapshot lists (those holding the most): a fleet of 10,000 targets does
// not make every snapshot and scrape 10,000 entries longer.
const listedShares = 16

// memoryShares lists, by owner, what the owners that were refused
// something hold, and the listedShares holding the most (ties: by owner,
// so that a snapshot lists the same ones as the last). It keeps no more
// than those while it looks through the owners: a fleet's snapshots do not
// copy and sort a share of every target each. c.mu is held.
func (c *Collector) memoryShares() []MemoryShare {
	if len(c.shares) == 0 {
		return nil
	}
	limit := c.shareLimit()
	listed := &c.listedShares
	if listed.gen != c.sharesGen { // never 0 once a share is made (shareOf)
		// Chosen again only after a share moved: thousands of targets' are
		// not all read at every snapshot.
		*listed = listShares(c.shares, listed.top[:0], listed.refused[:0])
		listed.gen = c.sharesGen
	}
	top, refused := listed.top, listed.refused
	out := make([]MemoryShare, 0, len(top)+len(refused))
	for _, sh := range top {
		out = append(out, MemoryShare{Target: sh.owner, Used: sh.used, Limit: limit, Refused: sh.refused})
	}
	for _, sh := range refused {
		if !slices.Contains(top, sh) {
			out = append(out, MemoryShare{Target: sh.owner, Used: sh.used, Limit: limit, Refused: sh.refused})
		}
	}
	slices.SortFunc(out, func(a, b MemoryShare) int { return cmp.Compare(a.Target, b.Target) })
	return out
}

// sharesListed is what memoryShares lists of the shares, as of gen
// (Collector.sharesGen): the listedShares holding the most, most first,
// and every one that was refused.
type sharesListed struct {
	gen          uint64
	top, refused []*budgetShare
}

// listShares chooses what memoryShares lists, into top and refused.
func listShares(shares map[string]*budgetShare, top, refused []*budgetShare) sharesListed {
	holdsMore := func(a, b *budgetShare) bool {
		return a.used > b.used || (a.used == b.used && a.owner < b.owner)
	}
	for _, sh := range shares {
		if sh.refused > 0 {
			refused = append(refused, sh)
		}
		n := len(top)
		if n == listedShares && !holdsMore(sh, top[n-1]) {
			continue
		}
		if n < listedShares {
			top = append(top, nil)
		}
		i := len(top) - 1 // full: the least held makes way
		for i > 0 && holdsMore(sh, top[i-1]) {
			top[i] = top[i-1]
			i--
		}
		top[i] = sh
	}
	return sharesListed{top: top, refused: refused}
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
		c.release(in.share, c.seriesBytes())
		for _, t := range s.tracks {
			c.release(in.share, trackCost(t.RuleID))
		}
		if s.hot != nil {
			c.release(in.share, c.hotRingBytes())
		}
		s.app.sums.apply(&s.part, -1)
		for _, t := range s.tracks {
			s.app.act.spell(t.State, in.lastTs-t.Since) // a spell it was in ends with it
		}
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
		for k, sh := range c.ruleRes {
			if !apps[k.app] {
				delete(c.ruleRes, k)
				c.release(sh, ruleResourceCost(k.resource))
			}
		}
	}
	c.appsLeft = false
	for k, a := range c.apps {
		if a.refs <= 0 && now-a.lastData > keep {
			c.release(a.share, c.appSeriesBytes())
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
		c.release(in.share, instanceCost(in.Name))
		c.pub.forget(in)
		delete(c.insts, name)
		c.namesGen++
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
