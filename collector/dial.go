package collector

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gorilla/websocket"

	"github.com/sentinel-top/sentinel-top/core/wire"
)

// Backoff bounds for reconnecting.
const (
	MinBackoff = 500 * time.Millisecond
	MaxBackoff = 30 * time.Second
	// stableAfter is how long a connection must last for the backoff to
	// start over from MinBackoff.
	stableAfter = 30 * time.Second
	// garbageLimit: a connection whose first this-many messages are all
	// rejected is incompatible; it is dropped and reported as such.
	garbageLimit = 20
	// DefaultIdleTimeout is DialOptions.IdleTimeout when it is zero: three
	// of the agents' 15 s pings.
	DefaultIdleTimeout = 45 * time.Second
	// rateBurstSeconds: a connection may send this many seconds' worth of
	// MaxMessageRate at once (a reconnect's backlog comes in one burst).
	rateBurstSeconds = 10
)

// DialOptions configures the dialing of targets.
type DialOptions struct {
	// Token is sent as "Authorization: Bearer TOKEN" when set.
	Token string
	// TLS configures wss:// targets (nil: system roots).
	TLS *tls.Config
	// HandshakeTimeout bounds connecting. Default 10 s.
	HandshakeTimeout time.Duration
	// Seed makes the backoff jitter reproducible (tests); 0 picks one.
	Seed uint64
	// IdleTimeout is how long a connection may stay silent (no message, no
	// ping) before it is dropped as stalled and dialed again: a peer that
	// hangs, or a path that stops forwarding, would otherwise leave the
	// target "up" forever. Default 45 s.
	IdleTimeout time.Duration
	// MaxHandshakes bounds the streams' handshakes in flight (TCP connect,
	// TLS, the websocket upgrade): 10,000 targets dialed at once would
	// each wait their turn inside HandshakeTimeout, on either side, and
	// the ones that time out would be dialed again after a backoff. A
	// target waiting for its turn is "connecting"; the timeout starts with
	// its turn. A target that never answers (packets dropped) holds its
	// turn until the timeout: with more of those than turns, the others
	// wait up to HandshakeTimeout for theirs. Default DefaultMaxHandshakes.
	MaxHandshakes int
}

// DefaultMaxHandshakes is DialOptions.MaxHandshakes when it is zero.
const DefaultMaxHandshakes = 256

// targetStatus is what a dialed target's connection has told the store of
// itself, as the snapshot reports it: the store's record, written by the
// connection (update) and read at publish under a leaf lock. The store holds
// nothing else of the connection.
type targetStatus struct {
	mu sync.Mutex
	st TargetStatus
}

func (t *targetStatus) status() TargetStatus {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.st
}

// update tells the store of a change of the target's status.
func (t *targetStatus) update(f func(s *TargetStatus)) {
	t.mu.Lock()
	f(&t.st)
	t.mu.Unlock()
}

// targetState is one target's connection state across reconnects, owned by
// its dial loop: the status it tells the store, and what it keeps for itself.
type targetState struct {
	*targetStatus
	// javaRules is a Java target's rules as last read.
	javaRules javaRulesMemo
}

// Dial connects to every target and feeds the collector until ctx ends,
// reconnecting with exponential backoff and jitter (from MinBackoff, capped
// at MaxBackoff). It returns when every connection goroutine has ended.
func (c *Collector) Dial(ctx context.Context, targets []Target, opts DialOptions) {
	if opts.HandshakeTimeout <= 0 {
		opts.HandshakeTimeout = 10 * time.Second
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.MaxHandshakes <= 0 {
		opts.MaxHandshakes = DefaultMaxHandshakes
	}
	turns := make(chan struct{}, opts.MaxHandshakes)
	states := make([]*targetState, len(targets))
	c.mu.Lock()
	for i, t := range targets {
		states[i] = &targetState{targetStatus: &targetStatus{st: TargetStatus{Name: t.Name, State: TargetConnecting, Since: c.clock.UnixMilli()}}}
		c.targets = append(c.targets, states[i].targetStatus)
	}
	c.mu.Unlock()
	seed := opts.Seed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	pl := newPollers()
	defer pl.close()
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.dialLoop(ctx, t, states[i], opts, turns, pl, rand.New(rand.NewPCG(seed, uint64(i))))
		}()
	}
	wg.Wait()
}

func (c *Collector) dialLoop(ctx context.Context, t Target, st *targetState, opts DialOptions, turns chan struct{}, pl *pollers, rng *rand.Rand) {
	backoff := MinBackoff
	for ctx.Err() == nil {
		st.update(func(s *TargetStatus) { s.State, s.Since = TargetConnecting, c.clock.UnixMilli() })
		began := c.clock.Now()
		err := c.connect(ctx, t, st, opts, turns, pl)
		if ctx.Err() != nil {
			return
		}
		if c.clock.Now().Sub(began) >= stableAfter {
			backoff = MinBackoff
		}
		// Full jitter: anywhere in [backoff/2, backoff], so targets that
		// fail together do not come back together.
		wait := backoff/2 + time.Duration(rng.Int64N(int64(backoff/2)+1))
		now := c.clock.UnixMilli()
		st.update(func(s *TargetStatus) {
			s.State, s.Since, s.LastError, s.RetryAt = TargetDown, now, describeDialError(err), now+wait.Milliseconds()
			s.Reconnects++
		})
		timer := make(chan struct{})
		tm := c.clock.AfterFunc(wait, func() { close(timer) })
		select {
		case <-ctx.Done():
			tm.Stop()
			return
		case <-timer:
		}
		backoff = min(backoff*2, MaxBackoff)
	}
}

// describeDialError turns a dial or read error into one line for the UI:
// what went wrong in words first (refused, DNS, TLS, timed out), then the
// error's own text where it adds something.
func describeDialError(err error) string {
	var (
		ne   net.Error
		op   *net.OpError
		dns  *net.DNSError
		rec  tls.RecordHeaderError
		host x509.HostnameError
		cert *tls.CertificateVerificationError
		auth x509.UnknownAuthorityError
	)
	switch {
	case err == nil:
		return "closed by the peer"
	case errors.Is(err, syscall.ECONNREFUSED):
		where := "there"
		if errors.As(err, &op) && op.Addr != nil {
			where = "on " + op.Addr.String()
		}
		return "refused: nothing listens " + where + " (connection refused)"
	case errors.As(err, &dns):
		if dns.IsNotFound {
			return "DNS: no such host " + dns.Name
		}
		return "DNS: cannot resolve " + dns.Name + ": " + dns.Err
	case errors.As(err, &rec):
		return "TLS: the target does not speak TLS (ws:// instead of wss://?)"
	case errors.As(err, &host):
		return "TLS: the certificate is not for this host: " + host.Error()
	case errors.As(err, &auth), errors.As(err, &cert):
		return "TLS: the certificate is not trusted (--ca names the CA that signed it): " + err.Error()
	case errors.Is(err, syscall.ECONNRESET):
		return "reset by the peer: " + err.Error()
	case errors.Is(err, websocket.ErrBadHandshake):
		return "not a websocket: " + err.Error()
	case errors.As(err, &ne) && ne.Timeout():
		return "timed out: " + err.Error()
	}
	return err.Error()
}

// describeHTTPStatus says why a target answered HTTP without upgrading to
// a stream.
func describeHTTPStatus(code int) error {
	status := fmt.Sprintf("HTTP %d %s", code, http.StatusText(code))
	switch {
	case code == http.StatusUnauthorized:
		return fmt.Errorf("%s: the target wants a token (--token or SENTINEL_TOP_TOKEN), or this one is wrong", status)
	case code == http.StatusForbidden:
		return fmt.Errorf("%s: the target refuses this host name (the agent's AllowHosts, serve's --allow-host) or this token", status)
	case code >= 500:
		return fmt.Errorf("not a sentinel-top stream: %s: the server, or a proxy before it, failed", status)
	}
	return fmt.Errorf("plain HTTP server, not a sentinel-top stream: %s (agents serve it at %s)", status, DefaultStreamPath)
}

// connect runs one connection until it fails. Its handshake waits for a
// turn of turns (DialOptions.MaxHandshakes).
func (c *Collector) connect(ctx context.Context, t Target, st *targetState, opts DialOptions, turns chan struct{}, pl *pollers) error {
	if isJavaTarget(t) {
		return c.pollJava(ctx, t, st, opts) // javatransport.go
	}
	sink := c.Bound(t.Name) // the instances this target announces are its own
	header := http.Header{}
	if opts.Token != "" {
		header.Set("Authorization", "Bearer "+opts.Token)
	}
	var bounded *handshakeConn
	plain := pl != nil && strings.HasPrefix(t.URL, "ws:")
	d := websocket.Dialer{HandshakeTimeout: opts.HandshakeTimeout, TLSClientConfig: opts.TLS, Proxy: http.ProxyFromEnvironment,
		NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			bounded = &handshakeConn{Conn: conn, left: handshakeLimit, headers: plain}
			return bounded, nil
		}}
	select {
	case turns <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	conn, resp, err := d.DialContext(ctx, t.URL, header)
	<-turns
	if bounded != nil && bounded.over {
		c.Reject(t.Name, fmt.Errorf("%w: %w", wire.ErrTooLarge, errHandshakeTooLarge))
		st.update(func(s *TargetStatus) { s.Rejected++ })
		if conn != nil {
			conn.Close()
		}
		return errHandshakeTooLarge
	}
	if err != nil {
		if resp != nil {
			return describeHTTPStatus(resp.StatusCode)
		}
		return err
	}
	defer conn.Close()
	bounded.lift() // the stream's own limits take over
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	lim := c.opts.Limits
	maxFrame := wire.DefaultMaxFrameBytes
	if lim.MaxFrameBytes > 0 {
		maxFrame = lim.MaxFrameBytes
	}
	conn.SetReadLimit(int64(maxFrame))
	idle := func() { _ = conn.SetReadDeadline(time.Now().Add(opts.IdleTimeout)) }
	idle()
	conn.SetPingHandler(func(data string) error {
		idle()
		err := conn.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(time.Second))
		var ne net.Error
		if err == nil || errors.Is(err, websocket.ErrCloseSent) || errors.As(err, &ne) {
			return nil // as gorilla's default handler: the read loop reports a broken connection
		}
		return err
	})
	st.update(func(s *TargetStatus) { s.State, s.Since, s.LastError = TargetUp, c.clock.UnixMilli(), "" })
	s := c.newStream(t, st, sink)
	defer s.end()
	if plain {
		if fd, err := takeFD(bounded.Conn); err == nil {
			conn.Close() // fd is its own descriptor of the socket
			return pl.serve(ctx, s, fd, bounded.rest(), maxFrame, opts.IdleTimeout)
		}
	}
	for {
		kind, frame, err := readMessage(conn)
		if err != nil {
			var ne net.Error
			if errors.Is(err, websocket.ErrReadLimit) {
				return s.overLimit(maxFrame)
			}
			if errors.As(err, &ne) && ne.Timeout() {
				return fmt.Errorf("stalled: nothing received for %s", opts.IdleTimeout)
			}
			if websocket.IsCloseError(err, websocket.CloseGoingAway, websocket.CloseNormalClosure) {
				return errors.New("closed by the peer")
			}
			return err
		}
		idle()
		err = s.message(kind, *frame)
		releaseFrame(frame)
		if err != nil {
			return err
		}
	}
}

// stream is what one connection's messages go through once its handshake
// is done, whoever reads them: the connection's own goroutine, or a poller
// (poll_linux.go) reading many connections.
type stream struct {
	c                  *Collector
	t                  Target
	st                 *targetState
	sink               Sink
	dec                *wire.Decoder
	accepted, rejected int
	rate               rateLimit // in the stream, read with it
	overRate           int64     // dropped, not yet counted
	nameBytes          int64     // the decoder's own names, charged to the budget
}

func (c *Collector) newStream(t Target, st *targetState, sink Sink) *stream {
	dec := wire.NewDecoder(c.opts.Limits)
	dec.ShareNames(c.names)
	return &stream{c: c, t: t, st: st, sink: sink, dec: dec,
		rate: newRateLimit(c.opts.MaxMessageRate, c.opts.WallClock.Now())}
}

// message takes one websocket message of kind (websocket.TextMessage, ...);
// data is not kept past the call. An error ends the connection.
func (s *stream) message(kind int, data []byte) error {
	c, t, st := s.c, s.t, s.st
	at := c.clock.UnixMilli()
	if !s.rate.allow(c.opts.WallClock.Now()) {
		st.update(func(s *TargetStatus) { s.Messages++; s.Bytes += int64(len(data)); s.LastMessageAt = at })
		// Dropped before decoding: a flood costs its reading only.
		if s.overRate++; s.overRate >= 1000 {
			s.flush()
		}
		return nil
	}
	s.flush()
	// What the message tells the target's status, in one update.
	var items, rejected int64
	var m wire.Message
	var err error
	if kind != websocket.TextMessage {
		err = fmt.Errorf("%w: binary frame", wire.ErrMalformed)
	} else {
		m, err = s.dec.Decode(data)
	}
	if nb := s.dec.NameBytes(); nb != s.nameBytes {
		c.chargeNames(nb - s.nameBytes)
		s.nameBytes = nb
	}
	instance := ""
	if err != nil {
		c.Reject(t.Name, err)
		s.rejected++
		rejected = 1
	} else {
		switch m := m.(type) {
		case *wire.Hello:
			instance = m.Instance
		case *wire.Buckets:
			items = int64(len(m.Items))
		}
	}
	st.update(func(s *TargetStatus) {
		s.Messages++
		s.Bytes += int64(len(data))
		s.LastMessageAt = at
		s.Items += items
		s.Rejected += rejected
		if instance != "" {
			s.Instance = instance
		}
	})
	if err == nil && s.sink.Ingest(t.Name, m) {
		s.accepted++
	}
	if s.accepted == 0 && s.rejected >= garbageLimit {
		return fmt.Errorf("incompatible: the first %d messages were all rejected (is this a sentinel-top wire v1 stream?)", s.rejected)
	}
	return nil
}

// end is the stream's last call: what it had not counted is counted, and
// its decoder's names are given back to the budget.
func (s *stream) end() {
	s.flush()
	s.c.chargeNames(-s.nameBytes)
	s.nameBytes = 0
}

// flush counts the messages dropped over MaxMessageRate not counted yet.
func (s *stream) flush() {
	if s.overRate > 0 {
		s.c.addOverflow(overRateReason, s.t.Name, s.overRate)
		s.overRate = 0
	}
}

// overLimit rejects a message over maxFrame bytes; the connection ends.
func (s *stream) overLimit(maxFrame int) error {
	s.c.Reject(s.t.Name, fmt.Errorf("%w: frame over %d bytes", wire.ErrTooLarge, maxFrame))
	return fmt.Errorf("frame over the %d-byte limit", maxFrame)
}

// handshakeLimit bounds what a target may send before its stream begins:
// the upgrade response, and before it a proxy's answer and TLS's handshake.
// A real one is a few hundred bytes (a few KiB with certificates).
const handshakeLimit = 64 << 10

var errHandshakeTooLarge = fmt.Errorf("upgrade response over %d KiB", handshakeLimit>>10)

// handshakeConn fails reads past its limit until lifted, so that a peer
// sending endless headers is cut off after handshakeLimit bytes rather than
// buffered for the whole HandshakeTimeout. Reads and lift happen on the
// dialing goroutine only.
//
// With headers set (a stream without TLS), it also reads ahead into its own
// buffer and hands its reader no byte past the end of a header block in one
// Read: the websocket library's buffer then holds nothing past the upgrade
// response, and what the target sent after it (its hello, often in the same
// segment) stays here, in rest, for a poller taking the connection over.
type handshakeConn struct {
	net.Conn
	left    int64 // bytes still allowed; < 0 once lifted
	over    bool  // the limit was hit
	headers bool
	ahead   []byte // read, not handed out yet
	err     error  // the read that filled ahead failed too
	eol     int    // of the header block's end: 1 after "\n", 2 after "\n\r"
}

func (c *handshakeConn) Read(p []byte) (int, error) {
	if len(c.ahead) > 0 {
		return c.handout(p), nil
	}
	if err := c.err; err != nil {
		c.err = nil
		return 0, err
	}
	if c.left < 0 {
		return c.Conn.Read(p)
	}
	if c.left == 0 {
		c.over = true
		return 0, errHandshakeTooLarge
	}
	if !c.headers {
		if int64(len(p)) > c.left {
			p = p[:c.left]
		}
		n, err := c.Conn.Read(p)
		c.left -= int64(n)
		return n, err
	}
	buf := make([]byte, min(c.left, 4096))
	n, err := c.Conn.Read(buf)
	c.left -= int64(n)
	if n == 0 {
		return 0, err
	}
	c.ahead, c.err = buf[:n], err
	return c.handout(p), nil
}

// handout copies from ahead into p, up to the end of a header block
// (an empty line, "\r\n" or "\n") while not lifted.
func (c *handshakeConn) handout(p []byte) int {
	n := min(len(p), len(c.ahead))
	if c.left >= 0 {
		for i, b := range c.ahead[:n] {
			if b == '\n' && c.eol > 0 {
				c.eol, n = 0, i+1
				break
			}
			switch {
			case b == '\n':
				c.eol = 1
			case b == '\r' && c.eol == 1:
				c.eol = 2
			default:
				c.eol = 0
			}
		}
	}
	copy(p, c.ahead[:n])
	c.ahead = c.ahead[n:]
	return n
}

// lift ends the limit once the upgrade is complete.
func (c *handshakeConn) lift() { c.left = -1 }

// rest is what the target sent after its upgrade response that was read
// already, for a reader of the raw connection to begin with.
func (c *handshakeConn) rest() []byte { return c.ahead }

// overRateReason is the overflow counter of messages dropped by
// Options.MaxMessageRate.
const overRateReason = ReasonMaxRate

// addOverflow counts n items turned away by a limit at once.
func (c *Collector) addOverflow(reason, place string, n int64) {
	if n <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	count(c.overflow, reason, place)
	c.overflow[reason].Count += n - 1
}

// rateLimit is a token bucket: rate tokens a second, holding at most
// rateBurstSeconds' worth. The zero rateLimit allows everything.
type rateLimit struct {
	rate, burst, tokens float64
	last                time.Time
}

// newRateLimit returns a full bucket, or the zero rateLimit for no limit
// (rate <= 0).
func newRateLimit(rate float64, now time.Time) rateLimit {
	if rate <= 0 {
		return rateLimit{}
	}
	burst := max(rate*rateBurstSeconds, 1)
	return rateLimit{rate: rate, burst: burst, tokens: burst, last: now}
}

// allow takes a token if there is one; the zero rateLimit always allows.
func (r *rateLimit) allow(now time.Time) bool {
	if r.rate <= 0 {
		return true
	}
	if d := now.Sub(r.last); d > 0 {
		r.tokens = min(r.burst, r.tokens+d.Seconds()*r.rate)
		r.last = now
	}
	if r.tokens < 1 {
		return false
	}
	r.tokens--
	return true
}

// TargetNames lists the targets for a header line.
func TargetNames(ts []Target) string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Name
	}
	return strings.Join(names, ",")
}

// frames are the buffers messages are read into: nothing keeps a message
// once it is ingested, so a buffer serves the next message read by any
// connection, and reading a frame allocates nothing in steady state.
var frames = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledFrame is the largest buffer put back: a rare large frame does
// not pin its size for good.
const maxPooledFrame = 256 << 10

// readMessage reads the next message into a buffer from frames; the caller
// gives it back with releaseFrame once done with the message.
func readMessage(conn *websocket.Conn) (kind int, frame *[]byte, err error) {
	kind, r, err := conn.NextReader()
	if err != nil {
		return kind, nil, err
	}
	frame = frames.Get().(*[]byte)
	buf := (*frame)[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			*frame = buf
			return kind, frame, nil
		}
		if err != nil {
			*frame = buf
			releaseFrame(frame)
			return kind, nil, err
		}
	}
}

func releaseFrame(frame *[]byte) {
	if cap(*frame) > maxPooledFrame {
		*frame = nil
	}
	*frame = (*frame)[:0]
	frames.Put(frame)
}
