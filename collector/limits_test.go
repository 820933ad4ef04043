package collector

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sentinel-top/sentinel-top/collector/source"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// peer is a hostile or broken stream: serve runs for each connection, with
// its number (0 for the first).
func peer(t *testing.T, serve func(conn *websocket.Conn, n int)) source.Target {
	t.Helper()
	var conns atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer conn.Close()
		serve(conn, int(conns.Add(1)-1))
	}))
	t.Cleanup(srv.Close)
	return source.Target{Name: "peer", URL: "ws" + strings.TrimPrefix(srv.URL, "http") + source.DefaultStreamPath}
}

// dialPeer dials target until the test ends.
func dialPeer(t *testing.T, c *Collector, target source.Target, opts source.DialOptions) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { dial(ctx, c, []source.Target{target}, opts); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

func helloFrame(instance string) []byte {
	return fmt.Appendf(nil, `{"v":1,"kind":"hello","ts":%d,"instance":%q,"app":"flood","startedAt":%d,"bucketMs":500}`, t0ms, instance, t0ms)
}

func heartbeat(instance string, k int) []byte {
	return fmt.Appendf(nil, `{"v":1,"kind":"buckets","ts":%d,"instance":%q,"bucketMs":500,"items":[]}`, t0ms+int64(k)*500, instance)
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
func firstTarget(s *Snapshot) TargetStatus {
	if len(s.Targets) == 0 {
		return TargetStatus{}
	}
	return *s.Targets[0]
}

// byReason maps the snapshot's counters by reason.
func byReason(rc []RejectCount) map[string]int64 {
	m := map[string]int64{}
	for _, r := range rc {
		m[r.Reason] = r.Count
	}
	return m
}

func TestLimitMessageRatePerTarget(t *testing.T) {
	wall := core.NewVirtualClock(time.UnixMilli(t0ms)) // the token bucket's time
	c := New(Options{WallClock: wall})
	next := make(chan struct{})
	target := peer(t, func(conn *websocket.Conn, n int) {
		if n > 0 {
			return // one connection is enough
		}
		// 300 messages at once: the bucket holds 10 s at 10/s.
		send(conn, helloFrame("flood"))
		for k := 1; k < 300; k++ {
			send(conn, heartbeat("flood", k))
		}
		<-next
		for k := 300; k < 350; k++ {
			send(conn, heartbeat("flood", k))
		}
		// Leaving counts what is still pending.
		conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	})
	dialPeer(t, c, target, source.DialOptions{Seed: 1, MaxMessageRate: 10})
	eventually(t, "300 messages read", func() error {
		if st := firstTarget(c.Publish()); st.Messages != 300 {
			return fmt.Errorf("read %d", st.Messages)
		}
		return nil
	})
	if msgs, _, _ := c.Counters(); msgs != 100 {
		t.Fatalf("accepted %d of a 300-message burst, want the bucket's 100", msgs)
	}
	// One second refills 10 tokens: the next message passes and the dropped
	// ones are counted.
	wall.Advance(time.Second)
	close(next)
	eventually(t, "the rest counted", func() error {
		s := c.Publish()
		if got := byReason(s.Overflow)[ReasonMaxRate]; got != 240 || s.Messages != 110 {
			return fmt.Errorf("accepted %d, over the rate %d; want 110 and 240", s.Messages, got)
		}
		return nil
	})
}

func TestLimitFrameBytesDropsTheConnection(t *testing.T) {
	c := New(Options{})
	target := peer(t, func(conn *websocket.Conn, n int) {
		send(conn, helloFrame("big"), heartbeat("big", 1))
		// Over the limit by one byte: the collector stops reading and leaves.
		huge := fmt.Appendf(nil, `{"v":1,"kind":"buckets","ts":%d,"instance":"big","bucketMs":500,"items":[],"pad":"`, t0ms)
		huge = append(huge, strings.Repeat("x", 8<<10-len(huge)-1)...)
		huge = append(huge, `"}`...)
		send(conn, huge)
		conn.ReadMessage() // until the collector closes
	})
	dialPeer(t, c, target, source.DialOptions{Seed: 1, Limits: wire.Limits{MaxFrameBytes: 8 << 10}})
	eventually(t, "the oversized frame refused", func() error {
		s := c.Publish()
		st := firstTarget(s)
		if byReason(s.Rejects)["too_large"] == 0 || !strings.Contains(ProblemText(st.Problem), "frame over the 8192-byte limit") || st.Reconnects == 0 {
			return fmt.Errorf("rejects %+v, target %+v", s.Rejects, st)
		}
		return nil
	})
	if msgs, _, _ := c.Counters(); msgs < 2 {
		t.Fatalf("the messages before the oversized one were not kept: %d", msgs)
	}
}

func TestLimitNameBytesRejectsTheMessageOnly(t *testing.T) {
	c := New(Options{})
	long := strings.Repeat("r", 65)
	target := peer(t, func(conn *websocket.Conn, n int) {
		if n > 0 {
			return
		}
		send(conn, helloFrame("names"),
			fmt.Appendf(nil, `{"v":1,"kind":"buckets","ts":%d,"instance":"names","bucketMs":500,"items":[{"resource":%q,"start":%d,"pass":1}]}`, t0ms+500, long, t0ms),
			fmt.Appendf(nil, `{"v":1,"kind":"hello","ts":%d,"instance":%q,"app":"x","startedAt":1,"bucketMs":500}`, t0ms, strings.Repeat("i", 65)),
			fmt.Appendf(nil, `{"v":1,"kind":"buckets","ts":%d,"instance":"names","bucketMs":500,"items":[{"resource":"short","start":%d,"pass":3}]}`, t0ms+500, t0ms))
		conn.ReadMessage()
	})
	dialPeer(t, c, target, source.DialOptions{Seed: 1, Limits: wire.Limits{MaxNameBytes: 64}})
	eventually(t, "long names rejected, the rest kept", func() error {
		s := c.Publish()
		if got := byReason(s.Rejects)["name_too_long"]; got != 2 {
			return fmt.Errorf("rejects %+v", s.Rejects)
		}
		if tm, ok := c.Totals("names", "short"); !ok || tm.Pass != 3 {
			return fmt.Errorf("the message after the rejected ones: pass %d", tm.Pass)
		}
		return nil
	})
	if st := firstTarget(c.Publish()); st.Reconnects != 0 || st.Rejected != 2 {
		t.Fatalf("a long name must cost its message, not the connection: %+v", st)
	}
}

// TestReasonOfIsTheErrorsClass: the reject reason is the class of the
// error, whatever its words: a name or a hot value too long is
// name_too_long, a list or a frame too large too_large.
func TestReasonOfIsTheErrorsClass(t *testing.T) {
	d := wire.NewDecoder(wire.Limits{MaxNameBytes: 64, MaxItems: 1})
	decode := func(frame string) error {
		_, err := d.Decode([]byte(frame))
		return err
	}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"resource", decode(fmt.Sprintf(`{"v":1,"kind":"buckets","ts":1,"instance":"i","bucketMs":1,"items":[{"resource":%q,"start":1}]}`, strings.Repeat("r", 65))), ReasonNameTooLong},
		{"app", decode(fmt.Sprintf(`{"v":1,"kind":"hello","ts":1,"instance":"i","app":%q,"bucketMs":500}`, strings.Repeat("a", 65))), ReasonNameTooLong},
		{"hot value", decode(fmt.Sprintf(`{"v":1,"kind":"buckets","ts":1,"instance":"i","bucketMs":1,"items":[{"resource":"r","start":1,"hot":[{"value":%q}]}]}`, strings.Repeat("v", wire.MaxHotValueBytes+1))), ReasonNameTooLong},
		{"items", decode(`{"v":1,"kind":"buckets","ts":1,"instance":"i","bucketMs":1,"items":[{"resource":"r","start":1},{"resource":"r","start":2}]}`), ReasonTooLarge},
		{"wrapped name", fmt.Errorf("%w: resource name of 2000 bytes exceeds 1024", wire.ErrNameTooLong), ReasonNameTooLong},
		{"wrapped frame", fmt.Errorf("%w: frame over 8192 bytes", wire.ErrTooLarge), ReasonTooLarge},
		{"words alone", fmt.Errorf("9 bytes exceeds the limit of 8"), ReasonOther},
	} {
		if got := reasonOf(tc.err); got != tc.want {
			t.Errorf("%s: reason of %v is %s, want %s", tc.name, tc.err, got, tc.want)
		}
	}
}

func TestStalledConnectionIsDialedAgain(t *testing.T) {
	c := New(Options{})
	stalled := peer(t, func(conn *websocket.Conn, n int) {
		send(conn, helloFrame("stalled"))
		conn.ReadMessage() // then nothing, not even a ping
	})
	dialPeer(t, c, stalled, source.DialOptions{Seed: 1, IdleTimeout: 200 * time.Millisecond})
	eventually(t, "the stalled target dialed again", func() error {
		if st := firstTarget(c.Publish()); !strings.Contains(ProblemText(st.Problem), "stalled") || st.Reconnects == 0 {
			return fmt.Errorf("%+v", st)
		}
		return nil
	})

	// Pings alone keep a quiet connection up.
	c2 := New(Options{})
	quiet := peer(t, func(conn *websocket.Conn, n int) {
		pongs := make(chan struct{}, 100)
		conn.SetPongHandler(func(string) error { pongs <- struct{}{}; return nil })
		go func() {
			for {
				if _, _, err := conn.ReadMessage(); err != nil {
					close(pongs)
					return
				}
			}
		}()
		send(conn, helloFrame("quiet"))
		for {
			if conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(time.Second)) != nil {
				return
			}
			select {
			case _, ok := <-pongs:
				if !ok {
					return
				}
			case <-time.After(5 * time.Second):
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
	dialPeer(t, c2, quiet, source.DialOptions{Seed: 1, IdleTimeout: time.Second})
	time.Sleep(2500 * time.Millisecond)
	if st := firstTarget(c2.Publish()); st.State != TargetUp || st.Reconnects != 0 {
		t.Fatalf("a pinging connection was dropped: %+v", st)
	}
}

// TestLimitCountersInPrometheus turns messages away by every limit and
// finds each counter in the Prometheus exposition.
func TestLimitCountersInPrometheus(t *testing.T) {
	wall := core.NewVirtualClock(time.UnixMilli(t0ms))
	c := New(Options{MaxInstances: 2, MaxResourcesPerInstance: 1, WallClock: wall})
	target := peer(t, func(conn *websocket.Conn, n int) {
		if n > 0 {
			return
		}
		frames := [][]byte{helloFrame("a"), helloFrame("b"), helloFrame("c"),
			fmt.Appendf(nil, `{"v":1,"kind":"buckets","ts":%d,"instance":"a","bucketMs":500,"items":[{"resource":"r1","start":%d,"pass":1},{"resource":"r2","start":%d,"pass":1}]}`, t0ms+500, t0ms, t0ms),
			fmt.Appendf(nil, `{"v":1,"kind":"hello","ts":%d,"instance":%q,"bucketMs":500}`, t0ms, strings.Repeat("n", 65))}
		for len(frames) < 12 {
			frames = append(frames, heartbeat("a", len(frames))) // 10 tokens, 12 messages
		}
		send(conn, frames...)
		send(conn, []byte(`{"v":1,"kind":"bye","ts":1,"instance":"a","pad":"`+strings.Repeat("x", 9<<10)+`"}`))
		conn.ReadMessage()
	})
	dialPeer(t, c, target, source.DialOptions{Seed: 1, MaxMessageRate: 1, Limits: wire.Limits{MaxFrameBytes: 8 << 10, MaxNameBytes: 64}})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c.PrometheusCollector())
	want := map[string]bool{
		`sentinel_top_limit_overflow_total{limit="max_instances"}`:     true,
		`sentinel_top_limit_overflow_total{limit="max_resources"}`:     true,
		`sentinel_top_limit_overflow_total{limit="max_rate"}`:          true,
		`sentinel_top_messages_rejected_total{reason="name_too_long"}`: true,
		`sentinel_top_messages_rejected_total{reason="too_large"}`:     true,
	}
	eventually(t, "every limit counted", func() error {
		c.Publish() // a scrape reads the published snapshot (Run publishes in serve)
		mfs, err := reg.Gather()
		if err != nil {
			return err
		}
		seen := map[string]bool{}
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				if m.GetCounter().GetValue() > 0 && len(m.GetLabel()) == 1 {
					seen[fmt.Sprintf("%s{%s=%q}", mf.GetName(), m.GetLabel()[0].GetName(), m.GetLabel()[0].GetValue())] = true
				}
			}
		}
		for k := range want {
			if !seen[k] {
				return fmt.Errorf("no %s", k)
			}
		}
		return nil
	})
}

// A target's Items counts the items of its buckets messages that decoded,
// a duplicate's too, and nothing of a frame turned away.
func TestTargetItemsCounted(t *testing.T) {
	c := New(Options{})
	buckets := func(k int, resources ...string) []byte {
		b := fmt.Appendf(nil, `{"v":1,"kind":"buckets","ts":%d,"instance":"items","bucketMs":500,"items":[`, t0ms+int64(k)*500+10)
		for i, r := range resources {
			if i > 0 {
				b = append(b, ',')
			}
			b = fmt.Appendf(b, `{"resource":%q,"start":%d,"pass":1}`, r, t0ms+int64(k)*500)
		}
		return append(b, "]}"...)
	}
	target := peer(t, func(conn *websocket.Conn, n int) {
		if n == 0 {
			send(conn, helloFrame("items"), buckets(0, "a", "b"), buckets(1, "a", "b", "c"), buckets(1, "a", "b", "c"),
				[]byte(`{"v":1,"kind":"buckets","ts":1,"instance":"items","bucketMs":500,"items":[{"resource":`), heartbeat("items", 2))
		}
		for { // open until the collector leaves
			if _, _, err := conn.ReadMessage(); err != nil {
				return
			}
		}
	})
	dialPeer(t, c, target, source.DialOptions{Seed: 1})
	eventually(t, "6 messages read", func() error {
		if st := firstTarget(c.Publish()); st.Messages != 6 || st.Items != 8 || st.Rejected != 1 {
			return fmt.Errorf("read %d messages, %d items, %d rejected; want 6, 8, 1", st.Messages, st.Items, st.Rejected)
		}
		return nil
	})
}

// TestDecodedNamesAreCharged: the names a peer's frames carry are kept by
// the decoders (the shared pool, then each connection's own set), and that
// memory is charged to the budget and shown (Snapshot.MemoryNames), the
// connection's own part given back when it ends. A peer sending endless new
// names fills the pool once, then only its connection's bounded set.
func TestDecodedNamesAreCharged(t *testing.T) {
	clock := core.NewVirtualClock(time.UnixMilli(t0ms))
	c := New(Options{Clock: clock, MaxMemory: 64 << 20})
	release := make(chan struct{})
	sent := make(chan struct{})
	target := peer(t, func(conn *websocket.Conn, n int) {
		if n > 0 {
			<-release
			return
		}
		if !send(conn, helloFrame("names-1")) {
			return
		}
		for f := range 600 { // 12,000 names of 400 bytes: past the pool's 4 MiB
			items := make([]wire.BucketItem, 20)
			for k := range items {
				name := fmt.Sprintf("%04d-%02d-%s", f, k, strings.Repeat("n", 392))
				items[k] = wire.NewBucketItem(name, t0ms, core.Metrics{Pass: 1}, false)
			}
			frame, err := wire.Append(nil, &wire.Buckets{Header: wire.Header{Ts: t0ms + 500, Instance: "names-1"}, BucketMs: 500, Items: items})
			if err != nil {
				t.Error(err)
				return
			}
			if !send(conn, frame) {
				return
			}
		}
		close(sent)
		<-release
	})
	dialPeer(t, c, target, source.DialOptions{Seed: 1})
	select {
	case <-sent:
	case <-time.After(20 * time.Second):
		t.Fatal("the peer could not send its frames")
	}
	var s *Snapshot
	deadline := time.Now().Add(10 * time.Second)
	for {
		s = c.Publish()
		if firstTarget(s).Messages == 601 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	pool := c.names.Stats()
	if pool.Refused == 0 || pool.Bytes < 3<<20 {
		t.Fatalf("the pool was not filled: %+v (target %+v)", pool, firstTarget(s))
	}
	// The pool's, and the connection's own set: at most a MiB of names.
	if s.MemoryNames < pool.Held()+(1<<19) || s.MemoryNames > pool.Held()+(1<<20)+(1<<20/400+1)*48 {
		t.Errorf("names charged %d, the pool holds %d", s.MemoryNames, pool.Held())
	}
	if s.MemoryUsed < s.MemoryNames {
		t.Errorf("memory used %d, of it names %d", s.MemoryUsed, s.MemoryNames)
	}
	if got := scrape(t, c)["sentinel_top_memory_bytes{of=names}"]; got != float64(s.MemoryNames) {
		t.Errorf("/metrics shows %v bytes of names, the snapshot %d", got, s.MemoryNames)
	}
	close(release) // the connection ends, and with it the decoder's own names
	deadline = time.Now().Add(10 * time.Second)
	for {
		s = c.Publish()
		if s.MemoryNames == pool.Held() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("names charged %d after the connection ended, the pool holds %d", s.MemoryNames, pool.Held())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
