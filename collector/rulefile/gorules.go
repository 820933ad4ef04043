package rulefile

import (
	"encoding/json"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// sentinel-golang's rules: their JSON is core's, so a rule decodes into
// core's type as it is, core's extensions (semantics, pattern, limitApp)
// included, and core's Validate judges it.

// goBreakerAt reads one element of a sentinel-golang breaker rule array.
func goBreakerAt(raw json.RawMessage) (core.BreakerRule, error) {
	var r core.BreakerRule
	if err := decode(raw, &r); err != nil {
		return r, err
	}
	if err := r.Validate(); err != nil {
		return r, err
	}
	if n := r.BucketCount(); n > maxBuckets {
		return r, invalid("statSlidingWindowBucketCount", "statSlidingWindowBucketCount %d is over %d: sentinel-golang, and core, make a window of that many buckets at once",
			n, maxBuckets)
	}
	return r, goNames(r.Resource, r.ID, r.LimitApp)
}

// maxBuckets bounds a breaker's buckets. sentinel-golang v1.0.4 makes its
// window's buckets when it loads the rule, as core does when it builds
// the breaker, however many statSlidingWindowBucketCount asks for (when
// it divides statIntervalMs): 4294967295 of them is 32 GiB of pointers,
// and the process dies. A window of 65536 buckets is over a minute of
// 1 ms buckets, far past any rule's need.
const maxBuckets = 1 << 16

// goFlowAt reads one element of a sentinel-golang flow rule array. A rule
// core does not implement (relationStrategy 1, an associated resource;
// tokenCalculateStrategy 2, memory-adaptive) is refused by Validate. A
// refResource without relationStrategy 1 is dropped: sentinel-golang
// looks at it for an associated resource only.
func goFlowAt(raw json.RawMessage) (core.FlowRule, error) {
	var r core.FlowRule
	if err := decode(raw, &r); err != nil {
		return r, err
	}
	if err := decode(raw, &goFlowOnly{}); err != nil {
		return r, err
	}
	if r.RelationStrategy == 0 {
		r.RefResource = ""
	}
	if err := r.Validate(); err != nil {
		return r, err
	}
	return r, goNames(r.Resource, r.ID, r.LimitApp)
}

// goNames refuses names a wire rules message cannot carry.
func goNames(resource, id, limitApp string) error {
	for _, n := range [...]struct{ field, s string }{{"resource", resource}, {"id", id}, {"limitApp", limitApp}} {
		if len(n.s) > wire.DefaultMaxNameBytes {
			return invalid(n.field, "%s is %d bytes, over %d", n.field, len(n.s), wire.DefaultMaxNameBytes)
		}
	}
	return nil
}

// goFlowOnly are the fields of sentinel-golang's flow.Rule that core's
// has not, those of memory-adaptive rules (which Validate refuses): read
// for their types only, as sentinel-golang refuses a file where one has
// the wrong type.
type goFlowOnly struct {
	LowMemUsageThreshold  int64 `json:"lowMemUsageThreshold"`
	HighMemUsageThreshold int64 `json:"highMemUsageThreshold"`
	MemLowWaterMarkBytes  int64 `json:"memLowWaterMarkBytes"`
	MemHighWaterMarkBytes int64 `json:"memHighWaterMarkBytes"`
}
