package whatif_test

import (
	"fmt"

	"github.com/sentinel-top/sentinel-top/collector/whatif"
	"github.com/sentinel-top/sentinel-top/core"
)

// Replaying a minute of healthy traffic and a 30 s outage with the rule in
// force and with a longer retry timeout.
func ExampleCompare() {
	tr := &whatif.Trace{Instance: "order-1"}
	for s := int64(0); s < 120; s++ {
		b := whatif.Bucket{Start: s * 1000, Ms: 1000, Pass: 20, Complete: 20, RtMin: 10, RtMax: 40}
		if s >= 60 && s < 90 {
			b.Error = 20
		}
		tr.Buckets = append(tr.Buckets, b)
	}
	current := core.BreakerRule{Resource: "getOrder", Strategy: core.ErrorRatio, Threshold: 0.5,
		MinRequestAmount: 20, StatIntervalMs: 2000, StatSlidingWindowBucketCount: 2, RetryTimeoutMs: 5000}
	proposed := current
	proposed.RetryTimeoutMs = 15000
	res, err := whatif.Compare([]whatif.Case{{Trace: tr, Current: current, Proposed: proposed}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("outages:", res.Outages, "safe:", res.Safe())
	fmt.Println("current:  caught", res.Current.OutagesCaught, "after", res.Current.DetectMs, "ms; probes", res.Current.Probes)
	fmt.Println("proposed: caught", res.Proposed.OutagesCaught, "after", res.Proposed.DetectMs, "ms; probes", res.Proposed.Probes)
	// Output:
	// outages: 1 safe: true
	// current:  caught 1 after [975] ms; probes 6
	// proposed: caught 1 after [975] ms; probes 2
}
