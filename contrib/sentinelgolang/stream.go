package sentinelgolang

import (
	"cmp"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// The stream follows wire v1's transport section and the agent's
// behaviour: hello, the rules, the backlog of closed buckets, then live
// buckets and transitions; a bounded queue per reader that never makes the
// service wait; bye on Close.

// frame is one encoded message, shared read-only by every reader.
type frame struct {
	msg  wire.Message
	data []byte
}

func encodeFrame(m wire.Message) (*frame, error) {
	data, err := wire.Marshal(m)
	if err != nil {
		return nil, err
	}
	return &frame{msg: m, data: data}, nil
}

// reader is one stream connection's queue.
type reader struct {
	queue   chan *frame
	dropped atomic.Int64 // since the last buckets message it was told about
	bye     chan *frame
}

// hub fans frames out to readers without ever waiting for one. Its lock
// orders registration against what is queued, so that a new reader's
// initial frames and its live ones neither overlap nor leave a gap.
type hub struct {
	mu       sync.Mutex
	readers  []*reader
	queueLen int
	dropped  atomic.Int64
	closed   bool
}

func newHub(queueLen int) *hub { return &hub{queueLen: queueLen} }

func (h *hub) broadcast(f *frame) {
	h.mu.Lock()
	h.broadcastLocked(f)
	h.mu.Unlock()
}

func (h *hub) broadcastLocked(f *frame) {
	for _, r := range h.readers {
		select {
		case r.queue <- f:
		default:
			r.dropped.Add(1)
			h.dropped.Add(1)
		}
	}
}

var (
	errClosed = errors.New("adapter is shutting down")
	errFull   = errors.New("too many stream readers")
)

func (h *hub) register(max int, initial func()) (*reader, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, errClosed
	}
	if len(h.readers) >= max {
		return nil, errFull
	}
	r := &reader{queue: make(chan *frame, h.queueLen), bye: make(chan *frame, 1)}
	initial()
	h.readers = append(h.readers, r)
	return r, nil
}

func (h *hub) unregister(r *reader) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.readers = slices.DeleteFunc(h.readers, func(x *reader) bool { return x == r })
}

func (h *hub) closeAll(bye *frame) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for _, r := range h.readers {
		r.bye <- bye
	}
}

func (h *hub) stats() (int, int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.readers), h.dropped.Load()
}

// backlog keeps the buckets frames of the last periods for new readers.
type backlog struct {
	periods [][]*frame
	head, n int
}

func newBacklog(periods int) *backlog { return &backlog{periods: make([][]*frame, max(periods, 1))} }

func (b *backlog) add(frames []*frame) {
	i := (b.head + b.n) % len(b.periods)
	if b.n == len(b.periods) {
		b.head = (b.head + 1) % len(b.periods)
	} else {
		b.n++
	}
	b.periods[i] = frames
}

// frames returns the held frames, oldest first, without heartbeats.
func (b *backlog) frames() []*frame {
	var out []*frame
	for k := 0; k < b.n; k++ {
		for _, f := range b.periods[(b.head+k)%len(b.periods)] {
			if bm, ok := f.msg.(*wire.Buckets); ok && len(bm.Items) == 0 {
				continue
			}
			out = append(out, f)
		}
	}
	return out
}

// shipLoop ships every closed bucket right after it closes.
func (a *Adapter) shipLoop(wake chan struct{}, timer core.Timer) {
	defer a.wg.Done()
	for {
		select {
		case <-a.done:
			timer.Stop()
			return
		case <-wake:
			timer = a.armShipTimer(wake)
			a.RefreshRules()
			a.Ship()
		}
	}
}

func (a *Adapter) armShipTimer(wake chan struct{}) core.Timer {
	now := a.clock.UnixMilli()
	boundary := now - now%a.bucketMs + a.bucketMs
	return a.clock.AfterFunc(time.Duration(boundary-now)*time.Millisecond, func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	})
}

// Ship sends every bucket closed since the last call. The adapter calls it
// at each bucket boundary.
func (a *Adapter) Ship() {
	defer a.recoverPanic()
	a.shipMu.Lock()
	defer a.shipMu.Unlock()
	now := a.clock.UnixMilli()
	cur := now - now%a.bucketMs
	next := a.nextShip
	if oldest := cur - core.ResourceIntervalMs + a.bucketMs; next < oldest {
		next = oldest // older buckets have been overwritten
	}
	next = min(next, cur)
	res := make([]*resource, 0, len(*a.resources.Load()))
	for _, r := range *a.resources.Load() {
		res = append(res, r)
	}
	slices.SortFunc(res, func(x, y *resource) int { return cmp.Compare(x.name, y.name) })
	for start := next; start < cur; start += a.bucketMs {
		frames := a.collect(start, now, res)
		a.hub.mu.Lock()
		a.backlog.add(frames)
		for _, f := range frames {
			a.hub.broadcastLocked(f)
		}
		a.hub.mu.Unlock()
	}
	a.nextShip = cur
}

// collect builds the frames of the bucket starting at start: one item per
// resource with any activity, split into frames of ItemsPerFrame; a frame
// without items is a heartbeat.
func (a *Adapter) collect(start, now int64, res []*resource) []*frame {
	var items []wire.BucketItem
	for _, r := range res {
		inflight := r.inflight.Load()
		var m core.Metrics
		if b, ok := r.stat.Lookup(start); ok {
			m = b.Snapshot()
		}
		if m.Pass == 0 && m.Block == 0 && m.Complete == 0 && inflight <= 0 {
			continue
		}
		m.Concurrency = inflight // wire v1: in flight when the bucket closed
		items = append(items, wire.NewBucketItem(r.name, start, m, true))
	}
	var frames []*frame
	for {
		n := min(len(items), a.opts.ItemsPerFrame)
		f, err := encodeFrame(&wire.Buckets{Header: wire.Header{Ts: now, Instance: a.opts.Instance},
			BucketMs: a.bucketMs, Items: items[:n:n]})
		if err == nil {
			frames = append(frames, f)
		}
		items = items[n:]
		if len(items) == 0 {
			return frames
		}
	}
}

// track counts a goroutine about to start, unless the adapter is closing.
func (a *Adapter) track() bool {
	a.lifeMu.Lock()
	defer a.lifeMu.Unlock()
	if a.isClosed {
		return false
	}
	a.wg.Add(1)
	return true
}

// Handler returns the stream endpoint, for services that mount it on their
// own server (at StreamPath, by convention). Browsers must be same-origin;
// clients that send no Origin, as collectors do, are accepted. The token,
// when set, is checked first, in constant time.
func (a *Adapter) Handler() http.Handler { return http.HandlerFunc(a.serveStream) }

var upgrader = websocket.Upgrader{ReadBufferSize: 1024, WriteBufferSize: 32 << 10, HandshakeTimeout: 10 * time.Second}

func (a *Adapter) authorized(req *http.Request) bool {
	if a.opts.Token == "" {
		return true
	}
	got, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(a.opts.Token)) == 1
}

func (a *Adapter) serveStream(w http.ResponseWriter, req *http.Request) {
	if !a.authorized(req) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="sentinel-top"`)
		http.Error(w, "401 unauthorized: a valid bearer token is required", http.StatusUnauthorized)
		return
	}
	if !websocket.IsWebSocketUpgrade(req) {
		http.Error(w, "this is a sentinel-top wire v1 websocket stream; connect with a websocket client", http.StatusUpgradeRequired)
		return
	}
	var initial []*frame
	r, err := a.hub.register(a.opts.MaxReaders, func() { initial = a.initialFrames() })
	if err != nil {
		http.Error(w, "503 "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	if !a.track() {
		a.hub.unregister(r)
		http.Error(w, "503 "+errClosed.Error(), http.StatusServiceUnavailable)
		return
	}
	conn, err := upgrader.Upgrade(w, req, nil)
	if err != nil {
		a.hub.unregister(r)
		a.wg.Done()
		return
	}
	go a.serveConn(conn, r, initial)
}

// initialFrames is what a new connection receives first; the hub's lock is held.
func (a *Adapter) initialFrames() []*frame {
	hello, err := encodeFrame(&wire.Hello{
		Header:    wire.Header{Ts: a.clock.UnixMilli(), Instance: a.opts.Instance},
		App:       a.opts.App,
		Host:      a.opts.Host,
		Pid:       int64(os.Getpid()),
		StartedAt: a.startedAt,
		SDK:       SDK,
		BucketMs:  a.bucketMs,
	})
	if err != nil {
		return nil
	}
	out := []*frame{hello}
	if f := a.rules.Load().frame; f != nil {
		out = append(out, f)
	}
	return append(out, a.backlog.frames()...)
}

func (a *Adapter) serveConn(conn *websocket.Conn, r *reader, initial []*frame) {
	defer a.wg.Done()
	defer a.recoverPanic()
	defer a.hub.unregister(r)
	conn.SetReadLimit(4 << 10)
	_ = conn.SetReadDeadline(time.Now().Add(3 * a.opts.PingInterval))
	conn.SetPongHandler(func(string) error { return conn.SetReadDeadline(time.Now().Add(3 * a.opts.PingInterval)) })
	peerGone := make(chan struct{})
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer close(peerGone)
		for {
			if _, _, err := conn.NextReader(); err != nil {
				return
			}
		}
	}()
	defer func() {
		conn.Close()
		<-peerGone
	}()
	write := func(data []byte) bool {
		_ = conn.SetWriteDeadline(time.Now().Add(a.opts.WriteTimeout))
		return conn.WriteMessage(websocket.TextMessage, data) == nil
	}
	for _, f := range initial {
		if !write(f.data) {
			return
		}
	}
	ping := time.NewTicker(a.opts.PingInterval)
	defer ping.Stop()
	for {
		select {
		case f := <-r.queue:
			if !write(withDropped(r, f)) {
				return
			}
		case bye := <-r.bye:
			write(bye.data)
			_ = conn.WriteControl(websocket.CloseMessage,
				websocket.FormatCloseMessage(websocket.CloseGoingAway, "shutdown"), time.Now().Add(time.Second))
			return
		case <-ping.C:
			if conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(a.opts.WriteTimeout)) != nil {
				return
			}
		case <-peerGone:
			return
		}
	}
}

// withDropped re-encodes a buckets frame with the count of messages this
// reader lost since it was last told.
func withDropped(r *reader, f *frame) []byte {
	b, ok := f.msg.(*wire.Buckets)
	if !ok || r.dropped.Load() == 0 {
		return f.data
	}
	c := *b
	c.Dropped = r.dropped.Swap(0)
	return wire.AppendBuckets(nil, &c)
}

// Serve serves the stream at StreamPath on ln (TLS when Options.TLSConfig
// is set) until Close; it then returns http.ErrServerClosed.
func (a *Adapter) Serve(ln net.Listener) error {
	if a.opts.TLSConfig != nil {
		ln = tls.NewListener(ln, a.opts.TLSConfig)
	}
	mux := http.NewServeMux()
	mux.Handle(StreamPath, a.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	if !a.track() {
		_ = ln.Close()
		return http.ErrServerClosed
	}
	go func() {
		defer a.wg.Done()
		<-a.done
		_ = srv.Close()
	}()
	return srv.Serve(ln)
}

// ListenAndServe listens on addr (DefaultAddr when empty) and calls Serve.
func (a *Adapter) ListenAndServe(addr string) error {
	ln, err := net.Listen("tcp", cmp.Or(addr, DefaultAddr))
	if err != nil {
		return err
	}
	return a.Serve(ln)
}

// Close ships what is closed, sends bye to every reader, closes the
// connections and waits for the adapter's goroutines. The slot and the
// listener stay in sentinel-golang and do nothing from then on.
func (a *Adapter) Close() error {
	a.closeOnce.Do(func() {
		a.Ship()
		a.closed.Store(true)
		a.lifeMu.Lock()
		a.isClosed = true
		a.lifeMu.Unlock()
		bye, err := encodeFrame(&wire.Bye{Header: wire.Header{Ts: a.clock.UnixMilli(), Instance: a.opts.Instance}, Reason: "shutdown"})
		if err == nil {
			a.hub.closeAll(bye)
		}
		close(a.done)
	})
	a.wg.Wait()
	return nil
}
