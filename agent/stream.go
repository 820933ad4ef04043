package agent

import (
	"fmt"
	"net"
	"net/http"

	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/internal/wsstream"
)

// StreamPath is where Serve and ListenAndServe serve the stream.
const StreamPath = "/sentinel/stream"

// DefaultAddr is where ListenAndServe listens when given no address: the
// loopback interface only, so nothing is exposed by accident.
const DefaultAddr = "127.0.0.1:8720"

func encodeFrame(m wire.Message) (*wsstream.Frame, error) { return wsstream.Encode(m) }

// Handler returns the stream endpoint as an http.Handler, for services that
// mount it on their own server (at StreamPath, by convention).
//
// Origin and host policy: a browser's Origin must be listed in
// Options.AllowOrigins, and the Host header must name the address the
// request arrived on, localhost on loopback, or a name in Options.AllowHosts
// (HTTP 403 otherwise); clients that send no Origin header, as collectors
// do, need no listing. The token, when set, is checked next, in constant
// time.
func (a *Agent) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if local, ok := req.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
			a.warnIfExposed(local)
		}
		a.stream.ServeHTTP(w, req)
	})
}

// warnIfExposed says, once, through Stats.Warning and Options.Logf, that
// the stream is served beyond loopback without a token.
func (a *Agent) warnIfExposed(addr net.Addr) {
	tcp, ok := addr.(*net.TCPAddr)
	if a.opts.Token != "" || !ok || tcp.IP.IsLoopback() || a.warning.Load() != nil {
		return
	}
	w := fmt.Sprintf("sentinel-top agent: the stream on %s has no token: anyone who can reach it reads this service's "+
		"statistics and takes reader slots; set agent.Options.Token (and TLSConfig beyond a trusted network)", addr)
	if a.warning.CompareAndSwap(nil, &w) {
		a.opts.Logf("%s", w)
	}
}

// initialFrames is what a new connection receives before live messages:
// hello, the rules, then the backlog.
func (a *Agent) initialFrames() []*wsstream.Frame {
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
	out := []*wsstream.Frame{hello, a.rules.Load()}
	return append(out, a.backlog.Frames()...)
}

// Serve serves the stream at StreamPath on ln (with TLS when
// Options.TLSConfig is set), and the metrics at MetricsPath when
// Options.ServeMetrics is set, until Close. It returns http.ErrServerClosed
// after Close.
func (a *Agent) Serve(ln net.Listener) error {
	a.warnIfExposed(ln.Addr())
	mux := http.NewServeMux()
	mux.Handle(StreamPath, a.stream)
	if a.opts.ServeMetrics {
		mux.Handle(MetricsPath, a.MetricsHandler())
	}
	return a.stream.Serve(ln, mux)
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
