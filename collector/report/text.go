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
	}
	for i, s := range secs {
		f := s.f
		fmt.Fprintf(bw, "\n%d. %s %s  app %s  resource %s\n", i+1, severityWords(f), f.Kind,
			textSegs([]seg{input(f.App)}), textSegs([]seg{input(f.Resource)}))
		bw.WriteString("   " + sanitize(f.Summary, maxBlockRunes) + "\n")
		for _, p := range s.parts {
			if p.block != nil {
				for _, l := range p.block {
					bw.WriteString("       " + l + "\n")
				}
				continue
			}
			textPart(bw, "   ", p)
		}
		textPart(bw, "   ", part{label: "Advice", value: []seg{{text: f.Advice}}})
	}
	return bw.Flush()
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
