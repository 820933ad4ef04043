package triage

import (
	"slices"
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

func (e *Engine) halfOpen(ar *appRes, in *instState, at int64, retry uint32) {
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
			e.herds = append(e.herds, ar)
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

// sync-half-open: count is the occasions, spreadMs the largest spread of
// one, From the first entry of the first occasion and To the last entry of
// the last; the instances are every participant of an occasion. An occasion
// is a cluster of HALF_OPEN entries no more than HerdWindowMs apart from its
// first to its last, counted once it holds HerdSize distinct instances and
// at least half of the app's instances reporting the resource at that
// moment. It is critical while HerdSize or more participants of the latest
// occasion, still there, have a breaker of the resource not CLOSED (they
// will probe together again).
func (e *Engine) herdFindings(now int64, out []Finding) []Finding {
	for _, ar := range e.herds {
		h := &ar.herd
		insts := setInsts(h.ever)
		f := Finding{
			Kind: KindSyncHalfOpen, App: ar.app.name, Resource: ar.resource,
			Instances: names(insts), From: h.from, To: h.to,
			Facts: &SyncHalfOpenFacts{Count: h.occasions, SpreadMs: h.spread, MaxSize: h.maxSize, RetryTimeoutMs: h.retry},
		}
		open := 0
		for _, in := range h.last {
			if s := in.series[ar.resource]; s != nil && s.open() && e.alive(in, now) {
				open++
			}
		}
		f.Severity = severity(open >= HerdSize)
		words(&f)
		f.Timelines = e.timelines(insts, ar.resource, f.From, f.To, nil)
		out = append(out, f)
	}
	return out
}
