package triage

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/sentinel-top/sentinel-top/collector/fleet"
	"github.com/sentinel-top/sentinel-top/core"
)

// The warm-up detector: flow blocks of a WarmUp rule's cold start. A new
// warm-up controller (a process start, or a changed rule) starts cold,
// admitting threshold / warmUpColdFactor, and its limit rises as the calls
// it admits use up its stored tokens (core's flowWarmUp, sentinel-golang's
// and Java Sentinel's WarmUpController alike). Blocks in that span look
// like an overload and are not one.
//
// Each series with a WarmUp rule replays the controller's token bucket
// from the instance's passes, second by second, exactly as the controller
// counts them (it reads the previous whole second's passes once a
// second), from the controller's start until its limit reaches the
// threshold: the span. A second's blocks are the warm-up's when its passes
// reached the modelled limit (the warm-up bound them), counting only those
// the full threshold would have admitted. A span whose passes went over
// the modelled limit was not a cold start (the controller was older than
// the input says) and is dropped whole.

// Tolerances of warm-up's replay of the token bucket, for the races of
// concurrent entries: a second's passes are within the modelled limit's
// floor by WarmUpSlackCalls or WarmUpSlackPercent of it, whichever is more.
const (
	WarmUpSlackCalls   = 2
	WarmUpSlackPercent = 5
	// WarmUpWarnPercent is the share of the calls offered in the spans
	// that the warm-up must block for a warning (findings-v1: 5 %).
	WarmUpWarnPercent = 5
)

// warmStart is when a resource's warm-up controller was made in an
// instance's process (0: not known), and whether by a rule load within the
// running process rather than at its start.
type warmStart struct {
	at   int64
	load bool
}

// warmInst is an instance's warm-up state: for each resource with a
// WarmUp rule, when its controller was made, as of the process that
// started at proc; gen changes whenever since is made anew.
type warmInst struct {
	proc  int64
	gen   uint32
	since map[string]warmStart
}

// warmModel is one warm-up controller's token bucket, as core's flowWarmUp
// keeps it, synchronised once per whole second from the passes of the
// second before.
type warmModel struct {
	threshold  float64
	coldFactor uint32
	warn, max  int64
	slope      float64
	tokens     int64
	last       int64 // the second last synchronised (Unix ms)
	synced     bool
}

// newWarmModel sizes the bucket of a warm-up rule as core.NewFlowController
// does (keeping its operand order, so that the floats round the same);
// false when the rule leaves no room between the warning line and the
// top (a threshold too small to warm up).
func newWarmModel(r core.FlowRule) (warmModel, bool) {
	cf := r.WarmUpColdFactor
	if cf <= 1 {
		cf = 3 // core's flowDefaultColdFactor
	}
	period, t := float64(r.WarmUpPeriodSec), r.Threshold
	warn := uint64((period * t) / float64(cf-1))
	top := warn + uint64(2*period*t/float64(1+cf))
	if top <= warn || top > math.MaxInt64/2 {
		return warmModel{}, false
	}
	return warmModel{threshold: t, coldFactor: cf, warn: int64(warn), max: int64(top),
		slope: float64(cf-1) / t / float64(top-warn)}, true
}

// sync is the controller's syncTokens at the first check of the second
// that starts at sec, given the passes of the second before: the first
// ever fills the bucket (its last fill is at the epoch), later ones add
// the tokens earned since below the warning line, and above it only while
// traffic stays under threshold / coldFactor; then what passed is taken
// out.
func (m *warmModel) sync(sec, prevPass int64) {
	if m.synced && sec <= m.last {
		return
	}
	old := m.tokens
	refilled := old
	earned := func() int64 { return int64(float64(old) + float64(sec-m.last)*m.threshold/1000.0) }
	switch {
	case !m.synced:
		refilled = m.max
	case old < m.warn:
		refilled = earned()
	case old > m.warn && float64(prevPass) < float64(uint32(m.threshold)/m.coldFactor):
		refilled = earned()
	}
	refilled = min(refilled, m.max)
	m.tokens = max(refilled-prevPass, 0)
	m.last, m.synced = sec, true
}

// warm reports whether the limit has reached the threshold.
func (m *warmModel) warm() bool { return m.synced && m.tokens <= m.warn }

// limit is the rate the controller admits now (allowedTokens).
func (m *warmModel) limit() float64 {
	if m.tokens < m.warn {
		return m.threshold
	}
	above := m.tokens - m.warn
	return math.Nextafter(1.0/(float64(above)*m.slope+1.0/m.threshold), math.MaxFloat64)
}

// warmSpan is one controller's cold start on a series: from its start to
// the end of the last second replayed (to), or to the second its limit
// reached the threshold (done). blocked are the warm-up's blocks, offered
// the calls (pass + block) of the seconds replayed, secs how many.
type warmSpan struct {
	on, done, bad, load bool
	from, to            int64
	model               warmModel
	rule                core.FlowRule
	full                int64 // calls a second the resource's flow rules admit once warm
	blocked, offered    int64
	secs                int64
}

// warmSecond sums the buckets of one whole second of a series, by half
// (the controller's statistic is two 500 ms buckets) when its buckets
// split it so (whole: buckets of a second).
type warmSecond struct {
	has, whole  bool
	start       int64
	pass, block [2]int64
}

// passed is the second's passes.
func (c *warmSecond) passed() int64 { return c.pass[0] + c.pass[1] }

// warmSeries is a series' warm-up state: the controller it follows (made
// at began, as of its instance's warm-up generation gen of process proc),
// the span replayed, the second being summed and the previous one's passes,
// and its spans with warm-up blocks, merged (best). listed: in the
// detector's series.
type warmSeries struct {
	gen    uint32
	proc   int64
	began  warmStart
	rule   core.FlowRule
	cur    warmSpan
	sec    warmSecond
	prev   warmSecond // the second before, once closed
	best   warmTotal
	listed bool
}

// warmTotal is a series' spans with warm-up blocks, merged: the earliest
// span's rule, the number of spans (loads of them begun by
// a rule load), the longest, and the highest offered rate of one.
type warmTotal struct {
	spans, loads     int64
	from, to         int64
	blocked, offered int64
	rule             core.FlowRule
	longestMs        int64
	peakQPS          float64
}

// add merges span sp into t.
func (t *warmTotal) add(sp *warmSpan) {
	if t.spans == 0 || sp.from < t.from {
		t.from, t.rule = sp.from, sp.rule
	}
	t.to = max(t.to, sp.to)
	t.spans++
	if sp.load {
		t.loads++
	}
	t.blocked += sp.blocked
	t.offered += sp.offered
	t.longestMs = max(t.longestMs, sp.to-sp.from)
	if sp.secs > 0 {
		t.peakQPS = max(t.peakQPS, float64(sp.offered)/float64(sp.secs))
	}
}

// merge merges o into t.
func (t *warmTotal) merge(o *warmTotal) {
	if o.spans == 0 {
		return
	}
	if t.spans == 0 || o.from < t.from {
		t.from, t.rule = o.from, o.rule
	}
	t.to = max(t.to, o.to)
	t.spans += o.spans
	t.loads += o.loads
	t.blocked += o.blocked
	t.offered += o.offered
	t.longestMs = max(t.longestMs, o.longestMs)
	t.peakQPS = max(t.peakQPS, o.peakQPS)
}

// counts reports whether the span goes in a finding: it replayed a cold
// start that blocked calls.
func (sp *warmSpan) counts() bool { return sp.on && !sp.bad && sp.blocked > 0 }

// warmRule is the first warm-up rule of rr the replay can follow: a
// WarmUp rule on the default one-second statistic (sentinel-golang's
// StatIntervalInMs 0 or 1000; Java's flow rules always are) with a bucket
// to warm up.
func warmRule(rr *resRules) (core.FlowRule, bool) {
	if rr == nil {
		return core.FlowRule{}, false
	}
	for _, r := range rr.Flows {
		if r.TokenCalculateStrategy != core.WarmUp || (r.StatIntervalInMs != 0 && r.StatIntervalInMs != 1000) {
			continue
		}
		if _, ok := newWarmModel(r); ok && r.Threshold >= 1 {
			return r, true
		}
	}
	return core.FlowRule{}, false
}

// fullLimit is how many calls a second the resource's flow rules admit once
// warm: the lowest of their thresholds, per second.
func fullLimit(rr *resRules) int64 {
	full := math.Inf(1)
	for _, r := range rr.Flows {
		iv := float64(r.StatIntervalInMs)
		if iv == 0 {
			iv = 1000
		}
		full = min(full, r.Threshold*1000/iv)
	}
	return int64(math.Floor(min(full, math.MaxInt32)))
}

// rules notes when the instance's warm-up controllers were made: at the
// process's start for the first rules of a process (or when they were
// loaded, if later; unknown when the start is), and at ts for a rule that
// changed within the running process. core and sentinel-golang keep the
// controller of an unchanged rule; Java Sentinel makes every flow
// controller anew when any flow rule changes (a rule with limitApp is
// Java's).
func (d *warmUpDetector) rules(in *instState, ts int64, prev *fleet.Rules) {
	d.e.warmRules(in, ts, prev, false)
}

// warmRules is rules; atStart says the process's rules are those it
// started with (a bucket of a new process came before its rules).
func (e *Engine) warmRules(in *instState, ts int64, prev *fleet.Rules, atStart bool) {
	w := in.warm
	newProc := atStart || w == nil || w.proc != in.id.StartedAt
	var since map[string]warmStart
	javaReload := false
	if !newProc {
		javaReload = flowsChanged(prev, in.id.Rules)
	}
	for res, rr := range in.rules() {
		r, ok := warmRule(rr)
		if !ok {
			continue
		}
		var st warmStart
		switch old, had := warmRule(prev.Of(res)); {
		case newProc:
			if in.id.StartedAt > 0 {
				st.at = max(in.id.StartedAt, ts)
			}
		case !had || old != r || (r.LimitApp != "" && javaReload):
			st = warmStart{at: ts, load: true}
		default:
			st = w.since[res]
		}
		if since == nil {
			since = map[string]warmStart{}
		}
		since[res] = st
	}
	if w == nil {
		w = &warmInst{} // kept for every instance with rules: whose process its rules were
		in.warm = w
	}
	w.proc, w.since = in.id.StartedAt, since
	w.gen++
}

// flowsChanged reports whether two rule sets' flow rules differ.
func flowsChanged(a, b *fleet.Rules) bool {
	flows := func(r *fleet.Rules, res string) []core.FlowRule {
		if rr := r.Of(res); rr != nil {
			return rr.Flows
		}
		return nil
	}
	for _, r := range []*fleet.Rules{a, b} {
		if r == nil {
			continue
		}
		for res := range r.Resources {
			if !slices.Equal(flows(a, res), flows(b, res)) {
				return true
			}
		}
	}
	return false
}

// bucket replays the series' warm-up controller through one more bucket.
func (d *warmUpDetector) bucket(s *series, b *takenBucket) {
	w := s.warm
	if w == nil {
		if _, ok := warmRule(s.rr); !ok {
			return // most series: no warm-up rule, nothing kept
		}
		w = &warmSeries{}
		s.warm = w
	}
	d.e.warmBucket(s, w, b)
}

func (e *Engine) warmBucket(s *series, w *warmSeries, b *takenBucket) {
	in := s.inst
	if in.warm == nil || in.warm.proc != in.id.StartedAt {
		e.warmRules(in, in.id.StartedAt, nil, true) // a new process, its rules not told yet
	}
	if iw := in.warm; iw != nil && (w.gen != iw.gen || w.proc != iw.proc) {
		st := iw.since[s.resource]
		r, ok := warmRule(s.rr)
		if !ok {
			st = warmStart{}
		}
		w.gen, w.proc = iw.gen, iw.proc
		if st != w.began || r != w.rule {
			e.endWarmSpan(s, w)
			w.began, w.rule = st, r
			if st.at > 0 {
				e.beginWarmSpan(s, w, st, r)
			}
		}
	}
	if 1000%b.bm != 0 {
		// Buckets that do not divide a second cannot be summed into the
		// seconds the controller counts.
		e.endWarmSpan(s, w)
		return
	}
	sec := b.Start - floorMod(b.Start, 1000)
	if w.sec.has && sec != w.sec.start {
		w.closeSecond()
		if w.cur.on && !w.cur.done && sec > w.prev.start+1000 && s.inst.unreceived(w.prev.start+1000, sec) {
			// Seconds whose passes never arrived: the replay lost count.
			e.endWarmSpan(s, w)
		}
	}
	if !w.sec.has || sec != w.sec.start {
		w.sec = warmSecond{has: true, start: sec}
	}
	half := 0
	if b.Start-sec >= 500 {
		half = 1
	}
	w.sec.whole = w.sec.whole || b.bm > 500
	w.sec.pass[half] += b.pass
	w.sec.block[half] += b.offered - b.pass
	if !w.listed && w.cur.on && !w.cur.bad && (w.cur.blocked > 0 || w.sec.block != [2]int64{}) {
		w.listed = true
		e.warm.series = append(e.warm.series, s)
	}
}

func floorMod(a, m int64) int64 {
	r := a % m
	if r < 0 {
		r += m
	}
	return r
}

// beginWarmSpan starts replaying a controller made at st.
func (e *Engine) beginWarmSpan(s *series, w *warmSeries, st warmStart, r core.FlowRule) {
	m, _ := newWarmModel(r)
	w.cur = warmSpan{on: true, load: st.load, from: st.at, to: st.at, model: m, rule: r, full: fullLimit(s.rr)}
}

// endWarmSpan ends the span replayed, keeping it if it counts.
func (e *Engine) endWarmSpan(s *series, w *warmSeries) {
	if w.cur.counts() {
		w.best.add(&w.cur)
		if !w.listed {
			w.listed = true
			e.warm.series = append(e.warm.series, s)
		}
	}
	w.cur = warmSpan{}
}

// closeSecond replays the second summed: the controller synchronises at
// its first check, from the passes of the second before. The second's
// blocks are the warm-up's where the limit bound them: a half second's
// blocks when the statistic its checks read (that half and the one
// before) held the limit's passes, or, without halves, the second's when
// it did; and no more of them than the full threshold would have
// admitted.
func (w *warmSeries) closeSecond() {
	c := w.sec
	t := c.start
	var prev warmSecond
	if w.prev.has && w.prev.start == t-1000 {
		prev = w.prev
	}
	w.prev, w.sec = c, warmSecond{}
	sp := &w.cur
	p, bl := c.passed(), c.block[0]+c.block[1]
	if !sp.on || sp.done || sp.bad || t+1000 <= sp.from || p+bl == 0 {
		return
	}
	sp.model.sync(t, prev.passed())
	if sp.model.warm() {
		sp.done, sp.to = true, max(t, sp.from)
		return
	}
	admits := math.Floor(sp.model.limit())
	slack := max(WarmUpSlackCalls, admits*WarmUpSlackPercent/100)
	// The statistic the checks of each half read: the half before and
	// this one (the first half's, unknown without halves or a second
	// before with halves).
	first := float64(c.pass[0] + prev.pass[1])
	if c.whole || prev.whole {
		first = 0
	}
	if float64(p) > admits+slack || first > admits+slack {
		sp.bad = true // more passed than a cold controller admits
		return
	}
	sp.offered += p + bl
	sp.secs++
	sp.to = t + 1000
	var bound int64
	switch {
	case c.whole:
		if float64(p) >= admits-slack {
			bound = bl
		}
	default:
		if first >= admits-slack {
			bound += c.block[0]
		}
		if float64(p) >= admits-slack {
			bound += c.block[1]
		}
	}
	sp.blocked += min(bound, max(sp.full-p, 0))
}

// total is the series' spans with warm-up blocks as they stand, the span
// being replayed and its second being summed included.
func (w *warmSeries) total() warmTotal {
	t := w.best
	c := *w
	if c.sec.has {
		c.closeSecond()
	}
	if c.cur.counts() {
		t.add(&c.cur)
	}
	return t
}

// warmUpDetector is the warm-up detector's own state: the engine it
// observes, and its series: series with a span of warm-up blocks.
type warmUpDetector struct {
	e      *Engine
	series []*series
}

func (d *warmUpDetector) init(e *Engine) detector { d.e = e; return d }
func (*warmUpDetector) kind() Kind                { return KindWarmUp }

// warmHit is one series' spans with warm-up blocks.
type warmHit struct {
	s *series
	t warmTotal
}

// warm-up: one finding per app and resource, over the spans with warm-up
// blocks of its instances: From the earliest span's start, To the latest
// span's end; blocked and offered summed over those spans; startLimit the
// earliest span's rule's threshold / warmUpColdFactor. Info, or a warning when the warm-up blocked
// WarmUpWarnPercent or more of the calls offered in the spans.
func (d *warmUpDetector) findings(_ int64, out []Finding) []Finding {
	var hits []warmHit
	for _, s := range d.series {
		if t := s.warm.total(); t.spans > 0 {
			hits = append(hits, warmHit{s: s, t: t})
		}
	}
	slices.SortFunc(hits, func(a, b warmHit) int {
		return cmp.Or(strings.Compare(a.s.inst.app.name, b.s.inst.app.name), strings.Compare(a.s.resource, b.s.resource),
			compareInsts(a.s.inst, b.s.inst))
	})
	for i := 0; i < len(hits); {
		j := i
		var t warmTotal
		var insts []*instState
		for ; j < len(hits) && hits[j].s.ar == hits[i].s.ar; j++ {
			t.merge(&hits[j].t)
			insts = append(insts, hits[j].s.inst)
		}
		first := hits[i].s
		x := &WarmUpFacts{Blocked: t.blocked, Offered: t.offered, StartLimit: round(t.rule.Threshold/float64(coldFactor(t.rule)), 2),
			Rule: t.rule, Spans: t.spans, Loads: t.loads, LongestMs: t.longestMs, PeakQPS: round(t.peakQPS, 1)}
		f := Finding{Kind: KindWarmUp, Severity: Info, App: first.inst.app.name, Resource: first.resource,
			From: t.from, To: t.to, Facts: x}
		if t.blocked*100 >= WarmUpWarnPercent*t.offered {
			f.Severity = Warning
		}
		d.e.complete(&f, insts)
		out = append(out, f)
		i = j
	}
	return out
}

// WarmUpFacts: flow blocks of a warm-up rule's cold start. The finding's
// From and To are the span: from the first controller's start to when the
// last one's limit reached the threshold (or its last second seen).
type WarmUpFacts struct {
	// Blocked are the calls the warm-up blocked that the full threshold
	// would have admitted, Offered the calls (pass + block) offered in the
	// spans.
	Blocked int64 `json:"blocked"`
	Offered int64 `json:"offered"`
	// StartLimit is the rate a controller admits at its start,
	// threshold / warmUpColdFactor, rounded to 2 decimals (a rule loaded
	// under traffic starts a little above it: its first second takes out
	// the calls passed in the second before).
	StartLimit float64 `json:"startLimit"`
	// Rule is the warm-up rule of the earliest span.
	Rule core.FlowRule `json:"-"`
	// Spans are the cold starts that blocked calls, Loads those of them
	// begun by a rule load (the others by a process start); LongestMs the
	// longest of them; PeakQPS the highest rate offered over one, rounded
	// to 0.1.
	Spans, Loads int64   `json:"-"`
	LongestMs    int64   `json:"-"`
	PeakQPS      float64 `json:"-"`
}

// Kind is KindWarmUp.
func (*WarmUpFacts) Kind() Kind { return KindWarmUp }

// Evidence shows the blocks, the limit's start and the rule.
func (f *WarmUpFacts) Evidence() []Fact {
	return []Fact{
		text("Blocked", itoa(f.Blocked)+" of "+itoa(f.Offered)+" offered ("+fmtFloat(warmShare(f)*100, 1)+" %)"),
		text("Limit", fmtNum(f.StartLimit)+" QPS at the start, rising to "+fmtNum(f.Rule.Threshold)+" over about "+
			itoa(int64(f.Rule.WarmUpPeriodSec))+" s"),
		text("Spans", warmStarts(f, false)+", the longest "+fmtFloat(float64(f.LongestMs)/1000, 0)+" s"),
		text("Offered", "up to "+fmtNum(f.PeakQPS)+" QPS on one instance"),
		{Label: "Rule", Parts: []Part{{Text: "as loaded"}}, Rules: &RuleSet{Flows: []core.FlowRule{f.Rule}}},
	}
}

// warmShare is the share of the calls offered that the warm-up blocked.
func warmShare(f *WarmUpFacts) float64 {
	if f.Offered <= 0 {
		return 0
	}
	return float64(f.Blocked) / float64(f.Offered)
}

// coldFactor is the rule's warmUpColdFactor as it acts (0 and 1 mean 3).
func coldFactor(r core.FlowRule) uint32 {
	if r.WarmUpColdFactor <= 1 {
		return 3
	}
	return r.WarmUpColdFactor
}
