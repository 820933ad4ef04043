//go:build !unix

package deadport

import (
	"net"
	"testing"
)

// Addr returns a 127.0.0.1 address ("host:port") nothing listens on.
// Here the port is only listened on and let go: another listener may
// still take it.
func Addr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("deadport: %v", err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
