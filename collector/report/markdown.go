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
// timeline per instance) and advice, then one per rule plan, numbered, with
// its change, its verdict and its what-if replay as a table.
func Markdown(w io.Writer, r *Report) error {
	bw := bufio.NewWriter(w)
	bw.WriteString("# sentinel-top report\n\n")
	for _, p := range headerParts(r) {
		mdPart(bw, p)
	}
	secs := sections(r)
	if len(secs) == 0 {
		bw.WriteString(noFindings(r))
		mdAccounts(bw, r)
	}
	for i, s := range secs {
		f := s.f
		fmt.Fprintf(bw, "\n## %d. %s %s: %s on %s\n\n", i+1, severityWords(f), f.Kind,
			mdSegs([]seg{input(f.App)}), mdSegs([]seg{input(f.Resource)}))
		bw.WriteString(escapeMarkdown(f.Summary) + "\n\n")
		if mdParts(bw, s.parts) {
			bw.WriteString("\n")
		}
		bw.WriteString("**Advice:** " + escapeMarkdown(f.Advice) + "\n")
	}
	plans := planSections(r)
	if len(plans) > 0 {
		bw.WriteString("\n## Plans\n")
	}
	for i, s := range plans {
		p := s.p
		fmt.Fprintf(bw, "\n### Plan %d. %s rule: %s on %s\n\n", i+1, escapeMarkdown(p.Rule),
			mdSegs([]seg{input(p.App)}), mdSegs([]seg{input(p.Resource)}))
		mdParts(bw, s.parts)
	}
	return bw.Flush()
}

// mdParts writes labelled values as a list, blocks and tables between,
// each apart from the next by a blank line, and reports whether the last
// one wants a blank line before what follows.
func mdParts(w *bufio.Writer, parts []part) (open bool) {
	const (
		none = iota
		list
		tbl
	)
	last := none // what the last line written belongs to
	for _, p := range parts {
		switch {
		case p.block != nil:
			if last != none {
				w.WriteString("\n")
			}
			mdBlock(w, p.block) // ends with a blank line
			last = none
		case p.table != nil:
			if last != none {
				w.WriteString("\n")
			}
			mdTable(w, p.table)
			last = tbl
		default:
			if last == tbl {
				w.WriteString("\n")
			}
			mdPart(w, p)
			last = list
		}
	}
	return last != none
}

// mdTable writes a table of trusted cells, escaped, its numbers aligned
// right.
func mdTable(w *bufio.Writer, t *table) {
	row := func(cells []string) {
		for _, c := range cells {
			w.WriteString("| " + escapeMarkdown(c) + " ")
		}
		w.WriteString("|\n")
	}
	row(t.head)
	for i := range t.head {
		if i == 0 {
			w.WriteString("|---")
		} else {
			w.WriteString("|---:")
		}
	}
	w.WriteString("|\n")
	for _, r := range t.rows {
		row(r)
	}
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

// mdAccounts writes what happened per resource, for a report with no
// findings: a section each.
func mdAccounts(w *bufio.Writer, r *Report) {
	list, quiet, more := r.accounts()
	w.WriteString("\n" + escapeMarkdown(r.accountHead(quiet)) + "\n")
	for _, a := range list {
		fmt.Fprintf(w, "\n## %s on %s\n\n", mdSegs([]seg{input(a.seen.App)}), mdSegs([]seg{input(a.seen.Resource)}))
		for _, p := range accountParts(a) {
			mdPart(w, p)
		}
	}
	if tail := accountTail(quiet, more, len(list)); tail != "" {
		w.WriteString("\n" + escapeMarkdown(tail) + "\n")
	}
}
