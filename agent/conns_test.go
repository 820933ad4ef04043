package agent

import (
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/core/wire"
)

// trickler is a peer that sends a request a byte at a time and never
// finishes it; closed receives how long the agent kept its connection.
type trickler struct {
	conn   net.Conn
	closed chan time.Duration
}

// trickle connects to addr, sends head at once, then a byte of body every
// 100 ms until the connection is cut or stop is closed.
func trickle(t *testing.T, addr, head string, stop <-chan struct{}) *trickler {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	p := &trickler{conn: conn, closed: make(chan time.Duration, 1)}
	began := time.Now()
	go func() {
		io.Copy(io.Discard, conn) // until the agent closes it
		p.closed <- time.Since(began)
	}()
	go func() {
		if _, err := io.WriteString(conn, head); err != nil {
			return
		}
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := conn.Write([]byte("x")); err != nil {
					return
				}
			}
		}
	}()
	return p
}

// TestTrickledRequestsAreCutOff: peers that send a request's headers or its
// body a byte at a time are cut off after RequestTimeout (before, a body
// announced at 100,000 bytes held its connection for as long as it
// trickled); those arriving when MaxConns are open are closed at once and
// counted; a stream reader connected meanwhile keeps reading past the
// timeout, and a collector connects once the tricklers are gone.
func TestTrickledRequestsAreCutOff(t *testing.T) {
	const maxConns, timeout = 12, time.Second
	ta := startAgent(t, Options{MaxConns: maxConns, RequestTimeout: timeout})
	addr := strings.TrimSuffix(strings.TrimPrefix(ta.url, "ws://"), StreamPath)
	reader := mustDial(t, ta.url)
	if _, ok := reader.next().(*wire.Hello); !ok {
		t.Fatal("the reader got no hello")
	}
	_, ended := reader.keepReading()

	stop := make(chan struct{})
	defer close(stop)
	body := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Length: 100000\r\n\r\n", StreamPath, addr)
	headers := fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\nX-Slow: ", StreamPath, addr)
	var peers []*trickler
	for i := range maxConns - 1 + 5 { // every place but the reader's, and 5 more
		head := body
		if i%3 == 0 {
			head = headers
		}
		peers = append(peers, trickle(t, addr, head, stop))
		if i == maxConns-2 {
			waitFor(t, func() bool { return ta.Stats().Conns == maxConns })
		}
	}
	var mu sync.Mutex
	var held []time.Duration
	var wg sync.WaitGroup
	for _, p := range peers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case d := <-p.closed:
				mu.Lock()
				held = append(held, d)
				mu.Unlock()
			case <-time.After(timeout + 4*time.Second):
			}
		}()
	}
	wg.Wait()
	if len(held) != len(peers) {
		t.Fatalf("%d of %d trickling connections still open %s after they began (RequestTimeout %s)",
			len(peers)-len(held), len(peers), timeout+4*time.Second, timeout)
	}
	var atOnce, cut int
	for _, d := range held {
		switch {
		case d < timeout/2:
			atOnce++
		case d < timeout+2*time.Second:
			cut++
		}
	}
	st := ta.Stats()
	if atOnce != 5 || cut != maxConns-1 || st.RefusedConns != 5 {
		t.Errorf("held %v: %d closed at once (want 5 over MaxConns), %d cut after about %s (want %d); stats %+v",
			held, atOnce, cut, timeout, maxConns-1, st)
	}
	select {
	case <-ended:
		t.Fatal("the stream reader was cut off with the tricklers")
	default:
	}
	waitFor(t, func() bool { return ta.Stats().Conns == 1 })
	if _, ok := mustDial(t, ta.url).next().(*wire.Hello); !ok {
		t.Fatal("a collector arriving after the tricklers got no hello")
	}
	if st := ta.Stats(); st.Readers != 2 {
		t.Errorf("stats %+v: want both readers", st)
	}
}
