package sentinelgolang

import (
	"cmp"
	"math"
	"reflect"
	"slices"
	"strconv"

	sgbase "github.com/alibaba/sentinel-golang/core/base"
	sghotspot "github.com/alibaba/sentinel-golang/core/hotspot"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/internal/hotvalues"
	"github.com/sentinel-top/sentinel-top/internal/wsstream"
)

// sortedHotspotRules reads sentinel-golang's hotspot rules in a stable
// order.
func sortedHotspotRules() []sghotspot.Rule {
	raw := sghotspot.GetRules()
	slices.SortStableFunc(raw, func(x, y sghotspot.Rule) int {
		return cmp.Or(cmp.Compare(x.Resource, y.Resource), cmp.Compare(x.ID, y.ID), cmp.Compare(x.ParamIndex, y.ParamIndex),
			cmp.Compare(x.ParamKey, y.ParamKey), cmp.Compare(x.Threshold, y.Threshold))
	})
	return raw
}

// sameHotspotRules reports whether two reads of the hotspot rules are
// equal (their specific items are maps, so the rules do not compare).
func sameHotspotRules(x, y []sghotspot.Rule) bool {
	return len(x) == len(y) && (len(x) == 0 || reflect.DeepEqual(x, y))
}

// hotParamRules maps sentinel-golang's hotspot rules to core's (the same
// JSON, specific items keyed by text as core matches a parameter), with
// the count of those left out: invalid, over the wire's bounds, or with a
// specific item of a kind core cannot match. It also returns a tracker of
// hot values per resource.
func hotParamRules(raw []sghotspot.Rule, bucketMs int64) ([]core.HotParamRule, map[string]*hotvalues.Tracker, int64) {
	var params []core.HotParamRule
	var skipped int64
	byRes := map[string][]core.HotParamRule{}
	for _, r := range raw {
		c := core.HotParamRule{ID: r.ID, Resource: r.Resource, MetricType: core.HotParamMetric(r.MetricType),
			ControlBehavior: core.ControlBehavior(r.ControlBehavior), ParamIndex: r.ParamIndex, ParamKey: r.ParamKey,
			Threshold: r.Threshold, MaxQueueingTimeMs: r.MaxQueueingTimeMs, BurstCount: r.BurstCount,
			DurationInSec: r.DurationInSec, ParamsMaxCapacity: r.ParamsMaxCapacity}
		ok := c.Validate() == nil && validNames(c.Resource, c.ID, c.ParamKey)
		for v, t := range r.SpecificItems {
			text, known := itemText(v)
			if !known || !validNames(text) {
				ok = false
				break
			}
			if c.SpecificItems == nil {
				c.SpecificItems = map[string]int64{}
			}
			c.SpecificItems[text] = t
		}
		if !ok {
			skipped++
			continue
		}
		params = append(params, c)
		byRes[c.Resource] = append(byRes[c.Resource], c)
	}
	trackers := make(map[string]*hotvalues.Tracker, len(byRes))
	for res, rules := range byRes {
		trackers[res] = hotvalues.New(rules, bucketMs)
	}
	return params, trackers, skipped
}

// itemText is a specific item's value as text, as core matches a
// parameter: a string itself, an integer in decimal, a float as Go
// formats it, a bool; false for another kind.
func itemText(v any) (string, bool) {
	r := reflect.ValueOf(v)
	switch r.Kind() {
	case reflect.String:
		return r.String(), true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(r.Int(), 10), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return strconv.FormatUint(r.Uint(), 10), true
	case reflect.Float32, reflect.Float64:
		if f := r.Float(); !math.IsNaN(f) {
			return strconv.FormatFloat(f, 'g', -1, 64), true
		}
	case reflect.Bool:
		return strconv.FormatBool(r.Bool()), true
	}
	return "", false
}

// countHot counts an entry under the parameter values its resource's
// hotspot rules read.
func (a *Adapter) countHot(ctx *sgbase.EntryContext, passed bool) {
	t := a.rules.Load().hot[ctx.Resource.Name()]
	if t == nil || ctx.Input == nil {
		return
	}
	p := core.Params{Args: ctx.Input.Args}
	if keys := t.Keys(); len(keys) > 0 && len(ctx.Input.Attachments) > 0 {
		p.Attachments = make(map[string]any, len(keys))
		for _, k := range keys {
			if v, ok := ctx.Input.Attachments[k]; ok {
				p.Attachments[k] = v
			}
		}
	}
	t.Record(a.clock.UnixMilli(), &p, passed, batchOf(ctx))
}

// hotResource is a resource with hot values (wsstream.HotSeries).
type hotResource struct {
	*resource
	*hotvalues.Tracker
}

var _ wsstream.HotSeries = hotResource{}
