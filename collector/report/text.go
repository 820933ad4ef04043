package report

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// textLabelWidth aligns the values of a section.
const textLabelWidth = 24

// Text writes the report as plain text for a terminal: the same content as
// Markdown, without markup or colour, every input string sanitized.
func Text(w io.Writer, r *Report) error {
	bw := bufio.NewWriter(w)
	bw.WriteString("sentinel-top report\n")
	for _, p := range headerParts(r) {
		textPart(bw, "  ", p)
	}
	secs := sections(r)
	if len(secs) == 0 {
		bw.WriteString(noFindings(r))
		textAccounts(bw, r)
	}
	for i, s := range secs {
		f := s.f
		fmt.Fprintf(bw, "\n%d. %s %s  app %s  resource %s\n", i+1, severityWords(f), f.Kind,
			textSegs([]seg{input(f.App)}), textSegs([]seg{input(f.Resource)}))
		bw.WriteString("   " + sanitize(f.Summary, maxBlockRunes) + "\n")
		textParts(bw, s.parts)
		textPart(bw, "   ", part{label: "Advice", value: []seg{{text: f.Advice}}})
	}
	plans := planSections(r)
	if len(plans) > 0 {
		bw.WriteString("\nPlans\n")
	}
	for i, s := range plans {
		p := s.p
		fmt.Fprintf(bw, "\nPlan %d. %s rule  app %s  resource %s\n", i+1, sanitize(p.Rule, maxNameRunes),
			textSegs([]seg{input(p.App)}), textSegs([]seg{input(p.Resource)}))
		textParts(bw, s.parts)
	}
	return bw.Flush()
}

// textParts writes labelled values, and blocks and tables indented under
// them.
func textParts(w *bufio.Writer, parts []part) {
	for _, p := range parts {
		lines := p.block
		if p.table != nil {
			lines = textTable(p.table)
		}
		if lines == nil {
			textPart(w, "   ", p)
			continue
		}
		for _, l := range lines {
			w.WriteString("       " + l + "\n")
		}
	}
}

// textTable lays a table of trusted cells out in columns, the labels
// aligned left and the numbers right.
func textTable(t *table) []string {
	widths := make([]int, len(t.head))
	for _, r := range append([][]string{t.head}, t.rows...) {
		for i, c := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	var lines []string
	for _, r := range append([][]string{t.head}, t.rows...) {
		var b strings.Builder
		for i, c := range r {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			if i == 0 {
				b.WriteString(c + pad)
			} else {
				b.WriteString("   " + pad + c)
			}
		}
		lines = append(lines, sanitize(b.String(), maxBlockRunes))
	}
	return lines
}

func textPart(w *bufio.Writer, indent string, p part) {
	label := p.label + ":"
	pad := max(textLabelWidth-utf8.RuneCountInString(label), 1)
	w.WriteString(indent + label + strings.Repeat(" ", pad) + textSegs(p.value) + "\n")
}

func textSegs(segs []seg) string {
	var b strings.Builder
	for _, s := range segs {
		switch {
		case !s.input:
			b.WriteString(sanitize(s.text, maxBlockRunes))
		case s.text == "":
			b.WriteString("(empty)")
		default:
			b.WriteString(sanitize(s.text, s.runes()))
		}
	}
	return b.String()
}

// textAccounts writes what happened per resource, for a report with no
// findings.
func textAccounts(w *bufio.Writer, r *Report) {
	list, quiet, more := r.accounts()
	w.WriteString("\n" + r.accountHead(quiet) + "\n")
	for _, a := range list {
		fmt.Fprintf(w, "\n%s / %s\n", textSegs([]seg{input(a.seen.App)}), textSegs([]seg{input(a.seen.Resource)}))
		for _, p := range accountParts(a) {
			textPart(w, "   ", p)
		}
	}
	if tail := accountTail(quiet, more, len(list)); tail != "" {
		w.WriteString("\n" + tail + "\n")
	}
}
