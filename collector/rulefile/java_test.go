package rulefile

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
)

// TestJavaChecks: a Java rule its rule manager would refuse, or with a
// value core cannot hold, is refused, naming Java's field.
func TestJavaChecks(t *testing.T) {
	for _, c := range []struct {
		kind, rule, field string
		is                error
		says              string
	}{
		{"degrade", `{"resource":" ","grade":2,"count":1,"timeWindow":1}`, "resource", core.ErrInvalidRule, "blank"},
		{"degrade", `{"resource":"a","grade":3,"count":1,"timeWindow":1}`, "grade", core.ErrInvalidRule, "grade 3"},
		{"degrade", `{"resource":"a","grade":2,"count":-1,"timeWindow":1}`, "count", core.ErrInvalidRule, "count -1"},
		{"degrade", `{"resource":"a","grade":0,"count":1e19,"timeWindow":1}`, "count", ErrType, "too long"},
		{"degrade", `{"resource":"a","grade":2,"count":1}`, "timeWindow", core.ErrInvalidRule, "timeWindow 0 must be positive"},
		{"degrade", `{"resource":"a","grade":2,"count":1,"timeWindow":2147484}`, "timeWindow", ErrType, "at most 2147483"},
		{"degrade", `{"resource":"a","grade":2,"count":1,"timeWindow":1,"minRequestAmount":0}`, "minRequestAmount", core.ErrInvalidRule, "must be positive"},
		{"degrade", `{"resource":"a","grade":2,"count":1,"timeWindow":1,"statIntervalMs":-5}`, "statIntervalMs", core.ErrInvalidRule, "statIntervalMs -5"},
		{"degrade", `{"resource":"a","grade":2,"count":1,"timeWindow":1,"statIntervalMs":2147483648}`, "statIntervalMs", ErrType, "int"},
		{"degrade", `{"resource":"a","grade":0,"count":100,"timeWindow":1,"slowRatioThreshold":1.5}`, "slowRatioThreshold", core.ErrInvalidRule, "[0, 1]"},
		{"degrade", `{"resource":"a","grade":1,"count":50,"timeWindow":1}`, "", core.ErrInvalidRule, "ratio"},
		{"degrade", `{"resource":"a(?=b)","regex":true,"grade":2,"count":1,"timeWindow":1}`, "resource", core.ErrInvalidRule, "cannot be matched"},
		{"degrade", `{"resource":"a","grade":2,"count":1,"timeWindow":1.5}`, "timeWindow", ErrType, "number 1.5, not an integer"},
		{"degrade", `{"resource":"a","grade":"2","count":1,"timeWindow":1}`, "grade", ErrType, "string"},
		{"degrade", `[1]`, "", ErrType, "array, not an object"},
		{"flow", `{"resource":"","count":1}`, "resource", core.ErrInvalidRule, "blank"},
		{"flow", `{"resource":"a","count":-2}`, "count", core.ErrInvalidRule, "count -2"},
		{"flow", `{"resource":"a","count":1,"grade":2}`, "grade", core.ErrInvalidRule, "grade 2"},
		{"flow", `{"resource":"a","count":1,"strategy":1}`, "refResource", core.ErrInvalidRule, "blank"},
		{"flow", `{"resource":"a","count":1,"strategy":3,"refResource":"b"}`, "strategy", core.ErrInvalidRule, "strategy 3"},
		{"flow", `{"resource":"a","count":1,"controlBehavior":4}`, "controlBehavior", core.ErrInvalidRule, "controlBehavior 4"},
		{"flow", `{"resource":"a","count":1,"controlBehavior":1,"warmUpPeriodSec":0}`, "warmUpPeriodSec", core.ErrInvalidRule, "positive"},
		{"flow", `{"resource":"a","count":1,"controlBehavior":2,"maxQueueingTimeMs":0}`, "maxQueueingTimeMs", core.ErrInvalidRule, "positive"},
		{"flow", `{"resource":"a","count":1,"controlBehavior":3,"maxQueueingTimeMs":-1}`, "maxQueueingTimeMs", core.ErrInvalidRule, "positive"},
		{"flow", `{"resource":"a.*","count":1,"regex":true,"controlBehavior":2}`, "regex", core.ErrInvalidRule, "regex rule"},
		{"flow", `{"resource":"a","count":1,"clusterMode":"yes"}`, "clusterMode", ErrType, "true or false"},
	} {
		data := []byte("[" + c.rule + "]")
		var problems []*RuleError
		var err error
		if c.kind == "degrade" {
			_, problems, err = JavaDegradeRules(data, "")
		} else {
			_, problems, err = JavaFlowRules(data)
		}
		if err != nil || len(problems) != 1 {
			t.Errorf("%s %s: %v %v", c.kind, c.rule, problems, err)
			continue
		}
		p := problems[0]
		if p.Index != 0 || p.Field != c.field || !errors.Is(p, c.is) || !strings.Contains(p.Error(), c.says) {
			t.Errorf("%s %s: field %q, %v; want field %q, %v, %q", c.kind, c.rule, p.Field, p, c.field, c.is, c.says)
		}
	}
}

// TestJavaDefaults: fields left out take Java's defaults; a legacy rule
// is told by its fields; a slow-ratio count is rounded half up.
func TestJavaDefaults(t *testing.T) {
	b, problems, err := JavaDegradeRules([]byte(`[{"resource":"a|b","count":0.5,"timeWindow":10},`+
		`{"resource":"c","grade":0,"count":200,"timeWindow":5,"rtSlowRequestAmount":3}]`), "")
	want := []core.BreakerRule{
		{Resource: "a_b", Strategy: core.SlowRequestRatio, RetryTimeoutMs: 10000, MinRequestAmount: 5, StatIntervalMs: 1000,
			StatSlidingWindowBucketCount: 1, MaxAllowedRtMs: 1, Threshold: 1, Semantics: core.SemanticsJava},
		{Resource: "c", Strategy: core.AverageRT, RetryTimeoutMs: 5000, MinRequestAmount: 3, StatIntervalMs: 1000,
			StatSlidingWindowBucketCount: 1, Threshold: 200, Semantics: core.SemanticsJava16},
	}
	if err != nil || problems != nil || !reflect.DeepEqual(b, want) {
		t.Fatalf("%+v %v %v", b, problems, err)
	}
	f, problems, err := JavaFlowRules([]byte(`[{"resource":"a","count":5,"controlBehavior":3,"limitApp":"default"}]`))
	wantF := []core.FlowRule{{Resource: "a", TokenCalculateStrategy: core.WarmUp, ControlBehavior: core.Throttling, Threshold: 5,
		MaxQueueingTimeMs: 500, WarmUpPeriodSec: 10, WarmUpColdFactor: JavaColdFactor}}
	if err != nil || problems != nil || !reflect.DeepEqual(f, wantF) {
		t.Fatalf("%+v %v %v", f, problems, err)
	}
	for _, data := range []string{"", " \n", "null", "[]"} {
		if b, p, err := JavaDegradeRules([]byte(data), ""); b != nil || p != nil || err != nil {
			t.Errorf("%q: %v %v %v", data, b, p, err)
		}
	}
	for _, data := range []string{"{}", "[", "<html>", `"rules"`} {
		if _, _, err := JavaFlowRules([]byte(data)); !errors.Is(err, ErrSyntax) {
			t.Errorf("%q: %v", data, err)
		}
	}
}
