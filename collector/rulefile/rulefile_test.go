package rulefile

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
)

// TestParseTestdata: each example file is told by its content and reads
// as the rules it means.
func TestParseTestdata(t *testing.T) {
	for _, c := range []struct {
		file  string
		want  Format
		rules Rules
	}{
		{"java-degrade.json", FormatJavaDegrade, Rules{Breakers: []core.BreakerRule{
			// count 0.5 is a 1 ms bound (Java rounds half up), and with no
			// slowRatioThreshold the ratio is Java's default, 1.
			{Resource: "GET:/api/price", Strategy: core.SlowRequestRatio, RetryTimeoutMs: 10000, MinRequestAmount: 5,
				StatIntervalMs: 1000, StatSlidingWindowBucketCount: 1, MaxAllowedRtMs: 1, Threshold: 1, Semantics: core.SemanticsJava},
			{Resource: "db_orders", Strategy: core.ErrorRatio, RetryTimeoutMs: 30000, MinRequestAmount: 20,
				StatIntervalMs: 10000, StatSlidingWindowBucketCount: 1, Threshold: 0.3, Semantics: core.SemanticsJava},
			{Resource: "payOrder", Strategy: core.ErrorCount, RetryTimeoutMs: 60000, MinRequestAmount: 5,
				StatIntervalMs: 60000, StatSlidingWindowBucketCount: 1, Threshold: 5, Semantics: core.SemanticsJava},
		}}},
		{"java-degrade-1.6.json", FormatJavaDegrade, Rules{Breakers: []core.BreakerRule{
			{Resource: "queryPrice", Strategy: core.AverageRT, RetryTimeoutMs: 5000, MinRequestAmount: 5,
				StatIntervalMs: 1000, StatSlidingWindowBucketCount: 1, Threshold: 100, Semantics: core.SemanticsJava16},
			{Resource: "checkStock", Strategy: core.ErrorRatio, RetryTimeoutMs: 10000, MinRequestAmount: 5,
				StatIntervalMs: 1000, StatSlidingWindowBucketCount: 1, Threshold: 0.5, Semantics: core.SemanticsJava16},
		}}},
		{"java-flow.json", FormatJavaFlow, Rules{Flows: []core.FlowRule{
			{Resource: "GET:/api/price", Threshold: 100},
			{Resource: "GET:/api/search", TokenCalculateStrategy: core.WarmUp, Threshold: 50, WarmUpPeriodSec: 20, WarmUpColdFactor: 3},
			{Resource: "queue_submit", ControlBehavior: core.Throttling, Threshold: 10, MaxQueueingTimeMs: 800},
			{ID: "java:threads,relate=db_orders", Resource: "report", Threshold: 4, LimitApp: "batch-app"},
		}}},
		{"go-breaker.json", FormatGoBreaker, Rules{Breakers: []core.BreakerRule{
			{ID: "price-slow", Resource: "GET:/api/price", Strategy: core.SlowRequestRatio, RetryTimeoutMs: 3000, MinRequestAmount: 10,
				StatIntervalMs: 5000, StatSlidingWindowBucketCount: 10, MaxAllowedRtMs: 50, Threshold: 0.5, ProbeNum: 3},
			{Resource: "db", Strategy: core.ErrorRatio, RetryTimeoutMs: 10000, MinRequestAmount: 20, StatIntervalMs: 1000, Threshold: 0.25},
			{Resource: "payOrder", Strategy: core.ErrorCount, RetryTimeoutMs: 60000, StatIntervalMs: 60000, StatSlidingWindowBucketCount: 7, Threshold: 5},
		}}},
		{"go-flow.json", FormatGoFlow, Rules{Flows: []core.FlowRule{
			{Resource: "GET:/api/price", Threshold: 100, StatIntervalInMs: 1000},
			{ID: "search-warm", Resource: "GET:/api/search", TokenCalculateStrategy: core.WarmUp, Threshold: 50, WarmUpPeriodSec: 20, WarmUpColdFactor: 4},
			{Resource: "queue", ControlBehavior: core.Throttling, Threshold: 10, MaxQueueingTimeMs: 800},
			{Resource: "report", Threshold: 4},
		}}},
	} {
		data, err := os.ReadFile(filepath.Join("testdata", c.file))
		if err != nil {
			t.Fatal(err)
		}
		rules, f, err := Parse(data, FormatAuto)
		if err != nil || f != c.want || !reflect.DeepEqual(rules, c.rules) {
			t.Errorf("%s: %v %v\n got %+v\nwant %+v", c.file, f, err, rules, c.rules)
		}
		// Named, the format reads the same; another format of the same
		// family is refused, as is the other family.
		if rules, f, err := Parse(data, c.want); err != nil || f != c.want || !reflect.DeepEqual(rules, c.rules) {
			t.Errorf("%s as %v: %v %v", c.file, c.want, f, err)
		}
		for other := FormatGoBreaker; other <= FormatJavaFlow; other++ {
			if other == c.want {
				continue
			}
			if _, _, err := Parse(data, other); !errors.Is(err, ErrFormat) {
				t.Errorf("%s as %v: %v, want ErrFormat", c.file, other, err)
			}
		}
	}
}

// TestDetect: how FormatAuto tells a format, and what it refuses.
func TestDetect(t *testing.T) {
	for _, c := range []struct {
		data  string
		want  Format
		index int    // of the RuleError, -1 for none
		says  string // in the error
	}{
		// Told by the family's fields, then the kind's.
		{`[{"resource":"a","threshold":1}]`, FormatGoFlow, -1, ""},
		{`[{"resource":"a","threshold":1,"controlBehavior":1}]`, FormatGoFlow, -1, ""},
		{`[{"resource":"a","threshold":1,"statIntervalMs":1000,"retryTimeoutMs":1}]`, FormatGoBreaker, -1, ""},
		{`[{"resource":"a","retryTimeoutMs":1,"statIntervalMs":1}]`, FormatGoBreaker, -1, ""},
		{`[{"resource":"a","count":1}]`, FormatJavaFlow, -1, ""},
		{`[{"resource":"a","count":1,"grade":0,"strategy":0}]`, FormatJavaFlow, -1, ""},
		{`[{"resource":"a","count":1,"timeWindow":1}]`, FormatJavaDegrade, -1, ""},
		{`[{"resource":"a","count":1,"grade":2}]`, FormatJavaDegrade, 0, "timeWindow"}, // grade 2 is a degrade grade
		{`[{"resource":"a","grade":1,"timeWindow":1}]`, FormatJavaDegrade, -1, ""},
		{`[{"Resource":"a","COUNT":1,"TimeWindow":1}]`, FormatJavaDegrade, -1, ""}, // any case, as encoding/json reads it
		// A rule that tells nothing takes its array's kind and family.
		{`[{"resource":"a"},{"resource":"b","count":1,"timeWindow":1}]`, FormatJavaDegrade, 0, "timeWindow 0"},
		{`[{"resource":"a","minRequestAmount":1},{"resource":"b","threshold":1}]`, FormatGoBreaker, 0, "statIntervalMs"},
		// Ambiguous rules and mixed arrays name the rule.
		{`[{"resource":"a","count":1,"threshold":1}]`, FormatAuto, 0, "both a sentinel-golang field (threshold) and a Java Sentinel field (count)"},
		{`[{"resource":"a","count":1},{"resource":"b","threshold":1}]`, FormatAuto, 1, "mixed"},
		{`[{"resource":"a","count":1,"timeWindow":1,"controlBehavior":0}]`, FormatAuto, 0, "java-degrade field (timeWindow) and a java-flow field (controlBehavior)"},
		{`[{"resource":"a","count":1,"timeWindow":1},{"resource":"a","count":1,"strategy":0}]`, FormatAuto, 1, "rule at index 0 a java-degrade field (timeWindow)"},
		{`[{"resource":"a","threshold":1,"retryTimeoutMs":1},{"resource":"a","threshold":1,"tokenCalculateStrategy":0}]`, FormatAuto, 1, "mixed"},
		{`[{"resource":"a","grade":2,"controlBehavior":0}]`, FormatAuto, 0, "java-degrade field (grade 2)"},
		// Nothing to tell by.
		{`[]`, FormatAuto, -1, "empty array"},
		{`null`, FormatAuto, -1, "empty array"},
		{``, FormatAuto, -1, "empty array"},
		{`[{"resource":"a"}]`, FormatAuto, -1, "no rule has a field"},
		{`[{"resource":"a","strategy":0}]`, FormatAuto, -1, "no rule has a field"},
		{`[1,{"resource":"a"}]`, FormatAuto, 0, "the rule is a number"},
	} {
		_, f, err := Parse([]byte(c.data), FormatAuto)
		var re *RuleError
		gotIndex := -1
		if errors.As(err, &re) {
			gotIndex = re.Index
		}
		if f != c.want || gotIndex != c.index || (c.says == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v at %d, %v; want %v at %d, %q", c.data, f, gotIndex, err, c.want, c.index, c.says)
		}
		if c.want == FormatAuto && !errors.Is(err, ErrFormat) && !errors.Is(err, ErrType) {
			t.Errorf("%s: %v, want ErrFormat", c.data, err)
		}
	}
}

// TestParseNamedFormat: a named format reads an empty array as no rules,
// and refuses a rule that has another format's fields.
func TestParseNamedFormat(t *testing.T) {
	for f := FormatGoBreaker; f <= FormatJavaFlow; f++ {
		for _, data := range []string{"[]", "null", " "} {
			rules, got, err := Parse([]byte(data), f)
			if err != nil || got != f || rules.Breakers != nil || rules.Flows != nil {
				t.Errorf("%v %q: %+v %v %v", f, data, rules, got, err)
			}
		}
	}
	_, _, err := Parse([]byte(`[{"resource":"a","threshold":5},{"resource":"b","count":5}]`), FormatGoFlow)
	var re *RuleError
	if !errors.As(err, &re) || re.Index != 1 || re.Field != "count" || !errors.Is(err, ErrFormat) ||
		!strings.Contains(err.Error(), "Java Sentinel field (count): it is not a sentinel-golang rule") {
		t.Errorf("%v", err)
	}
	if _, _, err := Parse([]byte(`[]`), Format(9)); !errors.Is(err, ErrFormat) {
		t.Errorf("Format(9): %v", err)
	}
}

// TestParseProblems: every rule that does not map is listed, with its
// index and field, and the errors wrap their sentinels.
func TestParseProblems(t *testing.T) {
	data := `[{"resource":"a","strategy":0,"retryTimeoutMs":1000,"statIntervalMs":1000,"threshold":0.5},` +
		`{"resource":"b","strategy":1,"retryTimeoutMs":-1,"statIntervalMs":1000,"threshold":0.5},` +
		`{"resource":"c","strategy":1,"retryTimeoutMs":1000,"statIntervalMs":1000,"threshold":1.5},` +
		`{"resource":"d","strategy":3,"retryTimeoutMs":1000,"statIntervalMs":1000},` +
		`{"resource":"e","strategy":0,"retryTimeoutMs":1000,"statIntervalMs":1000,"maxAllowedRtMs":"50"},` +
		`{"resource":"f","strategy":2,"retryTimeoutMs":1000,"statIntervalMs":0,"threshold":3},` +
		`null,` +
		`{"resource":"g","strategy":2,"retryTimeoutMs":1000,"statIntervalMs":1000,"semantics":"python"},` +
		`{"resource":"` + strings.Repeat("x", 1025) + `","strategy":2,"retryTimeoutMs":1000,"statIntervalMs":1000}]`
	rules, f, err := Parse([]byte(data), FormatAuto)
	var problems Problems
	if f != FormatGoBreaker || rules.Breakers != nil || !errors.As(err, &problems) {
		t.Fatalf("%+v %v %v", rules, f, err)
	}
	want := []struct {
		index int
		field string
		is    error
		says  string
	}{
		{1, "retryTimeoutMs", ErrType, "json: retryTimeoutMs is number -1, not an integer from 0 to 4294967295"},
		{2, "", core.ErrInvalidRule, "threshold 1.5 is a ratio"},
		{3, "", core.ErrInvalidRule, "strategy 3"},
		{4, "maxAllowedRtMs", ErrType, "json: maxAllowedRtMs is a string, not an integer"},
		{5, "", core.ErrInvalidRule, "statIntervalMs must be positive"},
		{6, "", ErrType, "the rule is null"},
		{7, "", core.ErrInvalidRule, `semantics "python"`},
		{8, "resource", core.ErrInvalidRule, "resource is 1025 bytes, over 1024"},
	}
	if len(problems) != len(want) {
		t.Fatalf("%d problems: %v", len(problems), err)
	}
	for i, w := range want {
		p := problems[i]
		if p.Index != w.index || p.Field != w.field || !errors.Is(p, w.is) || !strings.Contains(p.Error(), w.says) {
			t.Errorf("problem %d: %d %q %v; want %d %q %v %q", i, p.Index, p.Field, p, w.index, w.field, w.is, w.says)
		}
	}
	if !errors.Is(err, core.ErrInvalidRule) || !errors.Is(err, ErrType) || errors.Is(err, ErrFormat) {
		t.Errorf("errors.Is through Problems: %v", err)
	}
	// A long list is cut.
	many := "[" + strings.Repeat(`{"resource":"","threshold":1},`, 30) + `{"resource":"","threshold":1}]`
	_, _, err = Parse([]byte(many), FormatAuto)
	if lines := strings.Split(err.Error(), "\n"); len(lines) != maxListed+1 || lines[maxListed] != "and 21 more" {
		t.Errorf("%d lines: %q", len(lines), lines[len(lines)-1])
	}
}

// TestGoFlowUnsupported: sentinel-golang flow rules core does not
// implement are refused, not read as something else.
func TestGoFlowUnsupported(t *testing.T) {
	for _, c := range []struct{ rule, says string }{
		{`{"resource":"a","threshold":1,"relationStrategy":1,"refResource":"b"}`, "relationStrategy"},
		{`{"resource":"a","threshold":1,"tokenCalculateStrategy":2,"lowMemUsageThreshold":10,"highMemUsageThreshold":5}`, "tokenCalculateStrategy 2"},
		{`{"resource":"a","threshold":1,"tokenCalculateStrategy":1}`, "warmUpPeriodSec"},
		{`{"resource":"a","threshold":1,"tokenCalculateStrategy":1,"warmUpPeriodSec":5,"warmUpColdFactor":1}`, "warmUpColdFactor"},
		{`{"resource":"a","threshold":-1}`, "threshold -1"},
		{`{"resource":"a","threshold":1,"controlBehavior":-1}`, "controlBehavior -1"},
	} {
		_, _, err := Parse([]byte("["+c.rule+"]"), FormatGoFlow)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want %q", c.rule, err, c.says)
		}
	}
}

func TestFormatNames(t *testing.T) {
	for f := FormatAuto; f <= FormatJavaFlow; f++ {
		got, err := ParseFormat(strings.ToUpper(f.String()))
		if err != nil || got != f {
			t.Errorf("%v: %v %v", f, got, err)
		}
	}
	if _, err := ParseFormat("yaml"); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "go-breaker, go-flow, java-degrade, java-flow") {
		t.Errorf("%v", err)
	}
	if s := Format(-1).String(); s != "Format(-1)" {
		t.Error(s)
	}
	fs := flag.NewFlagSet("whatif", flag.ContinueOnError)
	var f Format
	fs.Var(&f, "rules-format", "")
	if err := fs.Parse([]string{"--rules-format", "java-degrade"}); err != nil || f != FormatJavaDegrade {
		t.Errorf("%v %v", f, err)
	}
	fs.SetOutput(new(strings.Builder))
	if err := fs.Parse([]string{"--rules-format", "xml"}); err == nil {
		t.Error("xml accepted")
	}
}

func TestMerge(t *testing.T) {
	a := Rules{Breakers: []core.BreakerRule{{Resource: "a"}}}
	b := Rules{Flows: []core.FlowRule{{Resource: "b"}}, Breakers: []core.BreakerRule{{Resource: "c"}}}
	m := Merge(a, Rules{}, b)
	if len(m.Breakers) != 2 || m.Breakers[0].Resource != "a" || m.Breakers[1].Resource != "c" || len(m.Flows) != 1 {
		t.Fatalf("%+v", m)
	}
	m.Breakers[0].Resource = "x"
	if a.Breakers[0].Resource != "a" {
		t.Error("Merge shares a slice")
	}
	if m := Merge(); m.Breakers != nil || m.Flows != nil {
		t.Errorf("%+v", m)
	}
}

// TestGoBreakerBuckets: a window of more buckets than any rule needs is
// refused; a bucket count that does not divide the interval is one
// bucket, and java semantics ignore it.
func TestGoBreakerBuckets(t *testing.T) {
	for rule, ok := range map[string]bool{
		`"statIntervalMs":65536,"statSlidingWindowBucketCount":65536`:                      true,
		`"statIntervalMs":131072,"statSlidingWindowBucketCount":131072`:                    false,
		`"statIntervalMs":4294967295,"statSlidingWindowBucketCount":4294967295`:            false,
		`"statIntervalMs":4294967295,"statSlidingWindowBucketCount":4294967294`:            true,
		`"statIntervalMs":131072,"statSlidingWindowBucketCount":131072,"semantics":"java"`: true,
	} {
		_, _, err := Parse([]byte(`[{"resource":"a","strategy":2,"threshold":1,"retryTimeoutMs":1000,`+rule+`}]`), FormatAuto)
		var re *RuleError
		if ok != (err == nil) || !ok && (!errors.As(err, &re) || re.Field != "statSlidingWindowBucketCount") {
			t.Errorf("%s: %v", rule, err)
		}
	}
}
