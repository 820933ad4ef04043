package termtext

import (
	"strings"
	"testing"
)

func TestSanitize(t *testing.T) {
	for _, tc := range []struct {
		in    string
		limit int
		want  string
	}{
		{"GET:http://svc/api?x=1", 120, "GET:http://svc/api?x=1"},
		{"风控检查", 120, "风控检查"},
		{"a\x1b[2Jb", 120, `a\x1b[2Jb`},
		{"\x1b]52;c;aGk=\x07", 120, `\x1b]52;c;aGk=\x07`},
		{"admin\u202etxt.exe", 120, `admin\u202etxt.exe`},
		{"zero\u200bwidth", 120, `zero\u200bwidth`},
		{"bad\xffutf8", 120, `bad\xffutf8`},
		{"c1\u009b31m", 120, `c1\x9b31m`},
		{"line\nbreak\ttab", 120, `line\x0abreak\x09tab`},
		{strings.Repeat("x", 5), 5, "xxxxx"},
		{strings.Repeat("é", 6), 4, "éééé…"},
		{strings.Repeat("y", 10) + "\x1b[0m", 4, "yyyy…"},
	} {
		if got := Sanitize(tc.in, tc.limit); got != tc.want {
			t.Errorf("Sanitize(%q, %d) = %q, want %q", tc.in, tc.limit, got, tc.want)
		}
	}
}

func TestSanitizeCleanDoesNotAllocate(t *testing.T) {
	s := "GET:http://member-service/api/user/info"
	if n := testing.AllocsPerRun(100, func() { Sanitize(s, 120) }); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}
