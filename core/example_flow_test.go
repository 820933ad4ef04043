package core_test

import (
	"fmt"

	"github.com/sentinel-top/sentinel-top/core"
)

// Two flow controllers on one resource's statistic: a reject rule of 2 per
// second, and a throttling rule that spaces entries 250 ms apart and queues
// them for up to 600 ms. The caller records each outcome in the window and
// reports passes with OnPass, as core.Guard does.
func ExampleFlowController() {
	stat := core.NewResourceWindow()
	reject, err := core.NewFlowController(core.FlowRule{Resource: "api", Threshold: 2}, stat)
	if err != nil {
		panic(err)
	}
	const t0 = 1764460800000 // Unix ms
	for i := 1; i <= 3; i++ {
		pass, _ := reject.Check(t0, 1)
		if pass {
			stat.Current(t0).AddPass(1)
			reject.OnPass(t0, 1)
		}
		fmt.Printf("reject entry %d: pass=%v\n", i, pass)
	}
	// One second later the first two passes have left the window.
	pass, _ := reject.Check(t0+1000, 1)
	fmt.Println("reject one second later: pass =", pass)

	throttle, err := core.NewFlowController(core.FlowRule{
		Resource: "api", ControlBehavior: core.Throttling, Threshold: 4, MaxQueueingTimeMs: 600,
	}, nil) // direct throttling reads no statistic
	if err != nil {
		panic(err)
	}
	for i := 1; i <= 4; i++ {
		pass, wait := throttle.Check(t0, 1)
		fmt.Printf("throttle entry %d: pass=%v wait=%v\n", i, pass, wait)
	}
	// Output:
	// reject entry 1: pass=true
	// reject entry 2: pass=true
	// reject entry 3: pass=false
	// reject one second later: pass = true
	// throttle entry 1: pass=true wait=0s
	// throttle entry 2: pass=true wait=250ms
	// throttle entry 3: pass=true wait=500ms
	// throttle entry 4: pass=false wait=0s
}
