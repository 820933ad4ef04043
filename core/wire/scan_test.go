package wire

import (
	"strconv"
	"testing"
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
