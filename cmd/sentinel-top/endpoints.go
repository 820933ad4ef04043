package main

import (
	"bufio"
	"compress/gzip"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/sentinel-top/sentinel-top/internal/wsstream"
)

// Bounds of serve's rendered endpoints. A render holds a 32 KiB buffer
// (and, gzipped, a compressor of about 1 MiB) until its response is
// written: at most maxMetricsRenders and maxReportRenders are in flight,
// and a client must take each piece within renderStall, the whole
// response within the server's ResponseTimeout.
const (
	maxMetricsRenders = 8
	maxReportRenders  = 4
	renderStall       = 5 * time.Second
)

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

// stallWriter gives a client renderStall to take each piece of a response
// (never more than the server's deadline for the whole): one that stops
// reading is cut off within seconds, and its render's slot freed.
type stallWriter struct {
	http.ResponseWriter
	rc       *http.ResponseController
	deadline time.Time // the whole response's
}

func (s *stallWriter) Write(p []byte) (int, error) {
	d := time.Now().Add(renderStall)
	if d.After(s.deadline) {
		d = s.deadline
	}
	_ = s.rc.SetWriteDeadline(d)
	return s.ResponseWriter.Write(p)
}

// metricsPage writes the collector's metrics, streamed from its latest
// snapshot, then serve's own and the process's, in the Prometheus text
// format, gzipped when the client accepts it.
func metricsPage(s *session, own *prometheus.Registry) func(w http.ResponseWriter, r *http.Request) error {
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
		if err := s.c.WriteMetrics(w); err != nil {
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
