package whatif

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/sentinel-top/sentinel-top/core"
)

// Case is one instance's trace with the rule it ran and the rule
// proposed for it. A Current of no resource is no breaker at all (a rule
// proposed for a resource that has none): it passes every call, and the
// outages are those the proposed rule's criterion sees.
type Case struct {
	Trace             *Trace
	Current, Proposed core.BreakerRule
	// Criterion, when set, is the rule whose criterion (bound, threshold,
	// strategy) defines the outages instead of Current's: for a current
	// rule that counts the downstream's healthy calls bad, whose own
	// criterion would call healthy traffic an outage.
	Criterion *core.BreakerRule
}

// Range is [low, high]: a count the input cannot tell exactly.
type Range [2]int64

// Metrics is what one rule did over the traces replayed. Counts are the
// side worse for the rule (the most trips, low-confidence trips and probes,
// the fewest outages caught, the latest detection); what the two sides
// disagree on for the calls is a Range.
type Metrics struct {
	Trips              int64 `json:"trips"`
	LowConfidenceTrips int64 `json:"lowConfidenceTrips"`
	OutagesCaught      int64 `json:"outagesCaught"`
	// DetectMs is, for each outage caught, how long after it began the
	// breaker tripped, in the order of the outages.
	DetectMs           []int64 `json:"detectMs"`
	Probes             int64   `json:"probes"`
	PassedDuringOutage Range   `json:"passedDuringOutage"`
	BlockedHealthy     Range   `json:"blockedHealthy"`
	// TripsRange, LowConfidenceRange and ProbesRange are those counts over
	// both readings, for views that show what the JSON's worse reading
	// leaves out.
	TripsRange, LowConfidenceRange, ProbesRange Range `json:"-"`
}

// Loss is a sound outage the current rule caught that the proposed one
// loses, or catches more than the current rule's statIntervalMs later.
type Loss struct {
	Instance string `json:"instance"`
	// From and To bound the outage, Unix ms.
	From int64 `json:"from"`
	To   int64 `json:"to"`
	// CurrentMs is how long after the outage began the current rule
	// tripped; ProposedMs the proposed one's, -1 when it never did.
	CurrentMs  int64 `json:"currentMs"`
	ProposedMs int64 `json:"proposedMs"`
}

// Result compares the current and the proposed rules on the same traces.
type Result struct {
	// StepMs is the traces' bucket length (the longest): the replay's
	// resolution.
	StepMs int64 `json:"stepMs"`
	// Estimated says that some of what the replay counted rests on
	// estimates (refused calls' outcomes, response times between histogram
	// edges).
	Estimated bool    `json:"estimated"`
	Current   Metrics `json:"current"`
	Proposed  Metrics `json:"proposed"`
	// Outages is the number of sound outage episodes in the traces.
	Outages int64 `json:"-"`
	// Calls is how many calls the traces held (known and refused): none,
	// and the replay proves nothing.
	Calls int64 `json:"-"`
	// Lost lists the outages the proposal loses (see Loss); empty when it
	// passes the gate.
	Lost []Loss `json:"-"`
	// Ongoing lists the sound outages the traces end in that the current
	// rule has not caught yet: what a rule would do about them is not
	// known until they end, so no change is safe meanwhile.
	Ongoing []Loss `json:"-"`

	cur, prop [len(sides)]sideTotals
}

// Safe reports whether the proposal loses no outage the current rule
// caught on sound evidence, nor catches one later than allowed.
// An outage the traces end in, not caught yet, makes no change safe.
func (r *Result) Safe() bool { return len(r.Lost) == 0 && len(r.Ongoing) == 0 }

// AddsLowConfidence reports whether the proposal trips on fewer than
// SoundCalls calls more often than the current rule.
func (r *Result) AddsLowConfidence() bool {
	return r.Proposed.LowConfidenceTrips > r.Current.LowConfidenceTrips
}

// Compare replays every case with its current and its proposed rule and
// gates the proposal (package doc). The cases' traces are read, never
// changed.
func Compare(cases []Case) (*Result, error) {
	res := &Result{}
	for _, c := range cases {
		if err := compareOne(res, c); err != nil {
			return nil, err
		}
	}
	settle(&res.Current, res.cur)
	settle(&res.Proposed, res.prop)
	return res, nil
}

func compareOne(res *Result, c Case) error {
	crit := &c.Current
	switch {
	case c.Criterion != nil:
		crit = c.Criterion
	case crit.Resource == "":
		crit = &c.Proposed
	}
	p, err := prepare(c.Trace, crit)
	if err != nil {
		return err
	}
	res.StepMs = max(res.StepMs, p.stepMs)
	res.Estimated = res.Estimated || p.estimated
	res.Calls += int64(len(p.calls))
	var cur, prop [len(sides)]*run
	for _, s := range sides {
		if cur[s], err = p.replay(c.Current, s); err != nil {
			return fmt.Errorf("current rule of %q: %w", c.Trace.Instance, err)
		}
		if prop[s], err = p.replay(c.Proposed, s); err != nil {
			return fmt.Errorf("proposed rule of %q: %w", c.Trace.Instance, err)
		}
	}
	for _, e := range p.episodes {
		if e.sound {
			res.Outages++
		}
	}
	// A proposal may catch an outage up to one statIntervalMs later: the
	// longer of the two rules' (a longer window may need its length to
	// fill; more is lost).
	window := max(int64(crit.StatIntervalMs), int64(c.Proposed.StatIntervalMs))
	for _, e := range p.episodes {
		if !e.sound {
			continue
		}
		cd, cok := detect(e, cur)
		pd, pok := detect(e, prop)
		if cok {
			res.Current.OutagesCaught++
			res.Current.DetectMs = append(res.Current.DetectMs, cd)
		}
		if pok {
			res.Proposed.OutagesCaught++
			res.Proposed.DetectMs = append(res.Proposed.DetectMs, pd)
		}
		if !cok {
			if e.to >= p.end {
				res.Ongoing = append(res.Ongoing, Loss{Instance: c.Trace.Instance, From: e.from, To: e.to, CurrentMs: -1, ProposedMs: -1})
			}
			continue
		}
		lost := !pok
		for _, s := range sides {
			a, aok := detectOn(e, cur[s])
			b, bok := detectOn(e, prop[s])
			if aok && (!bok || b > a+window) {
				lost = true
			}
		}
		if lost {
			if !pok {
				pd = -1
			}
			res.Lost = append(res.Lost, Loss{Instance: c.Trace.Instance, From: e.from, To: e.to, CurrentMs: cd, ProposedMs: pd})
		}
	}
	for _, s := range sides {
		res.Estimated = res.Estimated || cur[s].estimated || prop[s].estimated
	}
	addRuns(&res.cur, cur)
	addRuns(&res.prop, prop)
	return nil
}

// detect is when both sides' replays caught episode e: the later of
// their trips after its start; ok is false unless both did.
func detect(e episode, runs [len(sides)]*run) (ms int64, ok bool) {
	for _, s := range sides {
		d, caught := detectOn(e, runs[s])
		if !caught {
			return 0, false
		}
		ms = max(ms, d)
	}
	return ms, true
}

// detectOn is when r's breaker was first open in episode e, after its
// start: 0 when it was not CLOSED as the episode began (it tripped before,
// up to its first bucket before it, or was still open from an earlier
// trip), else when it first opened inside it.
func detectOn(e episode, r *run) (ms int64, ok bool) {
	from := e.from - e.firstMs
	i, _ := slices.BinarySearchFunc(r.steps, from, func(s step, at int64) int { return cmp.Compare(s.at, at) })
	if i > 0 && r.steps[i-1].to != core.Closed {
		return 0, true
	}
	for ; i < len(r.steps) && r.steps[i].at < e.to; i++ {
		if r.steps[i].to != core.Closed {
			return max(r.steps[i].at-e.from, 0), true
		}
	}
	return 0, false
}

// MarshalJSON writes DetectMs as [] when no outage was caught.
func (m Metrics) MarshalJSON() ([]byte, error) {
	type plain Metrics
	p := plain(m)
	if p.DetectMs == nil {
		p.DetectMs = []int64{}
	}
	return json.Marshal(p)
}

// sideTotals are one reading's counts over every case.
type sideTotals struct{ trips, low, probes, passed, blocked int64 }

func addRuns(t *[len(sides)]sideTotals, runs [len(sides)]*run) {
	for s, r := range runs {
		t[s].trips += r.trips
		t[s].low += r.lowConf
		t[s].probes += r.probes
		t[s].passed += r.passedOutage
		t[s].blocked += r.blocked
	}
}

// settle sets m's counts from the readings' totals: each count the
// reading's whose total is worse for the rule (a number one reading gave,
// not a sum of worst cases), the calls as a range over both.
func settle(m *Metrics, t [len(sides)]sideTotals) {
	m.Trips, m.LowConfidenceTrips, m.Probes = max(t[0].trips, t[1].trips), max(t[0].low, t[1].low), max(t[0].probes, t[1].probes)
	m.TripsRange = Range{min(t[0].trips, t[1].trips), m.Trips}
	m.LowConfidenceRange = Range{min(t[0].low, t[1].low), m.LowConfidenceTrips}
	m.ProbesRange = Range{min(t[0].probes, t[1].probes), m.Probes}
	m.PassedDuringOutage = Range{min(t[0].passed, t[1].passed), max(t[0].passed, t[1].passed)}
	m.BlockedHealthy = Range{min(t[0].blocked, t[1].blocked), max(t[0].blocked, t[1].blocked)}
}
