package triage

import (
	"runtime"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/internal/pagepool"
)

// pagedChunks counts the chunks of e's log that hold a page of its pool:
// in the logs, and kept for reuse.
func pagedChunks(e *Engine) (inLogs, kept int) {
	t := &e.traces
	for _, c := range t.queue[t.head:] {
		if c != nil && c.paged && c.log != nil {
			inLogs++
		}
	}
	for _, free := range t.free {
		for _, c := range free {
			if c.paged {
				kept++
			}
		}
	}
	return inLogs, kept
}

// The log's largest chunks are pages of the engine's pool: as it turns
// over at its bound, every page out of the pool is one a chunk holds (in
// a log, or kept for the next), never more than the bound; a log whose
// series are all forgotten gives its pages back, and the next chunks take
// them again rather than new ones.
func TestTrafficLogPagesComeBack(t *testing.T) {
	const bound = 64 << 10
	e := NewFeeder(Config{TraceBytes: bound})
	insts := appFleet(e, "order", 4, t0, "v1", slowRule("db"))
	start := t0
	for range 3000 { // past the bound
		start += 500
		for _, in := range insts {
			e.Bucket(in, bucketAt("db", start, hist(10, 3), 8))
		}
	}
	pool := e.traces.pages
	st := pool.Stats()
	inLogs, kept := pagedChunks(e.Engine)
	if inLogs == 0 || e.traces.dropped == 0 {
		t.Fatalf("%d chunks in pages, %d dropped: the test proves nothing", inLogs, e.traces.dropped)
	}
	if st.Out != inLogs+kept {
		t.Fatalf("%d pages out of the pool, %d held by chunks (%d in logs, %d kept)", st.Out, inLogs+kept, inLogs, kept)
	}
	if st.Out*traceChunkBytes > bound {
		t.Fatalf("%d pages out, past the bound of %d bytes", st.Out, bound)
	}
	if pagepool.OutsideHeap && st.Mapped != bound {
		t.Fatalf("the pool maps %d bytes, want its bound %d", st.Mapped, bound)
	}
	touched := st.Touched
	for _, in := range insts {
		e.Bye(in, start+1000)
	}
	e.ForgetTraffic(start + 2000)
	if used := e.TraceBytes(); used != 0 {
		t.Fatalf("every series forgotten: %d bytes held", used)
	}
	_, kept = pagedChunks(e.Engine)
	if st := pool.Stats(); st.Out != kept {
		t.Fatalf("every log dropped: %d pages out, %d kept for reuse", st.Out, kept)
	}
	// A new fleet's logs take the pages given back.
	pay := appFleet(e, "pay", 4, start+3000, "v1", slowRule("db"))
	for range 3000 {
		start += 500
		for _, in := range pay {
			e.Bucket(in, bucketAt("db", start+3000, hist(10, 3), 8))
		}
	}
	if st := pool.Stats(); st.Touched != touched || st.Out*traceChunkBytes > bound {
		t.Fatalf("a second fleet: %+v, want the %d bytes touched before and at most %d out", st, touched, bound)
	}
}

// The engine's pool goes back to the system once the engine is garbage.
func TestEngineReleasesItsPages(t *testing.T) {
	pool := func() *pagepool.Pool {
		e := NewFeeder(Config{TraceBytes: 64 << 10})
		appFleet(e, "order", 1, t0, "v1", slowRule("db"))
		start := t0
		for range 2000 {
			start += 500
			e.Bucket("order-1", bucketAt("db", start, hist(10, 3), 8))
		}
		if e.traces.pages.Stats().Out == 0 {
			t.Fatal("no page taken: the test proves nothing")
		}
		return e.traces.pages
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !pool.Stats().Released {
		if time.Now().After(deadline) {
			t.Fatalf("the pool was not released: %+v", pool.Stats())
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
}
