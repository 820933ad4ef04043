package ui

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/collector/source"
)

// backfillRecording is a real recording of three example services taken
// two minutes after they started: each target's hello, then the 60 s of
// buckets it held, older than the hello (see collector/source's tests).
const backfillRecording = "../collector/source/testdata/backfill-recorded.ndjson.gz"

// runningReplay replays the recording at speed 1 in real time, into a
// collector publishing as the binary's does, until the test ends.
func runningReplay(t *testing.T) *fixtureReplay {
	t.Helper()
	f, err := os.Open(backfillRecording)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	r, err := source.NewReplay("backfill-recorded.ndjson.gz", f, 1, source.ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r.Stay()
	c := collector.New(collector.Options{Clock: r.Clock(), Mode: collector.ModeReplay, Source: r.Name()})
	if err := r.Start(c); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { r.Run(ctx); done <- struct{}{} }()
	go func() { c.Run(ctx); done <- struct{}{} }()
	t.Cleanup(func() { cancel(); <-done; <-done })
	return &fixtureReplay{r: r, c: c}
}

// waitScreen waits up to d for a frame that cond accepts, and returns it.
func waitScreen(t *testing.T, tm *teatest.TestModel, d time.Duration, cond func(frame string) bool) string {
	t.Helper()
	var seen bytes.Buffer
	var frame string
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		seen.Write(b)
		s := ansi.Strip(seen.String())
		// the last frame only: from its title on.
		if i := strings.LastIndex(s, "sentinel-top"); i >= 0 {
			s = s[i:]
		}
		frame = s
		return cond(s)
	}, teatest.WithDuration(d), teatest.WithCheckInterval(10*time.Millisecond))
	return frame
}

var msgsShown = regexp.MustCompile(`(\d+) msgs`)

// messagesShown is the message count on the screen, -1 when none shows.
func messagesShown(screen string) int {
	m := msgsShown.FindAllStringSubmatch(screen, -1)
	if len(m) == 0 {
		return -1
	}
	n, _ := strconv.Atoi(m[len(m)-1][1])
	return n
}

var replayPos = regexp.MustCompile(`REPLAY ×1 \+(\d+)s/`)

// positionShown is the replay position on the screen in seconds, -1 when
// none shows.
func positionShown(screen string) int {
	m := replayPos.FindStringSubmatch(screen)
	if m == nil {
		return -1
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// TestFlowReplayBackfillShowsItsInstances: at speed 1 the recording's
// three instances, their app and their rows show within 3 s, though their
// hellos came a minute after the first data; a seek forward (]) lands on
// data: more messages, the three instances, before the hellos' time.
func TestFlowReplayBackfillShowsItsInstances(t *testing.T) {
	src := runningReplay(t)
	tm := startFlow(t, src)
	first := waitScreen(t, tm, 3*time.Second, func(s string) bool {
		return strings.Contains(s, "1 app · 3 instances") && strings.Contains(s, "GET:http://member-service/api/user/info") &&
			messagesShown(s) > 0 && positionShown(s) >= 0
	})
	pos, msgs := positionShown(first), messagesShown(first)
	if pos > 3 {
		t.Errorf("shown at +%ds:\n%s", pos, first)
	}
	typeKeys(tm, "]")
	waitScreen(t, tm, 3*time.Second, func(s string) bool {
		return positionShown(s) >= pos+10 && messagesShown(s) > msgs && strings.Contains(s, "1 app · 3 instances")
	})
	from, _ := src.r.Range()
	if at := src.r.Clock().UnixMilli() - from; at > 50_000 {
		t.Errorf("the replay is at +%d ms: the hellos' time, not the backfill's", at)
	}
	finalScreen(t, tm)
}
