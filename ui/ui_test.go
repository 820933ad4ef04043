package ui

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"

	"github.com/sentinel-top/sentinel-top/collector"
)

func TestRunWithoutTerminal(t *testing.T) {
	var out bytes.Buffer
	err := Run(context.Background(), goldenSource(), Options{Output: &out})
	if !errors.Is(err, ErrNoTTY) {
		t.Fatalf("Run to a buffer: %v, want ErrNoTTY", err)
	}
	if !strings.Contains(err.Error(), "sentinel-top report") {
		t.Errorf("the error does not point to the report: %v", err)
	}
	if out.Len() != 0 {
		t.Errorf("Run wrote %q before failing", out.String())
	}
}

func TestColorProfiles(t *testing.T) {
	cases := []struct {
		opts Options
		env  string
		want termenv.Profile
	}{
		{Options{Profile: ColorNone}, "", termenv.Ascii},
		{Options{Profile: ColorANSI}, "", termenv.ANSI},
		{Options{Profile: ColorANSI256}, "", termenv.ANSI256},
		{Options{Profile: ColorTrueColor}, "", termenv.TrueColor},
		{Options{Profile: ColorTrueColor, NoColor: true}, "", termenv.Ascii},
		{Options{Output: &bytes.Buffer{}}, "", termenv.Ascii}, // not a terminal
		{Options{}, "1", termenv.Ascii},                       // NO_COLOR
	}
	for i, c := range cases {
		t.Setenv("NO_COLOR", c.env)
		if got := c.opts.termProfile(); got != c.want {
			t.Errorf("case %d: profile %v, want %v", i, got, c.want)
		}
	}
}

// screensOf renders a model through every screen.
func screensOf(t *testing.T, profile ColorProfile, w, h int) map[string]string {
	t.Helper()
	fr := replayFixture(t, goldenFixture, goldenOffsetMs)
	m := newModel(fr.c, Options{Profile: profile, Location: time.UTC})
	m.noTick = true
	send(m, sizeMsg(w, h))
	out := map[string]string{"main": m.View()}
	press(m, "a")
	out["alerts"] = m.View()
	press(m, "<enter>")
	out["detail"] = m.View()
	press(m, "<tab>")
	out["detail findings"] = m.View()
	for i := 0; i < 3; i++ {
		press(m, "<pgup>")
	}
	press(m, "<tab>")
	out["detail top"] = m.View()
	press(m, "?")
	out["help"] = m.View()
	press(m, "<esc><esc>/mem")
	out["filter"] = m.View()
	press(m, "<enter> ")
	out["frozen"] = m.View()
	return out
}

// TestNoColorMeansNoEscapes: without colour nothing but text is written,
// charts included.
func TestNoColorMeansNoEscapes(t *testing.T) {
	for name, f := range screensOf(t, ColorNone, 120, 40) {
		if i := strings.IndexByte(f, 0x1b); i >= 0 {
			t.Errorf("%s: an escape sequence without colour: %q", name, f[i:min(len(f), i+12)])
		}
	}
}

// TestColourNeverAlone: the text with colour is the text without it, so
// colour only adds to what glyphs and words say.
func TestColourNeverAlone(t *testing.T) {
	plain := screensOf(t, ColorNone, 120, 40)
	for _, p := range []ColorProfile{ColorANSI, ColorANSI256, ColorTrueColor} {
		colour := screensOf(t, p, 120, 40)
		for name, f := range colour {
			if !strings.Contains(f, "\x1b[") {
				t.Errorf("profile %d %s: no colour at all", p, name)
			}
			if got := ansi.Strip(f); got != plain[name] {
				t.Errorf("profile %d %s: the text differs with colour:\n%s\nwithout:\n%s", p, name, got, plain[name])
			}
		}
	}
}

func TestHelpListsTheKeymap(t *testing.T) {
	m := newTestModel(goldenSource(), 120, 40)
	press(m, "?")
	help := screenText(m)
	for _, g := range m.keys.forHelp(false).FullHelp() {
		for _, b := range g {
			// every key of the binding, not only the footer's label.
			if k, d := keyNames(b), b.Help().Desc; b.Enabled() && (!strings.Contains(help, k+" ") || !strings.Contains(help, d)) {
				t.Errorf("help lacks %s %s", k, d)
			}
		}
	}
	if strings.Contains(help, "pause replay") {
		t.Error("help lists replay keys without a replay")
	}
	for _, w := range []string{"● CLOSED", "◐ HALF", "✖ OPEN"} {
		if !strings.Contains(help, w) {
			t.Errorf("help lacks the glyph %s", w)
		}
	}
	// with a replay, its keys appear in the help and the footer.
	src := goldenSource()
	src.set(replaySnapshot(false))
	src.replay = &fakeReplay{}
	m = newTestModel(src, 120, 40)
	press(m, "?")
	if help := screenText(m); !strings.Contains(help, "pause replay") || !strings.Contains(help, "back 10s") {
		t.Errorf("help lacks the replay keys:\n%s", help)
	}
}

func TestFooterFollowsTheScreen(t *testing.T) {
	m := newTestModel(goldenSource(), 120, 40)
	foot := func() string { l := strings.Split(screenText(m), "\n"); return l[len(l)-1] }
	if f := foot(); !strings.Contains(f, "enter detail") || strings.Contains(f, "esc back") {
		t.Errorf("main footer: %q", f)
	}
	press(m, "<enter>")
	if f := foot(); !strings.Contains(f, "esc back") || strings.Contains(f, "enter detail") {
		t.Errorf("detail footer: %q", f)
	}
}

func TestSortAndReverse(t *testing.T) {
	m := newTestModel(goldenSource(), 120, 40)
	first := func() string {
		r, _ := m.main.table.Selected()
		return r.Resource
	}
	if got := first(); got != "GET:/member/info" {
		t.Fatalf("by severity the first row is %q", got)
	}
	if !strings.Contains(screenText(m), " !▼") {
		t.Errorf("the header does not mark the sort by severity:\n%s", screenText(m))
	}
	press(m, "ss") // breakers, pass/s
	if !strings.Contains(screenText(m), " ▼PASS/S ") {
		t.Errorf("the header does not mark the sort:\n%s", screenText(m))
	}
	press(m, "g")
	if got := first(); !strings.HasPrefix(got, "POST:/pay/charge") {
		t.Errorf("by pass/s the first row is %q", got)
	}
	press(m, "rg")
	if got := first(); got != "订单查询/按用户" {
		t.Errorf("reversed, the first row is %q", got)
	}
	if !strings.Contains(screenText(m), " ▲PASS/S ") {
		t.Errorf("the header does not mark the reverse sort")
	}
}

func TestSelectionFollowsTheResource(t *testing.T) {
	src := goldenSource()
	m := newTestModel(src, 120, 40)
	press(m, "jjj") // 订单查询/按用户
	next := testSnapshot()
	next.Seq++
	next.Rows = append(next.Rows[2:3], next.Rows...) // it moves to the top
	src.set(next)
	send(m, tickMsg{})
	if r, _ := m.main.table.Selected(); r.Resource != "订单查询/按用户" {
		t.Errorf("the selection moved to %q", r.Resource)
	}
}

func TestTimeRange(t *testing.T) {
	src := &rangeSource{staticSource: goldenSource()}
	m := newTestModel(src, 120, 40)
	press(m, "<enter>")
	if got := src.last; got != 5*time.Minute {
		t.Errorf("first detail over %v, want 5m", got)
	}
	press(m, "+")
	if got := src.last; got != 2*time.Minute || !strings.Contains(screenText(m), "range 2m") {
		t.Errorf("+ fetched %v", got)
	}
	press(m, "---")
	if got := src.last; got != 15*time.Minute || !strings.Contains(screenText(m), "range 15m") {
		t.Errorf("--- fetched %v", got)
	}
	press(m, "=")
	if got := src.last; got != 5*time.Minute {
		t.Errorf("= fetched %v", got)
	}
}

type rangeSource struct {
	*staticSource
	last time.Duration
}

func (s *rangeSource) Detail(app, res string, from, to int64) *collector.Detail {
	s.last = time.Duration(to-from) * time.Millisecond
	return s.staticSource.Detail(app, res, from, to)
}

// TestWideNamesKeepColumns: a row with Chinese names lines up with the
// others (each wide character takes two cells).
func TestWideNamesKeepColumns(t *testing.T) {
	for _, w := range []int{80, 120} {
		m := newTestModel(goldenSource(), w, 24)
		lines := strings.Split(screenText(m), "\n")
		col := -1
		for _, l := range lines[3:8] {
			if ansi.StringWidth(l) != w {
				t.Errorf("row %q is %d cells, want %d", l, ansi.StringWidth(l), w)
			}
			i := strings.Index(l, "% ") // the end of the SLOW% column
			c := ansi.StringWidth(l[:i])
			if col >= 0 && c != col {
				t.Errorf("at %d columns the SLOW%% column ends at cell %d, not %d, in %q", w, c, col, l)
			}
			col = c
		}
	}
}

func TestTooSmall(t *testing.T) {
	m := newTestModel(goldenSource(), 59, 30)
	if s := screenText(m); !strings.Contains(s, "need 60x15") {
		t.Errorf("no size message:\n%s", s)
	}
	send(m, sizeMsg(60, 15))
	if s := screenText(m); strings.Contains(s, "need") || !strings.Contains(s, "BREAKERS") {
		t.Errorf("60x15 does not show the dashboard:\n%s", s)
	}
}

// TestHeaderSaysRecording: REC while a recording goes on; once it failed,
// REC FAILED and the reason at once.
func TestHeaderSaysRecording(t *testing.T) {
	src := goldenSource()
	s := testSnapshot()
	s.Recording = true
	src.set(s)
	m := newTestModel(src, 120, 40)
	head := strings.Split(screenText(m), "\n")
	if !strings.Contains(head[0], "● REC   LIVE") || strings.Contains(head[0], "FAILED") {
		t.Errorf("recording: %q", head[0])
	}
	failed := testSnapshot()
	failed.Seq++
	failed.Recording, failed.RecordError = true, "write incident.ndjson.gz: no space left on device"
	src.set(failed)
	send(m, tickMsg{})
	head = strings.Split(screenText(m), "\n")
	if !strings.Contains(head[0], "✖ REC FAILED   LIVE") || !strings.Contains(head[1], "recording stopped: write incident.ndjson.gz: no space left on device") {
		t.Errorf("recording failed:\n%s\n%s", head[0], head[1])
	}
	s = testSnapshot()
	src.set(s)
	if m = newTestModel(src, 120, 40); strings.Contains(screenText(m), "REC") {
		t.Errorf("REC without a recording:\n%s", screenText(m))
	}
}

// TestDetailWithoutDataDoesNotPanic: a resource known only from its rules
// (no bucket yet, or its name differs from the traffic's) has a detail of
// no steps; it says so instead of dividing by a step of zero.
func TestDetailWithoutDataDoesNotPanic(t *testing.T) {
	src := goldenSource()
	row := src.snap.Rows[0]
	src.details[row.App+"\x00"+row.Resource] = &collector.Detail{App: row.App, Resource: row.Resource}
	m := newTestModel(src, 120, 40)
	press(m, "<enter>")
	if s := screenText(m); !strings.Contains(s, "no traffic recorded") {
		t.Fatalf("detail without data:\n%s", s)
	}
}

// TestHeaderSaysWhatNeverArrived: data the collector knows it never
// received is on the counts line, beside messages dropped, whatever the
// warning line shows first.
func TestHeaderSaysWhatNeverArrived(t *testing.T) {
	src := goldenSource()
	s := testSnapshot()
	s.UnreceivedMs, s.Warnings = 66_500, []collector.Warning{collector.ClockSkew{Instance: "gw-1", OffsetMs: 2000},
		collector.UnreceivedData{Gaps: []collector.DataGap{{Instance: "gw-2", FromMs: s.At - 66_500, Ms: 66_500, Gaps: 1}}, TotalMs: 66_500}}
	src.set(s)
	m := newTestModel(src, 160, 40)
	if head := strings.Split(screenText(m), "\n"); !strings.Contains(head[1], "msgs · 66s of data never received") {
		t.Errorf("counts line: %q", head[1])
	}
	src.set(testSnapshot())
	if m = newTestModel(src, 160, 40); strings.Contains(screenText(m), "never received") {
		t.Errorf("said without a gap:\n%s", screenText(m))
	}
}
