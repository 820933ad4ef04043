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

// What a bucket touches lies in a series' first nine lines of 64 bytes
// (the 704-byte size class starts its objects on a line), the lines
// Series.Touch reads a word of each; what only transitions, findings and
// advice read comes after them.
func TestSeriesBucketFieldsFirst(t *testing.T) {
	var s series
	const lines = 9 * 64
	for name, end := range map[string]uintptr{
		"lastStart": unsafe.Offsetof(s.lastStart) + unsafe.Sizeof(s.lastStart),
		"offered":   unsafe.Offsetof(s.offered) + unsafe.Sizeof(s.offered),
		"lowSecs":   unsafe.Offsetof(s.lowSecs) + unsafe.Sizeof(s.lowSecs),
		"logIdx":    unsafe.Offsetof(s.logIdx) + unsafe.Sizeof(s.logIdx),
		"up":        unsafe.Offsetof(s.up) + unsafe.Sizeof(s.up),
		"win":       unsafe.Offsetof(s.win) + unsafe.Sizeof(s.win),
		"rw":        unsafe.Offsetof(s.rw) + unsafe.Sizeof(s.rw),
		"si":        unsafe.Offsetof(s.si) + unsafe.Sizeof(s.si),
		"hz":        unsafe.Offsetof(s.hz) + unsafe.Sizeof(s.hz),
	} {
		if end > lines {
			t.Errorf("%s ends at byte %d of a series, past its first nine lines (%d)", name, end, lines)
		}
	}
	// Touch reads a word of each of those lines.
	z := unsafe.Offsetof(s.hz)
	read := map[uintptr]bool{}
	for _, off := range []uintptr{
		unsafe.Offsetof(s.lastStart), unsafe.Offsetof(s.offered), unsafe.Offsetof(s.logIdx),
		unsafe.Offsetof(s.up) + unsafe.Offsetof(s.up.passed), unsafe.Offsetof(s.win), unsafe.Offsetof(s.si) + unsafe.Offsetof(s.si.complete),
		z + unsafe.Offsetof(s.hz.held) + unsafe.Offsetof(s.hz.held.n), z + unsafe.Offsetof(s.hz.exFrom),
		z + unsafe.Offsetof(s.hz.hist) + 4*8, z + unsafe.Offsetof(s.hz.hist) + 13*8,
	} {
		read[off/64] = true
	}
	for line := uintptr(0); line < lines/64; line++ {
		if !read[line] {
			t.Errorf("Touch reads nothing of line %d", line)
		}
	}
}
