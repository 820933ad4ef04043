package serveapi

import (
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/collector/report"
)

// served starts the routes of o on a loopback server, with a collector
// and a stream of their own when o has none.
func served(t *testing.T, o Options) (*httptest.Server, *collector.Collector) {
	t.Helper()
	if o.Collector == nil {
		o.Collector = collector.New(collector.Options{Source: "test"})
		o.Collector.Publish()
	}
	if o.Stream == nil {
		o.Stream = o.Collector.Restream(collector.RestreamOptions{})
		t.Cleanup(func() { o.Stream.Close(nil) })
	}
	srv := httptest.NewServer(Handler(o))
	t.Cleanup(srv.Close)
	return srv, o.Collector
}

func get(t *testing.T, url string, header ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := (&http.Client{Transport: &http.Transport{DisableCompression: true}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r io.Reader = resp.Body
	if resp.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		r = zr
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// TestTokenGuardsAllButHealthz: with a token, every route but /healthz
// answers 401 without it or with another, and serves with it.
func TestTokenGuardsAllButHealthz(t *testing.T) {
	srv, _ := served(t, Options{Token: "s3cret"})
	for _, path := range []string{"/metrics", "/report", "/sentinel/stream"} {
		for _, auth := range []string{"", "Bearer wrong", "Bearer s3cret2", "s3cret", "Basic s3cret"} {
			resp, _ := get(t, srv.URL+path, "Authorization", auth)
			if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
				t.Errorf("%s with %q: %d, want 401 with a challenge", path, auth, resp.StatusCode)
			}
		}
	}
	for _, path := range []string{"/metrics", "/report"} {
		if resp, _ := get(t, srv.URL+path, "Authorization", "Bearer s3cret"); resp.StatusCode != http.StatusOK {
			t.Errorf("%s with the token: %d", path, resp.StatusCode)
		}
	}
	if resp, body := get(t, srv.URL+"/healthz"); resp.StatusCode != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz without a token: %d %q", resp.StatusCode, body)
	}
}

// TestHealthzSaysTheRecordingStopped: /healthz answers 503 once the
// recording failed, without saying why to a caller with no token.
func TestHealthzSaysTheRecordingStopped(t *testing.T) {
	// Set by the test, read by the server's goroutines.
	var failed atomic.Pointer[error]
	srv, _ := served(t, Options{Token: "t", RecordError: func() error {
		if err := failed.Load(); err != nil {
			return *err
		}
		return nil
	}})
	if resp, _ := get(t, srv.URL+"/healthz"); resp.StatusCode != http.StatusOK {
		t.Fatalf("recording: %d", resp.StatusCode)
	}
	err := errors.New("write /var/rec.ndjson: no space left on device")
	failed.Store(&err)
	resp, body := get(t, srv.URL+"/healthz")
	if resp.StatusCode != http.StatusServiceUnavailable || strings.Contains(body, "no space") {
		t.Fatalf("after the failure: %d %q", resp.StatusCode, body)
	}
	if _, page := get(t, srv.URL+"/metrics", "Authorization", "Bearer t"); !strings.Contains(page, "sentinel_top_record_errors_total 1\n") {
		t.Errorf("/metrics does not count the failed recording:\n%s", page)
	}
}

// TestReportFormats: /report renders the published findings as JSON,
// Markdown or text, and refuses another format with 400.
func TestReportFormats(t *testing.T) {
	srv, _ := served(t, Options{Source: "fleet-a"})
	resp, body := get(t, srv.URL+"/report")
	var doc map[string]any
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" || json.Unmarshal([]byte(body), &doc) != nil {
		t.Fatalf("json: %d %s %q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	for format, ctype := range map[string]string{"md": "text/markdown", "markdown": "text/markdown", "text": "text/plain"} {
		resp, body := get(t, srv.URL+"/report?format="+format)
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), ctype) || !strings.Contains(body, "fleet-a") {
			t.Errorf("%s: %d %s %q", format, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
	}
	if resp, _ := get(t, srv.URL+"/report?format=yaml"); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("format=yaml: %d, want 400", resp.StatusCode)
	}
}

// TestMetricsGzippedWhenAsked: /metrics is gzipped for a client that
// accepts it (with a non-zero weight) and plain otherwise; both hold the
// collector's metrics and serve's own.
func TestMetricsGzippedWhenAsked(t *testing.T) {
	srv, _ := served(t, Options{})
	for _, c := range []struct {
		accept string
		gzip   bool
	}{{"", false}, {"gzip", true}, {"br, GZIP;q=0.5", true}, {"gzip;q=0", false}, {"gzip; q=0.000", false}, {"deflate", false}} {
		resp, page := get(t, srv.URL+"/metrics", "Accept-Encoding", c.accept)
		if got := resp.Header.Get("Content-Encoding") == "gzip"; got != c.gzip {
			t.Errorf("Accept-Encoding %q: gzipped %v, want %v", c.accept, got, c.gzip)
		}
		for _, want := range []string{"sentinel_top_", "sentinel_top_serve_connections ", "go_goroutines "} {
			if !strings.Contains(page, want) {
				t.Errorf("Accept-Encoding %q: no %q in the page", c.accept, want)
			}
		}
	}
}

// TestRendersBounded: a render beyond those in flight gets 503 at once,
// told to retry, and counted.
func TestRendersBounded(t *testing.T) {
	c := collector.New(collector.Options{})
	stream := c.Restream(collector.RestreamOptions{})
	defer stream.Close(nil)
	reg := prometheus.NewRegistry()
	m := newServeMetrics(reg, stream, func() error { return nil })
	release := make(chan struct{})
	entered := make(chan struct{}, MaxReportRenders)
	h := m.bounded("/report", MaxReportRenders, func(w http.ResponseWriter, r *http.Request) error {
		entered <- struct{}{}
		<-release
		return nil
	})
	srv := httptest.NewServer(h)
	defer srv.Close()
	done := make(chan struct{})
	for range MaxReportRenders {
		go func() {
			resp, err := http.Get(srv.URL)
			if err == nil {
				resp.Body.Close()
			}
			done <- struct{}{}
		}()
	}
	for range MaxReportRenders {
		<-entered
	}
	resp, _ := get(t, srv.URL)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("a render beyond %d: %d, Retry-After %q", MaxReportRenders, resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	close(release)
	for range MaxReportRenders {
		<-done
	}
	if resp, _ := get(t, srv.URL); resp.StatusCode != http.StatusOK {
		t.Errorf("once they ended: %d", resp.StatusCode)
	}
	if n := refused(t, reg, "/report"); n != 1 {
		t.Errorf("%v refusals counted, want 1", n)
	}
}

// refused is the count of renders of endpoint refused, as reg gathers it.
func refused(t *testing.T, reg *prometheus.Registry, endpoint string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "sentinel_top_serve_requests_refused_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "endpoint" && l.GetValue() == endpoint {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// TestReportPageChargedWhileHeld: a /report page is charged to the memory
// budget while it is written and given back after, so renders held by
// slow clients turn new data away rather than grow past the budget.
func TestReportPageChargedWhileHeld(t *testing.T) {
	c := collector.New(collector.Options{})
	rep := report.FromSnapshot("test", c.Publish(), c)
	for _, render := range []func(io.Writer, *report.Report) error{report.JSON, report.Markdown, report.Text} {
		page, release, err := renderHeld(c, render, rep)
		if err != nil {
			t.Fatal(err)
		}
		if held := c.Publish().MemoryHeld; len(page) == 0 || held < int64(len(page)) {
			t.Fatalf("a page of %d bytes, %d held", len(page), held)
		}
		release()
		if held := c.Publish().MemoryHeld; held != 0 {
			t.Fatalf("%d bytes still held after the page was written", held)
		}
	}
}
