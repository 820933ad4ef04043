package ui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// hotFrom is when the hot-parameter fleet's data begins; it runs 60 s.
var hotFrom = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC).UnixMilli()

// hotFleet is a VIP customer throttled by a hot-parameter rule: app order
// (one agent) limits each customer of query-order to 200 a second, one of
// them at 250 a second and blocked, another with an item of its own, a
// customer id that is a terminal escape, and 40 others at 1 a second; app
// price (Java Sentinel) has a hot-parameter rule on queryPrice, whose hot
// values its API cannot tell.
func hotFleet() []wire.Message {
	rule := core.HotParamRule{Resource: "query-order", MetricType: core.HotParamQPS, Threshold: 200, DurationInSec: 1,
		BurstCount: 20, SpecificItems: map[string]int64{"vip-9": 1000}}
	flows := []core.FlowRule{{Resource: "query-order", Threshold: 5000, LimitApp: "gateway"}}
	javaRule := core.HotParamRule{Resource: "queryPrice", MetricType: core.HotParamQPS, ParamIndex: 1, Threshold: 50, DurationInSec: 1,
		ID: "java:limitApp=web"}
	msgs := []wire.Message{
		&wire.Hello{Header: wire.Header{Ts: hotFrom, Instance: "order-1"}, App: "order", SDK: "sentinel-top-agent/0.1.0", BucketMs: 500},
		&wire.Rules{Header: wire.Header{Ts: hotFrom, Instance: "order-1"}, Version: wire.RulesVersion(nil, flows, rule),
			Flows: flows, Params: []core.HotParamRule{rule}},
		&wire.Hello{Header: wire.Header{Ts: hotFrom, Instance: "price-1"}, App: "price", SDK: "java-sentinel/1.8.9", BucketMs: 1000},
		&wire.Rules{Header: wire.Header{Ts: hotFrom, Instance: "price-1"}, Version: wire.RulesVersion(nil, nil, javaRule),
			Params: []core.HotParamRule{javaRule}},
	}
	for k := range 120 {
		start := hotFrom + int64(k)*500
		it := wire.BucketItem{Resource: "query-order", Start: start, Metrics: core.Metrics{Pass: 100 + 150 + 20, Block: 25,
			Complete: 270, RtSum: 270 * 12, RtMin: 3, RtMax: 40, Hist: [core.HistogramSlots]int64{3: 60, 4: 200, 5: 10}}, HasHist: true}
		it.Hot = []wire.HotItem{{Value: "vip-9", Pass: 150}, {Value: "vip-123", Pass: 100, Block: 25},
			{Value: "\x1b[2Jcust\nomer-" + strings.Repeat("x", 40), Pass: 1}}
		for c := range 5 {
			it.Hot = append(it.Hot, wire.HotItem{Value: fmt.Sprintf("c-%02d", (k%8)*5+c), Pass: 1})
		}
		it.Hot = append(it.Hot, wire.HotItem{Value: wire.HotOther, Pass: 14})
		msgs = append(msgs, &wire.Buckets{Header: wire.Header{Ts: start + 500, Instance: "order-1"}, BucketMs: 500,
			Items: []wire.BucketItem{it}})
		if k%2 == 1 {
			s := start - 500
			msgs = append(msgs, &wire.Buckets{Header: wire.Header{Ts: s + 1000, Instance: "price-1"}, BucketMs: 1000,
				Items: []wire.BucketItem{{Resource: "queryPrice", Start: s, Metrics: core.Metrics{Pass: 30, Complete: 30, RtSum: 600, RtMin: 20, RtMax: 20}}}})
		}
	}
	return msgs
}

// TestGoldenHot shows the hot parameters of the detail screen: the rule,
// the hottest values with their rates (the blocked one marked, an escape
// made harmless) and the rule limiting each; and for Java, that the
// values are unknown.
func TestGoldenHot(t *testing.T) {
	msgs := hotFleet()
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		for _, sc := range []struct{ name, keys, last string }{
			{"detail", "/query-order<enter><enter>", wire.HotOther},
			{"detail_java", "/queryPrice<enter><enter>", "unknown for Java"},
		} {
			t.Run(fmt.Sprintf("%s_%dx%d", sc.name, size[0], size[1]), func(t *testing.T) {
				fr := replayMessages(t, "hot-fleet", msgs, -1)
				m := newTestModel(fr, size[0], size[1])
				press(m, sc.keys)
				for range 5 {
					if strings.Contains(screenText(m), sc.last) {
						break
					}
					press(m, "<pgdown>")
				}
				view := m.View()
				checkFrame(t, view, size[0], size[1])
				text := screenText(m)
				if strings.Contains(view, "\x1b[2J") || !strings.Contains(text, sc.last) {
					t.Fatalf("no hot parameters, or an escape let through:\n%s", text)
				}
				golden.RequireEqual(t, []byte(text))
			})
		}
	}
}
