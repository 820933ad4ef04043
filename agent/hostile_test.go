package agent

import (
	"net/http"
	"strings"
	"testing"
)

// TestRebindingPageCannotReadTheStream: an agent without a token, on
// loopback, refuses a page whose name was rebound to 127.0.0.1 (it sends
// its own name as Host and Origin), and a page of another local origin;
// listed names and origins are served.
func TestRebindingPageCannotReadTheStream(t *testing.T) {
	ta := startAgent(t, Options{AllowHosts: []string{"svc-1.internal"}, AllowOrigins: []string{"https://dash.example.com"}})
	port := ta.url[strings.LastIndex(ta.url, ":")+1 : strings.Index(ta.url, StreamPath)]
	for _, c := range []struct {
		host, origin string
		want         int
	}{
		{"evil.example:" + port, "http://evil.example:" + port, http.StatusForbidden},
		{"localhost:" + port, "http://localhost:3000", http.StatusForbidden},
		{"svc-1.internal:" + port, "", http.StatusSwitchingProtocols},
		{"localhost:" + port, "https://dash.example.com", http.StatusSwitchingProtocols},
	} {
		h := http.Header{"Origin": {c.origin}}
		if c.origin == "" {
			h = http.Header{}
		}
		h.Set("Host", c.host)
		_, resp, err := dial(t, ta.url, h)
		got := http.StatusSwitchingProtocols
		if err != nil {
			if resp == nil {
				t.Fatal(err)
			}
			got = resp.StatusCode
		}
		if got != c.want {
			t.Errorf("Host %q Origin %q: %d, want %d", c.host, c.origin, got, c.want)
		}
	}
}
