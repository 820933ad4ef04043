package triage

import (
	"cmp"
	"slices"

	"github.com/sentinel-top/sentinel-top/core"
)

// The sync-half-open detector: instances of one app probing a resource
// within HerdWindowMs of each other (a recovery flood).

type herd struct {
	active     bool
	counted    bool
	cMin, cMax int64
	members    []*instState

	occasions int64
	spread    int64
	maxSize   int
	from, to  int64
	last      []*instState
	ever      map[*instState]struct{}
	retry     uint32 // the retry timeout of the last counted occasion
	// clusterRetry is the retry timeout seen in the cluster being formed;
	// it becomes retry only if the cluster counts as an occasion.
	clusterRetry uint32
}

// transition follows the breakers that enter HALF_OPEN together.
func (d *herdDetector) transition(b *breaker, t *core.Transition) {
	if t.To == core.HalfOpen {
		d.halfOpen(b.s.ar, b.s.inst, t.AtMs, b.retry)
	}
}

func (d *herdDetector) halfOpen(ar *appRes, in *instState, at int64, retry uint32) {
	h := &ar.herd
	joined := false
	if h.active {
		lo, hi := min(h.cMin, at), max(h.cMax, at)
		switch {
		case hi-lo <= HerdWindowMs:
			if !slices.Contains(h.members, in) {
				h.members = append(h.members, in)
			}
			h.cMin, h.cMax = lo, hi
			joined = true
		case at < h.cMin:
			return // late, and too far behind the current cluster
		}
	}
	if !joined {
		h.active, h.counted = true, false
		h.cMin, h.cMax = at, at
		h.members = append(h.members[:0], in)
	}
	if !joined {
		h.clusterRetry = 0
	}
	if retry > 0 {
		h.clusterRetry = retry
	}
	if !h.counted {
		n := len(h.members)
		if n < HerdSize || 2*n < len(ar.reporters) {
			return
		}
		h.counted = true
		h.occasions++
		if h.occasions == 1 {
			h.from, h.to = h.cMin, h.cMax
			h.ever = map[*instState]struct{}{}
		}
		if h.occasions == HerdOccasions {
			d.ars = append(d.ars, ar)
		}
	}
	if h.clusterRetry > 0 {
		h.retry = h.clusterRetry
	}
	h.from = min(h.from, h.cMin)
	h.to = max(h.to, h.cMax)
	h.spread = max(h.spread, h.cMax-h.cMin)
	h.maxSize = max(h.maxSize, len(h.members))
	h.last = append(h.last[:0], h.members...)
	for _, m := range h.members {
		h.ever[m] = struct{}{}
	}
}

// herdDetector is the sync-half-open detector's own state: the engine it
// observes, and its ars: app x resource with a counted recovery flood.
type herdDetector struct {
	e   *Engine
	ars []*appRes
}

func (d *herdDetector) init(e *Engine) detector { d.e = e; return d }
func (*herdDetector) kind() Kind                { return KindSyncHalfOpen }

// sync-half-open: count is the occasions, spreadMs the largest spread of
// one, From the first entry of the first occasion and To the last entry of
// the last; the instances are every participant of an occasion. An occasion
// is a cluster of HALF_OPEN entries no more than HerdWindowMs apart from its
// first to its last, counted once it holds HerdSize distinct instances and
// at least half of the app's instances reporting the resource at that
// moment. It is critical until no occasion happened for HoldMs or two
// retry timeouts, whichever is longer (the instances probe together once
// per retry timeout while the downstream is down), as long as HerdSize or
// more participants of the latest occasion are still there.
func (d *herdDetector) findings(now int64, out []Finding) []Finding {
	e := d.e
	for _, ar := range e.herd.ars {
		h := &ar.herd
		insts := setInsts(h.ever)
		f := Finding{
			Kind: KindSyncHalfOpen, App: ar.app.name, Resource: ar.resource,
			Instances: names(insts), From: h.from, To: h.to,
		}
		java, ruleRetry := herdRules(h.last, ar.resource)
		x := &SyncHalfOpenFacts{Count: h.occasions, SpreadMs: h.spread, MaxSize: h.maxSize, Java: java,
			RetryTimeoutMs: cmp.Or(h.retry, ruleRetry)} // the rule's when the transitions did not tell
		if x.RetryTimeoutMs > 0 {
			x.Suggest = &SyncHalfOpenSuggest{RetryTimeoutMs: retrySpread(x.RetryTimeoutMs, x.Java)}
		}
		f.Facts = x
		present := 0
		for _, in := range h.last {
			if e.alive(in, now) {
				present++
			}
		}
		hold := max(e.cfg.HoldMs, 2*int64(x.RetryTimeoutMs))
		f.Severity = severity(present >= HerdSize && held(h.to, now, hold))
		words(&f)
		out = append(out, f)
	}
	return out
}

// HerdSpreadPercent is how far apart, as a share of their value, the
// instances' retry timeouts should spread.
const HerdSpreadPercent = 30

// retrySpread is the range of retry timeouts to spread the instances over:
// from retry up by HerdSpreadPercent of it, rounded up; in whole seconds for
// Java rules (timeWindow).
func retrySpread(retry uint32, java bool) RetryRange {
	lo := int64(retry)
	unit := int64(1)
	if java {
		unit = 1000
	}
	lo = ceilTo(lo, unit)
	return RetryRange{Min: lo, Max: lo + ceilTo((lo*HerdSpreadPercent+99)/100, unit)}
}

// ceilTo rounds x up to a multiple of unit.
func ceilTo(x, unit int64) int64 { return (x + unit - 1) / unit * unit }

// herdRules reports whether the first of the instances (by name) with a
// breaker rule for the resource runs one with Java Sentinel's semantics,
// and that rule's retry timeout.
func herdRules(insts []*instState, resource string) (java bool, retry uint32) {
	for _, in := range sortInsts(slices.Clone(insts)) {
		if rr := in.rulesOf(resource); rr != nil && len(rr.Breakers) > 0 {
			i := max(slices.IndexFunc(rr.Breakers, func(r core.BreakerRule) bool { return r.Semantics == core.SemanticsJava }), 0)
			return rr.Breakers[i].Semantics == core.SemanticsJava, rr.Breakers[i].RetryTimeoutMs
		}
	}
	return false, 0
}

// SyncHalfOpenFacts: instances probing together.
type SyncHalfOpenFacts struct {
	// Count is the occasions, SpreadMs the largest spread of one.
	Count    int64 `json:"count"`
	SpreadMs int64 `json:"spreadMs"`
	// Suggest is the range to spread the instances' retry timeouts over,
	// absent when the retry timeout is unknown.
	Suggest *SyncHalfOpenSuggest `json:"suggest,omitempty"`
	// MaxSize is the most instances in one occasion; RetryTimeoutMs the
	// retry timeout of the last counted occasion, or else of the rule (0
	// when unknown); Java whether the rule is Java Sentinel's (whose
	// timeWindow is in seconds).
	MaxSize        int    `json:"-"`
	RetryTimeoutMs uint32 `json:"-"`
	// AfterSawtooth: the instances' breakers also had a sawtooth, whose
	// longer retry timeout the range spreads (agreeOnRetry).
	AfterSawtooth bool `json:"-"`
	Java          bool `json:"-"`
}

// SyncHalfOpenSuggest is sync-half-open's suggest: a retryTimeoutMs of
// each instance's own within the range.
type SyncHalfOpenSuggest struct {
	RetryTimeoutMs RetryRange `json:"retryTimeoutMs"`
}

// RetryRange is a range of retry timeouts, in ms.
type RetryRange struct {
	Min int64 `json:"min"`
	Max int64 `json:"max"`
}

// Kind is KindSyncHalfOpen.
func (*SyncHalfOpenFacts) Kind() Kind { return KindSyncHalfOpen }

// Evidence lists the occasions, the spread and the range proposed.
func (f *SyncHalfOpenFacts) Evidence() []Fact {
	out := []Fact{
		text("Occasions", itoa(f.Count)),
		text("Largest spread", itoa(f.SpreadMs)+" ms"),
	}
	if f.Suggest != nil {
		r := f.Suggest.RetryTimeoutMs
		out = append(out, text("Proposed", "retryTimeoutMs "+itoa(r.Min)+" to "+itoa(r.Max)+", one per instance"))
	}
	return out
}
