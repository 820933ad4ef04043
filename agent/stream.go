package agent

import (
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/sentinel-top/sentinel-top/core/wire"
)

// StreamPath is where Serve and ListenAndServe serve the stream.
const StreamPath = "/sentinel/stream"

// DefaultAddr is where ListenAndServe listens when given no address: the
// loopback interface only, so nothing is exposed by accident.
const DefaultAddr = "127.0.0.1:8720"

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
	bye     chan *frame  // receives the bye frame on Close
}

// hub fans frames out to readers without ever waiting for one.
type hub struct {
	mu       sync.Mutex // orders registration against backlog appends
	readers  atomic.Pointer[[]*reader]
	queueLen int
	dropped  atomic.Int64
	closed   bool
}

func newHub(queueLen int) *hub {
	h := &hub{queueLen: queueLen}
	h.readers.Store(&[]*reader{})
	return h
}

// broadcast queues f for every reader; a full queue drops f for that reader.
func (h *hub) broadcast(f *frame) {
	for _, r := range *h.readers.Load() {
		select {
		case r.queue <- f:
		default:
			r.dropped.Add(1)
			h.dropped.Add(1)
		}
	}
}

// register adds a reader unless the hub is closed or full; under the same
// lock it runs snapshot, so that what snapshot returns and what is queued
// later neither overlap nor leave a gap.
func (h *hub) register(max int, snapshot func()) (*reader, error) {
	return h.registerQueue(max, h.queueLen, snapshot)
}

func (h *hub) registerQueue(max, queueLen int, snapshot func()) (*reader, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	cur := *h.readers.Load()
	if h.closed {
		return nil, errClosed
	}
	if len(cur) >= max {
		return nil, errFull
	}
	r := &reader{queue: make(chan *frame, queueLen), bye: make(chan *frame, 1)}
	snapshot()
	next := append(slices.Clip(cur), r)
	h.readers.Store(&next)
	return r, nil
}

func (h *hub) unregister(r *reader) {
	h.mu.Lock()
	defer h.mu.Unlock()
	cur := *h.readers.Load()
	i := slices.Index(cur, r)
	if i < 0 {
		return
	}
	next := slices.Delete(slices.Clone(cur), i, i+1)
	h.readers.Store(&next)
}

// closeAll hands bye to every reader and refuses new ones.
func (h *hub) closeAll(bye *frame) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for _, r := range *h.readers.Load() {
		r.bye <- bye
	}
}

func (h *hub) stats() (readers int, dropped int64) {
	return len(*h.readers.Load()), h.dropped.Load()
}

var (
	errClosed = errors.New("agent is shutting down")
	errFull   = errors.New("too many stream readers")
)

// Handler returns the stream endpoint as an http.Handler, for services that
// mount it on their own server (at StreamPath, by convention).
//
// Origin policy: browsers must be same-origin (gorilla/websocket's default
// check); clients that send no Origin header, as collectors do, are accepted.
// The token, when set, is checked first, in constant time.
func (a *Agent) Handler() http.Handler {
	return http.HandlerFunc(a.serveStream)
}

var upgrader = websocket.Upgrader{
	ReadBufferSize:   1024,
	WriteBufferSize:  32 << 10,
	HandshakeTimeout: 10 * time.Second,
}

func (a *Agent) authorized(req *http.Request) bool {
	if a.opts.Token == "" {
		return true
	}
	got, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(a.opts.Token)) == 1
}

func (a *Agent) serveStream(w http.ResponseWriter, req *http.Request) {
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
	r, err := a.hub.register(a.opts.MaxReaders, func() {
		initial = a.initialFrames()
	})
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
		a.hub.unregister(r) // the upgrader has already answered
		a.wg.Done()
		return
	}
	go a.serveConn(conn, r, initial)
}

// initialFrames is what a new connection receives before live messages.
func (a *Agent) initialFrames() []*frame {
	hello, err := encodeFrame(&wire.Hello{
		Header:    wire.Header{Ts: a.clock.UnixMilli(), Instance: a.opts.Instance},
		App:       a.opts.App,
		Host:      a.opts.Host,
		Pid:       int64(pid()),
		StartedAt: a.startedAt,
		SDK:       SDK,
		BucketMs:  a.bucketMs,
	})
	if err != nil {
		return nil
	}
	out := []*frame{hello, a.rules.Load()}
	return append(out, a.backlog.frames()...)
}

// serveConn writes to one connection until it fails, the peer leaves, or the
// agent closes.
func (a *Agent) serveConn(conn *websocket.Conn, r *reader, initial []*frame) {
	defer a.wg.Done()
	defer a.recoverPanic()
	defer a.hub.unregister(r)

	// The peer sends nothing but control frames; reading processes them and
	// notices when it goes away.
	conn.SetReadLimit(4 << 10)
	_ = conn.SetReadDeadline(time.Now().Add(3 * a.opts.PingInterval))
	conn.SetPongHandler(func(string) error {
		return conn.SetReadDeadline(time.Now().Add(3 * a.opts.PingInterval))
	})
	peerGone := make(chan struct{})
	a.wg.Add(1) // within serveConn's own tracked lifetime: Close is still waiting for it
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
		conn.Close() // ends the read loop too
		<-peerGone
	}()

	write := func(data []byte) bool {
		_ = conn.SetWriteDeadline(time.Now().Add(a.opts.WriteTimeout))
		return conn.WriteMessage(websocket.TextMessage, data) == nil
	}
	for _, f := range initial {
		if f != nil && !write(f.data) {
			return
		}
	}
	ping := time.NewTicker(a.opts.PingInterval)
	defer ping.Stop()
	for {
		select {
		case f := <-r.queue:
			if !write(a.withDropped(r, f)) {
				return
			}
		case bye := <-r.bye:
			write(bye.data)
			deadline := time.Now().Add(time.Second)
			_ = conn.WriteControl(websocket.CloseMessage,
				websocket.FormatCloseMessage(websocket.CloseGoingAway, "shutdown"), deadline)
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
func (a *Agent) withDropped(r *reader, f *frame) []byte {
	b, ok := f.msg.(*wire.Buckets)
	if !ok || r.dropped.Load() == 0 {
		return f.data
	}
	c := *b
	c.Dropped = r.dropped.Swap(0)
	return wire.AppendBuckets(nil, &c)
}

// Serve serves the stream at StreamPath on ln (with TLS when
// Options.TLSConfig is set) until Close. It returns http.ErrServerClosed
// after Close.
func (a *Agent) Serve(ln net.Listener) error {
	if a.opts.TLSConfig != nil {
		ln = tls.NewListener(ln, a.opts.TLSConfig)
	}
	mux := http.NewServeMux()
	mux.Handle(StreamPath, a.Handler())
	// Handshake noise (port scanners, plain HTTP on a TLS port) is not the
	// service's business: the server's own log is discarded.
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	if !a.track() {
		_ = ln.Close()
		return http.ErrServerClosed
	}
	go func() {
		defer a.wg.Done()
		<-a.closed
		_ = srv.Close()
	}()
	return srv.Serve(ln)
}

// ListenAndServe listens on addr (DefaultAddr when empty) and calls Serve.
func (a *Agent) ListenAndServe(addr string) error {
	if addr == "" {
		addr = DefaultAddr
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return a.Serve(ln)
}
