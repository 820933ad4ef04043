package agent

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/internal/racetest"
)

// vipRule limits each customer of query-order to 200 entries a second,
// except one with an exception of its own.
var vipRule = core.HotParamRule{Resource: "query-order", MetricType: core.HotParamQPS, Threshold: 200,
	DurationInSec: 1, SpecificItems: map[string]int64{"vip-9": 1000}}

// TestHotValuesOnTheStream: a resource with a hot-parameter rule sends its
// rule in params and, in each bucket, its values with the most entries
// (pass and block each), the rest summed in (other), read from a real
// websocket.
func TestHotValuesOnTheStream(t *testing.T) {
	ta := startAgent(t, Options{})
	regionRule := core.HotParamRule{Resource: "query-order", MetricType: core.HotParamConcurrency, ParamIndex: 1, Threshold: 1000}
	if err := ta.LoadRules(nil, nil, vipRule, regionRule); err != nil {
		t.Fatal(err)
	}
	c := mustDial(t, ta.url)
	c.next() // hello
	rules := c.next().(*wire.Rules)
	if len(rules.Params) != 2 || !rules.Params[0].Equal(&vipRule) || !rules.Params[1].Equal(&regionRule) ||
		rules.Version != wire.RulesVersion(nil, nil, vipRule, regionRule) || rules.Version != ta.RulesVersion() {
		t.Fatalf("rules %+v", rules)
	}

	// In one bucket: vip-123 250 times (200 pass, 50 blocked), vip-9 300
	// times (its exception), 20 customers 1 + i times each, and entries
	// with no argument at all.
	var entries []*core.Entry
	call := func(args ...any) {
		e, err := ta.Entry("query-order", args...)
		if err == nil {
			entries = append(entries, e)
		} else if !errors.Is(err, core.ErrHotParam) {
			t.Fatal(err)
		}
	}
	for range 250 {
		call("vip-123", "eu")
	}
	for range 300 {
		call("vip-9", "eu")
	}
	for i := range 20 {
		for range 1 + i {
			call(fmt.Sprintf("c-%02d", i), "us")
		}
	}
	for range 5 {
		call()
	}
	for _, e := range entries {
		e.Exit(nil)
	}
	ta.advance(t, 500*time.Millisecond)
	var got []wire.HotItem
	for _, m := range c.until(func(m wire.Message) bool { b, ok := m.(*wire.Buckets); return ok && len(b.Items) > 0 }) {
		if b, ok := m.(*wire.Buckets); ok && len(b.Items) > 0 {
			if b.Items[0].Pass != 715 || b.Items[0].Block != 50 {
				t.Fatalf("item %+v", b.Items[0])
			}
			got = b.Items[0].Hot
		}
	}
	// The customers' 210 entries and the two regions: "eu" has 550, "us" 210.
	want := []wire.HotItem{
		{Param: 1, Value: "eu", Pass: 500, Block: 50},
		{Param: 0, Value: "vip-9", Pass: 300},
		{Param: 0, Value: "vip-123", Pass: 200, Block: 50},
		{Param: 1, Value: "us", Pass: 210},
		{Param: 0, Value: "c-19", Pass: 20},
		{Param: 0, Value: "c-18", Pass: 19},
		{Param: 0, Value: "c-17", Pass: 18},
		{Param: 0, Value: "c-16", Pass: 17},
		{Param: 0, Value: wire.HotOther, Pass: 210 - 20 - 19 - 18 - 17},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("hot\n got %+v\nwant %+v", got, want)
	}

	// Rules without hot-parameter rules: no hot values.
	once := func() {
		e, err := ta.Entry("query-order", "new", "eu")
		if err != nil {
			t.Fatal(err)
		}
		e.Exit(nil)
	}
	once()
	if err := ta.LoadRules(nil, nil); err != nil {
		t.Fatal(err)
	}
	once()
	ta.advance(t, 500*time.Millisecond)
	for _, m := range c.until(func(m wire.Message) bool { b, ok := m.(*wire.Buckets); return ok && len(b.Items) > 0 }) {
		if b, ok := m.(*wire.Buckets); ok && len(b.Items) > 0 && b.Items[0].Hot != nil {
			t.Fatalf("hot values without a hot-parameter rule: %+v", b.Items[0])
		}
	}
}

// TestEntryWithParamDoesNotAllocate: an entry with one string or integer
// argument already counted costs no allocation, hot values included.
func TestEntryWithParamDoesNotAllocate(t *testing.T) {
	if racetest.Enabled {
		t.Skip("the race detector allocates")
	}
	a, err := New(Options{App: "bench", Instance: "bench-1", ManualShip: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	rule := core.HotParamRule{Resource: "q", MetricType: core.HotParamQPS, Threshold: 1 << 40, DurationInSec: 1}
	if err := a.LoadRules(nil, nil, rule); err != nil {
		t.Fatal(err)
	}
	user, id := "vip-123", 42
	for _, call := range []func() (*core.Entry, error){
		func() (*core.Entry, error) { return a.Entry("q", user) },
		func() (*core.Entry, error) { return a.Entry("q", id) },
		func() (*core.Entry, error) { return a.EntryWithParams("q", core.Params{Attachments: nil, Args: nil}) },
	} {
		e, _ := call()
		e.Exit(nil)
		if n := testing.AllocsPerRun(1000, func() {
			e, err := call()
			if err != nil {
				t.Fatal(err)
			}
			e.Exit(nil)
		}); n != 0 {
			t.Fatalf("%v allocations per Entry+Exit with a parameter", n)
		}
	}
}
