package whatif

import (
	"testing"

	"github.com/sentinel-top/sentinel-top/core"
)

// A QPS limit replayed on a minute of 100 calls a second: 80 a second pass.
func TestFlowLimit(t *testing.T) {
	tr := &Trace{Instance: "a"}
	for s := int64(0); s < 60; s++ {
		tr.Buckets = append(tr.Buckets, Bucket{Start: 1_000_000 + s*1000, Ms: 1000, Pass: 100, Complete: 100})
	}
	limit := core.FlowRule{Resource: "r", Threshold: 80}
	res, err := CompareFlow([]FlowCase{{Trace: tr, Proposed: limit}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Offered != 6000 || res.Current.Passed != 6000 || res.Current.Blocked != 0 {
		t.Fatalf("offered %d, current %+v", res.Offered, res.Current)
	}
	if res.Proposed.Passed != 60*80 || res.Proposed.Blocked != 60*20 {
		t.Fatalf("proposed %+v, want 4800 passed, 1200 blocked", res.Proposed)
	}
	cur := core.FlowRule{Resource: "r", Threshold: 50}
	res, err = CompareFlow([]FlowCase{{Trace: tr, Current: &cur, Proposed: limit}})
	if err != nil || res.Current.Passed != 60*50 {
		t.Fatalf("current limit 50: %+v, %v", res, err)
	}
}
