package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/collector/report"
	"github.com/sentinel-top/sentinel-top/internal/cliflag"
	"github.com/sentinel-top/sentinel-top/internal/serveapi"
	"github.com/sentinel-top/sentinel-top/internal/termtext"
	"github.com/sentinel-top/sentinel-top/internal/tlsfile"
	"github.com/sentinel-top/sentinel-top/internal/wsstream"
)

const serveUsage = `Usage: sentinel-top serve (--targets LIST | --replay FILE|NAME | --demo [NAME]) [--listen ADDR] [flags]

Runs the collector without a terminal and serves what it knows:
  /metrics           Prometheus metrics (breaker states, rates, findings, health)
  /sentinel/stream   the merged wire v1 stream: use this collector as a --targets
                     entry of another collector or dashboard (one per cluster, one view)
  /report            the findings (findings-v1 JSON; ?format=md or ?format=text)
  /healthz           200 while serving, 503 once a --record write failed (needs
                     no token)

Examples:
  sentinel-top serve --targets @cluster-a.txt --listen 0.0.0.0:9464 --allow-host collector-a --serve-token "$T" --tls-cert c.pem --tls-key k.pem
  sentinel-top --targets wss://collector-a:9464,wss://collector-b:9464 --token "$T"

--token is what this collector sends to its targets; --serve-token is what
every client of this collector must send (/healthz excepted). A request
naming this server by another name than its listen address (or localhost on
loopback) gets 403 unless --allow-host lists the name (a name given to
--listen is listed).

Every connection is bounded: at most --max-conns are open (more are closed
as they arrive), a request must arrive whole within 10 s and a response be
taken within 30 s (each 32 KiB within 5 s); at most 8 renders of /metrics
and 4 of /report are in flight, more get 503. A --record write that fails
(a full disk) is said at once on stderr, in /metrics
(sentinel_top_record_errors_total) and by /healthz.

Flags:
`

// serveFlags are serve's own flags, beside the input flags.
type serveFlags struct {
	listen, serveToken string
	certFile, keyFile  string
	maxReaders         int
	maxConns           int
	origins, hosts     []string
	backlog            int64
}

// register defines the flags on fs.
func (f *serveFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.listen, "listen", "127.0.0.1:9464", "address to serve on (loopback by default)")
	fs.StringVar(&f.serveToken, "serve-token", "", "bearer token required by every endpoint (env SENTINEL_TOP_SERVE_TOKEN)")
	fs.StringVar(&f.certFile, "tls-cert", "", "TLS certificate (PEM) to serve https/wss")
	fs.StringVar(&f.keyFile, "tls-key", "", "TLS private key (PEM)")
	fs.IntVar(&f.maxReaders, "max-readers", wsstream.DefaultMaxReaders, "most simultaneous /sentinel/stream readers")
	fs.IntVar(&f.maxConns, "max-conns", wsstream.DefaultMaxConns, "most connections open at once, streams and requests together; more are closed as they arrive")
	fs.Var(cliflag.List(&f.origins), "allow-origin", "browser origin (e.g. https://dash.example.com) whose pages may use the endpoints; repeat or separate with commas; default none")
	fs.Var(cliflag.List(&f.hosts), "allow-host", "name clients use to reach this server (e.g. collector-a); other Host headers than the listen address (and localhost on loopback) get 403, against DNS rebinding; repeat or separate with commas")
	fs.Var(cliflag.Bytes(&f.backlog), "max-stream-backlog", "most kept for new /sentinel/stream readers (the instances' hello and rules, then a minute of buckets), e.g. 64MiB; taken from --max-memory (default: an eighth of it, at most a quarter); over it, the oldest buckets go first")
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := newCommand("sentinel-top serve", serveUsage, stderr)
	var f serveFlags
	f.register(cmd.fs)
	if code, ok := cmd.parse(args, stdout, stderr); !ok {
		return code
	}
	tlsConf, err := tlsfile.Server(f.certFile, f.keyFile)
	if errors.Is(err, tlsfile.ErrHalfPair) {
		err = errors.New("--tls-cert and --tls-key go together")
	}
	if err != nil {
		fmt.Fprintln(stderr, "sentinel-top serve:", err)
		return exitUsage
	}
	if f.maxConns <= 0 {
		fmt.Fprintln(stderr, "sentinel-top serve: --max-conns must be positive")
		return exitUsage
	}
	ln, err := f.listenOn(stderr)
	if err != nil {
		fmt.Fprintln(stderr, "sentinel-top serve:", err)
		return exitRuntime
	}
	s, err := cmd.in.open(ctx, -1)
	if err != nil {
		ln.Close()
		return openFailed(stderr, "sentinel-top serve", err)
	}
	stream := s.c.Restream(collector.RestreamOptions{Options: wsstream.Options{TLS: tlsConf, MaxReaders: f.maxReaders,
		MaxConns: f.maxConns, AllowOrigins: f.origins, AllowHosts: f.hosts},
		BacklogBytes: f.backlog})
	scheme := "http"
	if tlsConf != nil {
		scheme = "https"
	}
	handler := serveapi.Handler(serveapi.Options{Collector: s.c, Source: s.source, Stream: stream, Token: f.serveToken, RecordError: s.recordError})
	return serve(ctx, s, stream, ln, handler, scheme, stderr)
}

// listenOn listens on --listen, adds the name it gives to the hosts
// allowed, and warns when the server is open beyond loopback to anyone.
func (f *serveFlags) listenOn(stderr io.Writer) (net.Listener, error) {
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return nil, err
	}
	if host, _, _ := net.SplitHostPort(f.listen); host != "" && net.ParseIP(host) == nil {
		f.hosts = append(f.hosts, host) // --listen collector-a:9464: clients use that name
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !tcp.IP.IsLoopback() && f.serveToken == "" {
		fmt.Fprintf(stderr, "sentinel-top serve: warning: serving %s beyond loopback without --serve-token: anyone who reaches it reads every breaker, rule and finding\n", ln.Addr())
	}
	return ln, nil
}

// serve feeds the collector and serves handler on ln until ctx ends or
// the server fails, then closes the input; it returns the exit code.
func serve(ctx context.Context, s *session, stream *wsstream.Server, ln net.Listener, handler http.Handler, scheme string, stderr io.Writer) int {
	feedCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	fed := make(chan error, 1)
	go func() { fed <- s.feed(feedCtx) }()
	published := make(chan struct{})
	go func() { s.c.Run(feedCtx); close(published) }()
	defer func() { cancel(); <-published }()
	served := make(chan error, 1)
	go func() { served <- stream.Serve(ln, handler) }()
	fmt.Fprintf(stderr, "sentinel-top serve: %s on %s://%s (/metrics /sentinel/stream /report)\n",
		report.Sanitize(s.source), scheme, ln.Addr())
	told := make(chan struct{})
	go func() { // a recording that stops is said at once, not at the end
		defer close(told)
		select {
		case <-s.recordFailed():
			fmt.Fprintf(stderr, "sentinel-top serve: %s: the recording stopped; /healthz answers 503 from now on\n", termtext.Sanitize(s.recordError().Error(), 4096))
		case <-feedCtx.Done():
		}
	}()
	code := exitOK
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-served:
	}
	cancel()
	<-told // stderr is this goroutine's from here
	if serveErr != nil {
		fmt.Fprintln(stderr, "sentinel-top serve:", serveErr)
		code = exitRuntime
	}
	stream.Close(nil)
	select {
	case <-fed:
	case <-time.After(5 * time.Second):
	}
	if err := s.close(); err != nil {
		fmt.Fprintln(stderr, "sentinel-top serve:", err)
		code = exitRuntime
	}
	return code
}
