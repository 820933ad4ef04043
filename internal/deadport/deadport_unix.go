//go:build unix

package deadport

import (
	"fmt"
	"net"
	"syscall"
	"testing"
)

// Addr returns a 127.0.0.1 address ("host:port") that refuses
// connections until tb's cleanup.
func Addr(tb testing.TB) string {
	tb.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		tb.Fatalf("deadport: socket: %v", err)
	}
	syscall.CloseOnExec(fd) // SOCK_CLOEXEC is not every system's
	tb.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		tb.Fatalf("deadport: bind: %v", err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		tb.Fatalf("deadport: getsockname: %v", err)
	}
	in4, ok := sa.(*syscall.SockaddrInet4)
	if !ok {
		tb.Fatalf("deadport: bound to %T", sa)
	}
	return net.JoinHostPort("127.0.0.1", fmt.Sprint(in4.Port))
}
