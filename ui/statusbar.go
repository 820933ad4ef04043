package ui

import (
	"strconv"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/sentinel-top/sentinel-top/collector"
)

// statusBar is the two header lines: where the data comes from, the mode
// (LIVE, REPLAY ×speed, PAUSED, FROZEN), the clock and the time range; then
// the counts and the first warning.
type statusBar struct {
	st  *Styles
	loc *time.Location

	snap   *collector.Snapshot // shown
	latest *collector.Snapshot // the newest published, ahead of snap when frozen
	frozen bool
	rng    time.Duration
	width  int
}

// headerLines is the status bar's height.
const headerLines = 2

func newStatusBar(st *Styles, loc *time.Location) statusBar {
	return statusBar{st: st, loc: loc}
}

// SetSize sets the width; the height is always headerLines.
func (s statusBar) SetSize(w, _ int) statusBar { s.width = w; return s }

// SetSnapshot sets the snapshot shown and the newest one.
func (s statusBar) SetSnapshot(shown, latest *collector.Snapshot, frozen bool) statusBar {
	s.snap, s.latest, s.frozen = shown, latest, frozen
	return s
}

// SetRange sets the time range shown.
func (s statusBar) SetRange(d time.Duration) statusBar { s.rng = d; return s }

// Update does nothing: the model feeds the status bar.
func (s statusBar) Update(tea.Msg) (statusBar, tea.Cmd) { return s, nil }

// View renders the two lines.
func (s statusBar) View() string {
	if s.width <= 0 || s.snap == nil {
		return "\n"
	}
	st, snap := s.st, s.snap
	// the right part must fit whole: the mode and the clock, then the
	// range and what a frozen view adds when there is room.
	clock := st.bold.on(time.UnixMilli(snap.At).In(s.loc).Format("15:04:05"))
	var right string
	for _, full := range []bool{true, false} {
		right = s.mode(full) + "  " + clock
		if rec := s.recording(); rec != "" {
			right = rec + "  " + right
		}
		if full {
			right += "  range " + fmtSpan(s.rng)
		}
		if width(right)+24 <= s.width {
			break
		}
	}
	rw := width(right)
	// the left part is laid out for the widest the replay's position can
	// be, so that the file's name keeps its width as the replay plays.
	rwMax := rw + s.posSlack()
	left := st.header.on("sentinel-top") + "  " + s.source(max(0, s.width-rwMax-15))
	if width(left)+1+rwMax > s.width {
		left = st.header.on("sentinel-top")
	}
	lw := width(left)
	var b strings.Builder
	if lw+1+rw <= s.width {
		b.WriteString(left)
		b.WriteString(strings.Repeat(" ", s.width-lw-rw))
		b.WriteString(right)
	} else {
		b.WriteString(fitLine(right, s.width))
	}
	b.WriteByte('\n')
	b.WriteString(fitLine(s.counts(), s.width))
	return b.String()
}

// mode renders LIVE, REPLAY ×4 +1m12s/5m, PAUSED +1m12s/5m, and FROZEN
// with how far the collection has gone on since (and, when full, that it
// goes on).
func (s statusBar) mode(full bool) string {
	st, snap := s.st, s.snap
	var b strings.Builder
	if snap.Mode == collector.ModeReplay {
		r := snap.Replay
		at := fmtSpanMs(r.Pos - r.From)
		pos := "+" + at + "/" + fmtSpanMs(r.To-r.From)
		switch {
		case r.Paused:
			b.WriteString(st.frozen.on(" PAUSED " + pos + " "))
		case r.Done:
			b.WriteString(st.mode.on(" REPLAY done " + at + "/" + fmtSpanMs(r.To-r.From) + " "))
		default:
			b.WriteString(st.mode.on(" REPLAY " + fmtSpeed(r.Speed) + " " + pos + " "))
		}
	} else {
		b.WriteString(st.mode.on(" LIVE "))
	}
	if s.frozen {
		ahead := int64(0)
		if s.latest != nil {
			ahead = s.latest.At - snap.At
		}
		b.WriteString(" ")
		b.WriteString(st.frozen.on(" FROZEN +" + fmtSpanMs(ahead) + " "))
		if full {
			b.WriteString(st.dim.on(" collecting"))
		}
	}
	return b.String()
}

// posSlack is how much wider the replay's position ("+1m01s/6m") can
// grow than it is now; 0 out of a replay.
func (s statusBar) posSlack() int {
	r := s.snap.Replay
	if s.snap.Mode != collector.ModeReplay || r.Done {
		return 0
	}
	return max(0, maxSpanW(r.To-r.From)-width(fmtSpanMs(r.Pos-r.From)))
}

// maxSpanW is the widest fmtSpanMs of a span from 0 to total ms: "59s"
// is wider than "1m", "1m01s" than "6m".
func maxSpanW(total int64) int {
	w := width(fmtSpanMs(total))
	for _, ms := range []int64{59_000, 61_000, 601_000, 36_060_000, 360_060_000} {
		if ms <= total {
			w = max(w, width(fmtSpanMs(ms)))
		}
	}
	return w
}

// source names the replayed file, or counts the targets up and down and
// names the down ones in w cells (the targets screen lists them all).
func (s statusBar) source(w int) string {
	snap, st := s.snap, s.st
	if snap.Mode == collector.ModeReplay {
		return "replay " + safeName(snap.Source, max(8, w-7))
	}
	if len(snap.Targets) == 0 {
		return "live " + safeName(snap.Source, max(8, w-5))
	}
	up, down, conn := targetCounts(snap.Targets)
	t := "targets " + strconv.Itoa(up) + "/" + strconv.Itoa(len(snap.Targets)) + " up"
	if conn > 0 {
		t += " " + st.half.on(glyphConnecting+" "+strconv.Itoa(conn)+" connecting")
	}
	if down == 0 {
		return t
	}
	t += " " + st.open.on(glyphOpen+" "+strconv.Itoa(down)+" down")
	var names []string
	for i := range snap.Targets {
		if snap.Targets[i].State == collector.TargetDown {
			names = append(names, snap.Targets[i].Name)
		}
	}
	if room := w - width(t) - 2; room >= 12 {
		t += ": " + joinNames(names, room)
	}
	return t
}

// recording is what the header says of the recording: REC while it goes
// on, REC FAILED once it stopped ("" when there is none).
func (s statusBar) recording() string {
	switch {
	case s.snap.RecordError != "":
		return s.st.open.on(glyphOpen + " REC FAILED")
	case s.snap.Recording:
		return s.st.open.on("● REC")
	}
	return ""
}

// memoryRefused sums what the memory budget refused the targets, and
// names the target refused most.
func memoryRefused(shares []collector.MemoryShare) (refused int64, most collector.MemoryShare) {
	for _, sh := range shares {
		refused += sh.Refused
		if sh.Refused > most.Refused {
			most = sh
		}
	}
	return refused, most
}

// counts renders the second line: what the collector has seen.
func (s statusBar) counts() string {
	st, snap := s.st, s.snap
	var b strings.Builder
	item := func(n int64, what string) {
		if b.Len() > 0 {
			b.WriteString(st.dim.on(" · "))
		}
		b.WriteString(fmtCount(n))
		b.WriteByte(' ')
		b.WriteString(what)
	}
	item(int64(snap.Apps), plural(snap.Apps, "app", "apps"))
	item(int64(snap.Instances), plural(snap.Instances, "instance", "instances"))
	item(int64(snap.Resources), plural(snap.Resources, "resource", "resources"))
	item(snap.Messages, plural(snap.Messages, "msg", "msgs"))
	if snap.Rejected > 0 {
		b.WriteString(st.dim.on(" · "))
		b.WriteString(st.warn.on(fmtCount(snap.Rejected) + " rejected"))
	}
	if snap.Dropped > 0 {
		b.WriteString(st.dim.on(" · "))
		b.WriteString(st.warn.on(fmtCount(snap.Dropped) + " dropped"))
	}
	if snap.UnreceivedMs > 0 {
		b.WriteString(st.dim.on(" · "))
		b.WriteString(st.warn.on(fmtMs(snap.UnreceivedMs) + " of data never received"))
	}
	var over int64
	for _, o := range snap.Overflow {
		over += o.Count
	}
	if over > 0 {
		b.WriteString(st.dim.on(" · "))
		b.WriteString(st.warn.on(fmtCount(over) + " over limits"))
	}
	if refused, most := memoryRefused(snap.MemoryShares); refused > 0 {
		b.WriteString(st.dim.on(" · "))
		w := fmtCount(refused) + " refused by --max-memory"
		if most.Target != "" {
			w += ", " + fmtCount(most.Refused) + " of them " + sanitize(most.Target) + "'s"
		}
		b.WriteString(st.warn.on(w))
	}
	if snap.RecordError != "" {
		b.WriteString("  ")
		b.WriteString(st.open.on("recording stopped: " + sanitize(snap.RecordError)))
	}
	if len(snap.Warnings) > 0 {
		b.WriteString("  ")
		w := "warning: " + sanitize(collector.WarningText(snap.Warnings[0]))
		if n := len(snap.Warnings); n > 1 {
			w += " (+" + strconv.Itoa(n-1) + " more)"
		}
		b.WriteString(st.warn.on(w))
	}
	return b.String()
}
