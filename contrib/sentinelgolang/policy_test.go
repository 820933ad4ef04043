package sentinelgolang

import (
	"net"
	"net/http"
	"testing"
)

// TestRebindingPageCannotReadTheStream: with AllowHosts and AllowOrigins
// set, the adapter's stream, served on loopback, refuses a page whose name
// was rebound to it (its own name in Host and Origin) and a page of an
// origin not listed, and serves the listed name and origin.
func TestRebindingPageCannotReadTheStream(t *testing.T) {
	a, err := New(Options{App: "order", Instance: "order-1", Manual: true,
		AllowHosts: []string{"svc-1.internal"}, AllowOrigins: []string{"https://dash.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go a.Serve(ln)
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	for _, c := range []struct {
		host, origin string
		want         int
	}{
		{"evil.example:" + port, "http://evil.example:" + port, http.StatusForbidden},
		{"evil.example:" + port, "", http.StatusForbidden},
		{"localhost:" + port, "http://localhost:3000", http.StatusForbidden},
		{"svc-1.internal:" + port, "", http.StatusSwitchingProtocols},
		{"localhost:" + port, "https://dash.example.com", http.StatusSwitchingProtocols},
	} {
		if got := upgrade(t, "http://"+ln.Addr().String()+StreamPath, c.host, c.origin); got != c.want {
			t.Errorf("Host %q Origin %q: HTTP %d, want %d", c.host, c.origin, got, c.want)
		}
	}
}

// upgrade asks url for a websocket upgrade with Host host and, when not
// empty, Origin origin, and returns the status of the answer.
func upgrade(t *testing.T, url, host, origin string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
