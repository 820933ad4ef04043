package core

import (
	"maps"
	"math"
	"sync"
	"time"
)

// HotParamController enforces one HotParamRule, deciding per parameter
// value exactly as sentinel-golang v1.0.4's hotspot traffic shaping
// controller for the same rule does (docs/SEMANTICS.md, hot parameters).
//
// It keeps the state of each value (a token bucket, the last pass time, or
// the entries in flight) in a cache of Rule().Capacity() values, least
// recently used first out, as sentinel-golang's LRU does: a value touched by
// Check, OnPass or OnExit becomes the most recent; a new value when the
// cache is full takes the place of the least recent one, which is forgotten
// and starts afresh when it returns.
//
// A controller is safe for concurrent use; with one caller at a time its
// decisions are sentinel-golang's. Check, OnPass and OnExit do not allocate
// for a value already tracked; a new value costs a copy of it and, until the
// cache is full, its room.
type HotParamController struct {
	rule     HotParamRule
	specific *hotSpecific
	qps      bool
	throttle bool
	durMs    int64 // DurationInSec*1000
	blocked  *BlockError

	mu  sync.Mutex
	lru hotLRU
}

// HotParamValue is what a controller keeps for one value.
type HotParamValue struct {
	// Threshold is the value's limit: its SpecificItems entry or the rule's.
	Threshold int64
	// Tokens is what is left in the value's bucket (QPS Reject).
	Tokens int64
	// LastMs is when the bucket was last refilled (QPS Reject) or the last
	// entry was admitted (QPS Throttling: a time in the future while entries
	// wait), Unix ms.
	LastMs int64
	// Concurrency is the value's entries in flight (Concurrency).
	Concurrency int64
}

// NewHotParamController returns a controller for rule.
func NewHotParamController(rule HotParamRule) (*HotParamController, error) {
	if err := rule.Validate(); err != nil {
		return nil, err
	}
	rule.SpecificItems = maps.Clone(rule.SpecificItems)
	c := &HotParamController{
		rule:     rule,
		specific: newHotSpecific(rule.SpecificItems),
		qps:      rule.MetricType == HotParamQPS,
		throttle: rule.ControlBehavior == Throttling,
		durMs:    rule.DurationInSec * 1000,
	}
	c.blocked = &BlockError{Resource: rule.Resource, Cause: BlockedByHotParam, HotParam: &c.rule}
	c.lru.init(rule.Capacity())
	return c, nil
}

// Rule returns the rule the controller enforces. Do not modify its
// SpecificItems.
func (c *HotParamController) Rule() HotParamRule { return c.rule }

// Param returns the value of p the rule limits (HotParamRule.Param).
func (c *HotParamController) Param(p *Params) any { return c.rule.Param(p) }

// Check decides whether batch more entries of the value param may pass at
// time now (Unix ms). pass=false: block. pass=true with wait>0: the caller
// must wait that long before proceeding (QPS Throttling).
//
// A nil param, and a value core does not track (NaN, or a kind other than
// string, bool, integer and float: see docs/SEMANTICS.md), always passes.
// Check has effects: it takes tokens, reserves a throttling slot, and
// counts a value's first sight, even if a later rule blocks the entry, as
// sentinel-golang does. A Concurrency rule counts an entry in flight only
// at OnPass.
func (c *HotParamController) Check(now int64, param any, batch int64) (pass bool, wait time.Duration) {
	pass, wait, _ = c.check(now, param, batch)
	return pass, wait
}

// check is Check that also returns the key the value is tracked under (nil
// when it is not), for OnExit.
func (c *HotParamController) check(now int64, param any, batch int64) (bool, time.Duration, any) {
	sc := hotScalarOf(param)
	if sc.kind == hotUntracked {
		return true, 0, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	l := &c.lru
	i, found := l.index[param]
	var threshold int64
	if found {
		threshold = l.items[i].threshold
	} else if th, ok := c.specific.threshold(&sc); ok {
		threshold = th
	} else {
		threshold = c.rule.Threshold
	}
	if !c.qps {
		return c.checkConcurrency(param, &sc, i, found, threshold)
	}
	// The QPS controllers refuse before they touch the cache.
	if threshold <= 0 {
		return false, 0, nil
	}
	if c.throttle {
		interval := int64(math.Round(float64(batch * c.rule.DurationInSec * 1000 / threshold)))
		return c.checkThrottling(now, param, &sc, i, found, threshold, interval)
	}
	maxCount := threshold + c.rule.BurstCount
	if batch > maxCount {
		return false, 0, nil
	}
	return c.checkReject(now, param, &sc, i, found, threshold, maxCount, batch)
}

// touch makes the value the most recent, adding it if it is new.
func (c *HotParamController) touch(param any, sc *hotScalar, i int32, found bool, threshold int64) *hotItem {
	if found {
		c.lru.moveToFront(i)
		return &c.lru.items[i]
	}
	return c.lru.add(hotOwn(param, sc), threshold)
}

func (c *HotParamController) checkConcurrency(param any, sc *hotScalar, i int32, found bool, threshold int64) (bool, time.Duration, any) {
	it := c.touch(param, sc, i, found, threshold)
	if !found {
		return true, 0, it.key // the first sight passes, whatever the threshold
	}
	return it.conc+1 <= threshold, 0, it.key
}

// checkReject is sentinel-golang's token bucket: a value starts with
// threshold+burst tokens; once more than DurationInSec has passed since the
// last refill, the elapsed share of threshold is added back, up to the
// bucket's size.
func (c *HotParamController) checkReject(now int64, param any, sc *hotScalar, i int32, found bool, threshold, maxCount, batch int64) (bool, time.Duration, any) {
	it := c.touch(param, sc, i, found, threshold)
	if !found {
		it.last, it.tokens = now, maxCount-batch
		return true, 0, it.key
	}
	passTime := now - it.last
	if passTime > c.durMs {
		toAdd := passTime * threshold / c.durMs
		var left int64
		if toAdd+it.tokens > maxCount {
			left = maxCount - batch
		} else {
			left = toAdd + it.tokens - batch
		}
		if left < 0 {
			return false, 0, it.key
		}
		it.tokens, it.last = left, now
		return true, 0, it.key
	}
	if it.tokens-batch >= 0 {
		it.tokens -= batch
		return true, 0, it.key
	}
	return false, 0, it.key
}

// checkThrottling spaces a value's entries interval ms apart; an entry may
// wait for its slot if that is less than MaxQueueingTimeMs away.
func (c *HotParamController) checkThrottling(now int64, param any, sc *hotScalar, i int32, found bool, threshold, interval int64) (bool, time.Duration, any) {
	it := c.touch(param, sc, i, found, threshold)
	if !found {
		it.last = now
		return true, 0, it.key
	}
	expected := it.last + interval
	if expected <= now || expected-now < c.rule.MaxQueueingTimeMs {
		it.last = now
		if wait := expected - now; wait > 0 {
			it.last = expected
			return true, time.Duration(wait) * time.Millisecond, it.key
		}
		return true, 0, it.key
	}
	return false, 0, it.key
}

// OnPass counts an entry of the value in flight (Concurrency rules; a no-op
// for QPS rules). Call it once the entry has passed every rule, with the
// value given to Check, as sentinel-golang's concurrency stat slot does; a
// value no longer tracked is not counted.
func (c *HotParamController) OnPass(param any) { c.addConcurrency(param, 1) }

// OnExit counts the end of an entry OnPass counted, with the same value.
// Like sentinel-golang it finds the value anew: if it was forgotten and has
// returned since, the new count is decremented (it may go below zero).
func (c *HotParamController) OnExit(param any) { c.addConcurrency(param, -1) }

func (c *HotParamController) addConcurrency(param any, d int64) {
	if c.qps || hotScalarOf(param).kind == hotUntracked {
		return
	}
	c.mu.Lock()
	if i, ok := c.lru.index[param]; ok {
		c.lru.moveToFront(i)
		c.lru.items[i].conc += d
	}
	c.mu.Unlock()
}

// Value returns what the controller keeps for param, without making it more
// recent.
func (c *HotParamController) Value(param any) (HotParamValue, bool) {
	if hotScalarOf(param).kind == hotUntracked {
		return HotParamValue{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	i, ok := c.lru.index[param]
	if !ok {
		return HotParamValue{}, false
	}
	it := &c.lru.items[i]
	return HotParamValue{Threshold: it.threshold, Tokens: it.tokens, LastMs: it.last, Concurrency: it.conc}, true
}

// Len is how many values the controller tracks.
func (c *HotParamController) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.lru.index)
}

// Values calls fn for each tracked value, the most recent first, until fn
// returns false. fn must not call the controller.
func (c *HotParamController) Values(fn func(param any, v HotParamValue) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := c.lru.head; i >= 0; i = c.lru.items[i].next {
		it := &c.lru.items[i]
		if !fn(it.key, HotParamValue{Threshold: it.threshold, Tokens: it.tokens, LastMs: it.last, Concurrency: it.conc}) {
			return
		}
	}
}
