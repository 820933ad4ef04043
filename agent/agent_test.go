package agent

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/goleak"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

var t0 = time.UnixMilli(1764460800000)

// testAgent is an agent on a virtual clock serving on a loopback port.
type testAgent struct {
	*Agent
	clock *core.VirtualClock
	url   string
	sync  *client // a reader used to know when a bucket period was shipped
}

func startAgent(t *testing.T, opts Options) *testAgent {
	t.Helper()
	clock := core.NewVirtualClock(t0)
	opts.Clock = clock
	if opts.App == "" {
		opts.App = "gateway"
	}
	if opts.Instance == "" {
		opts.Instance = "gateway-1"
	}
	a, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ta := &testAgent{Agent: a, clock: clock, url: "ws://" + serveLoopback(t, a, nil) + StreamPath}
	// The ship loop is aligned with an AfterFunc: wait for it, then for its ticker.
	waitFor(t, func() bool { return clock.Pending() > 0 })
	return ta
}

// serveLoopback serves a on a loopback port until the test ends, each
// accepted connection passed through wrap first (nil: as accepted), and
// gives its address; Serve must then end as Close makes it.
func serveLoopback(t *testing.T, a *Agent, wrap func(net.Conn) net.Conn) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if wrap != nil {
		ln = wrappedListener{ln, wrap}
	}
	served := make(chan error, 1)
	go func() { served <- a.Serve(ln) }()
	t.Cleanup(func() {
		a.Close()
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve returned %v", err)
		}
	})
	return ln.Addr().String()
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting")
		}
		time.Sleep(time.Millisecond)
	}
}

// client is a real websocket reader of the stream.
type client struct {
	t    *testing.T
	conn *websocket.Conn
	dec  *wire.Decoder
}

func dial(t *testing.T, url string, header http.Header) (*client, *http.Response, error) {
	t.Helper()
	conn, resp, err := websocket.DefaultDialer.Dial(url, header)
	if err != nil {
		return nil, resp, err
	}
	c := &client{t: t, conn: conn, dec: wire.NewDecoder(wire.Limits{})}
	t.Cleanup(func() { conn.Close() })
	return c, resp, nil
}

func mustDial(t *testing.T, url string) *client {
	t.Helper()
	c, _, err := dial(t, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// keepReading reads the connection in the background until the test ends
// (the client's next may not be used any more), counting the messages, and
// returns once the agent has had the pong of its first ping: its own pong
// to a later ping says so. ended is closed when the connection ends.
func (c *client) keepReading() (messages *atomic.Int64, ended <-chan struct{}) {
	c.t.Helper()
	first, pong, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	messages = new(atomic.Int64)
	var once sync.Once
	c.conn.SetPongHandler(func(string) error { once.Do(func() { close(pong) }); return nil })
	go func() {
		defer close(done)
		for {
			if _, _, err := c.conn.NextReader(); err != nil {
				return
			}
			if messages.Add(1) == 1 {
				close(first) // after the ping, answered while reading
			}
		}
	}()
	wait := func(ch chan struct{}) {
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
			c.t.Fatal("the agent did not take the reader's pong")
		}
	}
	wait(first)
	_ = c.conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(5*time.Second))
	wait(pong)
	return messages, done
}

// next reads one message, keeping it (decoders reuse buffers).
func (c *client) next() wire.Message {
	c.t.Helper()
	_ = c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, data, err := c.conn.ReadMessage()
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	m, err := c.dec.Decode(data)
	if err != nil {
		c.t.Fatalf("decode %s: %v", data, err)
	}
	return wire.Clone(m)
}

// until reads messages until one satisfies stop, returning all of them.
func (c *client) until(stop func(wire.Message) bool) []wire.Message {
	c.t.Helper()
	var out []wire.Message
	for {
		m := c.next()
		out = append(out, m)
		if stop(m) {
			return out
		}
	}
}

// advance moves the clock to the next bucket boundary, then one bucket
// period at a time until d has passed, waiting at each boundary for the sync
// reader to see that boundary's buckets message.
func (ta *testAgent) advance(t *testing.T, d time.Duration) {
	t.Helper()
	if ta.sync == nil {
		ta.sync = mustDial(t, ta.url)
		ta.sync.until(func(m wire.Message) bool { _, ok := m.(*wire.Rules); return ok })
	}
	end := ta.clock.UnixMilli() + d.Milliseconds()
	for ta.clock.UnixMilli() < end {
		now := ta.clock.UnixMilli()
		boundary := now - now%500 + 500
		ta.clock.Advance(time.Duration(boundary-now) * time.Millisecond)
		ta.sync.until(func(m wire.Message) bool {
			b, ok := m.(*wire.Buckets)
			return ok && b.Ts >= boundary
		})
	}
}

// traffic runs n calls of rt on resource, failing when fail is set.
func (ta *testAgent) traffic(t *testing.T, resource string, n int, rt time.Duration, fail bool) {
	t.Helper()
	for i := 0; i < n; i++ {
		e, err := ta.Entry(resource)
		if err != nil {
			continue
		}
		if rt > 0 {
			ta.clock.Advance(rt)
		}
		var cause error
		if fail {
			cause = errors.New("boom")
		}
		e.Exit(cause)
	}
}

// burst runs n concurrent calls that each take rt.
func (ta *testAgent) burst(t *testing.T, resource string, n int, rt time.Duration) {
	t.Helper()
	var entries []*core.Entry
	for i := 0; i < n; i++ {
		if e, err := ta.Entry(resource); err == nil {
			entries = append(entries, e)
		}
	}
	ta.clock.Advance(rt)
	for _, e := range entries {
		e.Exit(nil)
	}
}

var slowRule = core.BreakerRule{Resource: "priceService:queryPrice", Strategy: core.SlowRequestRatio,
	RetryTimeoutMs: 10000, MinRequestAmount: 5, StatIntervalMs: 1000, MaxAllowedRtMs: 200, Threshold: 0.5}

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestStreamOrderOnConnect(t *testing.T) {
	ta := startAgent(t, Options{})
	if err := ta.LoadRules([]core.BreakerRule{slowRule}, nil); err != nil {
		t.Fatal(err)
	}
	ta.traffic(t, "createOrder", 7, 0, false)
	ta.advance(t, time.Second)

	c := mustDial(t, ta.url)
	hello, ok := c.next().(*wire.Hello)
	if !ok || hello.Instance != "gateway-1" || hello.App != "gateway" || hello.BucketMs != 500 || hello.StartedAt != t0.UnixMilli() || hello.SDK != SDK {
		t.Fatalf("first message %+v", hello)
	}
	rules, ok := c.next().(*wire.Rules)
	if !ok || len(rules.Breakers) != 1 || rules.Breakers[0] != slowRule || rules.Version != ta.RulesVersion() {
		t.Fatalf("second message %+v", rules)
	}
	backlog, ok := c.next().(*wire.Buckets)
	if !ok || len(backlog.Items) != 1 || backlog.Items[0].Resource != "createOrder" || backlog.Items[0].Pass != 7 ||
		backlog.Items[0].Start != t0.UnixMilli() {
		t.Fatalf("backlog %+v", backlog)
	}

	// Live: a breaker trips; its state message and the bucket follow.
	ta.burst(t, slowRule.Resource, 5, 300*time.Millisecond)
	msgs := c.until(func(m wire.Message) bool { _, ok := m.(*wire.State); return ok })
	st := msgs[len(msgs)-1].(*wire.State)
	if st.From != core.Closed || st.To != core.Open || st.Snapshot == nil || st.Snapshot.Total != 5 || st.Snapshot.Slow != 5 ||
		st.Threshold != 0.5 || st.RetryTimeoutMs != 10000 {
		t.Fatalf("state %+v snapshot %+v", st, st.Snapshot)
	}
	ta.advance(t, time.Second)
	var slow int64
	for _, m := range c.until(func(m wire.Message) bool { b, ok := m.(*wire.Buckets); return ok && b.Ts == ta.clock.UnixMilli() }) {
		if b, ok := m.(*wire.Buckets); ok {
			for _, it := range b.Items {
				if it.Resource == slowRule.Resource {
					slow += it.Slow
				}
			}
		}
	}
	if slow != 5 {
		t.Fatalf("%d slow completions shipped, want 5", slow)
	}
}

func TestRulesBroadcastOnChange(t *testing.T) {
	ta := startAgent(t, Options{})
	c := mustDial(t, ta.url)
	c.next() // hello
	first := c.next().(*wire.Rules)
	if len(first.Breakers) != 0 || first.Version == "" {
		t.Fatalf("initial rules %+v", first)
	}
	flow := core.FlowRule{Resource: "createOrder", Threshold: 200}
	if err := ta.LoadRules(nil, []core.FlowRule{flow}); err != nil {
		t.Fatal(err)
	}
	second := c.until(func(m wire.Message) bool { _, ok := m.(*wire.Rules); return ok })
	r := second[len(second)-1].(*wire.Rules)
	if len(r.Flows) != 1 || r.Flows[0] != flow || r.Version == first.Version {
		t.Fatalf("rules after load %+v", r)
	}
	if err := ta.LoadRules([]core.BreakerRule{{Resource: "x"}}, nil); err == nil || !errors.Is(err, core.ErrInvalidRule) {
		t.Fatalf("invalid rules accepted: %v", err)
	}
	if ta.RulesVersion() != r.Version {
		t.Fatal("a rejected load changed the rules")
	}
}

func TestBacklogAfterReconnectHasNoDuplicates(t *testing.T) {
	ta := startAgent(t, Options{})
	seen := map[string]int{}
	count := func(msgs []wire.Message) map[string]int {
		mine := map[string]int{}
		for _, m := range msgs {
			if b, ok := m.(*wire.Buckets); ok {
				for _, it := range b.Items {
					key := fmt.Sprintf("%s@%d", it.Resource, it.Start)
					mine[key]++
					seen[key] += int(it.Pass)
				}
			}
		}
		return mine
	}
	c1 := mustDial(t, ta.url)
	for i := 0; i < 4; i++ {
		ta.traffic(t, "a", 3, 0, false)
		ta.advance(t, 500*time.Millisecond)
	}
	got1 := c1.until(func(m wire.Message) bool { b, ok := m.(*wire.Buckets); return ok && b.Ts == ta.clock.UnixMilli() })
	count(got1)
	c1.conn.Close()
	for i := 0; i < 4; i++ { // missed by the disconnected reader
		ta.traffic(t, "a", 3, 0, false)
		ta.advance(t, 500*time.Millisecond)
	}
	c2 := mustDial(t, ta.url)
	ta.advance(t, 500*time.Millisecond)
	got2 := c2.until(func(m wire.Message) bool { b, ok := m.(*wire.Buckets); return ok && b.Ts == ta.clock.UnixMilli() })
	for key, n := range count(got2) {
		if n != 1 {
			t.Fatalf("%s sent %d times on one connection", key, n)
		}
	}
	// Across both connections every bucket arrived; a collector keeps one of each.
	if len(seen) != 8 {
		t.Fatalf("%d distinct buckets seen, want 8: %v", len(seen), seen)
	}
}

func TestBacklogKeepsSixtySeconds(t *testing.T) {
	ta := startAgent(t, Options{})
	for i := 0; i < 70; i++ {
		ta.traffic(t, "a", 1, 0, false)
		ta.advance(t, time.Second)
	}
	c := mustDial(t, ta.url)
	c.next()
	c.next()
	oldest := ta.clock.UnixMilli()
	n := 0
	// The backlog is followed by nothing until the clock moves.
	for {
		_ = c.conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		_, data, err := c.conn.ReadMessage()
		if err != nil {
			break
		}
		m, err := c.dec.Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range m.(*wire.Buckets).Items {
			oldest = min(oldest, it.Start)
			n++
		}
	}
	if age := ta.clock.UnixMilli() - oldest; n != 60 || age > 61000 || age < 59000 {
		t.Fatalf("backlog of %d buckets reaching back %d ms", n, age)
	}
}

func TestTokenRequired(t *testing.T) {
	ta := startAgent(t, Options{Token: "s3cret"})
	for name, header := range map[string]http.Header{
		"none":   nil,
		"wrong":  {"Authorization": {"Bearer nope"}},
		"scheme": {"Authorization": {"Basic s3cret"}},
	} {
		_, resp, err := dial(t, ta.url, header)
		if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("%s: err=%v resp=%v", name, err, resp)
		}
	}
	c, _, err := dial(t, ta.url, http.Header{"Authorization": {"Bearer s3cret"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.next().(*wire.Hello); !ok {
		t.Fatal("no hello with the right token")
	}
}

func TestNotAWebsocketClient(t *testing.T) {
	ta := startAgent(t, Options{})
	resp, err := http.Get(strings.Replace(ta.url, "ws://", "http://", 1))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUpgradeRequired {
		t.Fatalf("status %d", resp.StatusCode)
	}
}

func TestTLS(t *testing.T) {
	// httptest generates a certificate; the agent serves with it.
	ts := httptest.NewUnstartedServer(http.NotFoundHandler())
	ts.StartTLS()
	cfg := ts.TLS.Clone()
	pool := x509.NewCertPool()
	pool.AddCert(ts.Certificate())
	ts.Close()

	clock := core.NewVirtualClock(t0)
	a, err := New(Options{App: "a", Instance: "a-1", Clock: clock, TLSConfig: cfg, Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Serve(ln) }()
	defer func() { a.Close(); <-done }()

	d := websocket.Dialer{TLSClientConfig: &tls.Config{RootCAs: pool}}
	conn, _, err := d.Dial("wss://"+ln.Addr().String()+StreamPath, http.Header{"Authorization": {"Bearer t"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, data, err := conn.ReadMessage()
	if err != nil || !strings.Contains(string(data), `"kind":"hello"`) {
		t.Fatalf("over TLS: %s %v", data, err)
	}
	// Plain websocket to a TLS port fails.
	if _, _, err := websocket.DefaultDialer.Dial("ws://"+ln.Addr().String()+StreamPath, nil); err == nil {
		t.Fatal("plain connection accepted on a TLS port")
	}
}

func TestConcurrentReadersGetTheSameStream(t *testing.T) {
	ta := startAgent(t, Options{})
	const readers = 5
	clients := make([]*client, readers)
	for i := range clients {
		clients[i] = mustDial(t, ta.url)
	}
	ta.traffic(t, "a", 4, 10*time.Millisecond, true)
	ta.advance(t, 2*time.Second)
	stop := func(m wire.Message) bool { b, ok := m.(*wire.Buckets); return ok && b.Ts == ta.clock.UnixMilli() }
	var want string
	for i, c := range clients {
		var sb strings.Builder
		for _, m := range c.until(stop) {
			data, _ := wire.Marshal(m)
			sb.Write(data)
			sb.WriteByte('\n')
		}
		if i == 0 {
			want = sb.String()
		} else if sb.String() != want {
			t.Fatalf("reader %d saw\n%s\nreader 0 saw\n%s", i, sb.String(), want)
		}
	}
	if !strings.Contains(want, `"error":4`) {
		t.Fatalf("stream misses the errors:\n%s", want)
	}
	if n, _ := ta.stream.Stats(); n != readers+1 {
		t.Fatalf("%d readers registered", n)
	}
}

func TestMaxReaders(t *testing.T) {
	ta := startAgent(t, Options{MaxReaders: 1})
	mustDial(t, ta.url).keepReading() // a reader that reads keeps its slot
	_, resp, err := dial(t, ta.url, nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("second reader: err=%v resp=%v", err, resp)
	}
}

func TestByeOnClose(t *testing.T) {
	ta := startAgent(t, Options{})
	c := mustDial(t, ta.url)
	c.next()
	c.next()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); ta.Close() }()
	msgs := c.until(func(m wire.Message) bool { _, ok := m.(*wire.Bye); return ok })
	bye := msgs[len(msgs)-1].(*wire.Bye)
	if bye.Instance != "gateway-1" || bye.Reason != "shutdown" {
		t.Fatalf("bye %+v", bye)
	}
	_, _, err := c.conn.ReadMessage()
	if !websocket.IsCloseError(err, websocket.CloseGoingAway) {
		t.Fatalf("after bye: %v", err)
	}
	wg.Wait()
	if _, resp, err := dial(t, ta.url, nil); err == nil {
		t.Fatalf("connected after Close: %v", resp)
	}
}

func TestStalledReaderLosesMessagesCounted(t *testing.T) {
	ta := startAgent(t, Options{QueueLen: 2, WriteTimeout: time.Minute})
	stalled := mustDial(t, ta.url)
	// Big frames fill the socket buffers of a reader that does not read.
	names := make([]string, 800)
	for i := range names {
		names[i] = fmt.Sprintf("resource-%04d-%s", i, strings.Repeat("x", 100))
	}
	for period := 0; period < 40; period++ {
		for _, n := range names {
			ta.traffic(t, n, 1, 0, false)
		}
		ta.advance(t, 500*time.Millisecond)
	}
	_, dropped := ta.stream.Stats()
	if dropped == 0 {
		t.Fatal("nothing was dropped for a reader that never read")
	}
	// The reader resumes: it learns how much it lost, in the "dropped" field
	// of the buckets messages that reach it. Its own last frames may have
	// been dropped too, so periods keep coming until it has caught up.
	msgs := make(chan wire.Message, 64)
	go func() {
		defer close(msgs)
		for {
			_, data, err := stalled.conn.ReadMessage()
			if err != nil {
				return
			}
			m, err := stalled.dec.Decode(data)
			if err != nil {
				return
			}
			msgs <- wire.Clone(m)
		}
	}()
	var told int64
	deadline := time.After(20 * time.Second)
	for {
		select {
		case m, ok := <-msgs:
			if !ok {
				t.Fatal("stalled reader disconnected")
			}
			if b, isB := m.(*wire.Buckets); isB {
				told += b.Dropped
				if b.Ts == ta.clock.UnixMilli() && told == ta.Stats().Dropped {
					stalled.conn.Close()
					return
				}
			}
		case <-time.After(100 * time.Millisecond):
			ta.advance(t, 500*time.Millisecond)
		case <-deadline:
			t.Fatalf("told %d, stats %+v", told, ta.Stats())
		}
	}
}

func TestOptionsDefaults(t *testing.T) {
	a, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	o := a.opts
	if o.App == "" || o.Instance == "" || o.Host == "" || o.Backlog != DefaultBacklog || o.QueueLen != DefaultQueueLen ||
		o.MaxReaders != DefaultMaxReaders || o.WriteTimeout != DefaultWriteTimeout || o.PingInterval != DefaultPingInterval {
		t.Fatalf("defaults %+v", o)
	}
	if _, err := New(Options{Instance: strings.Repeat("x", 300)}); err == nil {
		t.Fatal("oversized instance accepted")
	}
}

func TestManualShipAndSubscription(t *testing.T) {
	clock := core.NewVirtualClock(t0)
	a, err := New(Options{App: "sim", Instance: "sim-1", Clock: clock, ManualShip: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	sub, err := a.Subscribe(64)
	if err != nil {
		t.Fatal(err)
	}
	e, _ := a.Entry("r")
	clock.Advance(700 * time.Millisecond)
	e.Exit(nil)
	if clock.Pending() != 0 {
		t.Fatal("a manual agent armed a timer")
	}
	a.Ship()
	msgs, err := sub.Frames()
	if err != nil {
		t.Fatal(err)
	}
	kinds := ""
	for _, m := range msgs {
		kinds += string(m.Kind()) + " "
	}
	if kinds != "hello rules buckets " {
		t.Fatalf("kinds %q", kinds)
	}
	it := msgs[2].(*wire.Buckets).Items
	if len(it) != 1 || it[0].Pass != 1 || it[0].Start != t0.UnixMilli() {
		t.Fatalf("items %+v", it)
	}
	a.Close()
	msgs, _ = sub.Frames()
	if len(msgs) == 0 || msgs[len(msgs)-1].Kind() != wire.KindBye {
		t.Fatalf("no bye after Close: %v", msgs)
	}
}

// TestNewReaderLearnsBreakerStates: a reader that subscribes after a
// breaker opened receives its trip after hello and rules; after the rules
// are loaded again unchanged it still does, and after a rule change (the
// breaker starts over CLOSED, without a transition) it does not.
func TestNewReaderLearnsBreakerStates(t *testing.T) {
	clock := core.NewVirtualClock(time.UnixMilli(1764460800000))
	a, err := New(Options{App: "a", Instance: "a-1", Clock: clock, ManualShip: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	rule := core.BreakerRule{Resource: "db", Strategy: core.ErrorCount, Threshold: 2, MinRequestAmount: 1,
		StatIntervalMs: 1000, RetryTimeoutMs: 60_000}
	if err := a.LoadRules([]core.BreakerRule{rule}, nil); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if e, err := a.Entry("db"); err == nil {
			e.Exit(errors.New("down"))
		}
	}
	states := func() string {
		t.Helper()
		sub, err := a.Subscribe(64)
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		msgs, err := sub.Frames()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range msgs {
			if s, ok := m.(*wire.State); ok {
				out = append(out, s.From.String()+">"+s.To.String())
			}
		}
		return strings.Join(out, " ")
	}
	if got := states(); got != "CLOSED>OPEN" {
		t.Fatalf("a reader after the trip receives %q", got)
	}
	for range 200 { // 100 s: the trip is older than the backlog
		clock.Advance(500 * time.Millisecond)
		a.Ship()
	}
	if got := states(); got != "CLOSED>OPEN" {
		t.Fatalf("100 s later a new reader receives %q; want the breaker's last transition", got)
	}
	if err := a.LoadRules([]core.BreakerRule{rule}, nil); err != nil {
		t.Fatal(err)
	}
	if got := states(); got != "CLOSED>OPEN" {
		t.Fatalf("after the same rules again: %q", got)
	}
	rule.Threshold = 5
	if err := a.LoadRules([]core.BreakerRule{rule}, nil); err != nil {
		t.Fatal(err)
	}
	if got := states(); got != "" {
		t.Fatalf("after a rule change: %q; want none (the new breaker is CLOSED)", got)
	}
}
