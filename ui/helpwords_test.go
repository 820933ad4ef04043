package ui

import (
	"strings"
	"testing"
)

// TestHelpExplainsBreakersWords: the help's GLYPHS section names every
// word the BREAKERS column can show for a row without a breaker, and says
// how a sort whose column is not shown is told.
func TestHelpExplainsBreakersWords(t *testing.T) {
	m := newTestModel(goldenSource(), 120, 200)
	press(m, "?")
	help := screenText(m)
	glyphs := help[strings.Index(help, "GLYPHS"):]
	for _, flow := range []bool{false, true} {
		for _, param := range []bool{false, true} {
			for _, unknown := range []bool{false, true} {
				w := ruleWord(flow, param, unknown)
				// each word explained: followed by its meaning, not only listed.
				if !strings.Contains(glyphs, " "+w+",") && !strings.Contains(glyphs, " "+w+":") &&
					!strings.Contains(glyphs, " "+w+" (") && !strings.Contains(glyphs, " "+w+"\n") {
					t.Errorf("the help's GLYPHS do not explain %q:\n%s", w, glyphs)
				}
			}
		}
	}
	if !strings.Contains(glyphs, "hot-parameter") || !strings.Contains(glyphs, "p99 ▼") {
		t.Errorf("the help's GLYPHS say nothing of hot-parameter rules or of a sort not shown:\n%s", glyphs)
	}
}
