package ui

import (
	"fmt"
	"testing"

	"github.com/charmbracelet/x/exp/golden"
)

// goldenScreens are the screens kept as text in testdata; each is built
// from a fresh model of the given size. Update with: go test ./ui -update
var goldenScreens = []struct {
	name  string
	setup func(m *Model, src *staticSource)
}{
	{"main", func(*Model, *staticSource) {}},
	{"detail", func(m *Model, _ *staticSource) { press(m, "<enter>") }},
	{"help", func(m *Model, _ *staticSource) { press(m, "?") }},
	{"filter", func(m *Model, _ *staticSource) { press(m, "/pay") }},
	{"paused", func(m *Model, src *staticSource) {
		src.set(replaySnapshot(true))
		send(m, tickMsg{})
	}},
	{"frozen", func(m *Model, src *staticSource) {
		press(m, " ")
		later := testSnapshot()
		later.At += 12_000
		later.Seq++
		later.Rows = later.Rows[:1]
		src.set(later)
		send(m, tickMsg{})
	}},
	{"alerts", func(m *Model, _ *staticSource) { press(m, "a<down>") }},
}

func goldenSource() *staticSource {
	src := newStaticSource(testSnapshot())
	d := testDetail()
	src.details[d.App+"\x00"+d.Resource] = d
	return src
}

func TestGolden(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		for _, g := range goldenScreens {
			t.Run(fmt.Sprintf("%s_%dx%d", g.name, size[0], size[1]), func(t *testing.T) {
				src := goldenSource()
				m := newTestModel(src, size[0], size[1])
				g.setup(m, src)
				frame := m.View()
				checkFrame(t, frame, size[0], size[1])
				golden.RequireEqual(t, []byte(screenText(m)))
			})
		}
	}
}

// TestGoldenSmall covers the reduced layout at the minimum size and the
// message below it.
func TestGoldenSmall(t *testing.T) {
	for _, size := range [][2]int{{MinWidth, MinHeight}, {MinWidth - 1, MinHeight}, {50, 10}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			m := newTestModel(goldenSource(), size[0], size[1])
			frame := m.View()
			checkFrame(t, frame, size[0], size[1])
			golden.RequireEqual(t, []byte(screenText(m)))
		})
	}
}
