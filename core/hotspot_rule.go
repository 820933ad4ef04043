package core

import (
	"fmt"
	"maps"
	"math"
)

// HotParamMetric is what a hot-parameter rule counts per parameter value
// (sentinel-golang's hotspot.MetricType codes).
type HotParamMetric int32

// The hot-parameter metrics.
const (
	HotParamConcurrency HotParamMetric = iota // entries of the value in flight
	HotParamQPS                               // entries of the value per DurationInSec
)

func (m HotParamMetric) String() string {
	switch m {
	case HotParamConcurrency:
		return "concurrency"
	case HotParamQPS:
		return "qps"
	default:
		return fmt.Sprintf("metricType(%d)", int32(m))
	}
}

// The value-cache sizes sentinel-golang uses when ParamsMaxCapacity is 0
// (hotspot.ConcurrencyMaxCount, ParamsCapacityBase and ParamsMaxCapacity).
const (
	HotParamConcurrencyCapacity = 4000  // Concurrency rules
	HotParamCapacityPerSecond   = 4000  // QPS rules: this many per second of DurationInSec...
	HotParamMaxCapacity         = 20000 // ...up to this many
)

// HotParamRule is a hot-parameter (frequent parameter) flow rule: it limits
// each value of one parameter of an entry separately, as sentinel-golang's
// hotspot.Rule does. Its JSON is that rule's, except SpecificItems, which is
// an object from the value, as text, to its threshold (see SpecificItems).
//
// Defaults (zero values): MetricType 0 is Concurrency; ControlBehavior 0 is
// Reject; ParamIndex 0 is the first argument; ParamKey "" reads no
// attachment; BurstCount 0 allows no burst above Threshold;
// MaxQueueingTimeMs 0 queues nothing; ParamsMaxCapacity 0 means
// HotParamConcurrencyCapacity values for Concurrency and
// min(HotParamMaxCapacity, HotParamCapacityPerSecond*DurationInSec) for QPS.
// DurationInSec is required for QPS.
//
// Like sentinel-golang, core accepts fields that the rule's kind ignores
// (BurstCount of a Throttling rule, say); Warnings names them.
type HotParamRule struct {
	// ID identifies the rule (optional).
	ID string `json:"id,omitempty"`
	// Resource is the guarded resource's name.
	Resource string `json:"resource"`
	// MetricType is Concurrency (0) or QPS (1).
	MetricType HotParamMetric `json:"metricType"`
	// ControlBehavior is Reject (0) or Throttling (1); QPS only, though a
	// Concurrency rule must name one of the two as well.
	ControlBehavior ControlBehavior `json:"controlBehavior"`
	// ParamIndex picks the argument: 0 is the first, -1 the last. An entry
	// without that argument (or with a nil one) is not limited by the rule.
	ParamIndex int `json:"paramIndex"`
	// ParamKey picks the attachment of that name instead, when the entry has
	// it (non-nil); otherwise ParamIndex applies, as in sentinel-golang. A
	// rule may not set both ParamKey and a positive ParamIndex.
	ParamKey string `json:"paramKey"`
	// Threshold is each value's limit: entries per DurationInSec (QPS), or
	// entries in flight (Concurrency). 0 blocks every tracked value that has
	// no SpecificItems entry, except as noted in docs/SEMANTICS.md.
	Threshold int64 `json:"threshold"`
	// MaxQueueingTimeMs is the longest a Throttling rule makes an entry wait;
	// a wait must be strictly shorter.
	MaxQueueingTimeMs int64 `json:"maxQueueingTimeMs"`
	// BurstCount is how many entries a QPS Reject rule admits on top of
	// Threshold when the value's bucket is full.
	BurstCount int64 `json:"burstCount"`
	// DurationInSec is the period Threshold counts over (QPS only).
	DurationInSec int64 `json:"durationInSec"`
	// ParamsMaxCapacity bounds how many values are tracked; the least
	// recently used value is forgotten to make room for a new one, which then
	// starts afresh.
	ParamsMaxCapacity int64 `json:"paramsMaxCapacity"`
	// SpecificItems gives some values their own threshold, keyed by the
	// value as text: a string parameter matches its own text, an integer
	// one (any int or uint kind) its decimal form ("42"), a float one the
	// key read as a float ("0.5"), a bool one "true" or "false". Named types
	// of those kinds match the same way.
	SpecificItems map[string]int64 `json:"specificItems"`
	// Pattern is set on a rule read from a Java regex rule, as for
	// FlowRule.Pattern. Informative: core enforces the rule on Resource.
	Pattern string `json:"pattern,omitempty"`
}

// Validate reports the first problem that makes the rule unusable: what
// sentinel-golang's IsValidRule rejects, the metric types and control
// behaviours it silently ignores, and a DurationInSec whose milliseconds
// overflow.
func (r *HotParamRule) Validate() error {
	switch {
	case r.Resource == "":
		return ruleErr("hot-parameter", r.Resource, "resource is empty")
	case r.Threshold < 0:
		return ruleErr("hot-parameter", r.Resource, "threshold %d must not be negative", r.Threshold)
	case r.MetricType != HotParamConcurrency && r.MetricType != HotParamQPS:
		return ruleErr("hot-parameter", r.Resource, "metricType %d is not 0 (concurrency) or 1 (QPS)", r.MetricType)
	case r.ControlBehavior != Reject && r.ControlBehavior != Throttling:
		return ruleErr("hot-parameter", r.Resource, "controlBehavior %d is not 0 (reject) or 1 (throttling)", r.ControlBehavior)
	case r.MetricType == HotParamQPS && r.DurationInSec <= 0:
		return ruleErr("hot-parameter", r.Resource, "durationInSec must be positive for QPS")
	case r.MetricType == HotParamQPS && r.DurationInSec > math.MaxInt64/1000:
		return ruleErr("hot-parameter", r.Resource, "durationInSec %d is too long", r.DurationInSec)
	case r.ParamIndex > 0 && r.ParamKey != "":
		return ruleErr("hot-parameter", r.Resource, "paramIndex and paramKey are mutually exclusive")
	case r.ControlBehavior == Reject && r.BurstCount < 0:
		return ruleErr("hot-parameter", r.Resource, "burstCount %d must not be negative", r.BurstCount)
	case r.ControlBehavior == Throttling && r.MaxQueueingTimeMs < 0:
		return ruleErr("hot-parameter", r.Resource, "maxQueueingTimeMs %d must not be negative", r.MaxQueueingTimeMs)
	}
	return checkPattern("hot-parameter", r.Resource, r.Pattern)
}

// Warnings lists settings that are accepted but have no effect.
func (r *HotParamRule) Warnings() []string {
	var w []string
	qps := r.MetricType == HotParamQPS
	if !qps && r.DurationInSec != 0 {
		w = append(w, fmt.Sprintf("durationInSec %d is ignored by a concurrency rule", r.DurationInSec))
	}
	if (!qps || r.ControlBehavior != Reject) && r.BurstCount != 0 {
		w = append(w, fmt.Sprintf("burstCount %d only applies to a QPS reject rule", r.BurstCount))
	}
	if (!qps || r.ControlBehavior != Throttling) && r.MaxQueueingTimeMs != 0 {
		w = append(w, fmt.Sprintf("maxQueueingTimeMs %d only applies to a QPS throttling rule", r.MaxQueueingTimeMs))
	}
	if r.ParamKey != "" && r.ParamIndex < 0 {
		w = append(w, fmt.Sprintf("paramIndex %d applies whenever the attachment %q is missing", r.ParamIndex, r.ParamKey))
	}
	if r.ParamsMaxCapacity < 0 {
		w = append(w, fmt.Sprintf("paramsMaxCapacity %d means the default, %d", r.ParamsMaxCapacity, r.Capacity()))
	}
	return w
}

// describe names the rule in a block error.
func (r *HotParamRule) describe() string {
	if r.MetricType == HotParamConcurrency {
		return fmt.Sprintf("hot-parameter rule (concurrency, threshold %d per value)", r.Threshold)
	}
	return fmt.Sprintf("hot-parameter rule (qps, %s, threshold %d per value per %d s)",
		r.ControlBehavior, r.Threshold, r.DurationInSec)
}

// Capacity is how many values the rule tracks at most: ParamsMaxCapacity,
// or sentinel-golang's default for the rule when it is not positive. Above
// math.MaxInt32 it is math.MaxInt32 (memory runs out long before).
func (r *HotParamRule) Capacity() int {
	switch {
	case r.ParamsMaxCapacity > 0:
		return int(min(r.ParamsMaxCapacity, math.MaxInt32))
	case r.MetricType == HotParamConcurrency:
		return HotParamConcurrencyCapacity
	}
	// sentinel-golang's arithmetic, overflow included.
	n := int(math.Min(HotParamMaxCapacity, float64(HotParamCapacityPerSecond*r.DurationInSec)))
	if n <= 0 {
		return HotParamMaxCapacity
	}
	return n
}

// Equal reports whether two rules are the same in every field.
func (r *HotParamRule) Equal(o *HotParamRule) bool {
	return r.ID == o.ID && r.Resource == o.Resource && r.MetricType == o.MetricType &&
		r.ControlBehavior == o.ControlBehavior && r.ParamIndex == o.ParamIndex && r.ParamKey == o.ParamKey &&
		r.Threshold == o.Threshold && r.MaxQueueingTimeMs == o.MaxQueueingTimeMs && r.BurstCount == o.BurstCount &&
		r.DurationInSec == o.DurationInSec && r.ParamsMaxCapacity == o.ParamsMaxCapacity &&
		r.Pattern == o.Pattern && maps.Equal(r.SpecificItems, o.SpecificItems)
}

// Param returns the value of the entry's parameters that the rule limits,
// or nil when it has none: the attachment named ParamKey if present and not
// nil, else the argument at ParamIndex (from the end when negative), as
// sentinel-golang's ExtractArgs picks it.
func (r *HotParamRule) Param(p *Params) any {
	if p == nil {
		return nil
	}
	if r.ParamKey != "" && p.Attachments != nil {
		if v := p.Attachments[r.ParamKey]; v != nil {
			return v
		}
	}
	i := r.ParamIndex
	if i < 0 {
		i += len(p.Args)
	}
	if i < 0 || i >= len(p.Args) {
		return nil
	}
	return p.Args[i]
}

// Params are an entry's parameters, as sentinel-golang's api.WithArgs and
// api.WithAttachments give them. Hot-parameter rules pick one value from
// them (HotParamRule.Param); nothing else reads them.
type Params struct {
	// Args are the positional parameters (ParamIndex).
	Args []any
	// Attachments are the named parameters (ParamKey). sentinel-golang's
	// attachments are keyed by any value, but a rule only ever looks up a
	// string key.
	Attachments map[string]any
}
