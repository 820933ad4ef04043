package ui

import (
	"context"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/collector/source"
	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/fixtures"
)

// fixtureReplay is a recorded fixture replayed through the real collector
// up to a position, then held: the collector is the UI's Source, exactly as
// in the binary, and every screen built from it is repeatable.
type fixtureReplay struct {
	r *source.Replay
	c *collector.Collector
}

// Snapshot and Detail make the replay a Source; control hands the dashboard
// its controls, as the binary does.
func (fr *fixtureReplay) Snapshot() *collector.Snapshot { return fr.c.Snapshot() }
func (fr *fixtureReplay) Detail(app, res string, from, to int64) *collector.Detail {
	return fr.c.Detail(app, res, from, to)
}
func (fr *fixtureReplay) control() ReplayControl { return fr.r }

// replayFixture replays name up to offsetMs after its start (up to -offsetMs
// before its end when negative, -1 being the whole fixture) and publishes
// a snapshot there.
func replayFixture(t testing.TB, name string, offsetMs int64) *fixtureReplay {
	t.Helper()
	f, err := fixtures.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := source.NewReplay(name, f, 0, source.ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return holdReplay(t, r, name, offsetMs)
}

// replayMessages replays msgs as replayFixture replays a fixture.
func replayMessages(t testing.TB, name string, msgs []wire.Message, offsetMs int64) *fixtureReplay {
	t.Helper()
	r, err := source.NewReplayMessages(name, msgs, nil, 0, source.ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return holdReplay(t, r, name, offsetMs)
}

// holdReplay feeds r (named name) to a collector up to offsetMs (as
// replayFixture) and holds it there.
func holdReplay(t testing.TB, r *source.Replay, name string, offsetMs int64) *fixtureReplay {
	t.Helper()
	c := collector.New(collector.Options{Clock: r.Clock(), Mode: collector.ModeReplay, Source: name})
	if err := r.Start(c); err != nil {
		t.Fatal(err)
	}
	c.Publish()
	fr := &fixtureReplay{r: r, c: c}
	from, to := r.Range()
	if offsetMs < 0 {
		offsetMs = to - from + offsetMs + 1
	}
	fr.seek(t, from+offsetMs)
	return fr
}

// pos is the replay's position, Unix ms.
func (fr *fixtureReplay) pos() int64 { return fr.r.Clock().UnixMilli() }

// seek feeds the replay up to the time target (Unix ms, forward only) and
// publishes a snapshot there, the replay left running at full speed.
func (fr *fixtureReplay) seek(t testing.TB, target int64) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	fr.r.Pause()
	fr.r.SeekBy(target - fr.r.Clock().UnixMilli())
	done := make(chan error, 1)
	go func() { done <- fr.r.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for fr.r.Clock().UnixMilli() < target {
		if time.Now().After(deadline) {
			t.Fatalf("the replay did not reach %d", target)
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	fr.r.Resume()
	fr.c.Publish()
}

func TestFixtureReplayIsRepeatable(t *testing.T) {
	a := replayFixture(t, "sawtooth-db-slow", 120_000)
	b := replayFixture(t, "sawtooth-db-slow", 120_000)
	ma, mb := newTestModel(a.c, 120, 40), newTestModel(b.c, 120, 40)
	if sa, sb := screenText(ma), screenText(mb); sa != sb {
		t.Errorf("two replays differ:\n%s\n%s", sa, sb)
	}
}
