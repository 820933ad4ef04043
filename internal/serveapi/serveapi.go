package serveapi

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/subtle"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/common/expfmt"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/collector/report"
	"github.com/sentinel-top/sentinel-top/internal/wsstream"
)

// Bounds of the rendered routes. A render holds a 32 KiB buffer (and,
// gzipped, a compressor of about 1 MiB) until its response is written: at
// most MaxMetricsRenders and MaxReportRenders are in flight, and a client
// must take each piece within RenderStall, the whole response within
// wsstream.DefaultResponseTimeout.
const (
	MaxMetricsRenders = 8
	MaxReportRenders  = 4
	RenderStall       = 5 * time.Second
)

// Options are what the routes serve.
type Options struct {
	// Collector is read through its published snapshot (Snapshot), as
	// the dashboard and a report read it; /report's pages are charged to
	// its memory budget while held.
	Collector *collector.Collector
	// Source names the input in the report.
	Source string
	// Stream is served at /sentinel/stream, and its connections counted
	// in /metrics.
	Stream *wsstream.Server
	// Token, when not empty, is the bearer token every route but /healthz
	// requires.
	Token string
	// RecordError says why the recording stopped, nil while it works;
	// a nil RecordError: there is no recording.
	RecordError func() error
}

// serveMetrics are what serve says of its own serving in /metrics, beside
// the collector's metrics.
type serveMetrics struct {
	reg     *prometheus.Registry
	busy    *prometheus.CounterVec // requests refused: renders in flight
	cut     *prometheus.CounterVec // responses whose write failed
	recErrs prometheus.CounterFunc
}

// newServeMetrics registers serve's metrics, the connections of stream's
// server, and recordErr (nil while the recording works, or without one)
// on reg.
func newServeMetrics(reg *prometheus.Registry, stream *wsstream.Server, recordErr func() error) *serveMetrics {
	m := &serveMetrics{reg: reg,
		busy: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sentinel_top_serve_requests_refused_total",
			Help: "Requests answered 503 because as many renders of the endpoint were in flight as it allows."}, []string{"endpoint"}),
		cut: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sentinel_top_serve_responses_cut_total",
			Help: "Responses cut off: the client read too slowly (a piece not taken within 5 s, or the whole not within 30 s) or went away."}, []string{"endpoint"}),
	}
	m.recErrs = prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "sentinel_top_record_errors_total",
		Help: "Writes to the --record file that failed (a full disk, a size limit): the recording stopped at the first."},
		func() float64 {
			if recordErr() != nil {
				return 1
			}
			return 0
		})
	reg.MustRegister(m.busy, m.cut, m.recErrs,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "sentinel_top_serve_connections",
			Help: "Connections serve holds open, streams and plain requests together (at most --max-conns)."},
			func() float64 { open, _ := stream.Conns(); return float64(open) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "sentinel_top_serve_connections_refused_total",
			Help: "Connections closed as they were accepted because --max-conns were open."},
			func() float64 { _, refused := stream.Conns(); return float64(refused) }))
	return m
}

// bounded serves next with at most n renders of endpoint in flight; a
// request beyond them gets 503 at once, counted, and is told to retry.
func (m *serveMetrics) bounded(endpoint string, n int, next func(w http.ResponseWriter, r *http.Request) error) http.HandlerFunc {
	slots := make(chan struct{}, n)
	busy, cut := m.busy.WithLabelValues(endpoint), m.cut.WithLabelValues(endpoint)
	return func(w http.ResponseWriter, r *http.Request) {
		select {
		case slots <- struct{}{}:
		default:
			busy.Inc()
			w.Header().Set("Retry-After", "1")
			http.Error(w, "503 service unavailable: as many renders of "+endpoint+" are in flight as serve allows; retry", http.StatusServiceUnavailable)
			return
		}
		defer func() { <-slots }()
		sw := &stallWriter{ResponseWriter: w, rc: http.NewResponseController(w), deadline: time.Now().Add(wsstream.DefaultResponseTimeout)}
		if err := next(sw, r); err != nil {
			cut.Inc()
		}
	}
}

// stallWriter gives a client RenderStall to take each piece of a response
// (never more than the server's deadline for the whole): one that stops
// reading is cut off within seconds, and its render's slot freed.
type stallWriter struct {
	http.ResponseWriter
	rc       *http.ResponseController
	deadline time.Time // the whole response's
}

func (s *stallWriter) Write(p []byte) (int, error) {
	d := time.Now().Add(RenderStall)
	if d.After(s.deadline) {
		d = s.deadline
	}
	_ = s.rc.SetWriteDeadline(d)
	return s.ResponseWriter.Write(p)
}

// metricsPage writes the collector's metrics, streamed from its latest
// snapshot, then serve's own and the process's, in the Prometheus text
// format, gzipped when the client accepts it.
func metricsPage(c *collector.Collector, own *prometheus.Registry) func(w http.ResponseWriter, r *http.Request) error {
	return func(rw http.ResponseWriter, r *http.Request) error {
		rw.Header().Set("Content-Type", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
		rw.Header().Add("Vary", "Accept-Encoding")
		var w io.Writer = rw
		var zw *gzip.Writer
		if acceptsGzip(r.Header.Get("Accept-Encoding")) {
			rw.Header().Set("Content-Encoding", "gzip")
			zw, _ = gzip.NewWriterLevel(rw, gzip.BestSpeed)
			w = zw
		}
		if err := c.WriteMetrics(w); err != nil {
			return err
		}
		mfs, _ := own.Gather() // the process's metrics: what can be gathered is written
		bw := bufio.NewWriterSize(w, 8<<10)
		for _, mf := range mfs {
			if _, err := expfmt.MetricFamilyToText(bw, mf); err != nil {
				return err
			}
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		if zw != nil {
			return zw.Close()
		}
		return nil
	}
}

// acceptsGzip says whether an Accept-Encoding header lists gzip (with a
// non-zero weight).
func acceptsGzip(h string) bool {
	for _, part := range strings.Split(h, ",") {
		enc, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(enc), "gzip") {
			q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
			return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
		}
	}
	return false
}

// Handler routes serve's endpoints, every one but /healthz behind the
// token when there is one. Each call registers its own metrics.
func Handler(o Options) http.Handler {
	recordErr := o.RecordError
	if recordErr == nil {
		recordErr = func() error { return nil }
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := newServeMetrics(reg, o.Stream, recordErr)
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.bounded("/metrics", MaxMetricsRenders, metricsPage(o.Collector, reg)))
	mux.Handle("/sentinel/stream", o.Stream)
	mux.Handle("/report", m.bounded("/report", MaxReportRenders, reportPage(o.Collector, o.Source)))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if recordErr() != nil {
			// What failed is said on stderr and to those with the token,
			// not to any probe.
			http.Error(w, "503 service unavailable: the recording stopped: a write to the --record file failed", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok\n")
	})
	if o.Token == "" {
		return mux
	}
	return healthzOpen(mux, requireToken(o.Token, mux))
}

// reportPage serves the findings of the snapshot published last, in the
// format ?format= asks for.
func reportPage(c *collector.Collector, source string) func(w http.ResponseWriter, r *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		render, ctype := report.JSON, "application/json"
		switch r.URL.Query().Get("format") {
		case "md", "markdown":
			render, ctype = report.Markdown, "text/markdown; charset=utf-8"
		case "text":
			render, ctype = report.Text, "text/plain; charset=utf-8"
		case "", "json":
		default:
			http.Error(w, "400 bad request: format must be json, md or text", http.StatusBadRequest)
			return nil
		}
		rep := report.FromSnapshot(source, c.Snapshot(), c) // as published: what /metrics and a dashboard see
		page, release, err := renderHeld(c, render, rep)
		if err != nil {
			return err
		}
		defer release()
		w.Header().Set("Content-Type", ctype)
		_, err = w.Write(page)
		return err
	}
}

// renderHeld renders rep and charges the page to c's memory budget while
// it is held (as a frame being decoded is: what is new is turned away
// meanwhile), until release. At most MaxReportRenders are held at once.
func renderHeld(c *collector.Collector, render func(io.Writer, *report.Report) error, rep *report.Report) (page []byte, release func(), err error) {
	var buf bytes.Buffer
	if err := render(&buf, rep); err != nil {
		return nil, func() {}, fmt.Errorf("render the report: %w", err)
	}
	held := int64(buf.Cap())
	c.Hold(held)
	return buf.Bytes(), func() { c.Hold(-held) }, nil
}

// requireToken guards every endpoint with a bearer token, compared in
// constant time.
func requireToken(token string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="sentinel-top"`)
			http.Error(w, "401 unauthorized: a valid bearer token is required", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// healthzOpen lets /healthz through without a token (a load balancer's
// probe carries none; it tells nothing but that the process serves).
func healthzOpen(health, rest http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			health.ServeHTTP(w, r)
			return
		}
		rest.ServeHTTP(w, r)
	})
}
