package hotvalues

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// TestTrackerBounds: past TrackedValues distinct values, entries are
// summed in (other); values of every kind core tracks are keyed by value,
// and long ones cut.
func TestTrackerBounds(t *testing.T) {
	tr := New([]core.HotParamRule{{Resource: "r", ParamIndex: 0}, {Resource: "r", ParamIndex: 0, Threshold: 5}}, 500)
	if len(tr.params) != 1 {
		t.Fatalf("two rules on one parameter count it %d times", len(tr.params))
	}
	for i := range TrackedValues + 100 {
		tr.Record(1000, &core.Params{Args: []any{i}}, true, 1)
	}
	if len(tr.counts) != TrackedValues || tr.other.pass != 100 {
		t.Fatalf("%d values tracked and %d entries in (other), want %d and 100", len(tr.counts), tr.other.pass, TrackedValues)
	}
	tr.Record(1200, &core.Params{Args: []any{7}}, false, 1)
	hot := tr.Hot(1000)
	if len(hot) != wire.MaxHotValues+1 || hot[0] != (wire.HotItem{Value: "7", Pass: 1, Block: 1}) ||
		hot[1].Value != "0" || hot[wire.MaxHotValues] != (wire.HotItem{Value: wire.HotOther, Pass: TrackedValues + 100 - wire.MaxHotValues}) {
		t.Fatalf("hot %+v", hot)
	}
	if err := wire.Validate(&wire.Buckets{Header: wire.Header{Ts: 1, Instance: "i"}, BucketMs: 500,
		Items: []wire.BucketItem{{Resource: "r", Start: 1000, Hot: hot}}}, wire.Limits{}); err != nil {
		t.Fatal(err)
	}
	type named string
	long := strings.Repeat("x", 300)
	for _, v := range []any{"a", named("a"), int8(-3), uint(3), 2.5, float32(2.5), true, long, nil, []int{1}} {
		tr.Record(1500, &core.Params{Args: []any{v}}, true, 1)
	}
	var values []string
	for _, h := range tr.Hot(1500) {
		values = append(values, fmt.Sprintf("%q:%d", h.Value, h.Pass))
	}
	want := []string{`"2.5":2`, `"a":2`, `"-3":1`, `"3":1`, `"true":1`, `"` + long[:wire.MaxHotValueBytes] + `":1`}
	if !reflect.DeepEqual(values, want) {
		t.Fatalf("values %v, want %v", values, want)
	}
	if tr.Hot(2000) != nil || tr.Hot(1000) == nil {
		t.Fatal("a bucket with no entries has hot values, or a closed one lost them")
	}
}

// TestTrackerKeysAndBatches: a rule reading an attachment names its key,
// and a batch counts its size.
func TestTrackerKeysAndBatches(t *testing.T) {
	tr := New([]core.HotParamRule{{Resource: "r", ParamKey: "uid"}, {Resource: "r", ParamIndex: 1}}, 500)
	if keys := tr.Keys(); !reflect.DeepEqual(keys, []string{"uid"}) {
		t.Fatalf("keys %v", keys)
	}
	tr.Record(0, &core.Params{Args: []any{"a", "b"}, Attachments: map[string]any{"uid": "u-1"}}, true, 3)
	tr.Record(10, &core.Params{Args: []any{"a"}}, false, 2) // no attachment, no argument 1: the key's rule reads argument 0
	got := tr.Hot(0)
	want := []wire.HotItem{{Value: "u-1", Pass: 3}, {Param: 1, Value: "b", Pass: 3}, {Value: "a", Block: 2}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("hot %+v, want %+v", got, want)
	}
}
