package collector

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/sentinel-top/sentinel-top/collector/source"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// The store's tests fed by the real sources (collector/source, which
// knows the store only as a sink): the wiring cmd/sentinel-top does.

// dial runs source.Dial into c until ctx ends, on c's clocks unless opts
// names others.
func dial(ctx context.Context, c *Collector, targets []source.Target, opts source.DialOptions) {
	if opts.Clock == nil {
		opts.Clock = c.clock
	}
	if opts.WallClock == nil {
		opts.WallClock = c.opts.WallClock
	}
	source.Dial(ctx, c, targets, opts)
}

// replayed is a replay and the collector it feeds.
type replayed struct {
	*source.Replay
	c *Collector
}

// Collector is the collector the replay feeds.
func (r *replayed) Collector() *Collector { return r.c }

// newReplay reads the recording src as source.NewReplay does, and starts
// it into a new collector of opts on the replay's clock (and opts' wall
// clock).
func newReplay(name string, src io.Reader, speed float64, opts Options) (*replayed, error) {
	rp, err := source.NewReplay(name, src, speed, source.ReplayOptions{WallClock: opts.WallClock})
	if err != nil {
		return nil, err
	}
	return startReplay(rp, opts)
}

// replayWhole replays the recording at path to its end, at full speed.
func replayWhole(t *testing.T, path string) *replayed {
	t.Helper()
	g, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	r, err := newReplay(filepath.Base(path), g, 0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return r
}

// newReplayMessages is newReplay for source.NewReplayMessages.
func newReplayMessages(name string, msgs []wire.Message, rejects []error, speed float64, opts Options) (*replayed, error) {
	rp, err := source.NewReplayMessages(name, msgs, rejects, speed, source.ReplayOptions{WallClock: opts.WallClock})
	if err != nil {
		return nil, err
	}
	return startReplay(rp, opts)
}

func startReplay(rp *source.Replay, opts Options) (*replayed, error) {
	opts.Clock, opts.Mode, opts.Source = rp.Clock(), ModeReplay, rp.Name()
	c := New(opts)
	if err := rp.Start(c); err != nil {
		return nil, err
	}
	c.Publish()
	return &replayed{rp, c}, nil
}

// readIngest ingests m into c as a source reading recorded messages does:
// a hello with what its sdk tells of its sender (source.OriginOf).
func readIngest(c *Collector, place string, m wire.Message) bool {
	if h, ok := m.(*wire.Hello); ok {
		return c.Hello(place, h, source.OriginOf(h.SDK))
	}
	return c.Ingest(place, m)
}
