package wsstream

import (
	"net"
	"testing"

	"github.com/gorilla/websocket"
)

// TestHostPolicyLocalhostIsAWholeLabel: on loopback, a name under
// .localhost (RFC 6761: it resolves to loopback) is served like localhost,
// while a name that merely ends in the letters "localhost" is another
// host, one a rebinding page may own, and is refused.
func TestHostPolicyLocalhostIsAWholeLabel(t *testing.T) {
	ln := listen(t, "tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	serve(t, ln, Options{})
	for _, c := range []struct {
		host string
		want int
	}{
		{"app.localhost:" + port, 101},
		{"APP.LocalHost:" + port, 101},
		{"evillocalhost:" + port, 403},
		{"evil-localhost:" + port, 403},
		{"localhost.evil:" + port, 403},
	} {
		if got := upgrade(t, websocket.DefaultDialer, addr, c.host, ""); got != c.want {
			t.Errorf("Host %q: %d, want %d", c.host, got, c.want)
		}
	}
}
