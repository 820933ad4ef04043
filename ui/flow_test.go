package ui

import (
	"bytes"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest"

	"github.com/sentinel-top/sentinel-top/collector"
)

// The flows run the real program loop (ticks, commands) with teatest and
// assert on the text that reaches the screen, escape sequences stripped.

const flowTick = 20 * time.Millisecond

// flowSource is a source with its replay controls (nil when it has none).
type flowSource interface {
	Source
	control() ReplayControl
}

func startFlow(t *testing.T, src flowSource) *teatest.TestModel {
	t.Helper()
	m := New(src, Options{Profile: ColorNone, Location: time.UTC, TickInterval: flowTick, Replay: src.control()})
	return teatest.NewTestModel(t, m, teatest.WithInitialTermSize(120, 40))
}

// waitText waits until every text has been drawn.
func waitText(t *testing.T, tm *teatest.TestModel, texts ...string) {
	t.Helper()
	var seen bytes.Buffer
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		seen.Write(b)
		s := ansi.Strip(seen.String())
		for _, x := range texts {
			if !strings.Contains(s, x) {
				return false
			}
		}
		return true
	}, teatest.WithDuration(5*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
}

func typeKeys(tm *teatest.TestModel, s string) {
	for _, k := range keys(s) {
		tm.Send(k)
	}
}

// finalScreen quits and returns the last frame as text.
func finalScreen(t *testing.T, tm *teatest.TestModel) string {
	t.Helper()
	typeKeys(tm, "q")
	fm := tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second))
	return ansi.Strip(fm.View())
}

func TestFlowSnapshotsDriveTheScreen(t *testing.T) {
	src := goldenSource()
	tm := startFlow(t, src)
	waitText(t, tm, "GET:/member/info", "LIVE", "12:05:00")
	// a new snapshot: a resource appears, the clock moves.
	next := testSnapshot()
	next.Seq++
	next.At += 3000
	next.Rows = append(next.Rows, collector.ResourceRow{App: "stock", Resource: "GET:/stock/level", Instances: 1, PassQPS: 7})
	src.set(next)
	waitText(t, tm, "GET:/stock/level", "12:05:03")
	screen := finalScreen(t, tm)
	for _, want := range []string{"stock", "GET:/stock/level", "12:05:03", "ALERTS"} {
		if !strings.Contains(screen, want) {
			t.Errorf("final screen lacks %q:\n%s", want, screen)
		}
	}
}

func TestFlowReplay(t *testing.T) {
	src := goldenSource()
	src.set(replaySnapshot(false))
	rp := &fakeReplay{}
	src.replay = rp
	tm := startFlow(t, src)
	waitText(t, tm, "REPLAY ×4", "replay fixtures/sawtooth.ndjson")
	typeKeys(tm, "><p[]")
	// the collector reports the pause in its next snapshot.
	paused := replaySnapshot(true)
	paused.Seq++
	src.set(paused)
	waitText(t, tm, "PAUSED +5m")
	screen := finalScreen(t, tm)
	if !strings.Contains(screen, "PAUSED +5m/6m") {
		t.Errorf("header does not say paused:\n%s", screen)
	}
	if got, want := rp.log(), "speed ×8,speed ×4,pause,seek -10000,seek 10000"; got != want {
		t.Errorf("replay controls: got %s, want %s", got, want)
	}
}

func TestFlowFilter(t *testing.T) {
	tm := startFlow(t, goldenSource())
	waitText(t, tm, "GET:/member/info")
	typeKeys(tm, "/pay")
	waitText(t, tm, "/pay", "2/5")
	typeKeys(tm, "<enter>")
	screen := finalScreen(t, tm)
	// one app shown: no APP column, the app named in the header.
	table, _, _ := strings.Cut(screen, "ALERTS")
	if strings.Contains(table, "GET:/member/info") || !strings.Contains(screen, "RESOURCE  payment") ||
		!strings.Contains(screen, "    GET:/pay/status") {
		t.Errorf("filter /pay shows the wrong rows:\n%s", screen)
	}
	if !strings.Contains(screen, "/pay") {
		t.Errorf("the kept filter is not shown:\n%s", screen)
	}
}

func TestFlowFilterEscClears(t *testing.T) {
	tm := startFlow(t, goldenSource())
	waitText(t, tm, "GET:/member/info")
	typeKeys(tm, "/zzz")
	waitText(t, tm, "no resource matches")
	typeKeys(tm, "<esc>")
	screen := finalScreen(t, tm)
	if !strings.Contains(screen, "GET:/member/info") || strings.Contains(screen, "no resource matches") {
		t.Errorf("esc did not clear the filter:\n%s", screen)
	}
}

func TestFlowOpenDetail(t *testing.T) {
	src := goldenSource()
	tm := startFlow(t, src)
	waitText(t, tm, "GET:/member/info")
	typeKeys(tm, "<enter>")
	waitText(t, tm, "TIMELINE", "order-1", "13 transitions in range")
	typeKeys(tm, "j")
	waitText(t, tm, "order-2: 13 transitions")
	typeKeys(tm, "<esc>")
	waitText(t, tm, "ALERTS")
	screen := finalScreen(t, tm)
	if !strings.Contains(screen, "BREAKERS") {
		t.Errorf("esc did not go back to the main screen:\n%s", screen)
	}
	if _, n := src.counts(); n == 0 {
		t.Error("the detail was never fetched")
	}
}

func TestFlowFreeze(t *testing.T) {
	src := goldenSource()
	tm := startFlow(t, src)
	waitText(t, tm, "GET:/member/info")
	typeKeys(tm, " ")
	waitText(t, tm, "FROZEN +0s", "collecting")
	next := testSnapshot()
	next.Seq++
	next.At += 7000
	next.Rows = append(next.Rows, collector.ResourceRow{App: "stock", Resource: "GET:/stock/level"})
	src.set(next)
	waitText(t, tm, "FROZEN +7s")
	screen := finalScreen(t, tm)
	if strings.Contains(screen, "GET:/stock/level") {
		t.Errorf("a frozen view shows new data:\n%s", screen)
	}
	if !strings.Contains(screen, "12:05:00") {
		t.Errorf("a frozen view moved its clock:\n%s", screen)
	}
}

func TestFlowQuit(t *testing.T) {
	for _, k := range []string{"q", "<ctrl+c>"} {
		tm := startFlow(t, goldenSource())
		waitText(t, tm, "ALERTS")
		typeKeys(tm, k)
		tm.WaitFinished(t, teatest.WithFinalTimeout(5*time.Second))
	}
}

// TestFlowHelpFromAnyScreen opens and closes the help.
func TestFlowHelp(t *testing.T) {
	tm := startFlow(t, goldenSource())
	waitText(t, tm, "ALERTS")
	typeKeys(tm, "?")
	waitText(t, tm, "sentinel-top keys", "GLYPHS", "● CLOSED")
	typeKeys(tm, "?")
	tm.Send(tea.WindowSizeMsg{Width: 100, Height: 30})
	screen := finalScreen(t, tm)
	if strings.Contains(screen, "GLYPHS") || !strings.Contains(screen, "ALERTS") {
		t.Errorf("? did not close the help:\n%s", screen)
	}
}

// TestFlowTargets opens the targets screen, moves to a target up and goes
// back.
func TestFlowTargets(t *testing.T) {
	tm := startFlow(t, goldenSource())
	waitText(t, tm, "targets 3/4 up ✖ 1 down: 10.0.0.4:8719", "t targets")
	typeKeys(tm, "t")
	waitText(t, tm, "TARGETS  3/4 up · ✖ 1 down", "refused: nothing listens on 10.0.0.4:8719 (connection refused)",
		"down for 1m43s, the latest attempt 12s ago, retry in 4.0s · 5 reconnects")
	typeKeys(tm, "j")
	waitText(t, tm, "10.0.0.1:8719  ● up for 10m · 0 reconnects · instance order-1")
	typeKeys(tm, "<esc>")
	screen := finalScreen(t, tm)
	if !strings.Contains(screen, "BREAKERS") || strings.Contains(screen, "TARGETS") {
		t.Errorf("esc did not go back from the targets:\n%s", screen)
	}
}

// TestFlowSortStartsOnTheWorst: in the first seconds of an incident the
// OPEN breaker is the first row, marked, and selected, ahead of a healthy
// row whose name sorts first; the selection stays on the worst row as the
// incident moves until the user moves it, and s sorts by another column.
func TestFlowSortStartsOnTheWorst(t *testing.T) {
	snap := func(seq uint64, openRes string) *collector.Snapshot {
		s := &collector.Snapshot{At: t0 + int64(seq)*1000, Seq: seq, Apps: 1, Instances: 2, Resources: 3, Messages: 10}
		for _, res := range []string{"a-healthy", "b-db", "c-cache"} {
			r := collector.ResourceRow{App: "order", Resource: res, Instances: 2, PassQPS: 50, HasBreaker: true,
				Breakers: collector.StateCounts{Closed: 2}, AvgRtMs: 20, P99Ms: 40}
			if res == openRes {
				r.PassQPS, r.BlockQPS, r.AvgRtMs, r.P99Ms = 0, 80, 0, 0
				r.Breakers = collector.StateCounts{Open: 2}
			}
			s.Rows = append(s.Rows, r)
		}
		return s
	}
	src := newStaticSource(snap(1, "b-db"))
	tm := startFlow(t, src)
	// the OPEN row: first, selected, a warning without any finding, and no
	// 0% where nothing completed.
	waitText(t, tm, "▸!  b-db", "80.0      –     –     – ✖2")
	src.set(snap(2, "c-cache"))
	waitText(t, tm, "▸!  c-cache")
	typeKeys(tm, "j") // the user moves: the selection now follows its row
	src.set(snap(3, "b-db"))
	waitText(t, tm, " !  b-db", "▸   a-healthy")
	typeKeys(tm, "s")
	waitText(t, tm, "BREAKERS▼")
	screen := finalScreen(t, tm)
	if !strings.Contains(screen, "▸   a-healthy") {
		t.Errorf("the selection left the row the user chose:\n%s", screen)
	}
}
