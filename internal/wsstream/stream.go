package wsstream

import (
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
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
	data, err := wire.Append(make([]byte, 0, sizeHint(m)), m)
	if err != nil {
		return nil, err
	}
	return &Frame{Msg: m, Data: data}, nil
}

// sizeHint is about the encoded size of a buckets message (most items
// take 150 to 200 bytes besides their name), so that encoding it grows
// no buffer: an agent encodes one every bucket.
func sizeHint(m wire.Message) int {
	b, ok := m.(*wire.Buckets)
	if !ok {
		return 0
	}
	n := 128 + len(b.Instance)
	for i := range b.Items {
		it := &b.Items[i]
		n += 192 + len(it.Resource) + 48*len(it.Hot)
	}
	return n
}

// Defaults of Options.
const (
	DefaultQueueLen     = 256
	DefaultQueueBytes   = 8 << 20
	DefaultMaxReaders   = 16
	DefaultWriteTimeout = 10 * time.Second
	DefaultPingInterval = 15 * time.Second
	DefaultPongTimeout  = 10 * time.Second
	DefaultControlRate  = 4
	// DefaultMaxConns is the most connections open at once, streams and
	// plain requests together.
	DefaultMaxConns = 128
	// DefaultRequestTimeout bounds the reading of a whole request, headers
	// and body.
	DefaultRequestTimeout = 10 * time.Second
	// DefaultResponseTimeout bounds a plain (not stream) response, from
	// the end of its request's headers to its last byte.
	DefaultResponseTimeout = 30 * time.Second
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
	// PongTimeout is how long a new reader has to answer its first ping,
	// sent before anything else: one that does not is dropped. Until it
	// answers (or while it is later that long late), it gives its slot up
	// to a newcomer when MaxReaders are connected, so that readers that
	// never read cannot hold every slot.
	PongTimeout time.Duration
	// ControlRate is how many pings and pongs a reader may send a second,
	// in bursts of twice that; one sending more is disconnected, as is one
	// sending any data frame (readers only read).
	ControlRate float64
	// Initial returns what a new reader receives before live messages. It
	// runs under the registration lock.
	Initial func() []*Frame
	// Follow, when set, is called under the registration lock after
	// Initial; the function it returns gives, one call per frame and
	// outside the lock (nil: no more), what the reader receives after
	// Initial's frames and before live messages. Unlike Initial's slice it
	// holds no frames: a reader that does not read pins nothing but its
	// queue, whatever the size of a backlog.
	Follow func() func() *Frame
	// OnPanic is told of a panic recovered in a connection goroutine.
	OnPanic func(v any)
	// MaxConns caps the connections Serve keeps open at once, streams and
	// plain requests together, over all its listeners: one more is closed
	// as soon as it is accepted, and counted (Conns). It bounds the
	// descriptors a peer can make the process hold.
	MaxConns int
	// RequestTimeout bounds the reading of one request, headers and body
	// together: a peer trickling either is cut off. A stream, once
	// upgraded, is under its own deadlines (PongTimeout, PingInterval).
	RequestTimeout time.Duration
	// ResponseTimeout bounds one plain response, from the end of its
	// request's headers to its last byte: a client that reads slowly or
	// not at all is cut off. Streams are under WriteTimeout instead.
	ResponseTimeout time.Duration
}

// reader is one connection's (or subscription's) queue.
type reader struct {
	queue   chan *Frame
	bytes   atomic.Int64 // of the frames in queue
	dropped atomic.Int64 // since the last buckets message it was told about
	bye     chan *Frame  // receives the bye frame on Close

	// A connection's proof that it reads: the pong of a ping it was sent.
	conn   bool          // a websocket connection, not a Subscription
	pinged atomic.Int64  // unix ns of the oldest ping not answered; 0: none
	ponged atomic.Bool   // it has answered a ping
	salt   int64         // makes the pings' payloads unguessable
	evict  chan struct{} // closed (under Server.mu) to take its slot back
}

// Server fans frames out to readers and serves them over websockets.
type Server struct {
	opts     Options
	mu       sync.Mutex // orders registration against Locked broadcasts
	readers  atomic.Pointer[[]*reader]
	dropped  atomic.Int64
	evicted  atomic.Int64
	closing  bool
	closed   chan struct{}
	lifeMu   sync.Mutex // orders goroutine starts against Close
	isClosed bool
	wg       sync.WaitGroup
	once     sync.Once
	conns    conns
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
	if opts.PongTimeout <= 0 {
		opts.PongTimeout = DefaultPongTimeout
	}
	if opts.ControlRate <= 0 {
		opts.ControlRate = DefaultControlRate
	}
	if opts.Initial == nil {
		opts.Initial = func() []*Frame { return nil }
	}
	if opts.MaxConns <= 0 {
		opts.MaxConns = DefaultMaxConns
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = DefaultRequestTimeout
	}
	if opts.ResponseTimeout <= 0 {
		opts.ResponseTimeout = DefaultResponseTimeout
	}
	s := &Server{opts: opts, closed: make(chan struct{})}
	s.conns.max = int64(opts.MaxConns)
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

// Missed tells every reader that n messages it would have had will never
// come (buckets the shipper could not read in time): each counts them as
// dropped, and says so in its next buckets message, as for a message its
// queue could not take. The server's own count of messages dropped for
// slow readers does not hold them.
func (s *Server) Missed(n int64) {
	for _, r := range *s.readers.Load() {
		r.dropped.Add(n)
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

// register adds a reader and returns it with what it receives first.
func (s *Server) register(queueLen int, conn bool) (r *reader, initial []*Frame, follow func() *Frame, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := *s.readers.Load()
	if s.closing {
		return nil, nil, nil, ErrClosed
	}
	if len(cur) >= s.opts.MaxReaders {
		idle := s.idlest(cur, time.Now().UnixNano())
		if idle == nil {
			return nil, nil, nil, ErrFull
		}
		cur = slices.DeleteFunc(slices.Clone(cur), func(r *reader) bool { return r == idle })
		close(idle.evict)
		s.evicted.Add(1)
	}
	r = &reader{queue: make(chan *Frame, queueLen), bye: make(chan *Frame, 1),
		conn: conn, salt: rand.Int64(), evict: make(chan struct{})}
	if conn {
		r.pinged.Store(time.Now().UnixNano()) // its first ping is on its way
	}
	initial = s.opts.Initial()
	if s.opts.Follow != nil {
		follow = s.opts.Follow()
	}
	next := append(slices.Clip(cur), r)
	s.readers.Store(&next)
	return r, initial, follow, nil
}

// idlest is the connection to give its slot up to a newcomer: of those
// with a ping unanswered, that never answered one or are PongTimeout late,
// the one waited for longest. It is nil when every reader reads.
func (s *Server) idlest(readers []*reader, now int64) *reader {
	var idle *reader
	for _, r := range readers {
		p := r.pinged.Load()
		if !r.conn || p == 0 || r.ponged.Load() && now-p < int64(s.opts.PongTimeout) {
			continue
		}
		if idle == nil || p < idle.pinged.Load() {
			idle = r
		}
	}
	return idle
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

// QueuedBytes is what every reader's queue holds now, in encoded bytes.
func (s *Server) QueuedBytes() int64 {
	var n int64
	for _, r := range *s.readers.Load() {
		n += r.bytes.Load()
	}
	return n
}

// Conns returns the connections Serve holds open now, and those it has
// closed on arrival because MaxConns were open.
func (s *Server) Conns() (open int, refused int64) {
	return int(s.conns.open.Load()), s.conns.refused.Load()
}

// Evicted counts the connections the server cut for misbehaving: sending
// data or too many control frames, or not reading (giving their slot up).
func (s *Server) Evicted() int64 { return s.evicted.Load() }

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

// RequireToken answers HTTP 401 to requests without the server's token
// (Options.Token; constant-time), and hands the others to next.
func (s *Server) RequireToken(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if !s.authorized(req) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="sentinel-top"`)
			http.Error(w, "401 unauthorized: a valid bearer token is required", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, req)
	})
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
	r, initial, follow, err := s.register(s.opts.QueueLen, true)
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
	go s.serveConn(conn, r, initial, follow)
}

// serveConn writes to one connection until it fails, the peer leaves, or the
// server closes.
func (s *Server) serveConn(conn *websocket.Conn, r *reader, initial []*Frame, follow func() *Frame) {
	defer s.wg.Done()
	defer s.recoverPanic()
	defer s.unregister(r)

	peerGone := make(chan struct{})
	s.wg.Add(1) // within serveConn's own tracked lifetime: Close is still waiting for it
	go func() {
		defer s.wg.Done()
		defer close(peerGone)
		defer s.recoverPanic()
		s.readPeer(conn, r)
	}()
	defer func() {
		conn.Close() // ends the read loop too
		<-peerGone
	}()

	write := func(data []byte) bool {
		_ = conn.SetWriteDeadline(time.Now().Add(s.opts.WriteTimeout))
		return conn.WriteMessage(websocket.TextMessage, data) == nil
	}
	ping := func() bool {
		// The payload of the oldest ping unanswered: any pong of a reader
		// that reads answers it.
		now := time.Now().UnixNano()
		r.pinged.CompareAndSwap(0, now)
		return conn.WriteControl(websocket.PingMessage, r.pingPayload(r.pinged.Load()), time.Now().Add(s.opts.WriteTimeout)) == nil
	}
	// First a ping, before anything else: a reader that reads answers it
	// at once, and one that does not is dropped after PongTimeout.
	_ = conn.SetReadDeadline(time.Now().Add(s.opts.PongTimeout))
	if !ping() {
		return
	}
	for _, f := range initial {
		if f != nil && !write(f.Data) {
			return
		}
	}
	initial = nil
	for f := follow; f != nil; {
		x := f()
		if x == nil {
			break
		}
		if !write(x.Data) {
			return
		}
	}
	tick := time.NewTicker(s.opts.PingInterval)
	defer tick.Stop()
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
		case <-tick.C:
			if !ping() {
				return
			}
		case <-r.evict:
			_ = conn.WriteControl(websocket.CloseMessage,
				websocket.FormatCloseMessage(websocket.CloseTryAgainLater, "slot given to a reader that reads"), time.Now().Add(time.Second))
			return
		case <-peerGone:
			return
		}
	}
}

var errControlFlood = errors.New("too many pings or pongs")

// pingPayload is what a ping sent at ns carries, and its pong must.
func (r *reader) pingPayload(ns int64) []byte {
	return strconv.AppendInt(nil, ns^r.salt, 36)
}

// readPeer reads what the peer sends until it fails or misbehaves. A reader
// sends nothing but control frames: pongs, at most ControlRate of them
// (with pings) a second. Data, or more, costs the service and is cut off.
func (s *Server) readPeer(conn *websocket.Conn, r *reader) {
	conn.SetReadLimit(4 << 10)
	control := newRateLimit(s.opts.ControlRate, time.Now())
	conn.SetPongHandler(func(data string) error {
		if !control.allow(time.Now()) {
			return errControlFlood
		}
		if p := r.pinged.Load(); p != 0 && data == string(r.pingPayload(p)) {
			r.ponged.Store(true)
			r.pinged.Store(0)
			return conn.SetReadDeadline(time.Now().Add(3 * s.opts.PingInterval))
		}
		return nil
	})
	conn.SetPingHandler(func(data string) error {
		if !control.allow(time.Now()) {
			return errControlFlood
		}
		err := conn.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(time.Second))
		var ne net.Error
		if err == nil || errors.Is(err, websocket.ErrCloseSent) || errors.As(err, &ne) {
			return nil // as gorilla's default handler: the write loop sees a broken connection
		}
		return err
	})
	_, _, err := conn.NextReader()
	why := "readers send no data"
	switch {
	case errors.Is(err, errControlFlood):
		why = errControlFlood.Error()
	case errors.Is(err, websocket.ErrReadLimit):
		why = "frame over 4 KiB" // gorilla has sent the close
	case err != nil:
		return
	}
	s.evicted.Add(1)
	_ = conn.WriteControl(websocket.CloseMessage,
		websocket.FormatCloseMessage(websocket.ClosePolicyViolation, why), time.Now().Add(time.Second))
	conn.Close() // stops a write in progress too
}

// rateLimit is a token bucket of rate tokens a second, holding two
// seconds' worth.
type rateLimit struct {
	rate, tokens float64
	last         time.Time
}

func newRateLimit(rate float64, now time.Time) *rateLimit {
	return &rateLimit{rate: rate, tokens: 2 * rate, last: now}
}

// allow takes a token if there is one.
func (l *rateLimit) allow(now time.Time) bool {
	l.tokens = min(2*l.rate, l.tokens+now.Sub(l.last).Seconds()*l.rate)
	l.last = now
	if l.tokens < 1 {
		return false
	}
	l.tokens--
	return true
}

// withDropped re-encodes a buckets frame with the count of messages this
// reader lost since it was last told. A frame that holds its encoding alone
// (Msg nil) is decoded again for that.
func withDropped(r *reader, f *Frame) []byte {
	if r.dropped.Load() == 0 {
		return f.Data
	}
	m := f.Msg
	if m == nil {
		m, _ = wire.Decode(f.Data)
	}
	b, ok := m.(*wire.Buckets)
	if !ok {
		return f.Data
	}
	c := *b
	c.Dropped = r.dropped.Swap(0)
	return wire.AppendBuckets(nil, &c)
}

// Serve serves mux on ln (with TLS when Options.TLS is set) until Close,
// every path under the origin and host policy of ServeHTTP. It returns
// http.ErrServerClosed after Close.
//
// Each connection is bounded: at most MaxConns are open (those over it are
// closed at once, before any TLS handshake), a request's headers and body
// must arrive within RequestTimeout, a plain response must be written
// within ResponseTimeout, and a connection that is not a stream may idle
// 30 s between requests.
func (s *Server) Serve(ln net.Listener, mux http.Handler) error {
	ln = cappedListener{Listener: ln, c: &s.conns}
	if s.opts.TLS != nil {
		ln = tls.NewListener(ln, s.opts.TLS)
	}
	// Handshake noise (port scanners, plain HTTP on a TLS port) is not the
	// owner's business: the server's own log is discarded. A stream is
	// taken over before its response is written: its deadlines are then
	// its own (serveConn sets them before anything is read or written).
	srv := &http.Server{Handler: s.Guard(mux), ReadHeaderTimeout: s.opts.RequestTimeout, ReadTimeout: s.opts.RequestTimeout,
		WriteTimeout: s.opts.ResponseTimeout, MaxHeaderBytes: 16 << 10, IdleTimeout: 30 * time.Second,
		ErrorLog: log.New(io.Discard, "", 0)}
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
	follow  func() *Frame
	done    bool
}

// Subscribe registers an in-process reader with a queue of queueLen
// messages (the server's default when <= 0). It counts against MaxReaders.
func (s *Server) Subscribe(queueLen int) (*Subscription, error) {
	if queueLen <= 0 {
		queueLen = s.opts.QueueLen
	}
	r, initial, follow, err := s.register(queueLen, false)
	if err != nil {
		return nil, err
	}
	return &Subscription{s: s, r: r, initial: initial, follow: follow}, nil
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
	if sub.follow != nil {
		if f := sub.follow(); f != nil {
			return f.Data, true
		}
		sub.follow = nil
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
