package agent

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/sentinel-top/sentinel-top/core"
)

// servedAgent is an agent on a virtual clock, shipping when told, serving
// on a loopback port.
func servedAgent(t *testing.T, opts Options) (*Agent, *core.VirtualClock, string) {
	t.Helper()
	return servedAgentOn(t, opts, nil)
}

// servedAgentOn is servedAgent with each accepted connection passed
// through wrap first (nil: as accepted).
func servedAgentOn(t *testing.T, opts Options, wrap func(net.Conn) net.Conn) (*Agent, *core.VirtualClock, string) {
	t.Helper()
	clock := core.NewVirtualClock(t0)
	opts.Clock, opts.ManualShip = clock, true
	a, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return a, clock, serveLoopback(t, a, wrap)
}

// wrappedListener passes every accepted connection through wrap.
type wrappedListener struct {
	net.Listener
	wrap func(net.Conn) net.Conn
}

func (l wrappedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return l.wrap(c), nil
}

// smallBuffers shrinks a TCP connection's kernel buffers to their least,
// so a peer that reads nothing stalls its writer after a few KB whatever
// the machine's TCP autotuning would otherwise absorb (several MB).
func smallBuffers(c net.Conn) net.Conn {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(1)
		_ = tc.SetReadBuffer(1)
	}
	return c
}

// scrape gets the metrics page over HTTP and parses it as Prometheus does:
// "name{label=value,...}" -> value, labels sorted.
func scrape(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + MetricsPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %v\n%s", resp.Status, err, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("content type %q", ct)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("the page does not parse: %v\n%s", err, body)
	}
	out := map[string]float64{}
	for name, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			sort.Strings(labels)
			out[name+"{"+strings.Join(labels, ",")+"}"] = m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return out
}

// TestMetricsCountWhatWasShipped: through a real loopback scrape, the
// agent's metrics page gives each resource's passes, blocks, completions,
// errors and slow calls as counted by the calls made (once shipped), the
// worst state of its breakers, and their transitions, under the
// collector's names and labels; a resource name with quotes, a backslash
// and a newline is escaped.
func TestMetricsCountWhatWasShipped(t *testing.T) {
	a, clock, addr := servedAgent(t, Options{App: "order", Instance: "order-1", ServeMetrics: true})
	const db, odd = "GET:/db", "say \"hi\"\\\n"
	if err := a.LoadRules([]core.BreakerRule{
		{Resource: db, Strategy: core.ErrorCount, Threshold: 5, MinRequestAmount: 1, StatIntervalMs: 1000, RetryTimeoutMs: 2000},
		{Resource: odd, Strategy: core.SlowRequestRatio, Threshold: 0.9, MaxAllowedRtMs: 50, MinRequestAmount: 100, StatIntervalMs: 1000, RetryTimeoutMs: 1000},
	}, nil); err != nil {
		t.Fatal(err)
	}
	var pass, block, complete, errs, oddPass, oddSlow int64
	call := func(resource string, rt time.Duration, fail bool) {
		e, err := a.Entry(resource)
		if err != nil {
			if resource == db {
				block++
			}
			return
		}
		clock.Advance(rt)
		var cause error
		if fail {
			cause = errors.New("failed")
		}
		e.Exit(cause)
		if resource == db {
			pass++
			complete++
			if fail {
				errs++
			}
		} else {
			oddPass++
			if rt > 50*time.Millisecond {
				oddSlow++
			}
		}
	}
	for i := range 20 {
		call(db, time.Millisecond, i%2 == 0) // the 5th error trips the breaker: the rest are blocked
		call(odd, time.Duration(10+10*(i%7))*time.Millisecond, false)
	}
	clock.Advance(time.Second)
	a.Ship()
	want := func(m map[string]float64, k string, v float64) {
		t.Helper()
		if got, ok := m[k]; !ok || got != v {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, v)
		}
	}
	// key is a sample's name and labels as scrape gives them (sorted).
	key := func(name, resource string, more ...string) string {
		labels := append([]string{"app=order", "resource=" + resource}, more...)
		sort.Strings(labels)
		return name + "{" + strings.Join(labels, ",") + "}"
	}
	state := func(resource, s string) string {
		return key("sentinel_top_breaker_state", resource, "instance=order-1", "provenance=exact", "state="+s)
	}
	trans := func(from, to string) string {
		return key("sentinel_top_breaker_transitions_total", db, "from="+from, "to="+to)
	}
	m := scrape(t, addr)
	if block == 0 || pass == 0 || oddSlow == 0 {
		t.Fatalf("the calls did not do what the test needs: pass %d, block %d, slow %d", pass, block, oddSlow)
	}
	for _, c := range []struct {
		name string
		v    int64
	}{{"pass", pass}, {"block", block}, {"complete", complete}, {"error", errs}} {
		want(m, key("sentinel_top_resource_"+c.name+"_total", db), float64(c.v))
	}
	want(m, key("sentinel_top_resource_pass_total", odd), float64(oddPass))
	want(m, key("sentinel_top_resource_slow_total", odd), float64(oddSlow))
	want(m, trans("CLOSED", "OPEN"), 1)
	for s, v := range map[string]float64{"CLOSED": 0, "HALF_OPEN": 0, "OPEN": 1} {
		want(m, state(db, s), v)
	}
	want(m, state(odd, "CLOSED"), 1)

	// After the retry timeout a good probe closes it: the counts go on.
	clock.Advance(2 * time.Second)
	call(db, time.Millisecond, false)
	clock.Advance(time.Second)
	a.Ship()
	m = scrape(t, addr)
	want(m, key("sentinel_top_resource_pass_total", db), float64(pass))
	want(m, trans("OPEN", "HALF_OPEN"), 1)
	want(m, trans("HALF_OPEN", "CLOSED"), 1)
	want(m, state(db, "CLOSED"), 1)
	if n := len(m); n != 5*2+3+3*2 {
		t.Errorf("%d samples, want 19 (5 counters and 3 states for 2 resources, 3 transitions): %v", n, m)
	}
}

// TestMetricsGuarded: the metrics page is the stream's: not served unless
// asked for, refused to web pages (Origin) and to names rebound to the
// agent's address (Host) with 403, and to clients without the token with
// 401.
func TestMetricsGuarded(t *testing.T) {
	get := func(addr string, header map[string]string) int {
		t.Helper()
		req, err := http.NewRequest("GET", "http://"+addr+MetricsPath, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range header {
			if k == "Host" {
				req.Host = v
			} else {
				req.Header.Set(k, v)
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	_, _, plain := servedAgent(t, Options{App: "a", Instance: "a-1"})
	if code := get(plain, nil); code != http.StatusNotFound {
		t.Errorf("without ServeMetrics: %d, want 404", code)
	}
	_, _, open := servedAgent(t, Options{App: "a", Instance: "a-1", ServeMetrics: true})
	_, _, tokened := servedAgent(t, Options{App: "a", Instance: "a-1", ServeMetrics: true, Token: "s3cret"})
	for _, c := range []struct {
		addr   string
		header map[string]string
		want   int
	}{
		{open, nil, http.StatusOK},
		{open, map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
		{open, map[string]string{"Host": "evil.example"}, http.StatusForbidden},
		{tokened, nil, http.StatusUnauthorized},
		{tokened, map[string]string{"Authorization": "Bearer wrong"}, http.StatusUnauthorized},
		{tokened, map[string]string{"Authorization": "Bearer s3cret"}, http.StatusOK},
	} {
		if code := get(c.addr, c.header); code != c.want {
			t.Errorf("%s %v: %d, want %d", c.addr, c.header, code, c.want)
		}
	}
}

// TestMetricsRendersAreBounded: at most two pages are rendered at once, each
// holding the resources' totals: with two clients that ask for a page of
// 5,000 resources (about 9 MB) and never read, a third is answered 503 at
// once and counted, and is served again once they are gone.
func TestMetricsRendersAreBounded(t *testing.T) {
	a, clock, addr := servedAgentOn(t, Options{App: "big", Instance: "big-1", ServeMetrics: true}, smallBuffers)
	for i := range 5000 {
		e, err := a.Entry(fmt.Sprintf("GET:/api/v1/%0200d", i))
		if err != nil {
			t.Fatal(err)
		}
		e.Exit(nil)
	}
	clock.Advance(time.Second)
	a.Ship()
	var stalled []net.Conn
	defer func() {
		for _, c := range stalled {
			c.Close()
		}
	}()
	// The stalled clients' buffers are made small before they ask (no
	// byte flows before the request), as the server's sockets are.
	for range maxMetricsRenders {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c = smallBuffers(c)
		stalled = append(stalled, c)
		if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", MetricsPath, addr); err != nil {
			t.Fatal(err)
		}
	}
	// Each stalled client reads its status line: both renders hold their
	// places before a third asks (had the third come first, a stalled
	// request would have been the one refused).
	for i, c := range stalled {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		line, err := bufio.NewReaderSize(c, 16).ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "HTTP/1.1 200") {
			t.Fatalf("stalled client %d: %q %v; want 200 under way", i, line, err)
		}
	}
	// Both renders are under way and their clients read no more: a third
	// request is refused at once.
	resp, err := http.Get("http://" + addr + MetricsPath)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a third scrape while two stall: %s, %d bytes; want 503", resp.Status, n)
	}
	if a.Stats().MetricsRefused == 0 {
		t.Error("the refused scrape is not counted")
	}
	for _, c := range stalled {
		c.Close()
	}
	stalled = nil
	waitFor(t, func() bool {
		resp, err := http.Get("http://" + addr + MetricsPath)
		if err != nil {
			return false
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK && n > 5_000_000
	})
}
