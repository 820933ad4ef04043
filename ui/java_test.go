package ui

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"

	"github.com/sentinel-top/sentinel-top/collector/metriclog"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// javaFrom is when the Java fleet's data begins; it runs javaSeconds.
var javaFrom = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC).UnixMilli()

const javaSeconds = 300

// javaFleet is a Java Sentinel fleet as the collector receives it, with no
// RT histogram anywhere: app price, three instances polled over the
// transport API (per-second counts and rules, every breaker state inferred
// from the counts as the poller infers them), and app stock, a metric log
// (counts only, no rules). Its breakers:
//
//   - price checkStock: price-1 tripped at 230 s, failed its first probe,
//     and closed at 242 s; price-2 tripped at 290 s and is OPEN; price-3
//     never blocked, so its state was never inferred: unknown;
//   - price queryPrice: never blocks, unknown on every instance;
//   - price listPrices: a flow rule only (blocks, but no breaker);
//   - stock reserveStock: cut off from 150 s to 156 s (inferred, without
//     rules); stock listStock: counts only.
func javaFleet() []wire.Message {
	type timed struct {
		at int64 // when the message was known: a transition, with its second's buckets
		m  wire.Message
	}
	var out []timed
	breaker := func(res string, s core.Strategy, threshold float64, retry uint32) core.BreakerRule {
		return core.BreakerRule{Resource: res, Strategy: s, Threshold: threshold, RetryTimeoutMs: retry, MaxAllowedRtMs: 100,
			MinRequestAmount: 5, StatIntervalMs: 1000, StatSlidingWindowBucketCount: 1, Semantics: core.SemanticsJava}
	}
	breakers := []core.BreakerRule{breaker("queryPrice", core.SlowRequestRatio, 0.5, 3000), breaker("checkStock", core.ErrorRatio, 0.4, 5000)}
	flows := []core.FlowRule{{Resource: "listPrices", Threshold: 20}}
	item := func(res string, start, pass, block, complete, errs, rt int64) wire.BucketItem {
		it := wire.BucketItem{Resource: res, Start: start, Metrics: core.Metrics{Pass: pass, Block: block, Complete: complete, Error: errs}}
		if complete > 0 {
			it.RtSum, it.RtMin, it.RtMax = rt*complete, rt, rt
		}
		return it
	}
	// checkStock's second s on an instance: normal, blocked, or a probe
	// (one pass, the others blocked) that fails or not.
	checkStock := func(inst string, s int, start int64) wire.BucketItem {
		blocked := func(from, to int) bool { return s >= from && s < to }
		switch {
		case inst == "price-1" && s == 229, inst == "price-2" && s == 289:
			return item("checkStock", start, 12, 0, 12, 6, 40) // half of them fail: the trip
		case inst == "price-1" && (blocked(230, 236) || blocked(237, 242)), inst == "price-2" && (blocked(290, 295) || s >= 296):
			return item("checkStock", start, 0, 12, 0, 0, 0)
		case inst == "price-1" && s == 236, inst == "price-2" && s == 295:
			return item("checkStock", start, 1, 11, 1, 1, 40) // the probe fails
		}
		return item("checkStock", start, 12, 0, 12, int64(s%9/8), 20)
	}
	for i, inst := range []string{"price-1", "price-2", "price-3"} {
		out = append(out,
			timed{javaFrom, &wire.Hello{Header: wire.Header{Ts: javaFrom, Instance: inst}, App: "price", Host: "10.1.0." + fmt.Sprint(i+1),
				SDK: "java-sentinel/1.8.9", BucketMs: 1000}},
			timed{javaFrom, &wire.Rules{Header: wire.Header{Ts: javaFrom, Instance: inst},
				Version: wire.RulesVersion(breakers, flows), Breakers: breakers, Flows: flows}})
		inf := metriclog.NewInference(inst)
		inf.SetRules(javaFrom, breakers, flows)
		for s := 0; s < javaSeconds; s++ {
			start := javaFrom + int64(s)*1000
			items := []wire.BucketItem{
				checkStock(inst, s, start),
				item("listPrices", start, 20, int64(s%4), 20, 0, 25),
				item("queryPrice", start, int64(25+i), 0, int64(25+i), 0, int64(30+(s+i)%7*3)),
			}
			known := start + 999
			out = append(out, timed{known, &wire.Buckets{Header: wire.Header{Ts: known, Instance: inst}, BucketMs: 1000, Items: items}})
			for _, st := range inf.Second(start, items) {
				out = append(out, timed{known, st})
			}
		}
	}
	var log strings.Builder
	for s := 0; s < javaSeconds; s++ {
		at := javaFrom + int64(s)*1000
		date := time.UnixMilli(at).UTC().Format("2006-01-02 15:04:05")
		pass, block := 8, 0
		switch {
		case s >= 150 && s < 156:
			pass, block = 0, 8
		case s == 156:
			pass, block = 1, 7
		}
		fmt.Fprintf(&log, "%d|%s|reserveStock|%d|%d|%d|0|15|0|1|0\n", at, date, pass, block, pass)
		fmt.Fprintf(&log, "%d|%s|listStock|30|0|30|0|%d|0|2|0\n", at, date, 8+s%5)
	}
	r := metriclog.Convert(strings.NewReader(log.String()), "stock-metrics.log.2026-12-01", "", "")
	known := javaFrom
	for _, m := range r.Messages {
		if _, ok := m.(*wire.State); !ok {
			known = m.Head().Ts
		}
		out = append(out, timed{known, m})
	}
	slices.SortStableFunc(out, func(a, b timed) int { return cmp.Compare(a.at, b.at) })
	msgs := make([]wire.Message, len(out))
	for i := range out {
		msgs[i] = out[i].m
	}
	return msgs
}

// javaScreens are the Java fleet's screens: the table, the detail of
// checkStock (inferred and unknown states), of queryPrice (unknown
// everywhere) and of the metric log's reserveStock (inferred, no rules).
var javaScreens = []struct{ name, keys string }{
	{"main", ""},
	{"detail_inferred", "/checkStock<enter><enter>"},
	{"detail_unknown", "/queryPrice<enter><enter>"},
	{"detail_metriclog", "/reserveStock<enter><enter>"},
}

// TestGoldenJava shows a Java fleet, whose sources tell no breaker state
// and no p99: unknown states are "?" and never CLOSED, inferred ones are
// marked, and the P99 column has the average RT, said so.
func TestGoldenJava(t *testing.T) {
	msgs := javaFleet()
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		for _, sc := range javaScreens {
			t.Run(fmt.Sprintf("%s_%dx%d", sc.name, size[0], size[1]), func(t *testing.T) {
				fr := replayMessages(t, "java-fleet", msgs, -1)
				m := newTestModel(fr, size[0], size[1])
				press(m, sc.keys)
				checkFrame(t, m.View(), size[0], size[1])
				golden.RequireEqual(t, []byte(screenText(m)))
			})
		}
	}
}
