package hostiletest

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// EndlessHeaders listens on loopback and answers every upgrade request
// with 101 and then header lines until the connection breaks. It returns
// its address and the bytes it has sent; it stops with the test.
func EndlessHeaders(t testing.TB) (addr string, sent *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	sent = new(atomic.Int64)
	line := []byte("X-Padding: " + strings.Repeat("a", 4000) + "\r\n")
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				if _, err := http.ReadRequest(bufio.NewReader(conn)); err != nil {
					return
				}
				if _, err := io.WriteString(conn, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"); err != nil {
					return
				}
				var buf bytes.Buffer
				for buf.Len() < 256<<10 {
					buf.Write(line)
				}
				for {
					n, err := conn.Write(buf.Bytes())
					sent.Add(int64(n))
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String(), sent
}
