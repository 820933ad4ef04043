package triage

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// The hot-value detector: on a resource with hot-parameter rules, one
// parameter value takes at least half of the resource's blocks for
// HotMinMs or more — a limit written for every value throttling one of
// them (a VIP customer).

// Thresholds of hot-value.
const (
	// HotMinMs is how long one value must take half of the blocks.
	HotMinMs = 30_000
	// HotGapMs is the longest a run goes without a bucket in which its value
	// took half of the blocks before it ends: a QPS limit blocks at the end
	// of each of its periods, so buckets without blocks come between.
	HotGapMs = 5_000
	// HotHeadroomPercent is the headroom the suggested exception gives
	// above the value's observed rate.
	HotHeadroomPercent = 20
)

// hotRun is a run of buckets of one series in which one value took at
// least half of the resource's blocks: from the start of the first such
// bucket to the end of the last (to), with the value's blocks, the
// resource's and the value's offered entries (pass + block) over them. The
// buckets after the last such one wait in pend until the next, or go with
// the run.
type hotRun struct {
	on                       bool
	param                    int64
	value                    string
	from, to                 int64
	valBlock, resBlock, offd int64
	pend                     [3]int64 // valBlock, resBlock, offd of the buckets since to
}

// hotState is a series' hot-value state: the current run, and the
// qualifying runs of one value merged (when another value's run blocks
// more, it replaces them). listed: in the engine's hots, since its first
// run began.
type hotState struct {
	cur, best hotRun
	listed    bool
}

// hotBucket follows one bucket of a series: its resource's blocks and its
// hot values (wire.HotOther, the sum of the values not listed, is never a
// hot value).
func (d *hotDetector) bucket(s *series, b *takenBucket) {
	e, start, end, block, hot := d.e, b.Start, b.end, b.Block, b.Hot
	if s.hot == nil {
		if len(hot) == 0 || block <= 0 {
			return // no run to follow, none starting
		}
		s.hot = &hotState{} // kept apart: most series never block on a value
	}
	h := s.hot
	c := &h.cur
	if len(hot) == 0 {
		if c.on && (block > 0 || start-c.to > HotGapMs) {
			e.endHotRun(s)
		}
		return
	}
	block = max(block, 0)
	if c.on && start-c.to > HotGapMs {
		e.endHotRun(s)
	}
	if c.on {
		i := slices.IndexFunc(hot, func(x wire.HotItem) bool { return x.Param == c.param && x.Value == c.value })
		var vb, off int64
		if i >= 0 {
			vb, off = max(hot[i].Block, 0), max(hot[i].Pass, 0)+max(hot[i].Block, 0)
		}
		switch {
		case block > 0 && 2*vb >= block:
			c.valBlock += c.pend[0] + vb
			c.resBlock += c.pend[1] + block
			c.offd += c.pend[2] + off
			c.pend, c.to = [3]int64{}, end
			return
		case block == 0:
			c.pend[2] += off
			return
		}
		e.endHotRun(s)
	}
	if block == 0 {
		return
	}
	best := -1
	for i, x := range hot {
		if x.Value != wire.HotOther && 2*x.Block >= block && (best < 0 || x.Block > hot[best].Block) {
			best = i
		}
	}
	if best < 0 {
		return
	}
	x := hot[best]
	if !h.listed {
		h.listed = true
		e.hot.series = append(e.hot.series, s)
	}
	*c = hotRun{on: true, param: x.Param, value: strings.Clone(x.Value), from: start, to: end,
		valBlock: x.Block, resBlock: block, offd: max(x.Pass, 0) + x.Block}
}

// endHotRun ends the series' current run, keeping it if it qualifies.
func (e *Engine) endHotRun(s *series) {
	h := s.hot
	if r, ok := h.merged(); ok {
		h.best = r
	}
	h.cur = hotRun{}
}

// qualifies reports whether the run lasted HotMinMs.
func (r *hotRun) qualifies() bool { return r.on && r.to-r.from >= HotMinMs }

// merged is the series' qualifying runs as they stand: the best, with the
// current run if it qualifies (merged if of the same value, else the one
// whose value blocked more).
func (h *hotState) merged() (hotRun, bool) {
	b, c := h.best, h.cur
	c.pend = [3]int64{}
	switch {
	case !c.qualifies():
		return b, b.on
	case !b.on || b.valBlock < c.valBlock && (b.param != c.param || b.value != c.value):
		return c, true
	case b.param == c.param && b.value == c.value:
		b.from, b.to = min(b.from, c.from), max(b.to, c.to)
		b.valBlock += c.valBlock
		b.resBlock += c.resBlock
		b.offd += c.offd
	}
	return b, true
}

// qps is the value's offered entries per second over its run.
func (r *hotRun) qps() float64 {
	if r.to <= r.from {
		return 0
	}
	return float64(r.offd) * 1000 / float64(r.to-r.from)
}

// hotHit is one series' qualifying value.
type hotHit struct {
	s *series
	r hotRun
}

// hotDetector is the hot-value detector's own state: the engine it observes,
// and its series: series that had a run of one value taking half of the
// blocks.
type hotDetector struct {
	e      *Engine
	series []*series
}

func (d *hotDetector) init(e *Engine) detector { d.e = e; return d }
func (*hotDetector) kind() Kind                { return KindHotValue }

// hot-value: one finding per app and resource, for the value (parameter
// and text) whose qualifying runs blocked most over the instances (then
// the smallest parameter and value); its instances are those where it
// qualified. blockShare is its blocks over the resource's during those
// runs, qps the highest of its rates on one instance, the rule the first
// instance's hot-parameter rule of that parameter. Always a warning.
func (d *hotDetector) findings(_ int64, out []Finding) []Finding {
	e := d.e
	var hits []hotHit
	for _, s := range e.hot.series {
		if r, ok := s.hot.merged(); ok {
			hits = append(hits, hotHit{s: s, r: r})
		}
	}
	slices.SortFunc(hits, func(a, b hotHit) int {
		return cmp.Or(strings.Compare(a.s.inst.app.name, b.s.inst.app.name), strings.Compare(a.s.resource, b.s.resource),
			cmp.Compare(a.r.param, b.r.param), strings.Compare(a.r.value, b.r.value),
			strings.Compare(a.s.inst.id.Name, b.s.inst.id.Name), cmp.Compare(a.s.inst.seq, b.s.inst.seq))
	})
	for i := 0; i < len(hits); {
		j := i
		for j < len(hits) && hits[j].s.ar == hits[i].s.ar {
			j++
		}
		out = append(out, e.hotFinding(hits[i:j]))
		i = j
	}
	return out
}

// hotFinding makes the finding of one app and resource's hits, sorted by
// value.
func (e *Engine) hotFinding(hits []hotHit) Finding {
	// The value that blocked most.
	var top []hotHit
	var topBlock int64
	for i := 0; i < len(hits); {
		j, sum := i, int64(0)
		for ; j < len(hits) && hits[j].r.param == hits[i].r.param && hits[j].r.value == hits[i].r.value; j++ {
			sum += hits[j].r.valBlock
		}
		if top == nil || sum > topBlock {
			top, topBlock = hits[i:j], sum
		}
		i = j
	}
	first := top[0]
	x := HotValueFacts{Param: first.r.param, Value: first.r.value}
	f := Finding{Kind: KindHotValue, Severity: Warning, App: first.s.inst.app.name, Resource: first.s.resource, From: first.r.from, To: first.r.to}
	var insts []*instState
	var res int64
	for _, h := range top {
		insts = append(insts, h.s.inst)
		f.From, f.To = min(f.From, h.r.from), max(f.To, h.r.to)
		x.Blocked += h.r.valBlock
		res += h.r.resBlock
		x.QPS = max(x.QPS, h.r.qps())
		if x.Rule == nil {
			x.Rule = hotRule(h.s, x.Param)
		}
	}
	x.BlockShare = round(float64(x.Blocked)/float64(max(res, 1)), 2)
	x.QPS = round(x.QPS, 1)
	x.Suggest = &HotSuggest{SpecificItems: map[string]int64{x.Value: hotException(x.Rule, x.QPS, top)}}
	f.Facts = &x
	e.complete(&f, insts)
	return f
}

// hotRule is the instance's hot-parameter rule of the resource for that
// parameter index, or nil.
func hotRule(s *series, param int64) *core.HotParamRule {
	for _, r := range s.inst.id.Rules.ParamsOf(s.resource) {
		if int64(r.ParamIndex) == param && r.ParamKey == "" {
			return &r
		}
	}
	return nil
}

// hotException is the specificItems threshold proposed for the value: its
// rate with HotHeadroomPercent headroom, rounded up to a multiple of 10 —
// entries per durationInSec for a QPS rule (per second without a rule); for
// a concurrency rule, the threshold scaled by the value's offered entries
// over its passed ones (at the same response time, concurrency grows with
// the rate). Never under the rule's threshold + 1.
func hotException(r *core.HotParamRule, qps float64, hits []hotHit) int64 {
	need := qps
	if r != nil {
		switch r.MetricType {
		case core.HotParamConcurrency:
			var off, pass int64
			for _, h := range hits {
				off += h.r.offd
				pass += h.r.offd - h.r.valBlock
			}
			need = float64(r.Threshold) * float64(off) / float64(max(pass, 1))
		default:
			need = qps * float64(max(r.DurationInSec, 1))
		}
	}
	n := math.Ceil(need*(100+HotHeadroomPercent)/100/10) * 10
	if r != nil {
		n = max(n, float64(r.Threshold)+1)
	}
	return int64(min(max(n, 10), math.MaxInt64/2))
}

// HotValueFacts: one parameter value taking most of a resource's blocks.
type HotValueFacts struct {
	// Param is the parameter's index (the rule's paramIndex).
	Param int64 `json:"param"`
	// Value is the value as the agent sent it (at most 128 bytes): input,
	// for renderers to sanitize.
	Value string `json:"value"`
	// BlockShare is the value's share of the resource's blocks over its
	// runs, rounded to 2 decimals.
	BlockShare float64 `json:"blockShare"`
	// QPS is the value's offered entries (pass + block) per second over its
	// runs, the highest of one instance, rounded to 0.1.
	QPS float64 `json:"qps"`
	// Blocked is the value's blocks over its runs.
	Blocked int64 `json:"-"`
	// Rule is the hot-parameter rule of that parameter, when the rules are
	// known.
	Rule *core.HotParamRule `json:"-"`
	// Suggest is the exception proposed for the value.
	Suggest *HotSuggest `json:"suggest,omitempty"`
}

// HotSuggest is hot-value's suggest: a specificItems entry for the value.
type HotSuggest struct {
	SpecificItems map[string]int64 `json:"specificItems"`
}

// Kind is KindHotValue.
func (*HotValueFacts) Kind() Kind { return KindHotValue }

// Evidence shows the value, its share and rate, and the exception.
func (f *HotValueFacts) Evidence() []Fact {
	out := []Fact{
		{Label: "Value", Parts: []Part{{Text: "parameter " + itoa(f.Param) + ": "}, {Input: []string{f.Value}}}},
		text("Blocks", itoa(f.Blocked)+", "+fmtFloat(f.BlockShare*100, 0)+" % of the resource's"),
		text("Offered", fmtFloat(f.QPS, 1)+" QPS"),
	}
	if f.Rule != nil {
		out = append(out, text("Rule", hotRuleText(f.Rule)))
	}
	if f.Suggest != nil {
		out = append(out, Fact{Label: "Proposed", Parts: []Part{{Text: "specificItems "}, {Input: []string{f.Value}},
			{Text: ": " + itoa(f.Suggest.SpecificItems[f.Value])}}})
	}
	return out
}

// hotRuleText is a hot-parameter rule's limit in words.
func hotRuleText(r *core.HotParamRule) string {
	if r.MetricType == core.HotParamConcurrency {
		return "threshold " + itoa(r.Threshold) + " in flight per value"
	}
	return "threshold " + itoa(r.Threshold) + " per " + itoa(max(r.DurationInSec, 1)) + " s per value"
}
