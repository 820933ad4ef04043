package source

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// Java targets: the rules they answer, as they map to core's.

const javaT0 = 1764460830000

// Rules as fastjson writes DegradeRuleManager.getRules() and
// FlowRuleManager.getRules(): every getter, nulls left out, names as the
// application gave them (with "|").
const (
	javaDegradeJSON = `[{"count":200.0,"grade":0,"limitApp":"default","minRequestAmount":5,"regex":false,"resource":"GET:/api|v2","slowRatioThreshold":0.5,"statIntervalMs":10000,"timeWindow":10},` +
		`{"count":0.3,"grade":1,"limitApp":"default","minRequestAmount":20,"regex":false,"resource":"db","slowRatioThreshold":1.0,"statIntervalMs":1000,"timeWindow":30}]`
	javaFlowJSON = `[{"clusterMode":false,"controlBehavior":1,"count":100.0,"grade":1,"limitApp":"default","maxQueueingTimeMs":500,"regex":false,"resource":"GET:/api|v2","strategy":0,"warmUpPeriodSec":10}]`
)

func TestJavaRulesMapping(t *testing.T) {
	degrade := `[{"resource":"a","grade":2,"count":5,"timeWindow":60},` + // Java defaults for the rest
		`{"resource":"b","grade":7,"count":1,"timeWindow":1},` +
		`{"resource":"c","grade":1,"count":1.5,"timeWindow":1},` +
		`{"resource":"d","grade":0,"count":-3,"timeWindow":1},` +
		`"nonsense"]`
	flow := `[{"resource":"e","count":10,"controlBehavior":2,"maxQueueingTimeMs":800,"warmUpPeriodSec":10},` +
		`{"resource":"f|g","count":3,"grade":0,"strategy":1,"refResource":"h|i","limitApp":"app-a","clusterMode":true},` +
		`{"resource":"j","count":30,"controlBehavior":3,"warmUpPeriodSec":20,"maxQueueingTimeMs":100},` +
		`{"resource":"k","count":1,"controlBehavior":9}]`
	breakers, flows, problems := javaRules([]byte(degrade), []byte(flow), "1.8.8")
	wantB := []core.BreakerRule{{Resource: "a", Strategy: core.ErrorCount, RetryTimeoutMs: 60000, MinRequestAmount: 5,
		StatIntervalMs: 1000, StatSlidingWindowBucketCount: 1, Threshold: 5, Semantics: core.SemanticsJava}}
	wantF := []core.FlowRule{
		{Resource: "e", ControlBehavior: core.Throttling, Threshold: 10, MaxQueueingTimeMs: 800},
		{ID: "java:threads,relate=h_i,cluster", Resource: "f_g", Threshold: 3, LimitApp: "app-a"},
		{Resource: "j", TokenCalculateStrategy: core.WarmUp, ControlBehavior: core.Throttling, Threshold: 30,
			MaxQueueingTimeMs: 100, WarmUpPeriodSec: 20, WarmUpColdFactor: 3},
	}
	if !reflect.DeepEqual(breakers, wantB) || !reflect.DeepEqual(flows, wantF) {
		t.Fatalf("breakers %+v\nflows %+v", breakers, flows)
	}
	var msgs []string
	for _, p := range problems {
		msgs = append(msgs, p.Error())
	}
	want := []string{"degrade: rule 1: grade 7", "degrade: rule 2: invalid rule", "degrade: rule 3: count -3",
		"degrade: rule 4: json", "flow: rule 3: controlBehavior 9"}
	if len(msgs) != len(want) {
		t.Fatalf("problems %q", msgs)
	}
	for i := range want {
		if !strings.Contains(msgs[i], want[i]) {
			t.Errorf("problem %d: %q, want %q", i, msgs[i], want[i])
		}
	}
	b, f, p := javaRules([]byte("[]"), nil, "")
	if b != nil || f != nil || p != nil {
		t.Fatalf("%v %v %v", b, f, p)
	}
	if _, _, p := javaRules([]byte("<html>"), []byte("[]"), ""); len(p) != 1 {
		t.Fatalf("%v", p)
	}
}

// FuzzJavaRules: whatever a Java target answers to /getRules, the mapping
// never panics and every rule it keeps makes a valid wire rules message.
func FuzzJavaRules(f *testing.F) {
	f.Add([]byte(javaDegradeJSON), []byte(javaFlowJSON))
	f.Add([]byte(`[{"resource":"a","grade":2,"count":1e300,"timeWindow":9223372036854775807}]`), []byte(`[{"resource":"","count":-1}]`))
	f.Add([]byte(`[{"grade":0,"count":"NaN"}]`), []byte(`{"not":"a list"}`))
	f.Add([]byte("null"), []byte(`[{"resource":"x","controlBehavior":3,"warmUpPeriodSec":-4,"strategy":2,"refResource":"\u0000"}]`))
	f.Fuzz(func(t *testing.T, degrade, flow []byte) {
		breakers, flows, _ := javaRules(degrade, flow, "")
		m := &wire.Rules{Header: wire.Header{Ts: javaT0, Instance: "i"}, Version: wire.RulesVersion(breakers, flows),
			Breakers: breakers, Flows: flows}
		if err := wire.Validate(m, wire.Limits{}); err != nil {
			t.Fatalf("%v\n%+v", err, m)
		}
	})
}

// TestJavaSlowRatioCountRounds: Java takes maxAllowedRt as Math.round(count)
// (ResponseTimeCircuitBreaker), so count 0.5, a common mistake for a ratio,
// is a 1 ms bound, and 199.6 is 200.
func TestJavaSlowRatioCountRounds(t *testing.T) {
	for count, want := range map[string]uint64{"0.5": 1, "0.4": 0, "100.4": 100, "150.5": 151, "199.6": 200, "200": 200} {
		degrade := `[{"resource":"a","grade":0,"count":` + count + `,"slowRatioThreshold":0.5,"timeWindow":10}]`
		b, _, p := javaRules([]byte(degrade), nil, "1.8.8")
		if len(p) != 0 || len(b) != 1 || b[0].MaxAllowedRtMs != want {
			t.Errorf("count %s: %+v %v, want maxAllowedRtMs %d", count, b, p, want)
		}
	}
}

// TestJavaRulesBefore18: Sentinel 1.6.3's degrade rules, as its
// /getRules answered, keep their meaning: grade 0 is an average response
// time (never a slow-request ratio), grade 1 the exception ratio of the
// last second, grade 2 the exceptions of the last minute; a cut-off
// resource has no probe.
func TestJavaRulesBefore18(t *testing.T) {
	degrade, err := os.ReadFile("../testdata/java/legacy-1.6.3/getRules-degrade.json")
	if err != nil {
		t.Fatal(err)
	}
	flow, err := os.ReadFile("../testdata/java/legacy-1.6.3/getRules-flow.json")
	if err != nil {
		t.Fatal(err)
	}
	want := []core.BreakerRule{
		{Resource: "queryPrice", Strategy: core.AverageRT, Threshold: 100, RetryTimeoutMs: 5000, MinRequestAmount: 5,
			StatIntervalMs: 1000, StatSlidingWindowBucketCount: 1, Semantics: core.SemanticsJava16},
		{Resource: "checkStock", Strategy: core.ErrorRatio, Threshold: 0.5, RetryTimeoutMs: 10000, MinRequestAmount: 5,
			StatIntervalMs: 1000, StatSlidingWindowBucketCount: 1, Semantics: core.SemanticsJava16},
		{Resource: "payOrder", Strategy: core.ErrorCount, Threshold: 3, RetryTimeoutMs: 30000,
			StatIntervalMs: 60000, StatSlidingWindowBucketCount: 1, Semantics: core.SemanticsJava16},
	}
	for _, version := range []string{"1.6.3", "1.7.2", ""} { // "": told by the fields
		b, f, p := javaRules(degrade, flow, version)
		if len(p) != 0 || len(f) != 1 || !reflect.DeepEqual(b, want) {
			t.Errorf("version %q: %+v %+v %v", version, b, f, p)
		}
	}
	if b, _, _ := javaRules([]byte(javaDegradeJSON), nil, ""); b[0].Semantics != core.SemanticsJava || b[0].Strategy != core.SlowRequestRatio {
		t.Errorf("a 1.8 rule without a version: %+v", b[0])
	}
	if b, _, _ := javaRules(degrade, nil, "1.8.0"); b[0].Strategy != core.SlowRequestRatio {
		t.Errorf("a 1.8 service's grade 0: %+v", b[0])
	}
	// Such rules travel and are shown, and core refuses to enforce them.
	m := &wire.Rules{Header: wire.Header{Ts: javaT0, Instance: "i"}, Version: wire.RulesVersion(want, nil), Breakers: want}
	if err := wire.Validate(m, wire.Limits{}); err != nil {
		t.Fatal(err)
	}
	if _, err := core.NewBreaker(want[0]); err == nil || !strings.Contains(err.Error(), "before 1.8") {
		t.Errorf("NewBreaker: %v", err)
	}
	if err := core.NewGuard(core.GuardOptions{}).LoadBreakerRules(want); err == nil {
		t.Error("a guard took a 1.6 rule")
	}
}

func TestParseJavaTargets(t *testing.T) {
	got, err := ParseTargets("sentinel://10.0.0.5:8719?app=gateway,sentinel://gw-2,sentinel://[::1]:9000/,sentinel://10.0.0.5:8719?app=gateway")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"sentinel://10.0.0.5:8719?app=gateway", "sentinel://gw-2:8719", "sentinel://[::1]:9000"}
	if len(got) != len(want) {
		t.Fatalf("%+v", got)
	}
	for i := range want {
		if got[i].URL != want[i] || !isJavaTarget(got[i]) {
			t.Errorf("%d: %s, want %s", i, got[i].URL, want[i])
		}
	}
	jt, _ := javaTargetOf(got[1])
	if jt.base != "http://gw-2:8719" || jt.instance != "gw-2:8719" || jt.app != "gw-2:8719" {
		t.Errorf("%+v", jt)
	}
	for spec, msg := range map[string]string{
		"sentinel://h:1/metric":      "without a path",
		"sentinel://h:1?ap=x":        "only ?app=NAME",
		"sentinel://h:1?app=":        "empty app",
		"sentinel://h:1?app=a&app=b": "only ?app=NAME",
		"sentinel://u@h:1":           "no credentials",
		"sentinel://h:0":             "bad port",
		"sentinel:///x":              "no host",
	} {
		if _, err := ParseTargets(spec); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: %v, want %q", spec, err, msg)
		}
	}
}

// TestJavaAppsAreBounded: the resources remembered of an app stop at
// javaMaxResources, however many new names its targets report; names
// already held are still told.
func TestJavaAppsAreBounded(t *testing.T) {
	var a javaApps
	for i := range javaMaxResources + 500 {
		ok := a.add("hostile", fmt.Sprintf("r%d", i))
		if ok != (i < javaMaxResources) {
			t.Fatalf("resource %d: added %v", i, ok)
		}
	}
	if !a.add("hostile", "r0") {
		t.Fatal("a resource already held refused")
	}
	if n := len(a.resources("hostile")); n != javaMaxResources {
		t.Fatalf("%d resources kept, want %d", n, javaMaxResources)
	}
	if !a.add("honest", "queryPrice") {
		t.Fatal("another app refused")
	}
}
