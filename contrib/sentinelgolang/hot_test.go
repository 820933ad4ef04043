package sentinelgolang

import (
	"fmt"
	"math"
	"testing"

	"github.com/alibaba/sentinel-golang/api"
	sgbase "github.com/alibaba/sentinel-golang/core/base"
	sghotspot "github.com/alibaba/sentinel-golang/core/hotspot"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/core"
)

// TestHotspotRulesAndValues: sentinel-golang's hotspot rules reach the
// collector as params, and the values the adapter sees as each bucket's
// hot values, with exactly the passes and blocks sentinel-golang decided.
func TestHotspotRulesAndValues(t *testing.T) {
	a, err := New(Options{App: "order", Instance: "order-1"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := sghotspot.LoadRules([]*sghotspot.Rule{{ID: "per-customer", Resource: "query-order", MetricType: sghotspot.QPS,
		ControlBehavior: sghotspot.Reject, ParamIndex: 0, Threshold: 5, DurationInSec: 1,
		SpecificItems: map[interface{}]int64{"vip-9": 100, 42: 7}}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sghotspot.ClearRules() })
	a.RefreshRules()
	c := serve(t, a)
	want := core.HotParamRule{ID: "per-customer", Resource: "query-order", MetricType: core.HotParamQPS, Threshold: 5,
		DurationInSec: 1, SpecificItems: map[string]int64{"vip-9": 100, "42": 7}}

	passed := map[string]int{}
	blocked := map[string]int{}
	for _, v := range []string{"c-1", "c-1", "c-1", "c-1", "c-1", "c-1", "c-1", "c-1", "vip-9", "vip-9", "vip-9", "vip-9", "vip-9", "vip-9", "vip-9"} {
		e, b := api.Entry("query-order", api.WithTrafficType(sgbase.Inbound), api.WithArgs(v))
		if b != nil {
			blocked[v]++
			continue
		}
		passed[v]++
		e.Exit()
	}
	if blocked["c-1"] == 0 || blocked["vip-9"] != 0 {
		t.Fatalf("sentinel-golang passed %v and blocked %v", passed, blocked)
	}
	eventually(t, "hot values in the detail", func() error {
		now := a.clock.UnixMilli()
		d := c.Detail("order", "query-order", now-60000, now)
		if len(d.HotRules) != 1 || !d.HotRules[0].Equal(&want) {
			return fmt.Errorf("rules %+v", d.HotRules)
		}
		window := collector.DefaultRateWindow.Seconds()
		got := map[string][2]float64{}
		for _, h := range d.Hot {
			got[h.Value] = [2]float64{h.PassQPS * window, h.BlockQPS * window}
		}
		for _, v := range []string{"c-1", "vip-9"} {
			if g := got[v]; math.Abs(g[0]-float64(passed[v])) > 1e-9 || math.Abs(g[1]-float64(blocked[v])) > 1e-9 {
				return fmt.Errorf("%s: %v, want %d passed and %d blocked (all %v)", v, g, passed[v], blocked[v], got)
			}
		}
		return nil
	})
	if st := a.Stats(); st.SkippedRules != 0 || st.Panics != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestHotspotRuleOfAnUnknownItemKind: a rule with a specific item of a kind
// core cannot match is left out and counted.
func TestHotspotRuleOfAnUnknownItemKind(t *testing.T) {
	params, hot, skipped := hotParamRules([]sghotspot.Rule{
		{Resource: "a", MetricType: sghotspot.Concurrency, Threshold: 1, SpecificItems: map[interface{}]int64{struct{}{}: 1}},
		{Resource: "b", MetricType: sghotspot.Concurrency, Threshold: 1, SpecificItems: map[interface{}]int64{true: 1, 2.5: 2, uint8(3): 3}},
		{Resource: "c", MetricType: sghotspot.QPS, Threshold: 1}, // no duration
	}, 500)
	if skipped != 2 || len(params) != 1 || params[0].Resource != "b" || hot["b"] == nil || hot["a"] != nil ||
		fmt.Sprint(params[0].SpecificItems) != "map[2.5:2 3:3 true:1]" {
		t.Fatalf("params %+v, skipped %d", params, skipped)
	}
}
