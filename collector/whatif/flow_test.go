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

// A throttling flow rule's queue waits on the replay's own clock: the
// replay ends, and the calls it queues pass.
func TestFlowReplayQueues(t *testing.T) {
	tr := &Trace{Instance: "a"}
	for i := range 20 {
		tr.Buckets = append(tr.Buckets, Bucket{Start: 1_000_000 + int64(i)*500, Ms: 500, Pass: 60})
	}
	rule := core.FlowRule{Resource: "r", ControlBehavior: core.Throttling, Threshold: 100, MaxQueueingTimeMs: 500}
	res, err := CompareFlow([]FlowCase{{Trace: tr, Current: &rule, Proposed: rule}})
	if err != nil {
		t.Fatal(err)
	}
	// 120 calls a second offered, 100 a second admitted at even spacing,
	// the queue holding at most 500 ms of them: about 1000 of 1200 pass.
	if res.Offered != 1200 || res.Current.Passed < 950 || res.Current.Passed > 1100 || res.Current != res.Proposed {
		t.Errorf("%+v", res)
	}
}
