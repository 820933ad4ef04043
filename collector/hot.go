package collector

import (
	"cmp"
	"slices"
	"strings"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// Hot values: each series keeps the hot items of its recent buckets (wire
// v1 "hot", at most wire.MaxHotValues and an (other) per bucket) in a ring
// of fixed size, charged to the budget when its first hot item arrives.

// hotBucket is one bucket's hot items.
type hotBucket struct {
	start int64
	n     int
	items [wire.MaxHotValues + 1]wire.HotItem
}

// hotRing is a series' recent buckets with hot items, the newest replacing
// the oldest.
type hotRing struct {
	buckets []hotBucket
	next    int
}

// hotSlots is how many buckets of hot items a series keeps: the rate
// window in 500 ms buckets, and room for late ones.
func (c *Collector) hotSlots() int {
	return int(c.opts.RateWindow.Milliseconds()/core.ResourceBucketMs) + 4
}

// addHot keeps a bucket's hot items in the series' ring, making the ring
// (within the budget) on the first. c.mu is held.
func (c *Collector) addHot(place string, in *instance, s *series, start int64, hot []wire.HotItem) {
	if len(hot) == 0 {
		return
	}
	if s.hot == nil {
		if !c.charge(in.share, c.hotRingBytes(), place, in.Name+" hot values of "+s.resource) {
			return
		}
		s.hot = &hotRing{buckets: make([]hotBucket, c.hotSlots())}
	}
	b := &s.hot.buckets[s.hot.next]
	s.hot.next = (s.hot.next + 1) % len(s.hot.buckets)
	b.start = start
	b.n = copy(b.items[:], hot)
}

// HotValue is one parameter value's entries on a resource, summed over the
// app's live instances and averaged over the rate window.
type HotValue struct {
	// Param is the rule's paramIndex the value was read at; Value is its
	// text as the instances sent it (untrusted: sanitize before printing),
	// or wire.HotOther for the values not listed.
	Param int64
	Value string
	// PassQPS and BlockQPS are its entries admitted and rejected per second.
	PassQPS, BlockQPS float64
	// Rule is the index in Detail.HotRules of the rule that limits the
	// value (the one with the lowest limit for it), -1 when none reads its
	// parameter. Limit is that rule's limit for the value: its
	// specificItems entry (Specific set) or its threshold, per
	// DurationInSec for a QPS rule, in flight for a concurrency rule.
	Rule     int
	Limit    int64
	Specific bool
}

// detailHot fills d's hot-parameter rules (those most live instances
// have) and hottest values from the instances named. c.mu is held.
func (c *Collector) detailHot(d *Detail, names []string) {
	votes := map[string]int{}
	best := 0
	for _, name := range names {
		in := c.insts[name]
		if ps := in.Rules.ParamsOf(d.Resource); !in.Gone && len(ps) > 0 {
			key := wire.RulesVersion(nil, nil, ps...)
			if votes[key]++; votes[key] > best {
				best, d.HotRules = votes[key], ps
			}
		}
	}
	rules := d.HotRules
	rateMs := c.opts.RateWindow.Milliseconds()
	type key struct {
		param int64
		value string
	}
	sums := map[key]*HotValue{}
	for _, name := range names {
		in := c.insts[name]
		if in.Gone {
			continue
		}
		if in.statesUnknown {
			d.HotUnknown = hotUnknownSource(in)
		}
		s := in.series[d.Resource]
		if s == nil || s.hot == nil {
			continue
		}
		end := in.dataEndSecond()
		for i := range s.hot.buckets {
			b := &s.hot.buckets[i]
			if b.n == 0 || b.start < end-rateMs || b.start >= end {
				continue
			}
			for _, h := range b.items[:b.n] {
				k := key{h.Param, h.Value}
				v := sums[k]
				if v == nil {
					v = &HotValue{Param: h.Param, Value: h.Value, Rule: -1}
					sums[k] = v
				}
				v.PassQPS += float64(h.Pass) * 1000 / float64(rateMs)
				v.BlockQPS += float64(h.Block) * 1000 / float64(rateMs)
			}
		}
	}
	for _, v := range sums {
		d.Hot = append(d.Hot, *v)
	}
	slices.SortFunc(d.Hot, func(x, y HotValue) int {
		if xo, yo := x.Value == wire.HotOther, y.Value == wire.HotOther; xo != yo {
			if xo {
				return 1
			}
			return -1
		}
		if c := cmp.Compare(y.PassQPS+y.BlockQPS, x.PassQPS+x.BlockQPS); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(x.Param, y.Param), strings.Compare(x.Value, y.Value))
	})
	// The instances' top values differ: the sums keep the top of the tops,
	// the rest of them go to (other).
	if named := len(d.Hot) - countOther(d.Hot); named > wire.MaxHotValues {
		other := HotValue{Param: d.Hot[wire.MaxHotValues].Param, Value: wire.HotOther, Rule: -1}
		for _, v := range d.Hot[wire.MaxHotValues:] {
			other.PassQPS += v.PassQPS
			other.BlockQPS += v.BlockQPS
		}
		d.Hot = append(d.Hot[:wire.MaxHotValues], other)
	}
	for i := range d.Hot {
		d.Hot[i].Rule, d.Hot[i].Limit, d.Hot[i].Specific = limitingRule(rules, &d.Hot[i])
	}
}

func countOther(hot []HotValue) int {
	n := 0
	for _, v := range hot {
		if v.Value == wire.HotOther {
			n++
		}
	}
	return n
}

// limitingRule picks the rule with the lowest limit for the value among
// those reading its parameter: per second for QPS rules (concurrency rules
// count in flight, and only limit when no QPS rule reads the parameter).
func limitingRule(rules []core.HotParamRule, v *HotValue) (idx int, limit int64, specific bool) {
	idx = -1
	var best float64
	bestQPS := false
	for i := range rules {
		r := &rules[i]
		if int64(r.ParamIndex) != v.Param {
			continue
		}
		lim, sp := r.Threshold, false
		if t, ok := r.SpecificItems[v.Value]; ok && v.Value != wire.HotOther {
			lim, sp = t, true
		}
		qps := r.MetricType == core.HotParamQPS
		per := float64(lim)
		if qps {
			per /= float64(max(r.DurationInSec, 1))
		}
		if idx < 0 || qps && !bestQPS || qps == bestQPS && per < best {
			idx, limit, specific, best, bestQPS = i, lim, sp, per, qps
		}
	}
	return idx, limit, specific
}

// hotUnknownSource names a source that cannot report hot values.
func hotUnknownSource(in *instance) string {
	if in.polled {
		return "Java Sentinel"
	}
	return "metric logs"
}
