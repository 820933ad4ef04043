package source

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gorilla/websocket"

	"github.com/sentinel-top/sentinel-top/collector/feed"
	"github.com/sentinel-top/sentinel-top/core"
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
	// DefaultMaxMessageRate is DialOptions.MaxMessageRate when it is zero:
	// far above an agent's 2 messages a second, far below a flood.
	DefaultMaxMessageRate = 1000
)

// DialOptions configures the dialing of targets. Every field is optional.
type DialOptions struct {
	// Clock is the collector's time: a target's status times, the
	// backoff, the polls of Java targets. It must be the clock of the
	// store the targets feed. Default: core.NewRealClock().
	Clock core.Clock
	// WallClock paces the rate limit in real time whatever Clock says.
	// Default: core.NewRealClock().
	WallClock core.Clock
	// Limits bound every message (wire.Limits; zero fields take its
	// defaults).
	Limits wire.Limits
	// MaxMessageRate caps the messages a second taken from one connection
	// (a token bucket holding 10 seconds' worth, so a reconnect's backlog
	// passes); the excess is dropped unread and counted (Sink.OverRate).
	// Default DefaultMaxMessageRate; negative: no limit.
	MaxMessageRate float64
	// Token is sent as "Authorization: Bearer TOKEN", when set, to the
	// stream targets without a token of their own (a --targets file
	// line's: see ParseTargets).
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

// withDefaults fills in the defaults of the fields left zero.
func (o DialOptions) withDefaults() DialOptions {
	if o.Clock == nil {
		o.Clock = core.NewRealClock()
	}
	if o.WallClock == nil {
		o.WallClock = core.NewRealClock()
	}
	if o.MaxMessageRate == 0 {
		o.MaxMessageRate = DefaultMaxMessageRate
	}
	if o.HandshakeTimeout <= 0 {
		o.HandshakeTimeout = 10 * time.Second
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.MaxHandshakes <= 0 {
		o.MaxHandshakes = DefaultMaxHandshakes
	}
	return o
}

// targetState is one target's connection state across reconnects, owned by
// its dial loop: the status it tells the store (its record), and what it
// keeps for itself.
type targetState struct {
	*feed.TargetRecord
	// named holds the hashes of the instance names its hellos gave, at
	// most feed.MaxTargetInstances (TargetStatus.Instances counts them).
	named map[uint64]struct{}
	// javaRules is a Java target's rules as last read.
	javaRules javaRulesMemo
	// java is what a Java target's polls delivered, for a reconnect to go
	// on from (javaResume).
	java javaMemory
}

// name counts instance among the instances the target's hellos named,
// and gives how many (at most feed.MaxTargetInstances). Its connections
// call it one at a time.
func (ts *targetState) name(seed maphash.Seed, instance string) int {
	if ts.named == nil {
		ts.named = map[uint64]struct{}{}
	}
	if len(ts.named) < feed.MaxTargetInstances {
		ts.named[maphash.String(seed, instance)] = struct{}{}
	}
	return len(ts.named)
}

// dialer is one Dial: its sink, its options, and what its targets share.
type dialer struct {
	sink  feed.DialSink
	opts  DialOptions
	clock core.Clock
	seed  maphash.Seed // of the targets' instance names' hashes (targetState.named)
	// apps are the resources the Java targets of each app reported.
	apps javaApps
}

// Dial connects to every target and feeds sink until ctx ends,
// reconnecting with exponential backoff and jitter (from MinBackoff, capped
// at MaxBackoff). Each target's status is a record handed to sink
// (DialSink.AddTargets) that the target's goroutine updates. Dial returns
// when every connection goroutine has ended.
func Dial(ctx context.Context, sink feed.DialSink, targets []Target, opts DialOptions) {
	opts = opts.withDefaults()
	d := &dialer{sink: sink, opts: opts, clock: opts.Clock, seed: maphash.MakeSeed()}
	turns := make(chan struct{}, opts.MaxHandshakes)
	states := make([]*targetState, len(targets))
	records := make([]*feed.TargetRecord, len(targets))
	now := d.clock.UnixMilli()
	for i, t := range targets {
		records[i] = feed.NewTargetRecord(feed.TargetStatus{Name: t.Name, State: feed.TargetConnecting, Since: now, DownSince: now})
		states[i] = &targetState{TargetRecord: records[i]}
	}
	sink.AddTargets(records...)
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
			d.dialLoop(ctx, t, states[i], turns, pl, rand.New(rand.NewPCG(seed, uint64(i))))
		}()
	}
	wg.Wait()
}

func (d *dialer) dialLoop(ctx context.Context, t Target, st *targetState, turns chan struct{}, pl *pollers, rng *rand.Rand) {
	backoff := MinBackoff
	for ctx.Err() == nil {
		st.Update(func(s *feed.TargetStatus) { s.State, s.Since = feed.TargetConnecting, d.clock.UnixMilli() })
		began := d.clock.Now()
		err := d.connect(ctx, t, st, turns, pl)
		if ctx.Err() != nil {
			return
		}
		if d.clock.Now().Sub(began) >= stableAfter {
			backoff = MinBackoff
		}
		// Full jitter: anywhere in [backoff/2, backoff], so targets that
		// fail together do not come back together.
		wait := backoff/2 + time.Duration(rng.Int64N(int64(backoff/2)+1))
		now := d.clock.UnixMilli()
		st.Update(func(s *feed.TargetStatus) {
			s.State, s.Since, s.Problem, s.RetryAt = feed.TargetDown, now, problemOf(err), now+wait.Milliseconds()
			if s.DownSince == 0 {
				s.DownSince = now
			}
			s.Reconnects++
		})
		timer := make(chan struct{})
		tm := d.clock.AfterFunc(wait, func() { close(timer) })
		select {
		case <-ctx.Done():
			tm.Stop()
			return
		case <-timer:
		}
		backoff = min(backoff*2, MaxBackoff)
	}
}

// problemOf tells what kind of failure a dial or read error is, with its
// particulars; the views word it (collector.ProblemText).
func problemOf(err error) feed.Problem {
	var (
		ne   net.Error
		op   *net.OpError
		dns  *net.DNSError
		rec  tls.RecordHeaderError
		host x509.HostnameError
		cert *tls.CertificateVerificationError
		auth x509.UnknownAuthorityError
		hs   *httpStatusError
	)
	switch {
	case err == nil:
		return feed.Problem{Kind: feed.ProblemClosed}
	case errors.As(err, &hs):
		return feed.Problem{Kind: feed.ProblemHTTP, Status: hs.code}
	case errors.Is(err, syscall.ECONNREFUSED):
		p := feed.Problem{Kind: feed.ProblemRefused}
		if errors.As(err, &op) && op.Addr != nil {
			p.Where = op.Addr.String()
		}
		return p
	case errors.As(err, &dns):
		if dns.IsNotFound {
			return feed.Problem{Kind: feed.ProblemNoHost, Where: dns.Name}
		}
		return feed.Problem{Kind: feed.ProblemDNS, Where: dns.Name, Detail: dns.Err}
	case errors.As(err, &rec):
		return feed.Problem{Kind: feed.ProblemNotTLS}
	case errors.As(err, &host):
		return feed.Problem{Kind: feed.ProblemTLSHost, Detail: host.Error()}
	case errors.As(err, &auth), errors.As(err, &cert):
		return feed.Problem{Kind: feed.ProblemTLSTrust, Detail: err.Error()}
	case errors.Is(err, syscall.ECONNRESET):
		return feed.Problem{Kind: feed.ProblemReset, Detail: err.Error()}
	case errors.Is(err, websocket.ErrBadHandshake):
		return feed.Problem{Kind: feed.ProblemNotStream, Detail: err.Error()}
	case errors.As(err, &ne) && ne.Timeout():
		return feed.Problem{Kind: feed.ProblemTimeout, Detail: err.Error()}
	}
	return feed.Problem{Kind: feed.ProblemOther, Detail: err.Error()}
}

// httpStatusError is a target that answered HTTP without upgrading to a
// stream.
type httpStatusError struct{ code int }

func (e *httpStatusError) Error() string {
	return fmt.Sprintf("HTTP %d %s", e.code, http.StatusText(e.code))
}

// connect runs one connection until it fails. Its handshake waits for a
// turn of turns (DialOptions.MaxHandshakes).
func (d *dialer) connect(ctx context.Context, t Target, st *targetState, turns chan struct{}, pl *pollers) error {
	if isJavaTarget(t) {
		return d.pollJava(ctx, t, st) // javatransport.go
	}
	opts := d.opts
	sink := d.sink.Bound(t.Name) // the instances this target announces are its own
	header := http.Header{}
	if token := cmp.Or(t.token, opts.Token); token != "" {
		header.Set("Authorization", "Bearer "+token) // its own, or the default: never another target's
	}
	var bounded *handshakeConn
	plain := pl != nil && strings.HasPrefix(t.URL, "ws:")
	wd := websocket.Dialer{HandshakeTimeout: opts.HandshakeTimeout, TLSClientConfig: opts.TLS, Proxy: http.ProxyFromEnvironment,
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
	conn, resp, err := wd.DialContext(ctx, t.URL, header)
	<-turns
	if bounded != nil && bounded.over {
		d.sink.Reject(t.Name, fmt.Errorf("%w: %w", wire.ErrTooLarge, errHandshakeTooLarge))
		st.Update(func(s *feed.TargetStatus) { s.Rejected++ })
		if conn != nil {
			conn.Close()
		}
		return errHandshakeTooLarge
	}
	if err != nil {
		if resp != nil {
			return &httpStatusError{resp.StatusCode}
		}
		return err
	}
	defer conn.Close()
	bounded.lift() // the stream's own limits take over
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	lim := opts.Limits
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
	st.Update(func(s *feed.TargetStatus) {
		s.State, s.Since, s.Problem, s.DownSince = feed.TargetUp, d.clock.UnixMilli(), feed.Problem{}, 0
	})
	s := d.newStream(t, st, sink)
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
	d                  *dialer
	t                  Target
	st                 *targetState
	sink               feed.Sink
	dec                *wire.Decoder
	accepted, rejected int
	rate               rateLimit // in the stream, read with it
	overRate           int64     // dropped, not yet counted
	nameBytes          int64     // the decoder's own names, charged to the budget
}

func (d *dialer) newStream(t Target, st *targetState, sink feed.Sink) *stream {
	dec := wire.NewDecoder(d.opts.Limits)
	dec.ShareNames(d.sink.Names())
	return &stream{d: d, t: t, st: st, sink: sink, dec: dec,
		rate: newRateLimit(d.opts.MaxMessageRate, d.opts.WallClock.Now())}
}

// frameHoldFactor is what a frame being decoded holds, charged to the
// budget, per byte of it: its buffer (grown by doubling), and the message
// it decodes to (its names, items and rules as Go values).
const frameHoldFactor = 3

// message takes one websocket message of kind (websocket.TextMessage, ...);
// data is not kept past the call. An error ends the connection.
func (s *stream) message(kind int, data []byte) error {
	d, t, st := s.d, s.t, s.st
	at := d.clock.UnixMilli()
	if !s.rate.allow(d.opts.WallClock.Now()) {
		st.Tally(func(s *feed.TargetStatus) { s.Messages++; s.Bytes += int64(len(data)); s.LastMessageAt = at })
		// Dropped before decoding: a flood costs its reading only.
		if s.overRate++; s.overRate >= 1000 {
			s.flush()
		}
		return nil
	}
	s.flush()
	// The frame, and what it decodes to, are charged to the budget until
	// the message is ingested.
	held := int64(len(data)) * frameHoldFactor
	d.sink.Hold(held)
	defer d.sink.Hold(-held)
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
		d.sink.HoldNames(nb - s.nameBytes)
		s.nameBytes = nb
	}
	instance, instances := "", 0
	var hello *wire.Hello
	if err != nil {
		s.sink.Reject(t.Name, err)
		s.rejected++
		rejected = 1
	} else {
		switch m := m.(type) {
		case *wire.Hello:
			instance, hello = m.Instance, m
			instances = st.name(d.seed, m.Instance)
		case *wire.Buckets:
			items = int64(len(m.Items))
		}
	}
	tally := func(s *feed.TargetStatus) {
		s.Messages++
		s.Bytes += int64(len(data))
		s.LastMessageAt = at
		s.Items += items
	}
	if rejected == 0 && instance == "" {
		st.Tally(tally) // the running counts alone
	} else {
		st.Update(func(s *feed.TargetStatus) {
			tally(s)
			s.Rejected += rejected
			if instance != "" {
				s.Instance, s.Instances = instance, instances
			}
		})
	}
	switch {
	case err != nil:
	case hello != nil:
		// Its sender is what its sdk says: a recording or a re-served
		// stream of a Java target is still Java's.
		if s.sink.Hello(t.Name, hello, OriginOf(hello.SDK)) {
			s.accepted++
		}
	case s.sink.Ingest(t.Name, m):
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
	s.d.sink.HoldNames(-s.nameBytes)
	s.nameBytes = 0
}

// flush counts the messages dropped over MaxMessageRate not counted yet.
func (s *stream) flush() {
	if s.overRate > 0 {
		s.d.sink.OverRate(s.t.Name, s.overRate)
		s.overRate = 0
	}
}

// overLimit rejects a message over maxFrame bytes; the connection ends.
func (s *stream) overLimit(maxFrame int) error {
	s.sink.Reject(s.t.Name, fmt.Errorf("%w: frame over %d bytes", wire.ErrTooLarge, maxFrame))
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
