package core

import (
	"testing"
	"time"
)

// Check+OnPass of each kind of flow rule, at a fresh millisecond per call so
// that windows rotate as in service. The thresholds are high enough that
// every call passes (the pass path does the most work).
func BenchmarkFlowCheck(b *testing.B) {
	for _, bc := range []struct {
		name string
		rule FlowRule
	}{
		{"direct-reject", FlowRule{Threshold: 1e12}},
		{"direct-reject-standalone", FlowRule{Threshold: 1e12, StatIntervalInMs: 3000}},
		{"direct-throttling", FlowRule{ControlBehavior: Throttling, Threshold: 1e9, MaxQueueingTimeMs: 1000}},
		{"warm-up-reject", FlowRule{TokenCalculateStrategy: WarmUp, Threshold: 1e12, WarmUpPeriodSec: 10}},
		{"warm-up-throttling", FlowRule{TokenCalculateStrategy: WarmUp, ControlBehavior: Throttling,
			Threshold: 1e9, WarmUpPeriodSec: 10, MaxQueueingTimeMs: 1000}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			bc.rule.Resource = "bench"
			stat := NewResourceWindow()
			c, err := NewFlowController(bc.rule, stat)
			if err != nil {
				b.Fatal(err)
			}
			now := flowT0
			b.ReportAllocs()
			for b.Loop() {
				now++
				if pass, _ := c.CheckNano(now*int64(time.Millisecond), 1); pass {
					c.OnPass(now, 1)
				}
			}
		})
	}
}

func BenchmarkFlowCheckParallel(b *testing.B) {
	stat := NewResourceWindow()
	c, err := NewFlowController(FlowRule{Resource: "bench", Threshold: 1e12, StatIntervalInMs: 3000}, stat)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		now := flowT0
		for pb.Next() {
			now++
			if pass, _ := c.Check(now, 1); pass {
				c.OnPass(now, 1)
			}
		}
	})
}
