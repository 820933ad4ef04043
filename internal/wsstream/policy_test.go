package wsstream

import (
	"context"
	"net"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/gorilla/websocket"
)

// serve runs a Server on ln with the stream at /stream and a plain page at
// /page, until the test ends.
func serve(t *testing.T, ln net.Listener, opts Options) *Server {
	t.Helper()
	s := New(opts)
	mux := http.NewServeMux()
	mux.Handle("/stream", s)
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
	done := make(chan struct{})
	go func() { s.Serve(ln, mux); close(done) }()
	t.Cleanup(func() { s.Close(nil); <-done })
	return s
}

func listen(t *testing.T, network, addr string) net.Listener {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// upgrade dials the stream at addr with the given Host and Origin headers
// ("" for none) and returns the HTTP status.
func upgrade(t *testing.T, d *websocket.Dialer, addr, host, origin string) int {
	t.Helper()
	h := http.Header{}
	if host != "" {
		h.Set("Host", host)
	}
	if origin != "" {
		h.Set("Origin", origin)
	}
	conn, resp, err := d.Dial("ws://"+addr+"/stream", h)
	if err == nil {
		conn.Close()
		return http.StatusSwitchingProtocols
	}
	if resp == nil {
		t.Fatalf("dial %s as %q from %q: %v", addr, host, origin, err)
	}
	return resp.StatusCode
}

// TestOriginAndHostPolicy: on loopback, a page whose name was rebound to
// 127.0.0.1 (Host and Origin evil.example) is refused, as is a same-origin
// page, while a collector (no Origin) naming the address or localhost, and
// the names and origins listed in the options, are served. Every path of
// Serve is under the same policy.
func TestOriginAndHostPolicy(t *testing.T) {
	ln := listen(t, "tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	serve(t, ln, Options{AllowOrigins: []string{"https://dash.example.com"}, AllowHosts: []string{"collector-a", "proxy.example:443"}})
	d := websocket.DefaultDialer
	for _, c := range []struct {
		host, origin string
		want         int
	}{
		{"", "", 101}, // the address itself
		{"localhost:" + port, "", 101},
		{"LOCALHOST.:" + port, "", 101},
		{"[::1]:" + port, "", 101},
		{"collector-a:" + port, "", 101},
		{"proxy.example:443", "", 101},
		{"", "https://dash.example.com", 101},
		{"evil.example:" + port, "http://evil.example:" + port, 403}, // DNS rebinding
		{"evil.example:" + port, "", 403},
		{"evil.localhost.example:" + port, "", 403},
		{"proxy.example:" + port, "", 403},
		{"", "http://" + addr, 403}, // same-origin is not enough
		{"", "null", 403},
		{"localhost:" + port, "http://localhost:3000", 403}, // another local page
	} {
		if got := upgrade(t, d, addr, c.host, c.origin); got != c.want {
			t.Errorf("Host %q Origin %q: %d, want %d", c.host, c.origin, got, c.want)
		}
	}
	req, _ := http.NewRequest("GET", "http://"+addr+"/page", nil)
	req.Host = "evil.example:" + port
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a rebound page reads /page: %d", resp.StatusCode)
	}
}

// TestHostPolicyBeyondLoopback: a connection that arrives on a non-loopback
// address is served under that address or a listed name, not as localhost.
func TestHostPolicyBeyondLoopback(t *testing.T) {
	ip := firstNonLoopback(t)
	ln := listen(t, "tcp", net.JoinHostPort(ip, "0"))
	addr := ln.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	serve(t, ln, Options{AllowHosts: []string{"svc-1.internal"}})
	for host, want := range map[string]int{"": 101, "svc-1.internal:" + port: 101, "localhost:" + port: 403,
		"127.0.0.1:" + port: 403, "evil.example:" + port: 403} {
		if got := upgrade(t, websocket.DefaultDialer, addr, host, ""); got != want {
			t.Errorf("Host %q: %d, want %d", host, got, want)
		}
	}
}

func firstNonLoopback(t *testing.T) string {
	t.Helper()
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	t.Skip("no non-loopback IPv4 address on this machine")
	return ""
}

// TestHostPolicyOnUnixSocket: no browser reaches a Unix socket by a name,
// so any Host is served there.
func TestHostPolicyOnUnixSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s")
	serve(t, listen(t, "unix", path), Options{})
	d := &websocket.Dialer{NetDialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", path)
	}}
	if got := upgrade(t, d, "anything.example", "", ""); got != 101 {
		t.Fatalf("unix socket: %d", got)
	}
}
