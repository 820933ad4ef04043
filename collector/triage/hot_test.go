package triage

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

const hotRes = "GET:/api/orders"

// vipRule is a QPS limit of 200 per value of the first parameter.
func vipRule() core.HotParamRule {
	return core.HotParamRule{Resource: hotRes, MetricType: core.HotParamQPS, Threshold: 200, DurationInSec: 1, ParamsMaxCapacity: 20000}
}

// hotBuckets feeds 500 ms buckets over [from, to) of hotRes on inst, each
// with the resource's blocks and hot values that at gives.
func hotBuckets(e *Feeder, inst string, from, to int64, at func(t int64) (block int64, hot []wire.HotItem)) {
	for t := from; t < to; t += 500 {
		block, hot := at(t)
		var pass int64
		for _, h := range hot {
			pass += h.Pass
		}
		e.Bucket(inst, BucketStat{Resource: hotRes, Start: t, BucketMs: 500, Metrics: core.Metrics{Pass: pass, Block: block, Complete: pass}, Hot: hot})
	}
}

// vip is a value offered 250 per second against 200: its first bucket of
// each second passes 125, its second passes 75 and blocks 50; 1,000 other
// values pass 500 per bucket.
func vip(value string) func(t int64) (int64, []wire.HotItem) {
	return func(t int64) (int64, []wire.HotItem) {
		if t%1000 == 0 {
			return 0, []wire.HotItem{{Value: value, Pass: 125}, {Value: wire.HotOther, Pass: 500}}
		}
		return 50, []wire.HotItem{{Value: value, Pass: 75, Block: 50}, {Value: wire.HotOther, Pass: 500}}
	}
}

// blocking gives buckets in which value blocks vb and the rest rb.
func blocking(value string, vb, rb int64) func(t int64) (int64, []wire.HotItem) {
	return func(int64) (int64, []wire.HotItem) {
		return vb + rb, []wire.HotItem{{Value: value, Pass: 100, Block: vb}, {Value: wire.HotOther, Pass: 400, Block: rb}}
	}
}

// seg is buckets of one instance from and to seconds after t0.
type seg struct {
	inst     string
	from, to float64
	at       func(t int64) (int64, []wire.HotItem)
}

// hotFeed gives each instance of segs the app and vipRule, then feeds the
// segments in order; it returns the end of the latest.
func hotFeed(segs ...seg) func(e *Feeder) int64 {
	return func(e *Feeder) int64 {
		end := t0
		for _, sg := range segs {
			if _, ok := e.insts[sg.inst]; !ok {
				hotApp(e, sg.inst)
			}
			from, to := t0+int64(sg.from*1000), t0+int64(sg.to*1000)
			hotBuckets(e, sg.inst, from, to, sg.at)
			end = max(end, to)
		}
		return end
	}
}

func hotApp(e *Feeder, insts ...string) {
	for _, in := range insts {
		e.Hello(in, "orders", t0, t0-1000)
		e.Rules(in, t0, "v1", nil, nil, vipRule())
	}
}

func TestHotValue(t *testing.T) {
	cases := []struct {
		name  string
		feed  func(e *Feeder) int64
		want  bool
		value string
		share float64
		qps   float64
		n     int64 // the exception proposed
		insts []string
	}{
		{"a VIP at 250 against 200", hotFeed(seg{"o-1", 0, 60, vip("vip-123")}), true, "vip-123", 1, 250, 300, []string{"o-1"}},
		{"exactly half of the blocks", hotFeed(seg{"o-1", 0, 40, blocking("v", 25, 25)}), true, "v", 0.5, 250, 300, []string{"o-1"}},
		{"just under half", hotFeed(seg{"o-1", 0, 40, blocking("v", 24, 25)}), false, "", 0, 0, 0, nil},
		{"29.5 s", hotFeed(seg{"o-1", 0, 29.5, blocking("v", 50, 0)}), false, "", 0, 0, 0, nil},
		{"30 s", hotFeed(seg{"o-1", 0, 30, blocking("v", 50, 0)}), true, "v", 1, 300, 360, []string{"o-1"}},
		{"30 s, then the blocks spread", hotFeed(seg{"o-1", 0, 30, blocking("v", 50, 0)}, seg{"o-1", 30, 60, blocking("v", 10, 90)}),
			true, "v", 1, 300, 360, []string{"o-1"}},
		{"the value changes at 20 s", hotFeed(seg{"o-1", 0, 20, blocking("a", 50, 0)}, seg{"o-1", 20, 40, blocking("b", 50, 0)}),
			false, "", 0, 0, 0, nil},
		{"the second value lasts", hotFeed(seg{"o-1", 0, 20, blocking("a", 50, 0)}, seg{"o-1", 20, 60, blocking("b", 50, 0)}),
			true, "b", 1, 300, 360, []string{"o-1"}},
		{"two values qualify: the one that blocked more", hotFeed(seg{"o-1", 0, 60, blocking("a", 50, 0)}, seg{"o-1", 60, 100, blocking("b", 50, 0)}),
			true, "a", 1, 300, 360, []string{"o-1"}},
		{"a silence of 4 s does not end the run", hotFeed(seg{"o-1", 0, 20, blocking("v", 50, 0)}, seg{"o-1", 20, 24, blocking("v", 0, 0)},
			seg{"o-1", 24, 44, blocking("v", 50, 0)}), true, "v", 1, 290.9, 350, []string{"o-1"}},
		{"a silence of 6 s does", hotFeed(seg{"o-1", 0, 20, blocking("v", 50, 0)}, seg{"o-1", 20, 26, blocking("v", 0, 0)},
			seg{"o-1", 26, 46, blocking("v", 50, 0)}), false, "", 0, 0, 0, nil},
		{"no hot-parameter rules: no hot values", func(e *Feeder) int64 {
			e.Hello("o-1", "orders", t0, t0-1000)
			e.Rules("o-1", t0, "v1", nil, []core.FlowRule{{Resource: hotRes, Threshold: 400}})
			hotBuckets(e, "o-1", t0, t0+60000, func(int64) (int64, []wire.HotItem) { return 100, nil })
			return t0 + 60000
		}, false, "", 0, 0, 0, nil},
		{"the other values are never one value", hotFeed(seg{"o-1", 0, 60, blocking("v", 0, 50)}), false, "", 0, 0, 0, nil},
		{"two instances", hotFeed(seg{"o-2", 0, 40, blocking("vip-123", 50, 0)}, seg{"o-1", 0, 60, vip("vip-123")}),
			true, "vip-123", 1, 300, 360, []string{"o-1", "o-2"}},
		{"rules unknown: per second", func(e *Feeder) int64 {
			e.Hello("o-1", "orders", t0, t0-1000)
			hotBuckets(e, "o-1", t0, t0+60000, vip("vip-123"))
			return t0 + 60000
		}, true, "vip-123", 1, 250, 300, []string{"o-1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, _ := fires(t, c.feed, KindHotValue, c.want)
			if !c.want {
				return
			}
			x := f.Facts.(*HotValueFacts)
			if f.Severity != Warning || f.App != "orders" || f.Resource != hotRes || x.Param != 0 || x.Value != c.value ||
				x.BlockShare != c.share || x.QPS != c.qps || !slices.Equal(f.Instances, c.insts) {
				t.Fatalf("finding %+v facts %+v", f, x)
			}
			b, js := factsJSON(t, f)
			want := fmt.Sprintf(`{"param":0,"value":%q,"blockShare":%v,"qps":%v,"suggest":{"specificItems":{%q:%d}}}`, c.value, c.share, c.qps, c.value, c.n)
			if string(b) != want || len(js) != 5 {
				t.Fatalf("facts %s, want %s", b, want)
			}
			if f.Summary == "" || f.Advice == "" || !strings.Contains(f.Advice, fmt.Sprint(c.n)) || !strings.Contains(f.Summary, fmtFloat(c.qps, 1)+" QPS") {
				t.Fatalf("words %q / %q", f.Summary, f.Advice)
			}
			if x.Rule != nil && !strings.Contains(f.Advice, "instead of 200") {
				t.Fatalf("advice %q", f.Advice)
			}
		})
	}
}

// The value is input: it never appears in the words, only in the facts.
func TestHotValueWordsQuoteNoValue(t *testing.T) {
	const evil = "<img src=x onerror=alert(1)> 12"
	e := NewFeeder(Config{})
	hotApp(e, "o-1")
	hotBuckets(e, "o-1", t0, t0+60000, vip(evil))
	f := one(t, e.Findings(t0+60000), KindHotValue)
	if strings.Contains(f.Summary, "<img") || strings.Contains(f.Advice, "<img") || f.Facts.(*HotValueFacts).Value != evil {
		t.Fatalf("%+v", f)
	}
	var inputs []string
	for _, fact := range f.Facts.Evidence() {
		for _, p := range fact.Parts {
			if strings.Contains(p.Text, "<img") {
				t.Fatalf("value in the evidence's text: %+v", fact)
			}
			inputs = append(inputs, p.Input...)
		}
	}
	if !slices.Contains(inputs, evil) {
		t.Fatalf("value not in the evidence: %+v", f.Facts.Evidence())
	}
}

// A concurrency limit's exception scales its threshold by the value's
// offered over its admitted entries.
func TestHotValueConcurrency(t *testing.T) {
	e := NewFeeder(Config{})
	e.Hello("o-1", "orders", t0, t0-1000)
	r := vipRule()
	r.MetricType, r.Threshold = core.HotParamConcurrency, 20
	e.Rules("o-1", t0, "v1", nil, nil, r)
	hotBuckets(e, "o-1", t0, t0+60000, blocking("v", 50, 0)) // 150 offered, 100 admitted per bucket
	f := one(t, e.Findings(t0+60000), KindHotValue)
	// 20 x 150 / 100 = 30, with 20 % headroom 36, rounded up to 40.
	if n := f.Facts.(*HotValueFacts).Suggest.SpecificItems["v"]; n != 40 || !strings.Contains(f.Advice, "from 20 to 40") {
		t.Fatalf("exception %d, advice %q", n, f.Advice)
	}
}

// A run still going counts; the state of a series stays one run and one
// best whatever the number of values, and a steady run does not allocate.
func TestHotValueBounded(t *testing.T) {
	e := NewFeeder(Config{})
	hotApp(e, "o-1")
	hotBuckets(e, "o-1", t0, t0+100000, func(t int64) (int64, []wire.HotItem) {
		return 50, []wire.HotItem{{Value: fmt.Sprint("id-", t/500), Pass: 1, Block: 50}}
	})
	if len(e.hot.series) != 1 || len(only(t, e.Findings(t0+100000), KindHotValue)) != 0 {
		t.Fatalf("hots %d", len(e.hot.series))
	}
	hot := []wire.HotItem{{Value: "vip", Pass: 10, Block: 50}}
	at := t0 + 100000
	allocs := testing.AllocsPerRun(200, func() {
		e.Bucket("o-1", BucketStat{Resource: hotRes, Start: at, BucketMs: 500, Metrics: core.Metrics{Pass: 10, Block: 50}, Hot: hot})
		at += 500
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per bucket", allocs)
	}
	if f := one(t, e.Findings(at), KindHotValue); f.Facts.(*HotValueFacts).Value != "vip" || f.To != at {
		t.Fatalf("%+v", f)
	}
}
