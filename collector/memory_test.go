package collector

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"testing"

	"github.com/sentinel-top/sentinel-top/collector/triage"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/internal/fleetbench"
)

// TestMemoryFiftyThousandSeries measures the heap of a collector holding
// 50,000 instance x resource series (500 instances x 100 resources, in 10
// apps, every resource under a slow-ratio breaker with a 10 s window, so
// triage holds its healthy-traffic buckets) with two minutes of data each.
// It runs only with SENTINEL_TOP_SCALE set (.ci/run sets it, without
// -race); docs/BENCHMARKS.md has the figure and where it goes. It holds
// 3.5 KB a series (measured 3.09 KB when the bound was first set, 3.25 KB
// with the traffic log's state for plans, 3.44 KB with self-inflicted's
// histogram of every completion and inert-rule's windows of bad calls;
// the instance's seconds, triage's state and packed held healthy
// buckets, the rules an app's instances share, the app rings shared by 50
// instances); the scale goal is 4 KB.
func TestMemoryFiftyThousandSeries(t *testing.T) {
	if os.Getenv("SENTINEL_TOP_SCALE") == "" {
		t.Skip("set SENTINEL_TOP_SCALE=1 to measure memory at 50,000 series")
	}
	heap := measureMemory(t, 500, 100, 240, -1)
	if perSeries := float64(heap) / 50000; perSeries > 3.5*1024 {
		t.Fatalf("%.2f KB per series, over 3.5 KB", perSeries/1024)
	}
}

// TestMemoryEstimateCountsTheTrafficLog: with the traffic log for plans
// kept (64 MB of it at most here), the budget's estimate still tells the
// heap within a quarter (measureMemory checks it).
func TestMemoryEstimateCountsTheTrafficLog(t *testing.T) {
	if os.Getenv("SENTINEL_TOP_SCALE") == "" {
		t.Skip("set SENTINEL_TOP_SCALE=1 to measure memory at 50,000 series")
	}
	heap := measureMemory(t, 500, 100, 240, 64<<20)
	t.Logf("%.2f KB per series with the traffic log", float64(heap)/50000/1024)
}

// TestMemoryTwoHundredThousandSeries is the scale goal's fleet: 10,000
// instances x 20 resources in 10 apps (as bench runs them), every resource
// under a slow-ratio breaker with a 10 s window, 30 s of data each, in at
// most 1 GB of heap. It takes a minute and 2 GB: only with
// SENTINEL_TOP_SCALE=full.
func TestMemoryTwoHundredThousandSeries(t *testing.T) {
	if os.Getenv("SENTINEL_TOP_SCALE") != "full" {
		t.Skip("set SENTINEL_TOP_SCALE=full to measure memory at 200,000 series")
	}
	if heap := measureMemory(t, 10000, 20, 60, -1); heap > 1<<30 {
		t.Fatalf("%d MB of heap for 200,000 series, over 1 GB", heap>>20)
	}
}

// measureMemory fills a collector with instances x resources series, in
// 10 apps, with buckets 500 ms buckets of each, and returns the heap it
// holds; it checks the memory budget's estimate against it.
func measureMemory(t *testing.T, instances, resources int, buckets int64, traceBytes int64) uint64 {
	if os.Getenv("SENTINEL_TOP_HEAP_PROFILE") != "" {
		runtime.MemProfileRate = 1 // every allocation, for an exact account by owner
	}
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	// The fleet model's cost: triage's traffic log for replaying plans has
	// a bound of its own (Triage.TraceBytes, an eighth of MaxMemory), about
	// 25 bytes a bucket a series up to it, and is charged to the budget
	// too (TestMemoryEstimateCountsTheTrafficLog).
	c := New(Options{MaxMemory: 4 << 30, Triage: triage.Config{TraceBytes: traceBytes}})
	names := fleetbench.Names(resources)
	var rules []core.BreakerRule
	for _, n := range names {
		rules = append(rules, core.BreakerRule{Resource: n, Strategy: core.SlowRequestRatio, RetryTimeoutMs: 10000,
			StatIntervalMs: 10000, StatSlidingWindowBucketCount: 10, MaxAllowedRtMs: 200, Threshold: 0.5, MinRequestAmount: 20})
	}
	for i := 0; i < instances; i++ {
		name := fmt.Sprintf("gw-%d", i)
		benchHello(c, name, fmt.Sprintf("app-%d", i%10))
		c.Ingest("bench", &wire.Rules{Header: wire.Header{Ts: t0ms, Instance: name}, Version: "v2", Breakers: rules})
	}
	frame := fleetbench.Frame("", names, 0)
	for k := int64(0); k < buckets; k++ {
		for i := 0; i < instances; i++ {
			frame.Instance, frame.Ts = fmt.Sprintf("gw-%d", i), t0ms+k*500+500
			for n := range frame.Items {
				frame.Items[n].Start = t0ms + k*500
			}
			c.Ingest("bench", frame)
		}
	}
	c.Publish()
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	heap := after.HeapInuse - before.HeapInuse
	if path := os.Getenv("SENTINEL_TOP_HEAP_PROFILE"); path != "" { // where the bytes go
		if f, err := os.Create(path); err == nil {
			pprof.WriteHeapProfile(f)
			f.Close()
		}
	}
	series := instances * resources
	est := c.Snapshot().MemoryUsed
	t.Logf("%d series: heap in use %.0f MB (%.2f KB per series); the memory budget's estimate %.0f MB",
		series, float64(heap)/(1<<20), float64(heap)/float64(series)/1024, float64(est)/(1<<20))
	// The budget is only as good as its estimate: within a quarter of
	// the heap measured.
	if r := float64(est) / float64(heap); r < 0.75 || r > 1.25 {
		t.Fatalf("the budget's estimate %d MB is %.2fx the heap measured", est>>20, r)
	}
	runtime.KeepAlive(c)
	return heap
}
