package triage

import (
	"testing"
	"unsafe"
)

// Every instance x resource has a series: its state stays within 704
// bytes (an allocation size class; 672 with self-inflicted's histogram
// and inert-rule's bad-call windows, 576 before them). A field more goes
// beside the others' padding, or behind a pointer only the series that
// need it allocate; docs/BENCHMARKS.md has where a series' bytes go.
func TestSeriesStateSize(t *testing.T) {
	if n := unsafe.Sizeof(series{}); n > 704 {
		t.Fatalf("a series' state is %d bytes, over 704", n)
	}
}
