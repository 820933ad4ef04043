package triage

import "testing"

// A traffic log at its bound turns over through the chunks it evicts: a
// bucket taken then allocates nothing, and the log holds no more than its
// bound.
func TestTrafficLogTurnsOverWithoutAllocating(t *testing.T) {
	e := NewFeeder(Config{TraceBytes: 16 << 10})
	appFleet(e, "order", 3, t0, "v1", slowRule("db"))
	start := t0
	feed := func() {
		start += 500
		for _, in := range []string{"order-1", "order-2", "order-3"} {
			e.Bucket(in, bucketAt("db", start, hist(10, 3), 8))
		}
	}
	for range 5000 { // well past the bound
		feed()
	}
	// 600 buckets a run: several chunks' worth, so that one chunk
	// allocated a run shows (AllocsPerRun rounds down).
	if allocs := testing.AllocsPerRun(20, func() {
		for range 200 {
			feed()
		}
	}); allocs != 0 {
		t.Fatalf("%v allocations per 600 buckets at the bound", allocs)
	}
	if used := e.TraceBytes(); used > 16<<10 || used < 8<<10 {
		t.Fatalf("the log holds %d bytes, bound %d", used, 16<<10)
	}
	if e.traces.dropped == 0 {
		t.Fatal("nothing was evicted: the test proves nothing")
	}
}
