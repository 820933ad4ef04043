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
	return r, goNames(r.Resource, r.ID, r.LimitApp)
}

// goFlowAt reads one element of a sentinel-golang flow rule array. A rule
// core does not implement (relationStrategy 1, an associated resource;
// tokenCalculateStrategy 2, memory-adaptive) is refused by Validate.
func goFlowAt(raw json.RawMessage) (core.FlowRule, error) {
	var r core.FlowRule
	if err := decode(raw, &r); err != nil {
		return r, err
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
