package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/collector/report/spectest"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/collector/feed"
	"github.com/sentinel-top/sentinel-top/collector/triage"
	"github.com/sentinel-top/sentinel-top/collector/whatif"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

const t0 = int64(1764460800000)

// Hostile names: an escape sequence, a bidi override, HTML, Markdown and a
// backtick run.
const (
	evilInstance = "evil-1\x1b[31m\u202eroot\x07"
	evilResource = "<script>alert(1)</script> ``` *x* [a](http://e) | # \n"
	evilValue    = "vip\x1b[31m <b>x</b> | `y`"
)

func rule(res string) core.BreakerRule {
	return core.BreakerRule{
		Resource: res, Strategy: core.SlowRequestRatio, Threshold: 0.5,
		MaxAllowedRtMs: 200, MinRequestAmount: 20, StatIntervalMs: 10000,
		StatSlidingWindowBucketCount: 10, RetryTimeoutMs: 10000,
	}
}

func tr(res string, from, to core.State, at int64) core.Transition {
	return core.Transition{Resource: res, Strategy: core.SlowRequestRatio, From: from, To: to, AtMs: at, Threshold: 0.5, RetryTimeoutMs: 10000}
}

// scenario feeds an engine with every finding kind and returns the report
// of the snapshot a collector would publish at the end of the input.
func scenario() *Report {
	e := newStoreFeeder()
	const (
		member = "GET:/member/info"
		pay    = "payService:pay"
		create = "createOrder"
		price  = "priceService:queryPrice"
		quote  = "priceService:quote"
		coupon = "GET:/coupon/list"
	)
	misaligned := rule(create)
	misaligned.StatIntervalMs, misaligned.StatSlidingWindowBucketCount, misaligned.MinRequestAmount = 1000, 3, 5
	// A bound of 5 ms against calls of 11-20 ms: the rule trips the breaker
	// on healthy calls.
	tight := rule(coupon)
	tight.MaxAllowedRtMs = 5
	orderRules := []core.BreakerRule{rule(member), rule(pay), misaligned, tight}
	order := []string{"order-1", "order-2", "order-3"}
	for _, in := range order {
		e.Hello(in, "order", t0, t0-60000)
		e.Rules(in, t0, "v1", orderRules, nil)
	}
	e.Hello("price-1", "price", t0, t0)
	// A Java flow rule whose limitApp is its own app's name.
	e.Rules("price-1", t0, "p1", []core.BreakerRule{rule(price)}, []core.FlowRule{{Resource: price, Threshold: 100, LimitApp: "price"}})
	e.Hello("price-2", "price", t0, t0)
	e.Rules("price-2", t0, "p0", nil, nil)
	e.Hello(evilInstance, "evil", t0, t0)
	// A warm-up flow limit that blocks for its first seconds after the start.
	e.Rules(evilInstance, t0, "e1", nil, []core.FlowRule{warmRule})
	warm := warmUpBuckets(warmRule, t0, t0+30000, 200)

	at := func(ms int64) int64 { return t0 + ms }
	for ts := t0; ts < at(180000); ts += 500 {
		for _, in := range order {
			e.Bucket(in, triage.BucketStat{Resource: create, Start: ts, BucketMs: 500, Metrics: core.Metrics{Pass: 4, Complete: 4, RtMax: 30, Hist: [core.HistogramSlots]int64{5: 4}}, HasHist: true})
		}
		for _, in := range []string{"price-1", "price-2", "order-1"} {
			e.Bucket(in, triage.BucketStat{Resource: price, Start: ts, BucketMs: 500, Metrics: core.Metrics{Pass: 10, Complete: 10, RtMax: 90, Hist: [core.HistogramSlots]int64{6: 10}}, HasHist: true})
		}
		if ts < at(50000) { // healthy coupon calls, every one slower than the bound
			e.Bucket("order-1", triage.BucketStat{Resource: coupon, Start: ts, BucketMs: 500, Metrics: core.Metrics{Pass: 10, Complete: 10, Slow: 10, RtMax: 20, Hist: [core.HistogramSlots]int64{4: 10}}, HasHist: true})
		}
		switch ts { // the coupon breaker trips on them, and its probe, a healthy call, opens it again
		case at(50000):
			t := tr(coupon, core.Closed, core.Open, ts)
			t.Snapshot = core.WindowSnapshot{Total: 200, Bad: 200, Value: 1}
			e.Transition("order-1", t)
		case at(60500):
			e.Transition("order-1", tr(coupon, core.Open, core.HalfOpen, ts-15))
			t := tr(coupon, core.HalfOpen, core.Open, ts)
			t.Probe = &core.Probe{RtMs: 15}
			e.Transition("order-1", t)
		}
		e.Bucket("order-2", triage.BucketStat{Resource: evilResource, Start: ts, BucketMs: 500, Metrics: core.Metrics{Pass: 1}})
		e.Bucket(evilInstance, triage.BucketStat{Resource: evilResource, Start: ts, BucketMs: 500, Metrics: core.Metrics{Pass: 1}})
		if m, ok := warm[ts]; ok {
			e.Bucket(evilInstance, triage.BucketStat{Resource: warmRule.Resource, Start: ts, BucketMs: 500, Metrics: m})
		}
		if ts >= at(100000) && ts < at(140000) { // one hostile value takes the blocks of a hot-parameter limit
			e.Bucket("price-1", triage.BucketStat{Resource: quote, Start: ts, BucketMs: 500, Metrics: core.Metrics{Pass: 60, Block: 40},
				Hot: []wire.HotItem{{Value: evilValue, Pass: 20, Block: 30}, {Value: wire.HotOther, Pass: 40, Block: 10}}})
		}

		switch ts {
		case at(10000): // sawtooth on order-1
			t := tr(member, core.Closed, core.Open, ts)
			t.Snapshot = core.WindowSnapshot{Total: 120, Bad: 100, Value: 0.83}
			e.Transition("order-1", t)
		case at(20000): // a trip on too little evidence on order-2
			t := tr(create, core.Closed, core.Open, ts)
			t.Snapshot = core.WindowSnapshot{Total: 5, Bad: 3, Value: 0.6}
			e.Transition("order-2", t)
		case at(30000): // a rule push that reaches only order-3
			pushed := rule(member)
			pushed.Threshold = 0.8
			e.Rules("order-3", ts, "v2", []core.BreakerRule{pushed, rule(pay), misaligned, tight}, nil)
			e.Transition("order-2", tr(create, core.Open, core.HalfOpen, ts))
			e.Transition("order-2", tr(create, core.HalfOpen, core.Closed, ts+20))
		case at(40000), at(60000), at(80000): // all three trip and probe together
			for i, in := range order {
				e.Transition(in, tr(pay, core.Closed, core.Open, ts+int64(i)*50))
			}
		}
		if ts > at(10000) && ts < at(10000+6*10040+500) && (ts-at(10000))%10040 < 500 {
			p := at(10000) + (ts-at(10000))/10040*10040
			e.Transition("order-1", tr(member, core.Open, core.HalfOpen, p-30))
			e.Transition("order-1", tr(member, core.HalfOpen, core.Open, p))
		}
		for _, base := range []int64{at(40000), at(60000), at(80000)} {
			if ts == base+10000 {
				for i, in := range order {
					e.Transition(in, tr(pay, core.Open, core.HalfOpen, ts+int64(i)*120))
				}
				for i, in := range order {
					e.Transition(in, tr(pay, core.HalfOpen, core.Closed, ts+int64(i)*120+1000+int64(i)*700))
				}
			}
		}
	}
	for _, in := range append(order, "price-1", "price-2", evilInstance) {
		e.Bye(in, at(180000))
	}
	return e.report("fixtures/all-kinds.ndjson", 48213, 2)
}

// warmRule is a warm-up flow limit of 300 QPS, from 100 at a start over
// about 10 s.
var warmRule = core.FlowRule{Resource: "priceService:list", Threshold: 300, TokenCalculateStrategy: core.WarmUp,
	WarmUpPeriodSec: 10, WarmUpColdFactor: 3}

// warmUpBuckets are the 500 ms buckets of qps calls a second, evenly
// spread, offered from `from` to `to` through a new controller of rule.
func warmUpBuckets(rule core.FlowRule, from, to, qps int64) map[int64]core.Metrics {
	stat := core.NewResourceWindow()
	c, err := core.NewFlowController(rule, stat)
	if err != nil {
		panic(err)
	}
	out := map[int64]core.Metrics{}
	for ms := from; ms < to; ms++ {
		off := (ms - from) % 1000
		for range (off+1)*qps/1000 - off*qps/1000 {
			m := out[ms-(ms-from)%500]
			if ok, _ := c.Check(ms, 1); ok {
				stat.Current(ms).AddPass(1)
				m.Pass++
				m.Complete++
				m.RtSum += 10
				m.RtMax = 10
			} else {
				stat.Current(ms).AddBlock(1)
				m.Block++
			}
			out[ms-(ms-from)%500] = m
		}
	}
	return out
}

// storeFeeder feeds a real collector, as a source would, the facts a
// scenario names: each as the wire message an agent sends, at its time on
// the collector's virtual clock. Its report is the report command's: of
// the snapshot published at the end of the input, with timelines from the
// collector's breaker histories.
type storeFeeder struct {
	c  *collector.Collector
	vc *core.VirtualClock
}

func newStoreFeeder() *storeFeeder {
	vc := core.NewVirtualClock(time.UnixMilli(t0))
	return &storeFeeder{c: collector.New(collector.Options{Clock: vc, WallClock: vc}), vc: vc}
}

func (f *storeFeeder) at(ts int64, m wire.Message) {
	if ts > f.vc.UnixMilli() {
		f.vc.Set(time.UnixMilli(ts))
	}
	if !f.c.Ingest("scenario", m) {
		panic(fmt.Sprintf("refused %T", m))
	}
}

func (f *storeFeeder) Hello(in, app string, ts, startedAt int64) {
	f.at(ts, &wire.Hello{Header: wire.Header{Ts: ts, Instance: in}, App: app, StartedAt: startedAt, BucketMs: 500})
}

func (f *storeFeeder) Rules(in string, ts int64, version string, breakers []core.BreakerRule, flows []core.FlowRule) {
	f.at(ts, &wire.Rules{Header: wire.Header{Ts: ts, Instance: in}, Version: version, Breakers: breakers, Flows: flows})
}

func (f *storeFeeder) Bucket(in string, b triage.BucketStat) {
	f.at(b.Start+b.BucketMs, &wire.Buckets{Header: wire.Header{Ts: b.Start + b.BucketMs, Instance: in}, BucketMs: b.BucketMs,
		Items: []wire.BucketItem{{Resource: b.Resource, Start: b.Start, Metrics: b.Metrics, HasHist: b.HasHist, Hot: b.Hot}}})
}

func (f *storeFeeder) Transition(in string, t core.Transition) {
	m := &wire.State{Header: wire.Header{Ts: t.AtMs, Instance: in}, Resource: t.Resource, Strategy: t.Strategy,
		From: t.From, To: t.To, Threshold: t.Threshold, RetryTimeoutMs: int64(t.RetryTimeoutMs)}
	if t.From == core.Closed && t.To == core.Open {
		m.Snapshot = &wire.Snapshot{Total: t.Snapshot.Total, Slow: t.Snapshot.Bad, Value: t.Snapshot.Value}
	}
	f.at(t.AtMs, m)
}

func (f *storeFeeder) Bye(in string, ts int64) {
	f.at(ts, &wire.Bye{Header: wire.Header{Ts: ts, Instance: in}, Reason: "shutdown"})
}

// report is the report of the snapshot published at the end of the
// input, its counts of messages set to the scenario's.
func (f *storeFeeder) report(source string, messages, rejected int64) *Report {
	r := FromSnapshot(source, f.c.Publish(), f.c)
	r.Messages, r.Rejected = messages, rejected
	return r
}

// endOfInput is the snapshot a collector fed by e publishes once the input
// ended (its clock at the input's last timestamp): the engine's counts,
// and its findings judged there, once.
func endOfInput(e *triage.Engine, messages, rejected int64) *collector.Snapshot {
	seen := e.Counts()
	return &collector.Snapshot{At: seen.To, Seen: seen, Messages: messages, Rejected: rejected, Findings: e.Findings(seen.To)}
}

func render(t *testing.T, f func(w *bytes.Buffer, r *Report) error, r *Report) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := f(&buf, r); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it); got:\n%s", name, got)
	}
}

func md(w *bytes.Buffer, r *Report) error   { return Markdown(w, r) }
func text(w *bytes.Buffer, r *Report) error { return Text(w, r) }
func js(w *bytes.Buffer, r *Report) error   { return JSON(w, r) }

func TestScenarioHasEveryKind(t *testing.T) {
	r := scenario()
	got := map[triage.Kind]string{}
	for _, f := range r.Findings {
		got[f.Kind] = f.Severity.String()
	}
	want := map[triage.Kind]string{
		triage.KindSawtooth: "critical", triage.KindRuleDrift: "critical", triage.KindUnprotected: "critical",
		triage.KindSyncHalfOpen: "warning", triage.KindLowConfidenceTrip: "warning", triage.KindSharedResource: "warning",
		triage.KindWindowMisaligned: "warning", triage.KindRuleAdvice: "info", triage.KindHotValue: "warning",
		triage.KindInertRule: "warning", triage.KindSelfInflicted: "critical",
	}
	for k, sev := range want {
		if got[k] != sev {
			t.Errorf("%s: severity %q, want %q", k, got[k], sev)
		}
	}
}

func TestGoldenMarkdown(t *testing.T) { golden(t, "report.md.golden", render(t, md, scenario())) }

func TestGoldenText(t *testing.T) { golden(t, "report.txt.golden", render(t, text, scenario())) }

func TestGoldenEmpty(t *testing.T) {
	r := &Report{Source: "demo", From: t0, To: t0 + 60000, Apps: 1, Instances: 2, Resources: 3, Messages: 10}
	golden(t, "empty.md.golden", render(t, md, r))
	golden(t, "empty.txt.golden", render(t, text, r))
}

func TestByteIdentical(t *testing.T) {
	for name, f := range map[string]func(*bytes.Buffer, *Report) error{"md": md, "text": text, "json": js} {
		a, b := render(t, f, scenario()), render(t, f, scenario())
		if !bytes.Equal(a, b) {
			t.Errorf("%s: same input, different output", name)
		}
	}
}

func TestJSONMatchesSpec(t *testing.T) {
	r := scenario()
	out := render(t, js, r)
	got, err := spectest.Decode(out)
	if err != nil {
		t.Fatalf("strict decode: %v\n%s", err, out)
	}
	if got.V != 1 || got.Source != r.Source || got.From != r.From || got.To != r.To || got.Messages != 48213 || got.Rejected != 2 ||
		got.Apps != 3 || got.Instances != 6 || len(got.Findings) != len(r.Findings) {
		t.Fatalf("report header %+v", got)
	}

	// Each finding has exactly the common fields and its kind's own
	// (findings-v1 revision 2); the optional ones (probeRtMs without a
	// probe's RT, p99Ms and rtOverP99 without a healthy p99, suggest where
	// nothing is proposed) may be absent.
	common := []string{"kind", "severity", "peakSeverity", "app", "resource", "instances", "from", "to", "summary", "advice"}
	own := map[string][]string{
		"sawtooth":            {"count", "periodMs"},
		"sync-half-open":      {"count", "spreadMs"},
		"low-confidence-trip": {"count", "worst", "atThreshold", "closedAtFirstProbe"},
		"rule-drift":          {"groups", "newest"},
		"unprotected":         {"passed", "cause"},
		"shared-resource":     {"apps"},
		"window-misaligned":   {"rule"},
		"rule-advice":         {"qps", "windowRequests", "minRequestSeconds"},
		"hot-value":           {"param", "value", "blockShare", "qps"},
		"inert-rule":          {"reason", "rule"},
		"warm-up":             {"blocked", "offered", "startLimit"},
		"self-inflicted":      {"rule", "healthyBadShare", "trips"},
	}
	optional := map[string][]string{
		"sawtooth":            {"probeRtMs", "suggest", "cause"},
		"sync-half-open":      {"suggest"},
		"low-confidence-trip": {"suggest", "coldStart", "inferred"},
		"rule-advice":         {"p99Ms", "rtOverP99", "suggest"},
		"hot-value":           {"suggest"},
		"inert-rule":          {"suggest", "maxWindowRequests", "near", "badPassed", "inferred"},
		"rule-drift":          {"reverted"},
		"self-inflicted":      {"suggest", "inferred"},
	}
	var raw struct {
		Findings []map[string]json.RawMessage `json:"findings"`
	}
	if err := json.Unmarshal(out, &raw); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i, f := range raw.Findings {
		kind := got.Findings[i].Kind
		seen[kind] = true
		var keys []string
		for k := range f {
			if !slices.Contains(optional[kind], k) {
				keys = append(keys, k)
			}
		}
		want := append(slices.Clone(common), own[kind]...)
		sort.Strings(keys)
		sort.Strings(want)
		if !slices.Equal(keys, want) {
			t.Errorf("%s: fields %v, want %v", kind, keys, want)
		}
	}
	if len(seen) != len(own) {
		t.Errorf("kinds seen %v", seen)
	}
	for _, f := range got.Findings {
		if f.Kind == "low-confidence-trip" && (f.Worst.K != 3 || f.Worst.N != 5 || f.Worst.Lower != 0.33) {
			t.Errorf("worst %+v", *f.Worst)
		}
		if f.Kind == "rule-drift" && f.App == "order" && (len(f.Groups) != 2 || f.Groups[0].Version != "v1" || len(f.Groups[0].Rule.Breakers) != 1 || f.Groups[0].Rule.Flows == nil) {
			t.Errorf("groups %+v", f.Groups)
		}
		if f.Kind == "inert-rule" && (*f.Reason != "origin-mismatch" || string(f.Suggest["limitApp"]) != `"default"` || len(f.Suggest) != 1) {
			t.Errorf("inert-rule %+v suggest %v", f, f.Suggest)
		}
		if f.Kind == "self-inflicted" && (f.Resource != "GET:/coupon/list" || *f.HealthyBadShare != 1 || *f.Trips != 2 ||
			string(f.Suggest["maxAllowedRtMs"]) != "20" || len(f.Suggest) != 1 || f.Inferred != nil || f.Severity != "critical") {
			t.Errorf("self-inflicted %+v suggest %v", f, f.Suggest)
		}
		if f.Kind == "hot-value" {
			var items map[string]int64
			if err := json.Unmarshal(f.Suggest["specificItems"], &items); err != nil || len(items) != 1 || items[evilValue] != 120 ||
				*f.Value != evilValue || *f.Param != 0 || *f.BlockShare != 0.75 || *f.QPS != 100 || strings.Contains(f.Summary+f.Advice, "<b>") {
				t.Errorf("hot-value %+v suggest %s", f, f.Suggest["specificItems"])
			}
		}
		if f.Kind == "warm-up" {
			// Every block of the buckets is the warm-up's (200 QPS against
			// 300), and the span holds 200 calls a second.
			var block int64
			for _, m := range warmUpBuckets(warmRule, t0, t0+30000, 200) {
				block += m.Block
			}
			if *f.Blocked != block || *f.Offered != 200*(f.To-f.From)/1000 || *f.StartLimit != 100 || f.From != t0 || f.Severity != "warning" {
				t.Errorf("warm-up %+v: blocked %d, offered %d, startLimit %v; %d blocks fed", f, *f.Blocked, *f.Offered, *f.StartLimit, block)
			}
		}
		if f.Kind == "shared-resource" && f.App == "evil" && !strings.HasPrefix(f.Resource, "<script>") {
			t.Errorf("resource %q did not survive JSON", f.Resource)
		}
	}
	if !bytes.HasSuffix(out, []byte("}\n")) {
		t.Error("no final newline")
	}
}

func TestJSONEmptyListsAreArrays(t *testing.T) {
	out := render(t, js, &Report{Source: "x"})
	if !bytes.Contains(out, []byte(`"findings": []`)) {
		t.Fatalf("%s", out)
	}
	out = render(t, js, &Report{Findings: []triage.Finding{{Kind: triage.KindRuleDrift, Facts: &triage.RuleDriftFacts{Groups: []triage.RuleGroup{{Version: "v"}}}}}})
	for _, want := range []string{`"instances": []`, `"breakers": []`, `"flows": []`} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("missing %s in %s", want, out)
		}
	}
}

func TestSanitize(t *testing.T) {
	cases := []struct{ in, want string }{
		{"GET:/member/info", "GET:/member/info"},
		{"a\x1b[31mred", `a\x1b[31mred`},
		{"bell\x07", `bell\x07`},
		{"csi\u009b2J", `csi\x9b2J`},
		{"rtl\u202eevil", `rtl\u202eevil`},
		{"iso\u2066x\u2069", `iso\u2066x\u2069`},
		{"zw\u200bj", `zw\u200bj`},
		{"line\u2028sep", `line\u2028sep`},
		{"new\nline\ttab", `new\x0aline\x09tab`},
		{"bad\xffutf8", `bad\xffutf8`},
		{"ünïcødé 服务", "ünïcødé 服务"},
		{strings.Repeat("x", 130), strings.Repeat("x", 120) + "…"},
	}
	for _, c := range cases {
		if got := Sanitize(c.in); got != c.want {
			t.Errorf("Sanitize(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestCodeSpan(t *testing.T) {
	cases := []struct{ in, want string }{
		{"a", "`a`"},
		{"a`b", "``a`b``"},
		{"`a", "`` `a ``"},
		{"x ``` y", "````x ``` y````"},
		{"", "*(empty)*"},
		{"<b>", "`<b>`"},
	}
	for _, c := range cases {
		if got := codeSpan(c.in, maxNameRunes); got != c.want {
			t.Errorf("codeSpan(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// No input string reaches the output raw: no control characters and no bidi
// override in text; in Markdown, the hostile resource appears only inside
// code spans or code blocks.
func TestHostileNames(t *testing.T) {
	for _, r := range []*Report{scenario(), planReport()} {
		hostileNames(t, r)
	}
}

func hostileNames(t *testing.T, r *Report) {
	t.Helper()
	for name, out := range map[string][]byte{"text": render(t, text, r), "md": render(t, md, r)} {
		for _, bad := range []string{"\x1b", "\x07", "\u202e", "\r"} {
			if bytes.Contains(out, []byte(bad)) {
				t.Errorf("%s output contains %q", name, bad)
			}
		}
		for _, line := range strings.Split(string(out), "\n") {
			if strings.Contains(line, "\x00") {
				t.Errorf("%s: NUL in %q", name, line)
			}
		}
	}
	out := string(render(t, md, r))
	// Every <script> is inside a code span (the text between an odd
	// backtick run and its closing run) or a fenced block.
	if strings.Count(out, "<script>") == 0 {
		t.Fatal("resource missing from the Markdown")
	}
	inFence := false
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
			continue
		}
		if inFence || !strings.Contains(line, "<script>") {
			continue
		}
		i := strings.Index(line, "<script>")
		if open := strings.LastIndex(line[:i], "````"); open < 0 {
			t.Errorf("<script> outside a code span: %q", line)
		}
	}
}

func TestMarkdownEscapesProse(t *testing.T) {
	if got := escapeMarkdown("a <b> *c* (>= 120 s)"); got != `a \<b\> \*c\* (\>= 120 s)` {
		t.Fatal(got)
	}
}

func TestStrip(t *testing.T) {
	tl := triage.Timeline{Start: core.Closed, Steps: []triage.Step{
		{AtMs: 1000, To: core.Open}, {AtMs: 2000, To: core.HalfOpen}, {AtMs: 2001, To: core.Open},
		{AtMs: 3000, To: core.HalfOpen}, {AtMs: 3001, To: core.Closed},
	}}
	got := strip(&tl, tl.Cells(stripEdges(0, 4000)), 0, 4000)
	want := strings.Repeat("▁", 10) + strings.Repeat("█", 10) + "▄" + strings.Repeat("█", 9) + "▄" + strings.Repeat("▁", 9)
	if got != want {
		t.Fatalf("strip\n got %s\nwant %s", got, want)
	}
	// Not known before the first data, in a span without a process, and
	// after the instance left: the same rule as the dashboard's bands.
	tl.KnownFrom, tl.KnownTo, tl.Unknown = 500, 3500, []triage.Span{{From: 1200, To: 1800}}
	got = strip(&tl, tl.Cells(stripEdges(0, 4000)), 0, 4000)
	want = strings.Repeat("·", 5) + strings.Repeat("▁", 5) + "██······██" + "▄" + strings.Repeat("█", 9) + "▄" + strings.Repeat("▁", 4) + strings.Repeat("·", 5)
	if got != want {
		t.Fatalf("strip with what is not known\n got %s\nwant %s", got, want)
	}
}

func TestFromSnapshotTakesItsCounts(t *testing.T) {
	e := triage.NewFeeder(triage.Config{})
	e.Hello("a", "app", t0, t0)
	e.Bucket("a", triage.BucketStat{Resource: "r", Start: t0, BucketMs: 500, Metrics: core.Metrics{Pass: 1}})
	r := FromSnapshot("src", endOfInput(e.Engine, 3, 1), nil)
	want := Report{Source: "src", From: t0, To: t0 + 500, Apps: 1, Instances: 1, Resources: 1, Messages: 3, Rejected: 1}
	if fmt.Sprint(*r) != fmt.Sprint(want) {
		t.Fatalf("%+v", *r)
	}
}

// TestFromSnapshotJudgesNothing: the report's findings, totals, targets
// and warnings are the snapshot's, as published.
func TestFromSnapshotJudgesNothing(t *testing.T) {
	s := &collector.Snapshot{Messages: 1,
		Findings: []triage.Finding{{Kind: triage.KindSawtooth, Severity: triage.Critical, App: "a", Resource: "r"}},
		Totals:   []collector.ResourceTotals{{App: "a", Resource: "r", Pass: 5, Block: 1, Complete: 4, Error: 1, Slow: 2, States: collector.ProvenanceInferred}},
		Targets:  []*collector.TargetStatus{{Name: "t", State: collector.TargetUp}},
		Warnings: []collector.Warning{collector.ClockSkew{Instance: "i", OffsetMs: 2000}},
	}
	r := FromSnapshot("src", s, nil)
	if len(r.Findings) != 1 || &r.Findings[0] != &s.Findings[0] || len(r.Targets) != 1 || len(r.Warnings) != 1 || r.Warnings[0] != s.Warnings[0] ||
		len(r.ResourcesSeen) != 1 || r.ResourcesSeen[0] != (ResourceSeen{App: "a", Resource: "r", Pass: 5, Block: 1, Complete: 4, Error: 1, Slow: 2, States: "inferred"}) {
		t.Fatalf("%+v", *r)
	}
}

// TestNoDataSaysWhy: a report of no message is an error of class
// ErrNoData that says why: every target down, or nothing in the time
// watched.
func TestNoDataSaysWhy(t *testing.T) {
	down := []*collector.TargetStatus{{Name: "a:1", State: collector.TargetDown, Problem: feed.Problem{Kind: feed.ProblemOther, Detail: "refused"}}, {Name: "b:2", State: collector.TargetConnecting}}
	for _, tc := range []struct {
		s    *collector.Snapshot
		want string
	}{
		{&collector.Snapshot{Messages: 1, Targets: down}, ""},
		{&collector.Snapshot{Targets: down}, "no data: all 2 targets down: a:1: refused; b:2: connecting"},
		{&collector.Snapshot{Targets: down[:1]}, "no data: all 1 target down: a:1: refused"},
		{&collector.Snapshot{Targets: append([]*collector.TargetStatus{{Name: "c:3", State: collector.TargetUp}}, down...)}, `no data from src\x1b in 1m0s`},
		{&collector.Snapshot{}, `no data from src\x1b in 1m0s`},
	} {
		err := FromSnapshot("src\x1b", tc.s, nil).NoData(time.Minute)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%+v: %v", tc.s, err)
			}
			continue
		}
		if !errors.Is(err, ErrNoData) || err.Error() != tc.want {
			t.Errorf("%+v: %v, want %q", tc.s, err, tc.want)
		}
	}
}

// TestAtLeast: the findings that trip --fail-on, sanitized, judged by
// their peak: the recovery flood that ended (a warning now) was critical
// while it lasted, and says so.
func TestAtLeast(t *testing.T) {
	r := scenario()
	got := r.AtLeast(triage.Critical)
	want := []string{"critical rule-drift price/priceService:queryPrice", "critical unprotected price/priceService:queryPrice",
		"critical sawtooth order/GET:/member/info", "critical rule-drift order/GET:/member/info",
		"critical self-inflicted order/GET:/coupon/list", "critical (now warning) sync-half-open order/payService:pay"}
	if !slices.Equal(got, want) {
		t.Fatalf("critical: %q", got)
	}
	all := r.AtLeast(triage.Info)
	if len(all) != len(r.Findings) || !slices.ContainsFunc(all, func(l string) bool {
		return strings.Contains(l, `evil/<script>alert(1)</script> `+"```"+` *x* [a](http://e) | # \x0a`)
	}) {
		t.Errorf("every finding: %q", all)
	}
}

func TestJSONEscapesInvisibleLosslessly(t *testing.T) {
	name := "a\u202eb\u200bc\U000E0001d\x1be服"
	out := render(t, js, &Report{Source: name})
	for _, bad := range []string{"\u202e", "\u200b", "\U000E0001", "\x1b"} {
		if bytes.Contains(out, []byte(bad)) {
			t.Errorf("raw %q in %s", bad, out)
		}
	}
	if !bytes.Contains(out, []byte(`"a\u202eb\u200bc\udb40\udc01d\u001be服"`)) {
		t.Errorf("escapes: %s", out)
	}
	var back struct{ Source string }
	if err := json.Unmarshal(out, &back); err != nil || back.Source != name {
		t.Fatalf("round trip: %q, %v", back.Source, err)
	}
}

// TestUnknownStatesSaidOutLoud: a report whose resources' breaker states
// are unknown says so in its header and never says an unqualified "No
// findings"; resourcesSeen carries each resource's provenance.
func TestUnknownStatesSaidOutLoud(t *testing.T) {
	r := &Report{Source: "order-metrics.log", ResourcesSeen: []ResourceSeen{
		{App: "order", Resource: "db", Pass: 20, States: "unknown"},
		{App: "order", Resource: "cache", Pass: 5, States: "exact"},
	}}
	for name, f := range map[string]func(*bytes.Buffer, *Report) error{"md": md, "text": text} {
		out := string(render(t, f, r))
		if !strings.Contains(out, "breaker states are unknown for 1 of 2 resources") || strings.Contains(out, "No findings.\n") {
			t.Errorf("%s:\n%s", name, out)
		}
	}
	out := render(t, js, r)
	if !bytes.Contains(out, []byte(`"states": "unknown"`)) || !bytes.Contains(out, []byte(`"resourcesSeen": [`)) {
		t.Errorf("json:\n%s", out)
	}
	r.ResourcesSeen[0].States = "inferred"
	if out := string(render(t, text, r)); !strings.Contains(out, "No findings.\n") || strings.Contains(out, "cannot be judged") {
		t.Errorf("inferred states are not unknown:\n%s", out)
	}
}

// TestWarningsOfTheSnapshot: the targets not up, then the snapshot's
// warnings, worded by the collector, each a line of the header and of
// WarningLines, sanitized.
func TestWarningsOfTheSnapshot(t *testing.T) {
	r := FromSnapshot("src", &collector.Snapshot{Messages: 1,
		Targets: []*collector.TargetStatus{{Name: "up:1", State: collector.TargetUp},
			{Name: evilInstance, State: collector.TargetDown, Problem: feed.Problem{Kind: feed.ProblemOther, Detail: "refused\x1b[2J"}}, {Name: "c:3", State: collector.TargetConnecting}},
		Warnings: []collector.Warning{collector.ClockSkew{Instance: evilInstance, OffsetMs: -2000},
			collector.TargetNote{Note: collector.TargetRemark{RulesError: "n"}, Targets: 2}},
	}, nil)
	want := []string{
		`target evil-1\x1b[31m\u202eroot\x07: refused\x1b[2J`,
		"target c:3: connecting",
		`clock of evil-1\x1b[31m\u202eroot\x07 is 2.0 s ahead of the collector's`,
		"2 targets: rules unavailable: n",
	}
	if got := r.WarningLines(); !slices.Equal(got, want) {
		t.Fatalf("warning lines\n%q\nwant\n%q", got, want)
	}
	text := string(render(t, text, r))
	for _, w := range want {
		if !strings.Contains(text, "  Warning:                "+w+"\n") {
			t.Errorf("the header does not say %q:\n%s", w, text)
		}
	}
	if md := string(render(t, md, r)); !strings.Contains(md, "- **Warning:** `"+want[2]+"`\n") {
		t.Errorf("Markdown:\n%s", md)
	}
}

// planReport is a report with a plan of each shape: safe with its own
// retry timeout per instance (few and many instances, hostile names), safe
// with a value left out, not safe, and not replayed.
func planReport() *Report {
	cur := triage.PlanRule{Strategy: core.SlowRequestRatio, MaxAllowedRtMs: 500, Threshold: 0.5, MinRequestAmount: 5,
		StatIntervalMs: 1000, StatSlidingWindowBucketCount: 2, RetryTimeoutMs: 10000}
	herd := []string{"gw-1", "gw-2", "gw-3", "gw-4", "gw-5", "gw-6"}
	per := map[string]triage.RuleValues{}
	for i, in := range herd {
		per[in] = triage.RuleValues{RetryTimeoutMs: uint32(10000 + 600*i)}
	}
	res := func(estimated bool, detect ...int64) *whatif.Result {
		return &whatif.Result{StepMs: 500, Estimated: estimated, Outages: int64(len(detect)),
			Current: whatif.Metrics{Trips: 29, LowConfidenceTrips: 26, OutagesCaught: int64(len(detect)), DetectMs: detect,
				Probes: 41, PassedDuringOutage: whatif.Range{120, 180}, BlockedHealthy: whatif.Range{2300, 2300}},
			Proposed: whatif.Metrics{Trips: 4, OutagesCaught: int64(len(detect)), DetectMs: detect,
				Probes: 12, PassedDuringOutage: whatif.Range{150, 240}, BlockedHealthy: whatif.Range{0, 40}}}
	}
	return &Report{Source: "plans", From: t0, To: t0 + 300000, Apps: 2, Instances: 8, Resources: 3, Messages: 100,
		Findings: []triage.Finding{
			{Kind: triage.KindSawtooth, Severity: triage.Critical, App: evilResource, Resource: evilResource, Instances: []string{evilInstance},
				From: t0, To: t0 + 1000, Summary: "s", Advice: "the plan for this rule, replayed on this input's traffic: retryTimeoutMs 10000 -> 30000"},
			{Kind: triage.KindSyncHalfOpen, Severity: triage.Warning, App: "gw", Resource: "stock", Instances: herd, From: t0, To: t0 + 1000, Summary: "s", Advice: "a"},
		},
		Plans: []triage.Plan{
			{App: evilResource, Resource: evilResource, Rule: "breaker", RuleID: evilValue, Instances: []string{evilInstance, "order-2"},
				Current: cur, Proposed: triage.RuleValues{MinRequestAmount: 20, StatIntervalMs: 2000, RetryTimeoutMs: 30000},
				PerInstance: map[string]triage.RuleValues{evilInstance: {RetryTimeoutMs: 30000}, "order-2": {RetryTimeoutMs: 34000}},
				Because:     []triage.Kind{triage.KindLowConfidenceTrip, triage.KindSawtooth}, Safe: true, WhatIf: res(true, 900)},
			{App: "gw", Resource: "stock", Rule: "breaker", Instances: herd, Current: cur, PerInstance: per,
				Because: []triage.Kind{triage.KindSyncHalfOpen}, Safe: true, WhatIf: res(false, 505, 487, 464, 537, 383, 464)},
			{App: "gw", Resource: "price", Rule: "breaker", Instances: herd[:1], Current: cur, Proposed: triage.RuleValues{MinRequestAmount: 20},
				Rejected: triage.RuleValues{MaxAllowedRtMs: 800}, Because: []triage.Kind{triage.KindRuleAdvice}, Safe: true,
				Why:    "left out maxAllowedRtMs 800: with it the breaker would have missed 1 of the 1 outages the current rule caught (the first lasted 40 s; the current rule tripped 600 ms into it)",
				WhatIf: res(true, 600)},
			{App: "gw", Resource: "quote", Rule: "breaker", Instances: herd[:2], Current: cur, Rejected: triage.RuleValues{MaxAllowedRtMs: 800},
				Because: []triage.Kind{triage.KindRuleAdvice}, Why: "no safe change found: with maxAllowedRtMs 500 -> 800 the breaker would have missed 2 of the 2 outages the current rule caught",
				WhatIf: res(true, 620, 669)},
			{App: "gw", Resource: "old", Rule: "breaker", Instances: herd[:1], Current: cur, Rejected: triage.RuleValues{MinRequestAmount: 20},
				Because: []triage.Kind{triage.KindLowConfidenceTrip}, Why: "no safe change found: rules of Sentinel before 1.8 cannot be replayed"},
		},
	}
}

func TestGoldenPlans(t *testing.T) {
	golden(t, "plans.md.golden", render(t, md, planReport()))
	golden(t, "plans.txt.golden", render(t, text, planReport()))
}
