package sentinelgolang

import (
	"cmp"
	"net"
	"net/http"
	"os"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/internal/wsstream"
)

// The stream is the agent's: hello, the rules, the backlog of closed
// buckets, then live buckets and transitions; a bounded queue per reader
// that never makes the service wait; bye on Close.

func encodeFrame(m wire.Message) (*wsstream.Frame, error) { return wsstream.Encode(m) }

// Name, Stat and Concurrency make a resource a wsstream.Series.
func (r *resource) Name() string             { return r.name }
func (r *resource) Stat() *core.MetricWindow { return r.stat }
func (r *resource) Concurrency() int64       { return r.inflight.Load() }

// series lists the resources for the shipper, with the hot values of
// those that have hotspot rules.
func (a *Adapter) series() []wsstream.Series {
	res := *a.resources.Load()
	hot := a.rules.Load().hot
	out := make([]wsstream.Series, 0, len(res))
	for name, r := range res {
		if t := hot[name]; t != nil {
			out = append(out, hotResource{r, t})
			continue
		}
		out = append(out, r)
	}
	return out
}

// Ship sends every bucket closed since the last call. The adapter calls it
// at each bucket boundary.
func (a *Adapter) Ship() { a.shipper.Ship() }

// Handler returns the stream endpoint, for services that mount it on their
// own server (at StreamPath, by convention). Browsers must be same-origin;
// clients that send no Origin, as collectors do, are accepted. The token,
// when set, is checked first, in constant time.
func (a *Adapter) Handler() http.Handler { return a.stream }

// initialFrames is what a new connection receives first, under the
// stream's registration lock.
func (a *Adapter) initialFrames() []*wsstream.Frame {
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
	out := []*wsstream.Frame{hello}
	if f := a.rules.Load().frame; f != nil {
		out = append(out, f)
	}
	return append(out, a.backlog.Frames()...)
}

// Serve serves the stream at StreamPath on ln (TLS when Options.TLSConfig
// is set) until Close; it then returns http.ErrServerClosed.
func (a *Adapter) Serve(ln net.Listener) error {
	mux := http.NewServeMux()
	mux.Handle(StreamPath, a.stream)
	return a.stream.Serve(ln, mux)
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
		close(a.done)
		bye, _ := encodeFrame(&wire.Bye{Header: wire.Header{Ts: a.clock.UnixMilli(), Instance: a.opts.Instance}, Reason: "shutdown"})
		a.stream.Close(bye)
	})
	a.wg.Wait()
	return nil
}
