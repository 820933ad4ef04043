// Package pagepool hands out pages of one size from memory the pool maps
// itself, outside the Go heap where the system allows (Linux), and takes
// them back for the next.
//
// Why: the collector's traffic log for plans (collector/triage) grows by
// a 4 KiB chunk at a time up to its budget, then turns over, and holds no
// pointers. On the Go heap each new chunk was a new object: memory the
// runtime took from the kernel 4 KiB at a time, and garbage once evicted
// past the few kept for reuse. From a pool the pages are the same memory
// over and over, the kernel is asked for them 2 MiB at a time where it
// gives transparent huge pages on request (madvise), and the GC never
// sees them. BenchmarkIngestFleet (collector) went from 406 bytes
// allocated a frame to 10 (docs/BENCHMARKS.md, "The traffic log's pages
// outside the heap").
//
// A pool's memory counts against no Go memory limit: whoever sets one
// subtracts what pools may hold (OutsideHeap). Pages are handed out while
// the pool lives; Release returns the memory to the system, after which
// no page of it may be touched.
package pagepool
