package rulefile

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	sgcb "github.com/alibaba/sentinel-golang/core/circuitbreaker"
	sgflow "github.com/alibaba/sentinel-golang/core/flow"
	"github.com/alibaba/sentinel-golang/ext/datasource"
	"github.com/alibaba/sentinel-golang/logging"

	"github.com/sentinel-top/sentinel-top/core"
)

// Conformance with sentinel-golang v1.0.4: the rule files its file
// datasource reads (ext/datasource's CircuitBreakerRuleJsonArrayParser and
// FlowRuleJsonArrayParser, then its rule managers' LoadRules) read here as
// the same rules, field by field; a file it does not load, or loads only
// in part, is refused here; and where core refuses what sentinel-golang
// loads, the table says why.

// outcome is what a rule file comes to.
type outcome int

const (
	both        outcome = iota // both load every rule, field for field
	neither                    // sentinel-golang does not load every rule, and Parse refuses the file
	coreRefuses                // sentinel-golang loads it; core does not implement it
)

// sgLoads parses data with sentinel-golang's datasource parser and loads
// the rules into its rule manager: the rules parsed, and whether every
// one was loaded (a rule its manager finds invalid or unsupported is
// logged and left out). Loading writes defaults into the rules it is
// given (a warm-up rule's warmUpColdFactor 0 becomes 3), so it loads
// rules of a parse of their own.
func sgLoads(t *testing.T, data []byte, f Format) (parsed any, loadedAll bool) {
	t.Helper()
	if f == FormatGoBreaker {
		v, err := datasource.CircuitBreakerRuleJsonArrayParser(data)
		if err != nil {
			return nil, false
		}
		rules, _ := v.([]*sgcb.Rule)
		v, _ = datasource.CircuitBreakerRuleJsonArrayParser(data)
		load, _ := v.([]*sgcb.Rule)
		if _, err := sgcb.LoadRules(load); err != nil {
			return rules, false
		}
		defer func() { _ = sgcb.ClearRules() }()
		// GetRules lists the rules IsValidRule passed, with or without a
		// breaker: there are breakers of strategies 0, 1 and 2 only.
		for _, r := range rules {
			if r == nil || r.Strategy > sgcb.ErrorCount {
				return rules, false
			}
		}
		return rules, len(sgcb.GetRules()) == len(rules)
	}
	v, err := datasource.FlowRuleJsonArrayParser(data)
	if err != nil {
		return nil, false
	}
	rules, _ := v.([]*sgflow.Rule)
	v, _ = datasource.FlowRuleJsonArrayParser(data)
	load, _ := v.([]*sgflow.Rule)
	if _, err := sgflow.LoadRules(load); err != nil {
		return rules, false
	}
	defer func() { _ = sgflow.ClearRules() }()
	// GetRules lists the rules of the traffic controllers built.
	return rules, len(sgflow.GetRules()) == len(rules)
}

// sgOnly are the JSON names of sentinel-golang's rules core's have not:
// the memory-adaptive flow fields, whose strategy core refuses.
var sgOnly = []string{"lowMemUsageThreshold", "highMemUsageThreshold", "memLowWaterMarkBytes", "memHighWaterMarkBytes"}

// sameFields compares every JSON field of sentinel-golang's rule with the
// field of core's rule of the same JSON name, and fails on a field of
// sentinel-golang's that core's rule has not, but those of sgOnly.
func sameFields(t *testing.T, sg, ours any) {
	t.Helper()
	sv, ov := reflect.ValueOf(sg).Elem(), reflect.ValueOf(ours).Elem()
	byName := map[string]reflect.Value{}
	for i := range ov.NumField() {
		name, _, _ := strings.Cut(ov.Type().Field(i).Tag.Get("json"), ",")
		byName[name] = ov.Field(i)
	}
	for i := range sv.NumField() {
		name, _, _ := strings.Cut(sv.Type().Field(i).Tag.Get("json"), ",")
		o, ok := byName[name]
		if !ok {
			if !slices.Contains(sgOnly, name) {
				t.Errorf("sentinel-golang's %s has no field in core's rule", name)
			}
			continue
		}
		if a, b := scalar(sv.Field(i)), scalar(o); a != b {
			t.Errorf("%s: sentinel-golang %v, here %v", name, a, b)
		}
	}
}

// scalar is a field's value, whatever its named type.
func scalar(v reflect.Value) any {
	switch v.Kind() {
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uint:
		return v.Uint()
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Int:
		return v.Int()
	case reflect.Float32, reflect.Float64:
		return v.Float()
	case reflect.String:
		return v.String()
	}
	return v.Interface()
}

// conform checks one file against sentinel-golang, as Parse reads it
// with its format named and told.
func conform(t *testing.T, data []byte, f Format, want outcome) {
	t.Helper()
	parsed, loaded := sgLoads(t, data, f)
	rules, got, err := Parse(data, f)
	if err == nil && got != f {
		t.Fatalf("read as %v", got)
	}
	switch {
	case want == both && (!loaded || err != nil):
		t.Fatalf("sentinel-golang loads all: %v; Parse: %v", loaded, err)
	case want == neither && (loaded || err == nil):
		t.Fatalf("sentinel-golang loads all: %v; Parse: %v", loaded, err)
	case want == coreRefuses && (!loaded || err == nil):
		t.Fatalf("sentinel-golang loads all: %v; Parse: %v", loaded, err)
	case want != both:
		return
	}
	if auto, told, err := Parse(data, FormatAuto); err == nil && (told != f || !reflect.DeepEqual(auto, rules)) {
		t.Errorf("told %v", told)
	}
	switch sg := parsed.(type) {
	case []*sgcb.Rule:
		if len(sg) != len(rules.Breakers) {
			t.Fatalf("%d rules, here %d", len(sg), len(rules.Breakers))
		}
		for i := range sg {
			sameFields(t, sg[i], &rules.Breakers[i])
			if r := rules.Breakers[i]; r.Semantics != core.SemanticsGo || r.Pattern != "" || r.LimitApp != "" {
				t.Errorf("rule %d has core's fields: %+v", i, r)
			}
		}
	case []*sgflow.Rule:
		if len(sg) != len(rules.Flows) {
			t.Fatalf("%d rules, here %d", len(sg), len(rules.Flows))
		}
		for i := range sg {
			// refResource without an associated resource means nothing
			// to sentinel-golang; core drops it.
			if sg[i].RelationStrategy == sgflow.CurrentResource {
				sg[i].RefResource = ""
			}
			sameFields(t, sg[i], &rules.Flows[i])
		}
	}
}

const (
	// A breaker rule's fields, but resource and strategy.
	cbRest = `"retryTimeoutMs":1000,"statIntervalMs":1000,"minRequestAmount":5`
	cbMax  = `"retryTimeoutMs":4294967295,"statIntervalMs":4294967295,"minRequestAmount":18446744073709551615,` +
		`"maxAllowedRtMs":18446744073709551615,"probeNum":18446744073709551615,` +
		`"statSlidingWindowBucketCount":4294967294` // which does not divide the interval: 1 bucket
)

func TestConformsToSentinelGolang(t *testing.T) {
	level := logging.GetGlobalLoggerLevel()
	logging.ResetGlobalLoggerLevel(logging.ErrorLevel + 1) // its warnings of the rules refused
	t.Cleanup(func() { logging.ResetGlobalLoggerLevel(level) })

	for _, file := range []string{"go-breaker.json", "go-flow.json"} {
		data, err := os.ReadFile(filepath.Join("testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		f := FormatGoBreaker
		if strings.Contains(file, "flow") {
			f = FormatGoFlow
		}
		t.Run(file, func(t *testing.T) { conform(t, data, f, both) })
	}
	for _, c := range []struct {
		name  string
		f     Format
		rules string
		want  outcome
	}{
		{"breaker every strategy", FormatGoBreaker, `{"resource":"a","strategy":0,"maxAllowedRtMs":20,"threshold":0.5,` + cbRest + `},` +
			`{"resource":"a","strategy":1,"threshold":1,` + cbRest + `},{"resource":"b","strategy":2,"threshold":0,` + cbRest + `}`, both},
		{"breaker keys in any case", FormatGoBreaker, `{"RESOURCE":"a","Strategy":2,"retrytimeoutms":1000,"StatIntervalMS":1000,"THRESHOLD":3,"ProbeNum":2}`, both},
		{"breaker last of a repeated key", FormatGoBreaker, `{"resource":"a","resource":"b","strategy":2,"threshold":1,"threshold":2,` + cbRest + `}`, both},
		{"breaker null values", FormatGoBreaker, `{"resource":"a","strategy":null,"threshold":null,"probeNum":null,` + cbRest + `}`, both},
		{"breaker unknown fields", FormatGoBreaker, `{"resource":"a","strategy":2,"threshold":1,"app":"x","extra":{"n":[1,null]},` + cbRest + `}`, both},
		{"breaker largest values", FormatGoBreaker, `{"resource":"a","strategy":2,"threshold":1e308,` + cbMax + `}`, both},
		{"breaker misaligned buckets", FormatGoBreaker, `{"resource":"a","strategy":1,"threshold":0.1,"statSlidingWindowBucketCount":7,` + cbRest + `}`, both},
		{"breaker escapes", FormatGoBreaker, `{"res\u006furce":"\u00e9\ud83d\ude00\ud800","strategy":2,"threshold":5e-1,"id":"\t",` + cbRest + `}`, both},
		{"breaker exponent integers", FormatGoBreaker, `{"resource":"a","strategy":2,"threshold":1,"retryTimeoutMs":1e3,"statIntervalMs":1000}`, neither},
		{"breaker no retry timeout", FormatGoBreaker, `{"resource":"a","strategy":2,"threshold":1,"statIntervalMs":1000}`, neither},
		{"breaker no interval", FormatGoBreaker, `{"resource":"a","strategy":2,"threshold":1,"retryTimeoutMs":1000}`, neither},
		{"breaker no resource", FormatGoBreaker, `{"strategy":2,"threshold":1,` + cbRest + `}`, neither},
		{"breaker error ratio over 1", FormatGoBreaker, `{"resource":"a","strategy":1,"threshold":1.5,` + cbRest + `}`, neither},
		{"breaker slow ratio over 1", FormatGoBreaker, `{"resource":"a","strategy":0,"threshold":2,` + cbRest + `}`, neither},
		{"breaker negative threshold", FormatGoBreaker, `{"resource":"a","strategy":2,"threshold":-1,` + cbRest + `}`, neither},
		{"breaker unknown strategy", FormatGoBreaker, `{"resource":"a","strategy":3,"threshold":1,` + cbRest + `}`, neither},
		{"breaker negative integer", FormatGoBreaker, `{"resource":"a","strategy":2,"threshold":1,"probeNum":-1,` + cbRest + `}`, neither},
		{"breaker integer overflow", FormatGoBreaker, `{"resource":"a","strategy":2,"threshold":1,"retryTimeoutMs":4294967296,"statIntervalMs":1000}`, neither},
		{"breaker string threshold", FormatGoBreaker, `{"resource":"a","strategy":2,"threshold":"1",` + cbRest + `}`, neither},
		{"breaker numeric id", FormatGoBreaker, `{"id":7,"resource":"a","strategy":2,"threshold":1,` + cbRest + `}`, neither},
		{"breaker one bad of two", FormatGoBreaker, `{"resource":"a","strategy":2,"threshold":1,` + cbRest + `},{"resource":"b","strategy":2,"threshold":1,"statIntervalMs":1000}`, neither},

		{"flow shortest", FormatGoFlow, `{"resource":"a","threshold":10}`, both},
		{"flow every supported shape", FormatGoFlow, `{"resource":"a","threshold":10,"statIntervalInMs":5000},` +
			`{"resource":"b","tokenCalculateStrategy":1,"threshold":10,"warmUpPeriodSec":10},` +
			`{"resource":"c","controlBehavior":1,"threshold":10,"maxQueueingTimeMs":0},` +
			`{"resource":"d","tokenCalculateStrategy":1,"controlBehavior":1,"threshold":10,"warmUpPeriodSec":5,"warmUpColdFactor":5,"maxQueueingTimeMs":100}`, both},
		{"flow zero threshold", FormatGoFlow, `{"resource":"a","threshold":0}`, both},
		{"flow long interval", FormatGoFlow, `{"resource":"a","threshold":1,"statIntervalInMs":4294967295}`, both},
		{"flow refResource of the resource itself", FormatGoFlow, `{"resource":"a","threshold":1,"relationStrategy":0,"refResource":"b"}`, both},
		{"flow memory fields of another strategy", FormatGoFlow, `{"resource":"a","threshold":1,"lowMemUsageThreshold":10,"memHighWaterMarkBytes":100}`, both},
		{"flow warm-up without a period", FormatGoFlow, `{"resource":"a","tokenCalculateStrategy":1,"threshold":10}`, neither},
		{"flow cold factor 1", FormatGoFlow, `{"resource":"a","tokenCalculateStrategy":1,"threshold":10,"warmUpPeriodSec":1,"warmUpColdFactor":1}`, neither},
		{"flow negative threshold", FormatGoFlow, `{"resource":"a","threshold":-1}`, neither},
		{"flow no resource", FormatGoFlow, `{"threshold":1}`, neither},
		{"flow unknown strategy", FormatGoFlow, `{"resource":"a","tokenCalculateStrategy":7,"threshold":1}`, neither},
		{"flow unknown behaviour", FormatGoFlow, `{"resource":"a","controlBehavior":2,"threshold":1}`, neither},
		{"flow negative behaviour", FormatGoFlow, `{"resource":"a","controlBehavior":-1,"threshold":1}`, neither},
		{"flow unknown relation", FormatGoFlow, `{"resource":"a","relationStrategy":2,"refResource":"b","threshold":1}`, neither},
		{"flow associated without a resource", FormatGoFlow, `{"resource":"a","relationStrategy":1,"threshold":1}`, neither},
		{"flow memory field of the wrong type", FormatGoFlow, `{"resource":"a","threshold":1,"memLowWaterMarkBytes":"1MiB"}`, neither},
		{"flow string strategy", FormatGoFlow, `{"resource":"a","tokenCalculateStrategy":"WarmUp","threshold":1}`, neither},
		// Core refuses a window of more than 65536 buckets, which
		// sentinel-golang makes at once (4294967295 of them kill it); and
		// it does not implement limiting a resource by another's traffic.
		{"breaker many buckets", FormatGoBreaker, `{"resource":"a","strategy":2,"threshold":1,"retryTimeoutMs":1,"statIntervalMs":100000,"statSlidingWindowBucketCount":100000}`, coreRefuses},
		{"flow associated resource", FormatGoFlow, `{"resource":"a","relationStrategy":1,"refResource":"b","threshold":1}`, coreRefuses},
	} {
		t.Run(c.name, func(t *testing.T) { conform(t, []byte("["+c.rules+"]"), c.f, c.want) })
	}
}
