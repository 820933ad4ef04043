package ui

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/muesli/termenv"
)

// TestReplayHeaderKeepsItsWidths: as a replay plays, the header's file
// name, elided to the room the mode leaves at its widest position, keeps
// its width, and the clock its place.
var clockRE = regexp.MustCompile(`\d\d:\d\d:\d\d`)

func TestReplayHeaderKeepsItsWidths(t *testing.T) {
	for _, total := range []int64{45_000, 360_000, 4_000_000} {
		for _, paused := range []bool{false, true} {
			snap := replaySnapshot(paused)
			snap.Source = "/var/lib/sentinel-top/recordings/2026-12-05/gateway-price-service-incident.ndjson"
			snap.Replay.From, snap.Replay.To = t0-total, t0
			var name string
			clockAt := -1
			for pos := int64(0); pos <= total; pos += 1000 {
				snap.Replay.Pos = snap.Replay.From + pos
				snap.At = snap.Replay.Pos
				sb := newStatusBar(newStyles(termenv.Ascii), time.UTC).SetSize(80, headerLines).SetSnapshot(snap, snap, false)
				head := strings.SplitN(sb.View(), "\n", 2)[0]
				if width(head) != 80 {
					t.Fatalf("header %d cells: %q", width(head), head)
				}
				i := strings.Index(head, "replay ")
				j := strings.Index(head, " REPLAY")
				if paused {
					j = strings.Index(head, " PAUSED")
				}
				if i < 0 || j < 0 {
					t.Fatalf("no file or mode in %q", head)
				}
				n := strings.TrimRight(head[i:j], " ")
				c := clockRE.FindStringIndex(head)[0]
				if name == "" {
					name, clockAt = n, c
				} else if n != name || c != clockAt {
					t.Fatalf("total %d ms, at +%d ms: the header moved:\n%q\nwas the file %q, the clock at %d", total, pos, head, name, clockAt)
				}
			}
		}
	}
}
