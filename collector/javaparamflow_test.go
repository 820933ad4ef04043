package collector

import (
	"reflect"
	"testing"

	"github.com/sentinel-top/sentinel-top/collector/triage"
	"github.com/sentinel-top/sentinel-top/core"
)

// TestJavaParamFlowFromTransport plays the recorded transport API of a Java
// Sentinel 1.8.9 application with sentinel-parameter-flow-control
// (testdata/java/paramflow-1.8.9, docs/JAVA.md) to a poller: its
// hot-parameter rule, which Java answers at /getParamFlowRules only
// (/getRules?type=paramFlow is HTTP 400 "invalid type"), arrives as the
// instance's params; the flow and degrade rules keep limitApp as Java
// served it; hot values are unknown; and the flow rule whose limitApp is
// the app's own name is an inert rule once its resource had a minute of
// traffic.
func TestJavaParamFlowFromTransport(t *testing.T) {
	const dir, app = "testdata/java/paramflow-1.8.9", "price-service"
	c, srv, clock, first := javaReplayPolled(t, dir, app, func(first int64, srv *javaReplayServer) int64 {
		last := first
		for _, l := range srv.lines {
			last = max(last, l.seen)
		}
		return last + 1 // through the last request
	})
	if len(srv.answers["/getParamFlowRules"]) == 0 || srv.answers["/getRules?type=paramFlow"][0].Status != 400 {
		t.Fatalf("the recording does not have the hot-parameter rules where Java answers them")
	}
	from, to := first-60000, clock.UnixMilli()
	if _, rejected, _ := c.Counters(); rejected != 0 {
		t.Errorf("%d rejected: %+v", rejected, c.Publish().Rejects)
	}

	// The ParamFlowRule: paramIdx 0, count 200.0 per durationInSec 1, and
	// cust-100042 of classType java.lang.String at 300; limitApp "default".
	d := c.Detail(app, "getPrice", from, to)
	wantParams := []core.HotParamRule{{Resource: "getPrice", MetricType: core.HotParamQPS, ParamIndex: 0, Threshold: 200,
		DurationInSec: 1, SpecificItems: map[string]int64{"cust-100042": 300}}}
	if len(d.Instances) != 1 {
		t.Fatalf("getPrice: %d instances", len(d.Instances))
	}
	if in := d.Instances[0]; !reflect.DeepEqual(d.HotRules, wantParams) || !reflect.DeepEqual(in.Params, wantParams) {
		t.Errorf("getPrice: hot rules %+v, instance's %+v", d.HotRules, in.Params)
	}
	if d.HotUnknown != "Java Sentinel" || d.Hot != nil {
		t.Errorf("getPrice: hot values unknown %q, values %+v", d.HotUnknown, d.Hot)
	}
	if tp, ok := c.Totals(d.Instances[0].Instance, "getPrice"); !ok || tp.Pass == 0 || tp.Block == 0 {
		t.Errorf("getPrice: totals %+v: the hot value was not blocked", tp)
	}

	// limitApp as Java served it: the app's own name on the flow rule (which
	// therefore never blocks the app's callers), a caller's on the degrade
	// rule.
	d = c.Detail(app, "listOrders", from, to)
	wantFlows := []core.FlowRule{{Resource: "listOrders", Threshold: 20, LimitApp: app}}
	if len(d.Instances) != 1 || !reflect.DeepEqual(d.Instances[0].Flows, wantFlows) {
		t.Fatalf("listOrders: %+v", d.Instances)
	}
	if tp, ok := c.Totals(d.Instances[0].Instance, "listOrders"); !ok || tp.Pass == 0 || tp.Block != 0 {
		t.Errorf("listOrders: totals %+v", tp)
	}
	d = c.Detail(app, "chargeCard", from, to)
	if len(d.Instances) != 1 || len(d.Instances[0].Breakers) != 1 || d.Instances[0].Breakers[0].LimitApp != "checkout-web" ||
		d.Instances[0].Breakers[0].Strategy != core.ErrorRatio {
		t.Fatalf("chargeCard: %+v", d.Instances)
	}

	// triage: the flow rule whose limitApp is the app's own name is inert.
	var inert []triage.Finding
	for _, f := range c.Findings() {
		if f.Kind == triage.KindInertRule {
			inert = append(inert, f)
		}
	}
	if len(inert) != 1 {
		t.Fatalf("inert-rule findings %+v", inert)
	}
	x, ok := inert[0].Facts.(*triage.InertRuleFacts)
	if f := inert[0]; !ok || f.App != app || f.Resource != "listOrders" || x.Reason != triage.InertOriginMismatch ||
		!reflect.DeepEqual(x.Rule.Flows, wantFlows) || len(x.Rule.Breakers) != 0 || f.To-f.From < triage.InertMinReportMs {
		t.Errorf("inert-rule %+v facts %+v", f, x)
	}
}
