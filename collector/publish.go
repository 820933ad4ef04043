package collector

import (
	"cmp"
	"maps"
	"slices"

	"github.com/sentinel-top/sentinel-top/collector/triage"
	"github.com/sentinel-top/sentinel-top/core"
)

// Publish builds a snapshot now and makes it the latest. The liveness rule
// is applied first (see sweep), and the findings are computed here, once:
// the table, the detail screen, /report and /metrics all read these. It
// shows every target's status as its record says now; Run's snapshots
// take a live target's running counts once a second (takeTargets).
func (c *Collector) Publish() *Snapshot { return c.publish(false) }

// publish is Publish; tallies says a live snapshot may show the targets'
// running counts as they were up to TalliesEvery before (Run's).
func (c *Collector) publish(tallies bool) *Snapshot {
	now := c.clock.UnixMilli()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sweep(now)
	c.prune(now)
	c.chargePool()
	findings := c.engine.Findings(now)
	coarse, withheld := c.coarse(findings)
	if coarse != nil {
		findings = withheld
	}
	seen := c.engine.Counts()
	plans := c.plans.of(c.engine, now, seen.To, findings, c.opts.PlanEvery)
	c.seq++
	s := &Snapshot{At: now, Seq: c.seq, Mode: c.opts.Mode, Source: c.opts.Source,
		Messages: c.messages, Rejected: c.rejected, Dropped: c.dropped, Findings: findings, Plans: plans, Seen: seen,
		MemoryUsed: c.memUsed, MemoryBudget: c.opts.MaxMemory, MemoryNames: c.namesHeld,
		MemoryTraffic: c.traceHeld, MemoryTrafficBound: max(c.opts.Triage.TraceBytes, 0), MemoryHeld: c.transient.Load(), MemoryShares: c.memoryShares()}
	if c.replay.Active {
		s.Replay = c.replay
		s.Replay.Pos = now
	}
	s.Recording = c.opts.Record != nil
	if err := c.RecordError(); err != nil {
		s.RecordError = err.Error()
	}
	// The targets' statuses are shared with the snapshot before when they
	// did not change (at 10 snapshots a second, 2,000 targets copied afresh
	// were most of what a snapshot allocated), and only the changed ones'
	// records are read (docs/BENCHMARKS.md).
	c.takeTargets(now, tallies)
	if c.tpubShared == nil {
		c.tpubShared = slices.Clone(c.tpub)
	}
	s.Targets = c.tpubShared
	if c.qualifiedEver > 0 {
		for i, st := range s.Targets {
			// Another target announced the name first: this one's is
			// NAME@TARGET (looked for only once some instance was so
			// named, and then only where the name is another's: a fleet of
			// targets down costs a lookup each).
			if x := c.insts[st.Instance]; x != nil && x.owner != "" && x.owner != st.Name {
				if in := c.heldInstance(st.Name, st.Instance); in != nil && in.Name != st.Instance {
					q := *st
					q.Instance = in.Name
					s.Targets[i] = &q
				}
			}
		}
	}
	notes := c.tnotes
	s.Rejects = sortedCounts(c.rejects)
	s.Overflow = sortedCounts(c.overflow)
	c.streamMemory(s)
	worst := map[arKey]triage.Severity{}
	for _, f := range findings {
		k := arKey{f.App, f.Resource}
		if w, ok := worst[k]; !ok || f.Severity > w {
			worst[k] = f.Severity
		}
	}
	rows, warnings := c.instanceRows(s, now)
	for _, note := range slices.SortedFunc(maps.Keys(notes), compareRemarks) {
		warnings = append(warnings, TargetNote{Note: note, Targets: notes[note]})
	}
	if w, ok := c.unreceived(s); ok {
		warnings = append(warnings, w)
	}
	for _, n := range c.sortedNotices() {
		warnings = append(warnings, n)
	}
	var unjudged []triage.Unjudged
	if coarse != nil {
		warnings = append(warnings, *coarse)
	} else {
		unjudged = c.engine.Unjudged(now)
	}
	for i, u := range unjudged[:min(len(unjudged), MaxUnjudgedWarnings)] {
		w := UnjudgedTrips{Unjudged: u}
		if i == MaxUnjudgedWarnings-1 {
			w.More = len(unjudged) - MaxUnjudgedWarnings
		}
		warnings = append(warnings, w)
	}
	s.Warnings = warnings
	rateMs := c.opts.RateWindow.Milliseconds()
	s.Rows = make([]ResourceRow, 0, len(rows))
	for _, a := range rows {
		row, end := a.resourceRow(rateMs), a.sums.end
		sum, hist := a.fine.window(end-rateMs, end)
		row.Completed = int64(sum.complete)
		if sum.complete > 0 {
			row.SlowRatio = float64(sum.slow) / float64(sum.complete)
			row.ErrorRatio = float64(sum.err) / float64(sum.complete)
			row.AvgRtMs = float64(sum.rtSum) / float64(sum.complete)
		}
		row.P50Ms, row.P99Ms = quantiles(&hist, int64(sum.rtMax))
		for _, v := range hist {
			row.HasP99 = row.HasP99 || v > 0
		}
		row.Worst, row.HasFinding = worst[a.key]
		s.Rows = append(s.Rows, row)
	}
	s.Totals = c.appTotals()
	c.snap.Store(s)
	if ch := c.published.Swap(nil); ch != nil {
		close(*ch)
	}
	return s
}

// coarse is, for an input of a coarse Resolution, its warning and the
// findings it keeps: none of the kinds that need exact transitions or
// response times (triage.NeedExact), whatever they say; nil and findings
// as they are for exact input.
func (c *Collector) coarse(findings []triage.Finding) (*CoarseInput, []triage.Finding) {
	if c.opts.Resolution <= 0 {
		return nil, findings
	}
	w := &CoarseInput{StepMs: c.opts.Resolution.Milliseconds(), Kinds: triage.NeedExact(), NoRules: true}
	for _, in := range c.insts {
		if in.Rules != nil {
			w.NoRules = false
			break
		}
	}
	var pass, complete int64
	for _, a := range c.apps {
		pass, complete = pass+a.total.pass, complete+a.total.complete
	}
	w.NoCompletions = pass > 0 && complete == 0
	kept := make([]triage.Finding, 0, len(findings))
	for _, f := range findings {
		if slices.Contains(w.Kinds, f.Kind) {
			w.Withheld++
			continue
		}
		kept = append(kept, f)
	}
	return w, kept
}

// compareRemarks orders remarks by their rules error (none first), then
// those without inferred states first.
func compareRemarks(a, b TargetRemark) int {
	if c := cmp.Compare(a.RulesError, b.RulesError); c != 0 || a.StatesInferred == b.StatesInferred {
		return c
	}
	if a.StatesInferred {
		return 1
	}
	return -1
}

// appTotals are the exact counters of every app x resource since the
// collector started, sorted. c.mu is held.
func (c *Collector) appTotals() []ResourceTotals {
	out := make([]ResourceTotals, 0, len(c.apps))
	for _, a := range c.sortedApps() {
		t := ResourceTotals{App: a.key.app, Resource: a.key.resource, Pass: a.total.pass, Block: a.total.block,
			Complete: a.total.complete, Error: a.total.err, Slow: a.total.slow, States: a.states()}
		for ft, n := range a.transitions {
			t.Transitions = append(t.Transitions, TransitionCount{From: ft[0], To: ft[1], Count: n})
		}
		slices.SortFunc(t.Transitions, func(x, y TransitionCount) int {
			return cmp.Or(cmp.Compare(x.From, y.From), cmp.Compare(x.To, y.To))
		})
		out = append(out, t)
	}
	return out
}

func quantiles(h *[histLen]uint32, rtMax int64) (p50, p99 int64) {
	var hh [core.HistogramSlots]int64
	for i, v := range h {
		hh[i] = int64(v)
	}
	return core.HistogramQuantile(&hh, 0.5, rtMax), core.HistogramQuantile(&hh, 0.99, rtMax)
}

func sortedCounts(m map[string]*RejectCount) []RejectCount {
	out := make([]RejectCount, 0, len(m))
	for _, rc := range m {
		out = append(out, *rc)
	}
	slices.SortFunc(out, func(a, b RejectCount) int { return cmp.Compare(a.Reason, b.Reason) })
	return out
}

// window sums the cells of r over [from, to) (times aligned to its steps).
func (r *histRing) window(from, to int64) (sum counts, hist [histLen]uint32) {
	for t := r.align(from); t < to; t += r.stepMs {
		if c := r.at(t); c != nil {
			sum.addCounts(&c.c)
			for i, v := range c.hist {
				hist[i] = sat32(hist[i], int64(v))
			}
		}
	}
	return sum, hist
}

// sum sums the slots of r over [from, to) (times aligned to its steps).
func (r *ring) sum(from, to int64) (sum counts) {
	for t := r.align(from); t < to; t += r.stepMs {
		if sl := r.at(t); sl != nil {
			sum.addCounts(sl)
		}
	}
	return sum
}
