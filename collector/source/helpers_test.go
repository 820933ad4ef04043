package source

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/collector/feed"
	"github.com/sentinel-top/sentinel-top/internal/waitfor"
)

// The sources' tests feed a real store (package collector), wired as
// cmd/sentinel-top wires them.

// eventually polls cond every 20 ms for up to 15 s.
func eventually(t *testing.T, what string, cond func() error) {
	t.Helper()
	waitfor.Eventually(t, what, 15*time.Second, 20*time.Millisecond, cond)
}

// dial runs Dial into c until ctx ends, on c's clocks unless opts names
// others.
func dial(ctx context.Context, c *collector.Collector, targets []Target, opts DialOptions) {
	if opts.Clock == nil {
		opts.Clock = c.Clock()
	}
	if opts.WallClock == nil {
		opts.WallClock = c.Options().WallClock
	}
	Dial(ctx, c, targets, opts)
}

// dialPeer dials target until the test ends.
func dialPeer(t *testing.T, c *collector.Collector, target Target, opts DialOptions) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { dial(ctx, c, []Target{target}, opts); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

func helloFrame(instance string) []byte {
	return fmt.Appendf(nil, `{"v":1,"kind":"hello","ts":%d,"instance":%q,"app":"flood","startedAt":%d,"bucketMs":500}`, t0ms, instance, t0ms)
}

func send(conn *websocket.Conn, frames ...[]byte) bool {
	for _, f := range frames {
		if conn.WriteMessage(websocket.TextMessage, f) != nil {
			return false
		}
	}
	return true
}

// firstTarget is the status of the collector's first target.
func firstTarget(s *collector.Snapshot) feed.TargetStatus {
	if len(s.Targets) == 0 {
		return feed.TargetStatus{}
	}
	return *s.Targets[0]
}

// byReason maps the snapshot's counters by reason.
func byReason(rc []collector.RejectCount) map[string]int64 {
	m := map[string]int64{}
	for _, r := range rc {
		m[r.Reason] = r.Count
	}
	return m
}

// replayed is a replay and the collector it feeds.
type replayed struct {
	*Replay
	c *collector.Collector
}

// Collector is the collector the replay feeds.
func (r *replayed) Collector() *collector.Collector { return r.c }

// newReplayed reads the recording src with NewReplay and starts it into a
// new collector of opts on the replay's clock (and opts' wall clock).
func newReplayed(name string, src io.Reader, speed float64, opts collector.Options) (*replayed, error) {
	rp, err := NewReplay(name, src, speed, ReplayOptions{WallClock: opts.WallClock})
	if err != nil {
		return nil, err
	}
	opts.Clock, opts.Mode, opts.Source = rp.Clock(), collector.ModeReplay, rp.Name()
	c := collector.New(opts)
	if err := rp.Start(c); err != nil {
		return nil, err
	}
	c.Publish()
	return &replayed{rp, c}, nil
}
