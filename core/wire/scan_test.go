package wire

import (
	"fmt"
	"strconv"
	"testing"
	"unsafe"
)

// TestSmallIntAgreesWithScanNumber: where the fast path for counts reads
// a number, it reads what scanNumber does; it declines everything else.
func TestSmallIntAgreesWithScanNumber(t *testing.T) {
	for _, in := range []string{"0", "7,", "42}", "01", "00", "-1", "1.5", "1e3", "2E1", "12]", "999999999999999999",
		"1234567890123456789", "9223372036854775807", "99999999999999999999", "", "x", "0.0", "5 ", "18446744073709551616"} {
		next, v, ok := smallInt([]byte(in), 0)
		if !ok {
			if next != 0 || v != 0 {
				t.Errorf("%q: declined with %d, %d", in, next, v)
			}
			continue
		}
		wantNext, want, isInt, err := scanNumber([]byte(in), 0)
		if err != nil || !isInt || next != wantNext || v != want {
			t.Errorf("%q: fast path %d at %d, scanNumber %d at %d (int %v, %v)", in, v, next, want, wantNext, isInt, err)
		}
		if n, err := strconv.ParseInt(in[:next], 10, 64); err != nil || n != v {
			t.Errorf("%q: %d, strconv %d (%v)", in, v, n, err)
		}
	}
	for _, declined := range []string{"01", "-1", "1.5", "1e3", "1234567890123456789", "", "x"} {
		if _, _, ok := smallInt([]byte(declined), 0); ok {
			t.Errorf("%q read by the fast path", declined)
		}
	}
}

// TestInternAtStaysBounded: names read by item index are the names given,
// shared frame after frame, and never outlive the bounded set they are
// interned in.
func TestInternAtStaysBounded(t *testing.T) {
	var names interned
	const n = 8
	first := names.internAt([]byte("GET:/a"), n, 0)
	if again := names.internAt([]byte("GET:/a"), n, 0); again != "GET:/a" || unsafe.StringData(again) != unsafe.StringData(first) {
		t.Fatalf("the same name at the same index read as %q, not shared", again)
	}
	for f := range 50 {
		for idx := range 12 {
			name := fmt.Sprintf("r%d-%d", f%3, idx*f%7)
			if got := names.internAt([]byte(name), n, idx); got != name {
				t.Fatalf("frame %d item %d: %q read as %q", f, idx, name, got)
			}
			if len(names.at) > n || len(names.m) > n {
				t.Fatalf("%d names by index, %d interned: past the bound %d", len(names.at), len(names.m), n)
			}
			for _, s := range names.at {
				if _, ok := names.m[s]; !ok && s != "" {
					t.Fatalf("%q held by index, no longer interned", s)
				}
			}
		}
	}
}
