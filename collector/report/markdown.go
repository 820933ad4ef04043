package report

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// Markdown writes the report as a postmortem-ready Markdown document: a
// header with the source, the time range in UTC and the counts, then one
// section per finding with its summary, evidence (numbers, rules, a state
// timeline per instance) and advice.
func Markdown(w io.Writer, r *Report) error {
	bw := bufio.NewWriter(w)
	bw.WriteString("# sentinel-top report\n\n")
	for _, p := range headerParts(r) {
		mdPart(bw, p)
	}
	secs := sections(r)
	if len(secs) == 0 {
		bw.WriteString(noFindings(r))
	}
	for i, s := range secs {
		f := s.f
		fmt.Fprintf(bw, "\n## %d. %s %s: %s on %s\n\n", i+1, severityWords(f), f.Kind,
			mdSegs([]seg{input(f.App)}), mdSegs([]seg{input(f.Resource)}))
		bw.WriteString(escapeMarkdown(f.Summary) + "\n\n")
		inList := false
		for _, p := range s.parts {
			if p.block != nil {
				if inList {
					bw.WriteString("\n")
				}
				mdBlock(bw, p.block)
				inList = false
				continue
			}
			mdPart(bw, p)
			inList = true
		}
		if inList {
			bw.WriteString("\n")
		}
		bw.WriteString("**Advice:** " + escapeMarkdown(f.Advice) + "\n")
	}
	return bw.Flush()
}

func mdPart(w *bufio.Writer, p part) {
	fmt.Fprintf(w, "- **%s:** %s\n", escapeMarkdown(p.label), mdSegs(p.value))
}

func mdSegs(segs []seg) string {
	var b strings.Builder
	for _, s := range segs {
		if s.input {
			b.WriteString(codeSpan(s.text, s.runes()))
		} else {
			b.WriteString(escapeMarkdown(s.text))
		}
	}
	return b.String()
}

// mdBlock writes sanitized lines as a fenced code block whose fence is
// longer than any run of backticks in them, so no line can close it.
func mdBlock(w *bufio.Writer, lines []string) {
	n := 2
	for _, l := range lines {
		n = max(n, longestRun(l, '`'))
	}
	fence := strings.Repeat("`", n+1)
	w.WriteString(fence + "text\n")
	for _, l := range lines {
		w.WriteString(l + "\n")
	}
	w.WriteString(fence + "\n\n")
}
