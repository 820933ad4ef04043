package core

import (
	"fmt"
	"math"
	"sync/atomic"
	"time"
)

// The statistic a flow rule reads when its StatIntervalInMs is 0: the last
// second of the resource window, in two 500 ms buckets (sentinel-golang's
// metricStatisticIntervalMs and metricStatisticSampleCount).
const (
	flowDefaultIntervalMs  = 1000
	flowDefaultSampleCount = 2
	// flowDefaultColdFactor replaces a WarmUpColdFactor of 0 (or 1).
	flowDefaultColdFactor = 3
)

// FlowController enforces one FlowRule against a resource's statistics,
// deciding exactly as sentinel-golang v1.0.4's traffic shaping controller for
// the same rule does (docs/SEMANTICS.md, flow control).
//
// A controller is safe for concurrent use; with one caller at a time its
// decisions are sentinel-golang's bit for bit. Check and OnPass do not
// allocate.
//
// The caller owns the resource window and records every entry in it; the
// controller only reads it, except for what it keeps itself: a standalone
// pass window (a Reject or WarmUp rule whose StatIntervalInMs cannot be read
// from the resource window), the warm-up token bucket, and throttling's last
// pass time.
type FlowController struct {
	rule FlowRule

	// threshold is the rule's; for WarmUp it is the rate once warm.
	threshold float64

	// The pass statistic read by Reject and by WarmUp (nil for
	// Direct+Throttling, which keeps no statistic). Exactly one of res and
	// own is set.
	res *MetricWindow
	own *Window[flowPassBucket, *flowPassBucket]
	// readBucketMs is the bucket length of the window read; readBuckets is
	// how many of its buckets, ending with the current one, make up the
	// statistic interval (readBuckets*readBucketMs ms).
	readBucketMs int64
	readBuckets  int64
	// prevOffsetMs is how far back the "previous" QPS of warm-up is read:
	// the statistic's own bucket length.
	prevOffsetMs int64
	// readIntervalSec turns a pass count into a rate (per second).
	readIntervalSec float64

	warm     bool
	warmUp   flowWarmUp
	throttle bool
	throt    flowThrottle
}

// flowPassBucket is one bucket of a standalone flow statistic.
type flowPassBucket struct{ pass atomic.Int64 }

// Reset zeroes the bucket.
func (b *flowPassBucket) Reset() { b.pass.Store(0) }

// flowWarmUp is the warm-up token bucket (Guava's SmoothWarmingUp, as counted
// by Sentinel): tokens accumulate at the threshold rate while traffic is low,
// and while more than warningToken are stored the allowed rate falls along a
// line down to threshold/coldFactor at maxToken.
type flowWarmUp struct {
	coldFactor     uint32
	warningToken   uint64
	maxToken       uint64
	slope          float64
	storedTokens   atomic.Int64
	lastFilledTime atomic.Uint64 // Unix ms, a whole second
}

// flowThrottle spaces passes evenly (leaky bucket), in nanoseconds.
type flowThrottle struct {
	maxQueueingTimeNs int64
	statIntervalNs    int64
	lastPassedTime    atomic.Int64 // Unix ns of the latest admitted slot
}

// NewFlowController returns a controller for rule reading stat, the
// resource's window from NewResourceWindow (or any window whose buckets the
// default one-second statistic can be read from). stat may be nil only for a
// Direct+Throttling rule, which reads no statistic.
//
// Which statistic is read follows sentinel-golang: StatIntervalInMs 0 or
// 1000 reads the last second of stat; an interval stat can serve (a divisor
// of its span, made of whole buckets) is read from stat too; any other
// interval gets a standalone window of its own, fed by OnPass, with one
// bucket per stat bucket if the interval is a multiple of stat's bucket
// length no longer than stat's span, and otherwise a single bucket.
func NewFlowController(rule FlowRule, stat *MetricWindow) (*FlowController, error) {
	if err := rule.Validate(); err != nil {
		return nil, err
	}
	c := &FlowController{
		rule:      rule,
		threshold: rule.Threshold,
		warm:      rule.TokenCalculateStrategy == WarmUp,
		throttle:  rule.ControlBehavior == Throttling,
	}
	if c.warm || !c.throttle {
		if stat == nil {
			return nil, ruleErr("flow", rule.Resource, "a %s %s rule needs the resource's statistic window",
				rule.TokenCalculateStrategy, rule.ControlBehavior)
		}
		if err := c.bindStat(stat); err != nil {
			return nil, ruleErr("flow", rule.Resource, "%v", err)
		}
	}
	if c.warm {
		c.initWarmUp()
	}
	if c.throttle {
		intervalMs := int64(rule.StatIntervalInMs)
		if intervalMs == 0 {
			intervalMs = flowDefaultIntervalMs
		}
		c.throt.statIntervalNs = intervalMs * int64(time.Millisecond)
		c.throt.maxQueueingTimeNs = int64(rule.MaxQueueingTimeMs) * int64(time.Millisecond)
	}
	return c, nil
}

// bindStat chooses the statistic as sentinel-golang's generateStatFor does.
func (c *FlowController) bindStat(stat *MetricWindow) error {
	parentCount := uint32(stat.SampleCount())
	parentInterval := uint32(stat.IntervalMs())
	parentBucket := uint32(stat.BucketMs())

	interval := c.rule.StatIntervalInMs
	var sampleCount uint32
	switch {
	case interval == 0 || interval == flowDefaultIntervalMs:
		interval, sampleCount = flowDefaultIntervalMs, flowDefaultSampleCount
	case interval > parentInterval, interval < parentBucket, interval%parentBucket != 0:
		sampleCount = 1
	default:
		sampleCount = interval / parentBucket
	}
	reusable, err := flowStatReusable(sampleCount, interval, parentCount, parentInterval)
	if err != nil {
		return err
	}
	bucket := interval / sampleCount
	c.prevOffsetMs = int64(bucket)
	c.readIntervalSec = float64(interval) / 1000.0
	if reusable {
		c.res = stat
		c.readBucketMs = int64(parentBucket)
		c.readBuckets = int64(interval / parentBucket)
		return nil
	}
	if c.rule.StatIntervalInMs == 0 || c.rule.StatIntervalInMs == flowDefaultIntervalMs {
		// sentinel-golang refuses a configuration whose resource window
		// cannot serve the default statistic.
		return fmt.Errorf("the resource window (%d x %d ms) cannot serve the default %d ms statistic",
			parentCount, parentBucket, flowDefaultIntervalMs)
	}
	own, err := NewWindow[flowPassBucket](int(sampleCount), int64(interval))
	if err != nil {
		return err
	}
	c.own = own
	c.readBucketMs = int64(bucket)
	c.readBuckets = int64(sampleCount)
	return nil
}

// flowStatReusable reports whether a statistic of sampleCount buckets over
// intervalMs can be read from a window of parentCount buckets over
// parentIntervalMs: the interval must divide the parent's span and its
// buckets must be whole parent buckets.
func flowStatReusable(sampleCount, intervalMs, parentCount, parentIntervalMs uint32) (bool, error) {
	if intervalMs == 0 || sampleCount == 0 || intervalMs%sampleCount != 0 {
		return false, fmt.Errorf("statistic of %d buckets over %d ms is invalid", sampleCount, intervalMs)
	}
	if parentIntervalMs == 0 || parentCount == 0 || parentIntervalMs%parentCount != 0 {
		return false, fmt.Errorf("resource window of %d buckets over %d ms is invalid", parentCount, parentIntervalMs)
	}
	if parentIntervalMs%intervalMs != 0 || (intervalMs/sampleCount)%(parentIntervalMs/parentCount) != 0 {
		return false, nil
	}
	return true, nil
}

// initWarmUp sizes the token bucket. The expressions keep sentinel-golang's
// operand order and conversions so that the floats round the same way.
func (c *FlowController) initWarmUp() {
	w := &c.warmUp
	cf := c.rule.WarmUpColdFactor
	if cf <= 1 {
		cf = flowDefaultColdFactor
	}
	period := float64(c.rule.WarmUpPeriodSec)
	t := c.threshold
	w.coldFactor = cf
	w.warningToken = uint64((period * t) / float64(cf-1))
	w.maxToken = w.warningToken + uint64(2*period*t/float64(1+cf))
	// maxToken == warningToken makes the slope +Inf (or NaN), as in
	// sentinel-golang: see allowedTokens.
	w.slope = float64(cf-1) / t / float64(w.maxToken-w.warningToken)
}

// Rule returns the rule the controller enforces, as given.
func (c *FlowController) Rule() FlowRule { return c.rule }

// Check decides whether batch more entries may pass at time now (Unix ms).
// pass=false: block. pass=true with wait>0: the caller must wait that long
// before proceeding (throttling).
//
// Check has effects: a Throttling rule reserves the admitted slot (even if a
// later rule blocks the entry), and a WarmUp rule refills its token bucket.
// It equals CheckNano(now*1e6, batch); prefer CheckNano with a clock finer
// than a millisecond, since throttling spaces entries in nanoseconds.
func (c *FlowController) Check(now int64, batch int64) (pass bool, wait time.Duration) {
	return c.CheckNano(now*int64(time.Millisecond), batch)
}

// CheckNano is Check with the time in Unix nanoseconds: sentinel-golang
// throttles on CurrentTimeNano and counts on CurrentTimeMillis, and CheckNano
// takes both from nowNano (milliseconds truncated). Times before the epoch
// count as the epoch (where sentinel-golang's statistics read nothing), and
// a batch below 0 as 0.
func (c *FlowController) CheckNano(nowNano int64, batch int64) (pass bool, wait time.Duration) {
	if nowNano < 0 {
		nowNano = 0
	}
	if batch < 0 {
		batch = 0
	}
	nowMs := nowNano / int64(time.Millisecond)
	allowed := c.threshold
	if c.warm {
		allowed = c.allowedTokens(uint64(nowMs))
	}
	if c.throttle {
		return c.throttleCheck(nowNano, batch, allowed)
	}
	cur := float64(c.passSum(nowMs))
	if cur+float64(batch) > allowed {
		return false, 0
	}
	return true, 0
}

// OnPass tells the controller that batch entries were admitted at now (Unix
// ms): call it on every controller of the resource once the entry has passed
// them all (after any throttling wait), at the time the pass is recorded in
// the resource window. Only a standalone statistic needs it; it is cheap
// otherwise. Like the resource window, it drops a pass whose bucket slot
// already holds a newer bucket (the clock went backwards), and one at or
// before the epoch.
func (c *FlowController) OnPass(now int64, batch int64) {
	if c.own == nil || batch <= 0 || now <= 0 {
		return // sentinel-golang drops a sample at or before the epoch too
	}
	if b := c.own.Current(now); b != nil {
		b.pass.Add(batch)
	}
}

// passSum is the pass count of the statistic at nowMs: the buckets that start
// within the interval ending with nowMs's bucket (sentinel-golang's
// SlidingWindowMetric range [cur-interval+bucket, cur]). Reading never resets
// a slot, so a slot still holding an older bucket just does not count.
func (c *FlowController) passSum(nowMs int64) int64 {
	bucket := c.readBucketMs
	cur := nowMs - floorMod(nowMs, bucket)
	// sentinel-golang's unsigned range wraps, and so matches nothing, when
	// the interval reaches back before the epoch; a time of 0 reads nothing.
	if nowMs <= 0 || cur-(c.readBuckets-1)*bucket < 0 {
		return 0
	}
	var sum int64
	if c.res != nil {
		for k := int64(0); k < c.readBuckets; k++ {
			if b, ok := c.res.Lookup(cur - k*bucket); ok {
				sum += b.pass.Load()
			}
		}
		return sum
	}
	for k := int64(0); k < c.readBuckets; k++ {
		if b, ok := c.own.Lookup(cur - k*bucket); ok {
			sum += b.pass.Load()
		}
	}
	return sum
}

// previousQPS is the pass rate of the statistic one bucket ago
// (GetPreviousQPS). The subtraction is unsigned, as in sentinel-golang: right
// after the epoch it wraps and reads nothing.
func (c *FlowController) previousQPS(nowMs uint64) float64 {
	t := nowMs - uint64(c.prevOffsetMs)
	if t > math.MaxInt64 {
		return 0
	}
	return float64(c.passSum(int64(t))) / c.readIntervalSec
}

// allowedTokens is the warm-up rate at nowMs, after refilling the bucket.
func (c *FlowController) allowedTokens(nowMs uint64) float64 {
	w := &c.warmUp
	c.syncTokens(nowMs, c.previousQPS(nowMs))
	rest := w.storedTokens.Load()
	if rest < 0 {
		rest = 0
	}
	if rest >= int64(w.warningToken) {
		above := rest - int64(w.warningToken)
		// Same expression shape as sentinel-golang, so that a compiler that
		// fuses the multiply-add does so on both sides.
		return math.Nextafter(1.0/(float64(above)*w.slope+1.0/c.threshold), math.MaxFloat64)
	}
	return c.threshold
}

// syncTokens refills the bucket once per whole second and takes out what
// passed in the previous second.
func (c *FlowController) syncTokens(nowMs uint64, passQps float64) {
	w := &c.warmUp
	now := nowMs - nowMs%1000
	last := w.lastFilledTime.Load()
	if now <= last {
		return
	}
	old := w.storedTokens.Load()
	refilled := c.coolDownTokens(now, last, old, passQps)
	if w.storedTokens.CompareAndSwap(old, refilled) {
		if w.storedTokens.Add(int64(-passQps)) < 0 {
			w.storedTokens.Store(0)
		}
		w.lastFilledTime.Store(now)
	}
}

// coolDownTokens adds the tokens earned since last: always below the warning
// line, above it only while traffic stays under threshold/coldFactor.
func (c *FlowController) coolDownTokens(now, last uint64, old int64, passQps float64) int64 {
	w := &c.warmUp
	refilled := old
	if old < int64(w.warningToken) {
		refilled = int64(float64(old) + (float64(now)-float64(last))*c.threshold/1000.0)
	} else if old > int64(w.warningToken) {
		if passQps < float64(uint32(c.threshold)/w.coldFactor) {
			refilled = int64(float64(old) + float64(now-last)*c.threshold/1000.0)
		}
	}
	if refilled <= int64(w.maxToken) {
		return refilled
	}
	return int64(w.maxToken)
}

// throttleCheck admits an entry at the earliest slot after the previous one,
// batch/threshold of the statistic interval later, if that slot is no more
// than MaxQueueingTimeMs away.
func (c *FlowController) throttleCheck(nowNano, batch int64, threshold float64) (bool, time.Duration) {
	if batch <= 0 {
		return true, 0
	}
	if threshold <= 0.0 {
		return false, 0
	}
	if float64(batch) > threshold {
		return false, 0
	}
	t := &c.throt
	intervalNs := int64(math.Ceil(float64(batch) / threshold * float64(t.statIntervalNs)))
	last := t.lastPassedTime.Load()
	if last+intervalNs <= nowNano {
		if t.lastPassedTime.CompareAndSwap(last, nowNano) {
			return true, 0
		}
	}
	if t.lastPassedTime.Load()+intervalNs-nowNano > t.maxQueueingTimeNs {
		return false, 0
	}
	queued := t.lastPassedTime.Add(intervalNs) - nowNano
	if queued > t.maxQueueingTimeNs {
		t.lastPassedTime.Add(-intervalNs)
		return false, 0
	}
	if queued > 0 {
		return true, time.Duration(queued)
	}
	return true, 0
}
