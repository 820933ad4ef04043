package report

import (
	"strings"

	"github.com/sentinel-top/sentinel-top/internal/termtext"
)

// maxNameRunes bounds how much of one input string a report prints, and
// maxWarningRunes how much of a warning line (which names up to 3
// instances).
const (
	maxNameRunes    = 120
	maxWarningRunes = 600
)

// Sanitize makes an untrusted string safe to print on a terminal, on one
// line, cut to 120 runes (see termtext.Sanitize for the rules).
func Sanitize(s string) string { return termtext.Sanitize(s, maxNameRunes) }

// sanitize is Sanitize with its own length limit.
func sanitize(s string, limit int) string { return termtext.Sanitize(s, limit) }

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
func codeSpan(s string, limit int) string {
	s = sanitize(s, limit)
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
