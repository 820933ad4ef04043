package collector

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// rowGuards is what a row says guards its resource, as the table reads it.
type rowGuards struct{ breaker, flow, param, unknown bool }

func guardsOf(r *ResourceRow) rowGuards {
	return rowGuards{r.HasBreaker, r.HasFlow, r.HasParam, r.RulesUnknown}
}

// rowsByName are a snapshot's rows by "app/resource".
func rowsByName(s *Snapshot) map[string]*ResourceRow {
	out := map[string]*ResourceRow{}
	for i := range s.Rows {
		out[s.Rows[i].App+"/"+s.Rows[i].Resource] = &s.Rows[i]
	}
	return out
}

// TestRowsSayWhichRulesGuard: a row sums which rules its instances have
// for the resource (flow, hot-parameter, breaker), as the rules messages
// tell them and as they change, and says when some instance's rules were
// never read (an instance that sent none: its "no rule" is not known).
func TestRowsSayWhichRulesGuard(t *testing.T) {
	clock := core.NewVirtualClock(time.UnixMilli(t0ms))
	c := New(Options{Clock: clock})
	flow := func(res string) core.FlowRule { return core.FlowRule{Resource: res, Threshold: 100} }
	param := func(res string) core.HotParamRule {
		return core.HotParamRule{Resource: res, MetricType: core.HotParamQPS, Threshold: 10, DurationInSec: 1}
	}
	breaker := core.BreakerRule{Resource: "breaker", Strategy: core.ErrorRatio, Threshold: 0.5, RetryTimeoutMs: 5000,
		MinRequestAmount: 20, StatIntervalMs: 1000}
	for _, in := range []string{"x-1", "x-2", "y-1"} {
		app := in[:1]
		c.Ingest("t", &wire.Hello{Header: wire.Header{Ts: t0ms, Instance: in}, App: app, BucketMs: 500})
	}
	// x-1 and x-2 tell their rules; y-1 never does (as a metric log).
	c.Ingest("t", &wire.Rules{Header: wire.Header{Ts: t0ms, Instance: "x-1"}, Version: "1",
		Breakers: []core.BreakerRule{breaker}, Flows: []core.FlowRule{flow("flow-only"), flow("flow-param"), flow("breaker")}})
	c.Ingest("t", &wire.Rules{Header: wire.Header{Ts: t0ms, Instance: "x-2"}, Version: "2",
		Params: []core.HotParamRule{param("flow-param"), param("param-only")}})
	items := func(names ...string) []wire.BucketItem {
		var out []wire.BucketItem
		for _, n := range names {
			out = append(out, wire.BucketItem{Resource: n, Start: t0ms, Metrics: core.Metrics{Pass: 5, Complete: 5}})
		}
		return out
	}
	xs := []string{"flow-only", "flow-param", "param-only", "breaker", "bare"}
	for _, in := range []string{"x-1", "x-2"} {
		c.Ingest("t", &wire.Buckets{Header: wire.Header{Ts: t0ms + 500, Instance: in}, BucketMs: 500, Items: items(xs...)})
	}
	c.Ingest("t", &wire.Buckets{Header: wire.Header{Ts: t0ms + 500, Instance: "y-1"}, BucketMs: 500, Items: items("bare")})
	clock.Advance(time.Second)
	want := map[string]rowGuards{
		"x/flow-only":  {flow: true},
		"x/flow-param": {flow: true, param: true},
		"x/param-only": {param: true},
		"x/breaker":    {breaker: true, flow: true},
		"x/bare":       {},
		"y/bare":       {unknown: true},
	}
	check := func(when string) {
		t.Helper()
		rows := rowsByName(c.Publish())
		if len(rows) != len(want) {
			t.Fatalf("%s: %d rows, want %d", when, len(rows), len(want))
		}
		for name, w := range want {
			r := rows[name]
			if r == nil {
				t.Fatalf("%s: no row %s", when, name)
			}
			if got := guardsOf(r); got != w {
				t.Errorf("%s: %s: %+v, want %+v", when, name, got, w)
			}
		}
	}
	check("first rules")

	// x-1's next rules drop its flow rules but that of flow-param; y-1's
	// rules are read at last, with none for bare.
	c.Ingest("t", &wire.Rules{Header: wire.Header{Ts: t0ms + 1000, Instance: "x-1"}, Version: "3",
		Breakers: []core.BreakerRule{breaker}, Flows: []core.FlowRule{flow("flow-param")}})
	c.Ingest("t", &wire.Rules{Header: wire.Header{Ts: t0ms + 1000, Instance: "y-1"}, Version: "4"})
	want["x/flow-only"], want["x/breaker"], want["y/bare"] = rowGuards{}, rowGuards{breaker: true}, rowGuards{}
	check("rules changed")

	d := c.Detail("y", "bare", t0ms-60000, t0ms+2000)
	if len(d.Instances) != 1 || d.Instances[0].RulesUnknown {
		t.Errorf("y/bare's detail: %+v, want its rules known", d.Instances)
	}
}

// TestJavaRowsShowTheRulesRead serves the recorded transport API of a Java
// Sentinel 1.8.9 application twice: as recorded, and without /getRules (a
// service whose rules cannot be read). The rules read show in the rows
// and the detail: listPrices has a flow rule only, queryPrice a degrade
// rule, price_cache none (every rule was read: "no rule"); where the
// rules could not be read, every row says they are unknown.
func TestJavaRowsShowTheRulesRead(t *testing.T) {
	const dir = "testdata/java/price-1.8.9"
	clock := core.NewVirtualClock(time.UnixMilli(0))
	read, first := newJavaReplayServer(t, clock, dir)
	unread, _ := newJavaReplayServer(t, clock, dir)
	for path := range unread.answers {
		if strings.HasPrefix(path, "/getRules") {
			delete(unread.answers, path)
		}
	}
	clock.Set(time.UnixMilli(first))
	var specs []string
	for app, srv := range map[string]*javaReplayServer{"price-read": read, "price-unread": unread} {
		hs := httptest.NewServer(srv)
		t.Cleanup(hs.Close)
		specs = append(specs, "sentinel://"+strings.TrimPrefix(hs.URL, "http://")+"?app="+app)
	}
	c := New(Options{Clock: clock})
	javaDial(t, c, strings.Join(specs, ","))
	javaWaitPolls(t, c, "first polls", []int64{1, 1})
	javaPolls(t, c, clock, 10)
	rows := rowsByName(c.Publish())
	for name, w := range map[string]rowGuards{
		"price-read/listPrices":    {flow: true},
		"price-read/price_cache":   {},
		"price-read/queryPrice":    {breaker: true},
		"price-unread/listPrices":  {unknown: true},
		"price-unread/price_cache": {unknown: true},
		"price-unread/queryPrice":  {unknown: true},
	} {
		r := rows[name]
		if r == nil {
			t.Fatalf("no row %s in %v", name, rows)
		}
		if got := guardsOf(r); got != w {
			t.Errorf("%s: %+v, want %+v", name, got, w)
		}
	}
	now := clock.UnixMilli()
	for app, w := range map[string]struct {
		flows   int
		unknown bool
	}{"price-read": {1, false}, "price-unread": {0, true}} {
		d := c.Detail(app, "listPrices", now-60000, now)
		if len(d.Instances) != 1 {
			t.Fatalf("%s/listPrices: %d instances", app, len(d.Instances))
		}
		in := d.Instances[0]
		if len(in.Flows) != w.flows || in.RulesUnknown != w.unknown || in.HasBreaker {
			t.Errorf("%s/listPrices: flows %+v, rules unknown %v, breaker %v", app, in.Flows, in.RulesUnknown, in.HasBreaker)
		}
	}
}
