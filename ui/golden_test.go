package ui

import (
	"fmt"
	"testing"

	"github.com/charmbracelet/x/exp/golden"

	"github.com/sentinel-top/sentinel-top/fixtures"
)

// The goldens are the screens as text (escape sequences stripped, no
// colour) in testdata/<test>/<case>.golden. Update them with
//
//	go test ./ui -run Golden -update

// goldenFixture is the incident the main goldens show: two instances whose
// breakers flap against a slow database, two minutes in.
const (
	goldenFixture   = "sawtooth-db-slow"
	goldenOffsetMs  = 120_000
	frozenAdvanceMs = 12_000
)

// goldenScreens are built from a fresh model over the replayed fixture.
var goldenScreens = []struct {
	name  string
	setup func(t *testing.T, m *Model, fr *fixtureReplay)
}{
	{"main", func(*testing.T, *Model, *fixtureReplay) {}},
	{"detail", func(_ *testing.T, m *Model, _ *fixtureReplay) { press(m, "<enter>") }},
	{"detail_findings", func(_ *testing.T, m *Model, _ *fixtureReplay) { press(m, "a<enter>") }},
	{"help", func(_ *testing.T, m *Model, _ *fixtureReplay) { press(m, "?") }},
	{"filter", func(_ *testing.T, m *Model, _ *fixtureReplay) { press(m, "/member") }},
	{"alerts", func(_ *testing.T, m *Model, _ *fixtureReplay) { press(m, "a<down>") }},
	{"paused", func(_ *testing.T, m *Model, fr *fixtureReplay) {
		press(m, "p") // the replay pauses; its next snapshot says so
		fr.c.Publish()
		send(m, tickMsg{})
	}},
	{"frozen", func(t *testing.T, m *Model, fr *fixtureReplay) {
		press(m, " ") // the view holds while the replay goes on
		fr.seek(t, fr.pos()+frozenAdvanceMs)
		send(m, tickMsg{})
	}},
}

// goldenSizes are the terminals every screen is shown in: the smallest,
// the classic, a laptop's and a wide one.
var goldenSizes = [][2]int{{MinWidth, MinHeight}, {80, 24}, {120, 40}, {200, 50}}

func TestGolden(t *testing.T) {
	for _, size := range goldenSizes {
		for _, g := range goldenScreens {
			t.Run(fmt.Sprintf("%s_%dx%d", g.name, size[0], size[1]), func(t *testing.T) {
				fr := replayFixture(t, goldenFixture, goldenOffsetMs)
				m := newTestModel(fr, size[0], size[1])
				g.setup(t, m, fr)
				checkFrame(t, m.View(), size[0], size[1])
				golden.RequireEqual(t, []byte(screenText(m)))
			})
		}
	}
}

// TestGoldenSmall covers the message below the minimum size.
func TestGoldenSmall(t *testing.T) {
	for _, size := range [][2]int{{MinWidth - 1, MinHeight}, {MinWidth, MinHeight - 1}, {40, 10}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			fr := replayFixture(t, goldenFixture, goldenOffsetMs)
			m := newTestModel(fr, size[0], size[1])
			checkFrame(t, m.View(), size[0], size[1])
			golden.RequireEqual(t, []byte(screenText(m)))
		})
	}
}

// TestGoldenFixtures shows every recorded incident just before its end
// (the instances then say bye): the main screen, and the detail of the
// first alert's resource.
func TestGoldenFixtures(t *testing.T) {
	for _, name := range fixtures.Names() {
		t.Run(name, func(t *testing.T) {
			fr := replayFixture(t, name, -2)
			m := newTestModel(fr, 120, 40)
			main := screenText(m)
			press(m, "a<enter>")
			checkFrame(t, m.View(), 120, 40)
			golden.RequireEqual(t, []byte(main+"\n\n"+screenText(m)))
		})
	}
}

// TestGoldenHandmade covers what the fixtures do not: wide (Chinese)
// names, names longer than any column, a target down and the targets
// screen, drifted rules.
func TestGoldenHandmade(t *testing.T) {
	for _, size := range goldenSizes {
		for _, screen := range []string{"main", "detail", "targets"} {
			t.Run(fmt.Sprintf("%s_%dx%d", screen, size[0], size[1]), func(t *testing.T) {
				m := newTestModel(goldenSource(), size[0], size[1])
				switch screen {
				case "detail":
					press(m, "<enter><pgdown>")
				case "targets":
					press(m, "t")
				}
				checkFrame(t, m.View(), size[0], size[1])
				golden.RequireEqual(t, []byte(screenText(m)))
			})
		}
	}
}

// TestGoldenEnded is a replay whose instances all said bye.
func TestGoldenEnded(t *testing.T) {
	fr := replayFixture(t, goldenFixture, -1)
	m := newTestModel(fr, 80, 24)
	golden.RequireEqual(t, []byte(screenText(m)))
}

func goldenSource() *staticSource {
	src := newStaticSource(testSnapshot())
	d := testDetail()
	src.details[d.App+"\x00"+d.Resource] = d
	return src
}
