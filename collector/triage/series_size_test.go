package triage

import (
	"testing"
	"unsafe"
)

// Every instance x resource has a series: its state stays within 576
// bytes, one allocation size class under 640 (the 50,000-series memory
// test's margin). A field more goes beside the others' padding, or behind
// a pointer only the series that need it allocate.
func TestSeriesStateSize(t *testing.T) {
	if n := unsafe.Sizeof(series{}); n > 576 {
		t.Fatalf("a series' state is %d bytes, over 576", n)
	}
}
