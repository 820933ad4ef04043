package triage

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/sentinel-top/sentinel-top/collector/fleet"
	"github.com/sentinel-top/sentinel-top/core"
)

// The inert-rule detector: rules that cannot act on the traffic seen. Each
// reason is a check of its own (cannotTrip, nameMismatch, originMismatch in
// origin.go) feeding one finding per app and resource.

// InertReason says why a rule cannot act.
type InertReason string

// The reasons of inert-rule.
const (
	// InertCannotTrip: a breaker's minRequestAmount (or error count)
	// exceeds the most completions any of its statistic windows held, or
	// its ratio threshold is 1.0 while windows held a majority but not all
	// bad calls.
	InertCannotTrip InertReason = "cannot-trip"
	// InertNameMismatch: the rule's resource saw no traffic, while a
	// resource with traffic has the same name ignoring case and
	// surrounding spaces.
	InertNameMismatch InertReason = "name-mismatch"
	// InertOriginMismatch: a Java flow rule whose limitApp is the app's own
	// name, which limits only the calls the app makes to itself.
	InertOriginMismatch InertReason = "origin-mismatch"
)

// InertMinReportMs is how long the traffic a rule is judged against must
// have been reported: a rule is not inert for a minute of quiet.
const InertMinReportMs = 60_000

// Bounds of the windows followed per series.
const (
	windowSlots = 32 // counts kept per window: exact up to windowSlots buckets
	maxWindows  = 4  // distinct statIntervalMs followed per series
)

// inertIndex is what Findings reads: the windows whose breakers have not
// yet seen minRequestAmount completions, the pairs of a rule without
// traffic and a resource of nearly its name with traffic, and the
// resources whose rules name a caller in limitApp.
// inertDetector is the inert-rule detector's own state: the e it
// observes, the windows that may have become judgeable, and the name and
// origin candidates.
type inertDetector struct {
	e       *Engine
	windows []*windowMax
	ones    []*series // series that had a breaker with a ratio threshold of 1.0
	names   map[nameCand]struct{}
	origins map[originCand]struct{}
}

func (d *inertDetector) init(e *Engine) detector { d.e = e; return d }
func (*inertDetector) kind() Kind                { return KindInertRule }

type nameCand struct {
	in         *instState
	rule, near string
}

// windows are a series' windowMax, one per statIntervalMs of the
// instance's breakers for the resource.
type windows struct {
	ws []*windowMax
}

// windowMax follows the most completions one resource on one instance held
// in any window of statIntervalMs, at the resolution of its buckets: the
// sum over a sliding run of ceil(interval / bucket) buckets. Windows longer
// than windowSlots buckets sum slots of several buckets, over one slot more
// than the window: an upper bound, so that cannot-trip never overstates.
// A slot keeps at most 2^32 - 1 completions: a fuller one leaving the
// window takes back only that much from sum, which stays an upper bound.
type windowMax struct {
	s        *series
	interval int64  // statIntervalMs
	need     uint64 // the most completions a breaker with this interval needs to trip (tripNeed)
	live     bool   // still one of the series' windows
	listed   bool   // in the engine's inertIndex

	bucketMs, slotMs, span int64
	ring                   [windowSlots]uint32
	head                   int64 // index of the newest slot: its start / slotMs
	has                    bool
	sum, max               int64
}

// setup starts the ring over for buckets of bm ms; max is kept.
func (w *windowMax) setup(bm int64) {
	w.bucketMs, w.has, w.sum, w.ring = bm, false, 0, [windowSlots]uint32{}
	n := (w.interval + bm - 1) / bm
	if n <= windowSlots {
		w.slotMs, w.span = bm, n
		return
	}
	c := (n + windowSlots - 2) / (windowSlots - 1)
	w.slotMs = bm * c
	w.span = (w.interval+w.slotMs-1)/w.slotMs + 1
}

// add counts the completions of a bucket starting at start.
func (w *windowMax) add(start, bm, n int64) {
	if w.bucketMs != bm {
		w.setup(bm)
	}
	idx := start / w.slotMs
	switch {
	case !w.has:
		w.has, w.head = true, idx
	case idx > w.head:
		if idx-w.head >= w.span {
			w.ring, w.sum = [windowSlots]uint32{}, 0
		} else {
			for k := w.head + 1; k <= idx; k++ {
				w.sum -= int64(w.ring[(k-w.span)%windowSlots]) // the slot leaving the window
				w.ring[k%windowSlots] = 0
			}
		}
		w.head = idx
	case idx <= w.head-w.span:
		return // older than the window
	}
	w.ring[idx%windowSlots] = uint32(min(int64(w.ring[idx%windowSlots])+n, math.MaxUint32))
	w.sum += n
	w.max = max(w.max, w.sum)
}

// syncWindows gives a series one window per statIntervalMs of the
// instance's breakers for its resource (rr, nil for none), keeping the
// maxima of the intervals it already followed.
func (e *Engine) syncWindows(s *series, rr *resRules) {
	s.syncRuleWindows(rr)
	if !s.oneListed && slices.ContainsFunc(s.rw, func(w *ruleWindows) bool { return ratioOne(w.rule) }) {
		s.oneListed = true
		e.inert.ones = append(e.inert.ones, s)
	}
	w := &s.win
	s.winSynced = true
	old := w.ws
	w.ws = nil
	if rr != nil {
		for _, b := range rr.Breakers {
			iv := int64(b.StatIntervalMs)
			i := slices.IndexFunc(w.ws, func(x *windowMax) bool { return x.interval == iv })
			if i < 0 {
				if iv <= 0 || len(w.ws) == maxWindows {
					continue
				}
				x := &windowMax{s: s, interval: iv}
				if j := slices.IndexFunc(old, func(x *windowMax) bool { return x.interval == iv }); j >= 0 {
					x = old[j]
					x.need = 0
				}
				w.ws = append(w.ws, x)
				i = len(w.ws) - 1
			}
			w.ws[i].need = max(w.ws[i].need, tripNeed(&b))
		}
	}
	for _, x := range old {
		x.live = false
	}
	for _, x := range w.ws {
		x.live = true
		if !x.listed && x.need > uint64(x.max) {
			x.listed = true
			e.inert.windows = append(e.inert.windows, x)
		}
	}
}

// rules follows an instance's new rules: its series' windows, and
// the rules whose resource has no traffic while one of nearly its name has.
func (d *inertDetector) rules(in *instState, _ int64, _ *fleet.Rules) {
	e := d.e
	for _, s := range in.seriesList {
		e.syncWindows(s, in.rulesOf(s.resource))
	}
	e.originRules(in)
	if len(in.seriesList) == 0 {
		return
	}
	byFold := map[string][]string{}
	for r := range in.rules() {
		if !hasTraffic(in.series[r]) {
			k := foldName(r)
			byFold[k] = append(byFold[k], r)
		}
	}
	for _, s := range in.seriesList {
		if hasTraffic(s) {
			for _, r := range byFold[foldName(s.resource)] {
				e.addNameCand(in, r, s.resource)
			}
		}
	}
}

// inertBucket counts a bucket's completions in the series' windows; the
// series' first traffic (offered is this bucket's) may be what a rule of
// nearly its name misses.
func (d *inertDetector) bucket(s *series, b *takenBucket) {
	e, start, bm, complete, offered := d.e, b.Start, b.bm, b.Complete, b.offered
	if !s.winSynced {
		e.syncWindows(s, s.rr)
	}
	for _, w := range s.win.ws {
		w.add(start, bm, max(complete, 0))
	}
	for _, w := range s.rw {
		w.add(s, b)
	}
	if offered > 0 && s.offered == offered {
		k := foldName(s.resource)
		for r := range s.inst.rules() {
			if r != s.resource && foldName(r) == k && !hasTraffic(s.inst.series[r]) {
				e.addNameCand(s.inst, r, s.resource)
			}
		}
	}
}

func (e *Engine) addNameCand(in *instState, rule, near string) {
	if e.inert.names == nil {
		e.inert.names = map[nameCand]struct{}{}
	}
	e.inert.names[nameCand{in: in, rule: rule, near: near}] = struct{}{}
}

// foldName is a resource name ignoring case and surrounding spaces.
func foldName(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// hasTraffic reports whether a series was offered entries.
func hasTraffic(s *series) bool { return s != nil && s.offered > 0 }

// inertHit is one instance's inert rule.
type inertHit struct {
	in       *instState
	resource string
	facts    InertRuleFacts
	from, to int64
}

// cannotTrip judges a window's breakers: the first (in rule order) whose
// minRequestAmount exceeds the window's maximum, on a series reported for
// InertMinReportMs whose completions reached the window and whose breaker
// for that rule never left CLOSED.
func cannotTrip(w *windowMax) (inertHit, bool) {
	s := w.s
	rr := s.rr
	if rr == nil || w.max <= 0 || s.reportedMs < InertMinReportMs {
		return inertHit{}, false
	}
	for _, b := range rr.Breakers {
		if int64(b.StatIntervalMs) != w.interval || tripNeed(&b) <= uint64(w.max) || tripped(s, b.ID) ||
			b.Strategy == core.AverageRT { // its minRequestAmount counts slow calls in a row, not a window
			continue
		}
		x := InertRuleFacts{Reason: InertCannotTrip, Rule: RuleSet{Breakers: []core.BreakerRule{b}}, MaxWindowRequests: w.max}
		x.CountOver = b.MinRequestAmount <= uint64(w.max)
		x.Suggest = cannotTripSuggest(b, w.max)
		x.setBadPassed(s.ruleWindowsOf(&b))
		return inertHit{in: s.inst, resource: s.resource, facts: x, from: s.firstAt, to: s.endAt}, true
	}
	return inertHit{}, false
}

// tripNeed is the most completions a window must hold for the breaker to
// trip: its minRequestAmount, and for an error count the errors that trip
// it (a count above a window's calls is never reached).
func tripNeed(b *core.BreakerRule) uint64 {
	if b.Strategy == core.ErrorCount {
		return max(b.MinRequestAmount, uint64(max(errorsToTrip(b), 0)))
	}
	return b.MinRequestAmount
}

// InertRatioOneThreshold is the ratio threshold cannot-trip proposes for a
// breaker whose threshold is 1.0: a window where half of the calls are
// bad trips it (Java: more than half), as every window it missed held.
const InertRatioOneThreshold = 0.5

// ratioOneTrip judges a series' breakers with a ratio threshold of 1.0:
// the first (in rule order) that never left CLOSED while its windows that
// held a majority but not all bad calls (ruleWindows) let
// AdviceMinRequests bad calls or more through, on a series reported for
// InertMinReportMs, and whose minRequestAmount its windows reach (else
// cannotTrip judges it).
func ratioOneTrip(s *series) (inertHit, bool) {
	if s.reportedMs < InertMinReportMs {
		return inertHit{}, false
	}
	for _, w := range s.rw {
		b := *w.rule
		if !ratioOne(&b) || tripped(s, b.ID) || b.MinRequestAmount > uint64(s.win.most(int64(b.StatIntervalMs))) {
			continue
		}
		f := w.failingNow()
		if f.bad < AdviceMinRequests {
			continue
		}
		x := InertRuleFacts{Reason: InertCannotTrip, Rule: RuleSet{Breakers: []core.BreakerRule{b}}, RatioOne: true,
			Suggest: &InertSuggest{Threshold: InertRatioOneThreshold}}
		x.setBadPassed(w)
		return inertHit{in: s.inst, resource: s.resource, facts: x, from: s.firstAt, to: s.endAt}, true
	}
	return inertHit{}, false
}

// most is the most completions the series' window of that interval held
// (0 when it follows none).
func (w *windows) most(interval int64) int64 {
	for _, x := range w.ws {
		if x.interval == interval {
			return x.max
		}
	}
	return 0
}

// setBadPassed takes the bad calls let through in the windows of w (nil:
// none followed) that showed the failure.
func (x *InertRuleFacts) setBadPassed(w *ruleWindows) {
	var f failingWindows
	if w != nil {
		f = w.failingNow()
	}
	x.BadPassed = &f.bad
	x.BadWindows, x.BadWindowCalls, x.BadFrom, x.BadTo, x.Inferred = f.n, f.calls, f.from, f.to, f.means
}

// tripped reports whether the series' breaker of that rule id changed state.
func tripped(s *series, ruleID string) bool {
	return slices.ContainsFunc(s.breakers, func(b *breaker) bool { return b.moved && (b.ruleID == ruleID || ruleID == "") })
}

// cannotTripSuggest is a minRequestAmount a busiest window held ten times
// over (so that the breaker can still trip at a tenth of the traffic seen),
// at least AdviceMinRequests; with fewer completions than that in the
// busiest window, also a statIntervalMs, in whole seconds, that holds them.
// For an error count above a window's calls (its minRequestAmount within
// them), a count of a tenth of the busiest window.
func cannotTripSuggest(b core.BreakerRule, most int64) *InertSuggest {
	if b.MinRequestAmount <= uint64(most) && b.Strategy == core.ErrorCount {
		// The count alone is out of reach: a tenth of the busiest window
		// failing trips it (Java: more than that).
		return &InertSuggest{Threshold: float64(max(most/10, 1))}
	}
	s := &InertSuggest{MinRequestAmount: uint64(max(most/10, AdviceMinRequests))}
	if most < AdviceMinRequests {
		iv := (int64(b.StatIntervalMs)*AdviceMinRequests + most - 1) / most
		s.StatIntervalMs = uint32(min((iv+999)/1000*1000, math.MaxUint32))
	}
	return s
}

// nameMismatch judges a candidate: the rule is still loaded and its
// resource still has no traffic, while the near resource's traffic was
// reported for InertMinReportMs. Candidates that can no longer hold are
// reported as gone.
func nameMismatch(c nameCand) (hit inertHit, ok, gone bool) {
	rr := c.in.rulesOf(c.rule)
	if rr == nil || hasTraffic(c.in.series[c.rule]) {
		return inertHit{}, false, true
	}
	s := c.in.series[c.near]
	if !hasTraffic(s) || s.reportedMs < InertMinReportMs {
		return inertHit{}, false, false
	}
	x := InertRuleFacts{
		Reason: InertNameMismatch, Near: c.near, NearEntries: s.offered,
		Rule: RuleSet{Breakers: slices.Clone(rr.Breakers), Flows: slices.Clone(rr.Flows)},
	}
	return inertHit{in: c.in, resource: c.rule, facts: x, from: s.firstAt, to: s.endAt}, true, false
}

// judgeCands appends the hits of a check's candidates, forgetting those
// that can no longer hold.
func judgeCands[C comparable](cands map[C]struct{}, judge func(C) (h inertHit, ok, gone bool), hits []inertHit) []inertHit {
	for c := range cands {
		h, ok, gone := judge(c)
		switch {
		case gone:
			delete(cands, c)
		case ok:
			hits = append(hits, h)
		}
	}
	return hits
}

// inert-rule: one finding per app and resource, whose reason, rule and near
// resource are those of its first instance by name (then reason); the
// instances with the same reason are merged, maxWindowRequests is the
// largest of theirs, the entries offered their sum and the QPS the highest
// of theirs, From and To bound their traffic (of the near resource for
// name-mismatch). Always a warning.
func (d *inertDetector) findings(_ int64, out []Finding) []Finding {
	e := d.e
	var hits []inertHit
	kept := e.inert.windows[:0]
	for _, w := range e.inert.windows {
		if !w.live || w.need <= uint64(w.max) {
			w.listed = false // its breakers trip, or are gone: Rules lists it again if need be
			continue
		}
		kept = append(kept, w)
		if h, ok := cannotTrip(w); ok {
			hits = append(hits, h)
		}
	}
	clear(e.inert.windows[len(kept):])
	e.inert.windows = kept
	for _, s := range e.inert.ones {
		if h, ok := ratioOneTrip(s); ok {
			hits = append(hits, h)
		}
	}
	hits = judgeCands(e.inert.names, nameMismatch, hits)
	hits = judgeCands(e.inert.origins, originMismatch, hits)
	slices.SortFunc(hits, func(a, b inertHit) int {
		return cmp.Or(strings.Compare(a.in.app.name, b.in.app.name), strings.Compare(a.resource, b.resource),
			strings.Compare(a.in.id.Name, b.in.id.Name), cmp.Compare(a.in.seq, b.in.seq),
			strings.Compare(string(a.facts.Reason), string(b.facts.Reason)), strings.Compare(a.facts.Near, b.facts.Near))
	})
	for i := 0; i < len(hits); {
		first := hits[i]
		x := first.facts
		f := Finding{Kind: KindInertRule, Severity: Warning, App: first.in.app.name, Resource: first.resource, From: first.from, To: first.to}
		var insts []*instState
		j := i
		for ; j < len(hits) && hits[j].in.app == first.in.app && hits[j].resource == first.resource; j++ {
			h := &hits[j]
			if h.facts.Reason != x.Reason {
				continue
			}
			insts = append(insts, h.in)
			f.From, f.To = min(f.From, h.from), max(f.To, h.to)
			if j > i {
				x.mergeBadPassed(&h.facts)
				x.MaxWindowRequests = max(x.MaxWindowRequests, h.facts.MaxWindowRequests)
				if h.facts.Near == x.Near {
					x.NearEntries += h.facts.NearEntries
				}
				x.Offered += h.facts.Offered
				x.QPS = max(x.QPS, h.facts.QPS)
			}
		}
		i = j
		switch {
		case x.RatioOne:
			x.Suggest = &InertSuggest{Threshold: InertRatioOneThreshold}
		case x.Suggest != nil:
			x.Suggest = cannotTripSuggest(x.Rule.Breakers[0], x.MaxWindowRequests)
		case x.Reason == InertOriginMismatch:
			x.Suggest = &InertSuggest{LimitApp: limitAppDefault}
		}
		f.Facts = &x
		e.complete(&f, insts)
		out = append(out, f)
	}
	return out
}

// InertRuleFacts: a rule that cannot act on the traffic seen.
type InertRuleFacts struct {
	// Reason is why it cannot act.
	Reason InertReason `json:"reason"`
	// Rule is the breaker that cannot trip, or every rule of the resource
	// without traffic.
	Rule RuleSet `json:"rule"`
	// MaxWindowRequests (cannot-trip) is the most completions any of the
	// breaker's statistic windows held.
	MaxWindowRequests int64 `json:"maxWindowRequests,omitempty"`
	// Near (name-mismatch) is the resource with traffic whose name differs
	// only in case or surrounding spaces, and NearEntries the entries it was
	// offered.
	Near        string `json:"near,omitempty"`
	NearEntries int64  `json:"-"`
	// Offered (origin-mismatch) is the entries the resource was offered on
	// the instances, and QPS the highest of their mean offered loads: the
	// traffic the rule was not applied to.
	Offered int64   `json:"-"`
	QPS     float64 `json:"-"`
	// Suggest (cannot-trip, origin-mismatch) is the rule values the advice
	// proposes.
	Suggest *InertSuggest `json:"suggest,omitempty"`
	// BadPassed (cannot-trip) counts the bad calls the breaker let
	// through while it stayed closed, in the windows that showed the
	// failure it missed (inertbad.go): BadWindows of them, with
	// BadWindowCalls completions, from BadFrom to BadTo. Inferred: some
	// were judged from Java's per-second mean response times.
	BadPassed      *int64 `json:"badPassed,omitempty"`
	Inferred       bool   `json:"inferred,omitempty"`
	BadWindows     int64  `json:"-"`
	BadWindowCalls int64  `json:"-"`
	BadFrom, BadTo int64  `json:"-"`
	// RatioOne (cannot-trip): the breaker's ratio threshold is 1.0, which
	// windows of a majority of bad calls did not reach. CountOver: the
	// breaker's error count is more than a window's calls (its
	// minRequestAmount is not).
	RatioOne  bool `json:"-"`
	CountOver bool `json:"-"`
}

// mergeBadPassed adds another instance's bad calls.
func (x *InertRuleFacts) mergeBadPassed(y *InertRuleFacts) {
	if y.BadPassed == nil {
		return
	}
	n := *y.BadPassed
	if x.BadPassed != nil {
		n += *x.BadPassed
	}
	x.BadPassed = &n
	if y.BadWindows > 0 {
		if x.BadWindows == 0 {
			x.BadFrom, x.BadTo = y.BadFrom, y.BadTo
		}
		x.BadFrom, x.BadTo = min(x.BadFrom, y.BadFrom), max(x.BadTo, y.BadTo)
	}
	x.BadWindows += y.BadWindows
	x.BadWindowCalls += y.BadWindowCalls
	x.Inferred = x.Inferred || y.Inferred
}

// InertSuggest is the rule values inert-rule proposes: for cannot-trip a
// minRequestAmount the windows reach, and the statIntervalMs that holds it
// when the current one does not, or for a ratio threshold of 1.0 the
// threshold InertRatioOneThreshold; for origin-mismatch limitApp
// "default" (every caller).
type InertSuggest struct {
	MinRequestAmount uint64  `json:"minRequestAmount,omitempty"`
	StatIntervalMs   uint32  `json:"statIntervalMs,omitempty"`
	Threshold        float64 `json:"threshold,omitempty"`
	LimitApp         string  `json:"limitApp,omitempty"`
}

// Kind is KindInertRule.
func (*InertRuleFacts) Kind() Kind { return KindInertRule }

// Evidence lists the reason, the rule and what it misses.
func (f *InertRuleFacts) Evidence() []Fact {
	out := []Fact{{Label: "Reason", Parts: []Part{{Text: string(f.Reason)}}, Rules: &f.Rule}}
	switch f.Reason {
	case InertCannotTrip:
		if f.MaxWindowRequests > 0 {
			out = append(out, text("Busiest window", itoa(f.MaxWindowRequests)+" completions"))
		}
		if f.BadPassed != nil {
			p := itoa(*f.BadPassed) + " bad calls"
			if f.BadWindows > 0 {
				p += ", of " + itoa(f.BadWindowCalls) + " in " + itoa(f.BadWindows) + " windows that showed the failure"
			}
			if f.Inferred {
				p = itoa(*f.BadPassed) + " calls in " + itoa(f.BadWindows) +
					" windows that showed the failure, judged from Java's per-second mean response times (every call of a second whose mean was over the bound)"
			}
			out = append(out, text("Passed while closed", p))
		}
		if s := f.Suggest; s != nil {
			var p []string
			if s.Threshold > 0 {
				p = append(p, "threshold "+fmtNum(s.Threshold))
			}
			if s.MinRequestAmount > 0 {
				p = append(p, "minRequestAmount "+itoa(int64(s.MinRequestAmount)))
			}
			if s.StatIntervalMs > 0 {
				p = append(p, "statIntervalMs "+itoa(int64(s.StatIntervalMs)))
			}
			if len(p) > 0 {
				out = append(out, text("Proposed", strings.Join(p, ", ")))
			}
		}
	case InertNameMismatch:
		out = append(out, Fact{Label: "Traffic under", Parts: []Part{{Input: []string{f.Near}}, {Text: ", " + itoa(f.NearEntries) + " entries"}}})
	case InertOriginMismatch:
		out = append(out, text("Offered", itoa(f.Offered)+" entries, up to "+fmtFloat(f.QPS, 1)+" QPS on one instance"),
			text("Proposed", "limitApp "+limitAppDefault))
	}
	return out
}
