package report

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxNameRunes bounds how much of one input string a report prints.
const maxNameRunes = 120

// Sanitize makes an untrusted string safe to print on a terminal, on one
// line: bytes that are not UTF-8 become \xNN; control characters (C0, DEL,
// C1, so every escape sequence loses its ESC) become \xNN; everything else
// that is not printable — bidi overrides and isolates, zero-width and other
// format characters, line and paragraph separators, non-ASCII spaces,
// private-use and unassigned code points — becomes \uNNNN. Strings longer
// than 120 runes are cut, ending in "…".
func Sanitize(s string) string { return sanitize(s, maxNameRunes) }

// sanitize is Sanitize with its own length limit.
func sanitize(s string, limit int) string {
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

// markdownSpecial are the characters that can start inline Markdown (or
// HTML) constructs; escaping them with a backslash makes text literal.
const markdownSpecial = "\\`*_[]<>&|~#!"

// escapeMarkdown escapes trusted prose (summaries, advice) for inline
// Markdown.
func escapeMarkdown(s string) string {
	if !strings.ContainsAny(s, markdownSpecial) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(markdownSpecial, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// codeSpan prints an untrusted string as a Markdown code span: sanitized,
// delimited by more backticks than it contains in a row, padded when it
// starts or ends with a backtick or a space. Code spans are literal: no
// emphasis, links, autolinks or HTML.
func codeSpan(s string) string {
	s = Sanitize(s)
	if s == "" {
		return "*(empty)*"
	}
	fence := strings.Repeat("`", longestRun(s, '`')+1)
	pad := ""
	if s[0] == '`' || s[len(s)-1] == '`' || s[0] == ' ' || s[len(s)-1] == ' ' {
		pad = " "
	}
	return fence + pad + s + pad + fence
}

// longestRun is the length of the longest run of c in s.
func longestRun(s string, c byte) int {
	best, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			run++
			best = max(best, run)
		} else {
			run = 0
		}
	}
	return best
}
