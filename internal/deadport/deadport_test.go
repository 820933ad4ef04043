package deadport_test

import (
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/internal/deadport"
)

// A dead port refuses every dial, and no listener can take it while the
// test runs.
func TestAddrRefusesAndCannotBeTaken(t *testing.T) {
	addr := deadport.Addr(t)
	for range 3 {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err == nil {
			c.Close()
			t.Fatalf("dialing %s connected", addr)
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("dialing %s: %v, want connection refused", addr, err)
		}
	}
	if ln, err := net.Listen("tcp", addr); err == nil {
		ln.Close()
		t.Fatalf("another listener took %s", addr)
	}
}
