package source

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// TestJavaParamRulesMapping: ParamFlowRule as fastjson writes it, every
// field mapped onto sentinel-golang's hotspot.Rule, and the rules that do
// not map reported one by one.
func TestJavaParamRulesMapping(t *testing.T) {
	body := `[{"burstCount":10,"clusterMode":false,"controlBehavior":0,"count":200.9,"durationInSec":2,"grade":1,"limitApp":"default",` +
		`"maxQueueingTimeMs":0,"paramFlowItemList":[{"classType":"java.lang.String","count":1000,"object":"vip-123"},` +
		`{"classType":"int","count":5,"object":"007"},{"classType":"long","count":7,"object":"x"},{"classType":"int","object":"9"}],` +
		`"paramIdx":0,"resource":"query|order"},` +
		`{"grade":0,"paramIdx":-1,"count":3,"limitApp":"order-service","clusterMode":true,"resource":"stock"},` +
		`{"controlBehavior":2,"maxQueueingTimeMs":300,"paramIdx":1,"count":10,"resource":"GET:/api/.*","regex":true},` +
		`{"controlBehavior":1,"paramIdx":0,"count":1,"resource":"warm"},` +
		`{"count":1,"resource":"no-index"},` +
		`{"grade":2,"paramIdx":0,"count":1,"resource":"bad-grade"},` +
		`{"paramIdx":0,"count":-1,"resource":"negative"},` +
		`{"paramIdx":0,"count":1,"resource":"(unclosed","regex":true},` +
		`{"paramIdx":"0","resource":"typed"}]`
	rules, problems := javaParamRules([]byte(body))
	want := []core.HotParamRule{
		{Resource: "query_order", MetricType: core.HotParamQPS, Threshold: 200, DurationInSec: 2, BurstCount: 10,
			SpecificItems: map[string]int64{"vip-123": 1000, "7": 5, "x": 7}},
		{ID: "java:limitApp=order-service,cluster", Resource: "stock", MetricType: core.HotParamConcurrency, ParamIndex: -1,
			Threshold: 3, DurationInSec: 1},
		{Resource: "GET:/api/.*", Pattern: "GET:/api/.*", MetricType: core.HotParamQPS, ControlBehavior: core.Throttling,
			ParamIndex: 1, Threshold: 10, DurationInSec: 1, MaxQueueingTimeMs: 300},
	}
	if !reflect.DeepEqual(rules, want) {
		t.Fatalf("rules\n%+v\nwant\n%+v", rules, want)
	}
	var reasons []string
	for _, p := range problems {
		if !errors.Is(p, wire.ErrInvalid) {
			t.Errorf("problem %v is not invalid", p)
		}
		reasons = append(reasons, p.Error())
	}
	for i, want := range []string{"rule 3: controlBehavior 1", "rule 4: paramIdx is missing", "rule 5: grade 2",
		"rule 6: count -1", "rule 7: regex", "rule 8: json"} {
		if i >= len(reasons) || !strings.Contains(reasons[i], want) {
			t.Fatalf("problems %q, want %q at %d", reasons, want, i)
		}
	}
	if len(reasons) != 6 {
		t.Fatalf("problems %q", reasons)
	}
	if _, problems := javaParamRules([]byte(`{"not":"a list"}`)); len(problems) != 1 || !errors.Is(problems[0], wire.ErrMalformed) {
		t.Fatalf("an answer that is not a list: %v", problems)
	}
	if rules, problems := javaParamRules([]byte(" ")); rules != nil || problems != nil {
		t.Fatalf("an empty answer: %v %v", rules, problems)
	}
}
