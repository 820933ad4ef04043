package fleet

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/sentinel-top/sentinel-top/core"
)

// Rules is an instance's complete rule set as its latest rules message
// gave it, the one copy every view and detector reads. It is never
// changed once made: a new rules message makes new Rules.
type Rules struct {
	// Version is the rules message's version.
	Version string
	// Resources are its breaker and flow rules by resource, each set in
	// canonical order.
	Resources map[string]*ResourceRules
	// Params are its hot-parameter rules by resource, as sent.
	Params map[string][]core.HotParamRule
}

// Of is the rules for resource (nil: none, or r is nil).
func (r *Rules) Of(resource string) *ResourceRules {
	if r == nil {
		return nil
	}
	return r.Resources[resource]
}

// VersionOf is r's version ("": r is nil, no rules told).
func (r *Rules) VersionOf() string {
	if r == nil {
		return ""
	}
	return r.Version
}

// ParamsOf is the hot-parameter rules for resource (nil: none, or r is nil).
func (r *Rules) ParamsOf(resource string) []core.HotParamRule {
	if r == nil {
		return nil
	}
	return r.Params[resource]
}

// HasBreaker reports whether r has a breaker rule for resource.
func (r *Rules) HasBreaker(resource string) bool {
	rr := r.Of(resource)
	return rr != nil && len(rr.Breakers) > 0
}

// ResourceRules are an instance's breakers and flows for one resource in
// their canonical order (sorted by content, so that equal sets compare
// equal whatever the order they were sent in), with Key, the canonical
// content that rule drift compares (retryTimeoutMs left out: jittering
// it per instance is the fix for synchronized probes, not drift).
type ResourceRules struct {
	Breakers []core.BreakerRule
	Flows    []core.FlowRule
	Key      string
}

// RuleBook makes Rules, keeping one copy of each resource's rules for all
// the instances that have the same (those of an app mostly do). The zero
// RuleBook is ready to use; it is not safe for concurrent use.
type RuleBook struct {
	keys     map[string]*ResourceRules
	keyBytes int
}

// Bounds of what a RuleBook keeps for sharing: past them it starts over
// rather than keep the rules of every content ever sent (a peer sending
// rules of new contents in every message).
const (
	maxShared      = 1 << 16
	maxSharedBytes = 8 << 20
)

// Make is the Rules of a rules message: its slices are copied, breakers
// and flows grouped by resource in canonical order and shared with the
// equal sets the book holds.
func (b *RuleBook) Make(version string, breakers []core.BreakerRule, flows []core.FlowRule, params []core.HotParamRule) *Rules {
	r := &Rules{Version: strings.Clone(version), Resources: map[string]*ResourceRules{}}
	get := func(res string) *ResourceRules {
		rr := r.Resources[res]
		if rr == nil {
			rr = &ResourceRules{}
			r.Resources[strings.Clone(res)] = rr
		}
		return rr
	}
	for _, x := range breakers {
		x.Resource, x.ID = strings.Clone(x.Resource), strings.Clone(x.ID)
		rr := get(x.Resource)
		rr.Breakers = append(rr.Breakers, x)
	}
	for _, x := range flows {
		x.Resource, x.ID = strings.Clone(x.Resource), strings.Clone(x.ID)
		rr := get(x.Resource)
		rr.Flows = append(rr.Flows, x)
	}
	for res, rr := range r.Resources {
		rr.canonicalize()
		r.Resources[res] = b.share(rr)
	}
	for _, p := range params {
		if r.Params == nil {
			r.Params = map[string][]core.HotParamRule{}
		}
		p.Resource = strings.Clone(p.Resource)
		p.SpecificItems = maps.Clone(p.SpecificItems)
		r.Params[p.Resource] = append(r.Params[p.Resource], p)
	}
	return r
}

// share returns the one copy of rules equal to rr the book keeps, or rr,
// which becomes that copy when none has its key yet. A copy of the same
// key but other content (a retryTimeoutMs jittered per instance) shares
// its key string only.
func (b *RuleBook) share(rr *ResourceRules) *ResourceRules {
	if x, ok := b.keys[rr.Key]; ok {
		if slices.Equal(x.Breakers, rr.Breakers) && slices.Equal(x.Flows, rr.Flows) {
			return x
		}
		rr.Key = x.Key
		return rr
	}
	if b.keys == nil || len(b.keys) >= maxShared || b.keyBytes+len(rr.Key) > maxSharedBytes {
		// Sharing only saves memory and time: start over.
		b.keys, b.keyBytes = map[string]*ResourceRules{}, 0
	}
	b.keys[rr.Key] = rr
	b.keyBytes += len(rr.Key)
	return rr
}

// canonicalize sorts the rules by content, so that equal rule sets compare
// equal whatever their order, and computes the comparison key.
func (rr *ResourceRules) canonicalize() {
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil { // NaN or Inf: keep them distinguishable all the same
			return "!"
		}
		return string(b)
	}
	bk := make([]string, len(rr.Breakers))
	for i := range rr.Breakers {
		r := rr.Breakers[i]
		r.RetryTimeoutMs = 0
		bk[i] = enc(r)
	}
	fk := make([]string, len(rr.Flows))
	for i := range rr.Flows {
		fk[i] = enc(rr.Flows[i])
	}
	sortBy(rr.Breakers, bk)
	sortBy(rr.Flows, fk)
	var buf bytes.Buffer
	for _, k := range bk {
		buf.WriteString(k)
		buf.WriteByte(0)
	}
	buf.WriteByte(1)
	for _, k := range fk {
		buf.WriteString(k)
		buf.WriteByte(0)
	}
	rr.Key = buf.String()
}

// sortBy sorts xs and keys together by keys.
func sortBy[T any](xs []T, keys []string) {
	if len(xs) < 2 {
		return
	}
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return strings.Compare(keys[a], keys[b]) })
	xs2 := make([]T, len(xs))
	ks2 := make([]string, len(xs))
	for i, j := range idx {
		xs2[i], ks2[i] = xs[j], keys[j]
	}
	copy(xs, xs2)
	copy(keys, ks2)
}
