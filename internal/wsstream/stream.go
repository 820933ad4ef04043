package wsstream

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

// Frame is one encoded message, shared read-only by every reader.
type Frame struct {
	Msg  wire.Message
	Data []byte
}

// Encode encodes m into a frame.
func Encode(m wire.Message) (*Frame, error) {
	data, err := wire.Marshal(m)
	if err != nil {
		return nil, err
	}
	return &Frame{Msg: m, Data: data}, nil
}

// Defaults of Options.
const (
	DefaultQueueLen     = 256
	DefaultQueueBytes   = 8 << 20
	DefaultMaxReaders   = 16
	DefaultWriteTimeout = 10 * time.Second
	DefaultPingInterval = 15 * time.Second
)

// Options configures a Server. Zero fields take the defaults above.
type Options struct {
	// Token, when set, is required as "Authorization: Bearer TOKEN"; others
	// get HTTP 401 before the upgrade. It is compared in constant time.
	Token string
	// TLS, when set, makes Serve speak TLS.
	TLS *tls.Config
	// AllowOrigins lists the browser origins ("https://dash.example.com")
	// whose pages may use the server; "*" allows any. A request without an
	// Origin header (a collector, a command-line tool) needs none. Others
	// get HTTP 403. Default: none, so no web page may.
	AllowOrigins []string
	// AllowHosts lists the names ("collector.example.com", or with a port)
	// a request's Host may give besides the address it arrived on (and
	// localhost on loopback); "*" allows any. Others get HTTP 403, which
	// defeats DNS rebinding: a page whose name resolves to this address
	// still sends its own name. Default: none.
	AllowHosts []string
	// QueueLen is each reader's queue, in messages.
	QueueLen int
	// QueueBytes bounds the bytes queued for one reader, whatever the size
	// of the messages: a reader that falls behind holds at most this much
	// (one message always fits).
	QueueBytes int64
	// MaxReaders caps simultaneous readers; more get HTTP 503.
	MaxReaders int
	// WriteTimeout bounds one write; a reader that takes longer is dropped.
	WriteTimeout time.Duration
	// PingInterval is how often connections are pinged.
	PingInterval time.Duration
	// Initial returns what a new reader receives before live messages. It
	// runs under the registration lock.
	Initial func() []*Frame
	// OnPanic is told of a panic recovered in a connection goroutine.
	OnPanic func(v any)
}

// reader is one connection's (or subscription's) queue.
type reader struct {
	queue   chan *Frame
	bytes   atomic.Int64 // of the frames in queue
	dropped atomic.Int64 // since the last buckets message it was told about
	bye     chan *Frame  // receives the bye frame on Close
}

// Server fans frames out to readers and serves them over websockets.
type Server struct {
	opts     Options
	mu       sync.Mutex // orders registration against Locked broadcasts
	readers  atomic.Pointer[[]*reader]
	dropped  atomic.Int64
	closing  bool
	closed   chan struct{}
	lifeMu   sync.Mutex // orders goroutine starts against Close
	isClosed bool
	wg       sync.WaitGroup
	once     sync.Once
}

// New returns a server with no readers.
func New(opts Options) *Server {
	if opts.QueueLen <= 0 {
		opts.QueueLen = DefaultQueueLen
	}
	if opts.QueueBytes <= 0 {
		opts.QueueBytes = DefaultQueueBytes
	}
	if opts.MaxReaders <= 0 {
		opts.MaxReaders = DefaultMaxReaders
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = DefaultWriteTimeout
	}
	if opts.PingInterval <= 0 {
		opts.PingInterval = DefaultPingInterval
	}
	if opts.Initial == nil {
		opts.Initial = func() []*Frame { return nil }
	}
	s := &Server{opts: opts, closed: make(chan struct{})}
	s.readers.Store(&[]*reader{})
	return s
}

// Broadcast queues f for every reader; a full queue (QueueLen messages or
// QueueBytes bytes) drops f for that reader.
func (s *Server) Broadcast(f *Frame) {
	n := int64(len(f.Data))
	for _, r := range *s.readers.Load() {
		if q := r.bytes.Add(n); q > s.opts.QueueBytes && q > n {
			r.bytes.Add(-n)
			r.dropped.Add(1)
			s.dropped.Add(1)
			continue
		}
		select {
		case r.queue <- f:
		default:
			r.bytes.Add(-n)
			r.dropped.Add(1)
			s.dropped.Add(1)
		}
	}
}

// took accounts for f leaving r's queue.
func (r *reader) took(f *Frame) *Frame {
	r.bytes.Add(-int64(len(f.Data)))
	return f
}

// Locked runs fn under the registration lock: what fn adds to the state
// Initial reads, and broadcasts, reaches every reader exactly once.
func (s *Server) Locked(fn func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn()
}

var (
	// ErrClosed is returned to readers arriving after Close.
	ErrClosed = errors.New("stream is shutting down")
	// ErrFull is returned when MaxReaders are connected.
	ErrFull = errors.New("too many stream readers")
)

func (s *Server) register(queueLen int) (*reader, []*Frame, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := *s.readers.Load()
	if s.closing {
		return nil, nil, ErrClosed
	}
	if len(cur) >= s.opts.MaxReaders {
		return nil, nil, ErrFull
	}
	r := &reader{queue: make(chan *Frame, queueLen), bye: make(chan *Frame, 1)}
	initial := s.opts.Initial()
	next := append(slices.Clip(cur), r)
	s.readers.Store(&next)
	return r, initial, nil
}

func (s *Server) unregister(r *reader) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := *s.readers.Load()
	i := slices.Index(cur, r)
	if i < 0 {
		return
	}
	next := slices.Delete(slices.Clone(cur), i, i+1)
	s.readers.Store(&next)
}

// Stats returns the readers connected and the messages ever dropped.
func (s *Server) Stats() (readers int, dropped int64) {
	return len(*s.readers.Load()), s.dropped.Load()
}

// track counts a goroutine about to start, unless the server is closing.
func (s *Server) track() bool {
	s.lifeMu.Lock()
	defer s.lifeMu.Unlock()
	if s.isClosed {
		return false
	}
	s.wg.Add(1)
	return true
}

// Close hands bye (if not nil) to every reader, refuses new ones, stops the
// servers started by Serve, and waits for every connection to end.
func (s *Server) Close(bye *Frame) {
	s.once.Do(func() {
		s.lifeMu.Lock()
		s.isClosed = true
		s.lifeMu.Unlock()
		s.mu.Lock()
		s.closing = true
		for _, r := range *s.readers.Load() {
			if bye != nil {
				r.bye <- bye
			} else {
				close(r.bye)
			}
		}
		s.mu.Unlock()
		close(s.closed)
	})
	s.wg.Wait()
}

func (s *Server) recoverPanic() {
	if v := recover(); v != nil && s.opts.OnPanic != nil {
		s.opts.OnPanic(v)
	}
}

func (s *Server) authorized(req *http.Request) bool {
	if s.opts.Token == "" {
		return true
	}
	got, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(s.opts.Token)) == 1
}

// refused answers HTTP 403 and says true when req may not be served: a
// browser's Origin must be listed in AllowOrigins, and Host must name the
// address the request arrived on, localhost on loopback, or a name in
// AllowHosts.
func (s *Server) refused(w http.ResponseWriter, req *http.Request) bool {
	why := ""
	if o := req.Header.Get("Origin"); o != "" && !listed(s.opts.AllowOrigins, strings.TrimSuffix(o, "/")) {
		why = "403 forbidden: web pages of this origin may not use this server (allow it with AllowOrigins or --allow-origin)"
	} else if !s.hostAllowed(req) {
		why = "403 forbidden: the Host header names none of this server's addresses (allow the name with AllowHosts or --allow-host)"
	}
	if why != "" {
		http.Error(w, why, http.StatusForbidden)
	}
	return why != ""
}

func (s *Server) hostAllowed(req *http.Request) bool {
	host := req.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if listed(s.opts.AllowHosts, req.Host) || listed(s.opts.AllowHosts, host) {
		return true
	}
	local, _ := req.Context().Value(http.LocalAddrContextKey).(net.Addr)
	tcp, ok := local.(*net.TCPAddr)
	if local != nil && !ok {
		return true // a Unix socket: no browser reaches it by a name
	}
	if !ok {
		return false
	}
	ip := net.ParseIP(host)
	if ip != nil && ip.Equal(tcp.IP) {
		return true
	}
	localhost := strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost")
	return tcp.IP.IsLoopback() && (localhost || ip != nil && ip.IsLoopback())
}

// listed says whether v is in list (case-insensitively), or list has "*".
func listed(list []string, v string) bool {
	return slices.ContainsFunc(list, func(x string) bool { return x == "*" || strings.EqualFold(x, v) })
}

// Guard refuses, with HTTP 403, requests whose Origin or Host the server's
// options do not allow, and hands the others to next. Serve guards
// everything it serves with it.
func (s *Server) Guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if !s.refused(w, req) {
			next.ServeHTTP(w, req)
		}
	})
}

var upgrader = websocket.Upgrader{
	ReadBufferSize:   1024,
	WriteBufferSize:  32 << 10,
	HandshakeTimeout: 10 * time.Second,
	// ServeHTTP has checked the Origin (refused), more strictly than
	// gorilla/websocket's same-origin default.
	CheckOrigin: func(*http.Request) bool { return true },
}

// ServeHTTP serves one stream connection.
//
// Origin and host policy (refused): a browser's Origin must be listed in
// AllowOrigins, and the Host header must name the address the request
// arrived on, localhost on loopback, or a name in AllowHosts (HTTP 403
// otherwise); clients that send no Origin header, as collectors do, need no
// listing. The token, when set, is checked next, in constant time.
func (s *Server) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	defer s.recoverPanic() // not into the owner's server
	if s.refused(w, req) {
		return
	}
	if !s.authorized(req) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="sentinel-top"`)
		http.Error(w, "401 unauthorized: a valid bearer token is required", http.StatusUnauthorized)
		return
	}
	if !websocket.IsWebSocketUpgrade(req) {
		http.Error(w, "this is a sentinel-top wire v1 websocket stream; connect with a websocket client", http.StatusUpgradeRequired)
		return
	}
	r, initial, err := s.register(s.opts.QueueLen)
	if err != nil {
		http.Error(w, "503 "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	if !s.track() {
		s.unregister(r)
		http.Error(w, "503 "+ErrClosed.Error(), http.StatusServiceUnavailable)
		return
	}
	conn, err := upgrader.Upgrade(w, req, nil)
	if err != nil {
		s.unregister(r) // the upgrader has already answered
		s.wg.Done()
		return
	}
	go s.serveConn(conn, r, initial)
}

// serveConn writes to one connection until it fails, the peer leaves, or the
// server closes.
func (s *Server) serveConn(conn *websocket.Conn, r *reader, initial []*Frame) {
	defer s.wg.Done()
	defer s.recoverPanic()
	defer s.unregister(r)

	// The peer sends nothing but control frames; reading processes them and
	// notices when it goes away.
	conn.SetReadLimit(4 << 10)
	_ = conn.SetReadDeadline(time.Now().Add(3 * s.opts.PingInterval))
	conn.SetPongHandler(func(string) error {
		return conn.SetReadDeadline(time.Now().Add(3 * s.opts.PingInterval))
	})
	peerGone := make(chan struct{})
	s.wg.Add(1) // within serveConn's own tracked lifetime: Close is still waiting for it
	go func() {
		defer s.wg.Done()
		defer close(peerGone)
		defer s.recoverPanic()
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
		_ = conn.SetWriteDeadline(time.Now().Add(s.opts.WriteTimeout))
		return conn.WriteMessage(websocket.TextMessage, data) == nil
	}
	for _, f := range initial {
		if f != nil && !write(f.Data) {
			return
		}
	}
	ping := time.NewTicker(s.opts.PingInterval)
	defer ping.Stop()
	for {
		select {
		case f := <-r.queue:
			if !write(withDropped(r, r.took(f))) {
				return
			}
		case bye, ok := <-r.bye:
			// What was queued before Close goes out first.
			for drained := false; !drained; {
				select {
				case f := <-r.queue:
					if !write(withDropped(r, r.took(f))) {
						return
					}
				default:
					drained = true
				}
			}
			if ok {
				write(bye.Data)
			}
			_ = conn.WriteControl(websocket.CloseMessage,
				websocket.FormatCloseMessage(websocket.CloseGoingAway, "shutdown"), time.Now().Add(time.Second))
			return
		case <-ping.C:
			if conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(s.opts.WriteTimeout)) != nil {
				return
			}
		case <-peerGone:
			return
		}
	}
}

// withDropped re-encodes a buckets frame with the count of messages this
// reader lost since it was last told.
func withDropped(r *reader, f *Frame) []byte {
	b, ok := f.Msg.(*wire.Buckets)
	if !ok || r.dropped.Load() == 0 {
		return f.Data
	}
	c := *b
	c.Dropped = r.dropped.Swap(0)
	return wire.AppendBuckets(nil, &c)
}

// Serve serves mux on ln (with TLS when Options.TLS is set) until Close,
// every path under the origin and host policy of ServeHTTP. It returns
// http.ErrServerClosed after Close.
func (s *Server) Serve(ln net.Listener, mux http.Handler) error {
	if s.opts.TLS != nil {
		ln = tls.NewListener(ln, s.opts.TLS)
	}
	// Handshake noise (port scanners, plain HTTP on a TLS port) is not the
	// owner's business: the server's own log is discarded.
	// Bounded per connection: headers, the time to send them, and how long
	// a connection that is not a stream may idle.
	srv := &http.Server{Handler: s.Guard(mux), ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 16 << 10,
		IdleTimeout: 30 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	if !s.track() {
		_ = ln.Close()
		return http.ErrServerClosed
	}
	go func() {
		defer s.wg.Done()
		<-s.closed
		_ = srv.Close()
	}()
	return srv.Serve(ln)
}

// Subscription is an in-process reader: it receives exactly what a
// websocket connection would, without a network.
type Subscription struct {
	s       *Server
	r       *reader
	initial []*Frame
	done    bool
}

// Subscribe registers an in-process reader with a queue of queueLen
// messages (the server's default when <= 0). It counts against MaxReaders.
func (s *Server) Subscribe(queueLen int) (*Subscription, error) {
	if queueLen <= 0 {
		queueLen = s.opts.QueueLen
	}
	r, initial, err := s.register(queueLen)
	if err != nil {
		return nil, err
	}
	return &Subscription{s: s, r: r, initial: initial}, nil
}

// Next returns the next message without waiting: ok is false when nothing is
// queued. After the server's bye, Next reports nothing more.
func (sub *Subscription) Next() (msg []byte, ok bool) {
	if sub.done {
		return nil, false
	}
	for len(sub.initial) > 0 {
		f := sub.initial[0]
		sub.initial = sub.initial[1:]
		if f != nil {
			return f.Data, true
		}
	}
	select {
	case f := <-sub.r.queue: // what was queued before a bye comes first
		return withDropped(sub.r, sub.r.took(f)), true
	default:
	}
	select {
	case bye, ok := <-sub.r.bye:
		sub.Close()
		if ok {
			return bye.Data, true
		}
		return nil, false
	default:
		return nil, false
	}
}

// Close unregisters the subscription.
func (sub *Subscription) Close() {
	if !sub.done {
		sub.done = true
		sub.s.unregister(sub.r)
	}
}
