package termtext

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Sanitize returns s safe to print on one terminal line, at most limit
// runes long (ending in "…" when cut): bytes that are not UTF-8 and control
// characters (C0, DEL, C1, so every escape sequence loses its ESC) become
// \xNN; everything else that is not printable — bidi overrides and isolates,
// zero-width and other format characters, line and paragraph separators,
// non-ASCII spaces, private-use and unassigned code points — becomes
// \uNNNN. A clean string is returned as it is, without allocating.
func Sanitize(s string, limit int) string {
	if len(s) <= limit && isPlainASCII(s) {
		return s
	}
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			clean = false
			break
		}
	}
	if clean && utf8.RuneCountInString(s) <= limit {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	n := 0
	for i := 0; i < len(s); n++ {
		if n == limit {
			b.WriteString("…")
			break
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			fmt.Fprintf(&b, `\x%02x`, r)
		case !unicode.IsPrint(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
		i += size
	}
	return b.String()
}

func isPlainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}
