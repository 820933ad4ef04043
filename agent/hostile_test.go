package agent

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/sentinel-top/sentinel-top/core/wire"
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

// idleReader connects and never reads: it answers no ping.
func idleReader(url string) (*websocket.Conn, error) {
	conn, _, err := websocket.DefaultDialer.Dial(url, nil)
	return conn, err
}

// TestIdleReadersDoNotLockOutACollector: 16 connections that never read
// (the default MaxReaders, no token) hold every slot; a collector arriving
// takes the slot of one of them, and keeps it while they reconnect as fast
// as they can.
func TestIdleReadersDoNotLockOutACollector(t *testing.T) {
	ta := startAgent(t, Options{})
	for range DefaultMaxReaders {
		conn, err := idleReader(ta.url)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
	}
	waitFor(t, func() bool { return ta.Stats().Readers == DefaultMaxReaders })
	collector := mustDial(t, ta.url) // 503 before: every slot was held
	if _, ok := collector.next().(*wire.Hello); !ok {
		t.Fatal("the collector got no hello")
	}
	messages, ended := collector.keepReading()
	if st := ta.Stats(); st.Evicted != 1 || st.Readers != DefaultMaxReaders {
		t.Fatalf("stats %+v: one idle reader should have given its slot up", st)
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var attempts, refused atomic.Int64
	for range DefaultMaxReaders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				attempts.Add(1)
				if conn, err := idleReader(ta.url); err == nil {
					time.Sleep(10 * time.Millisecond)
					conn.Close()
				} else {
					refused.Add(1)
				}
			}
		}()
	}
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()
	select {
	case <-ended:
		t.Fatalf("the collector was cut off by idle readers (stats %+v)", ta.Stats())
	default:
	}
	before := messages.Load()
	ta.clock.Advance(500 * time.Millisecond) // a bucket period: the collector receives it
	waitFor(t, func() bool { return messages.Load() > before })
	t.Logf("%d idle connections tried while the collector read, %d refused; stats %+v",
		attempts.Load(), refused.Load(), ta.Stats())
}

// cutOff waits for the agent to close conn and returns its close frame,
// nil when the connection was reset first (the agent closes with what the
// peer sent still unread, which the peer's system may answer with a reset).
func cutOff(t *testing.T, conn *websocket.Conn) *websocket.CloseError {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	conn.SetCloseHandler(func(int, string) error { return nil }) // no echo: the agent is gone
	for {
		_, _, err := conn.ReadMessage()
		var ce *websocket.CloseError
		var ne net.Error
		switch {
		case errors.As(err, &ce):
			return ce
		case errors.As(err, &ne) && ne.Timeout():
			t.Fatalf("not closed by the agent: %v", err)
		case err != nil:
			return nil
		}
	}
}

// TestReaderSendingDataIsCutOff: a reader sends nothing but pongs (and a
// few pings); data, a frame over 4 KiB or a flood of pings closes it with
// a policy violation, counted in Stats.Evicted.
func TestReaderSendingDataIsCutOff(t *testing.T) {
	ta := startAgent(t, Options{})
	for i, send := range []func(*websocket.Conn) error{
		func(c *websocket.Conn) error { return c.WriteMessage(websocket.TextMessage, []byte("hello")) },
		func(c *websocket.Conn) error { return c.WriteMessage(websocket.BinaryMessage, make([]byte, 8<<10)) },
		func(c *websocket.Conn) error {
			for range 100 {
				if err := c.WriteControl(websocket.PingMessage, nil, time.Now().Add(time.Second)); err != nil {
					return err
				}
			}
			return nil
		},
	} {
		c := mustDial(t, ta.url)
		_ = send(c.conn) // it may be cut off before it is done
		if ce := cutOff(t, c.conn); ce != nil && ce.Code != websocket.ClosePolicyViolation && ce.Code != websocket.CloseMessageTooBig {
			t.Errorf("case %d: closed with %v", i, ce)
		}
		waitFor(t, func() bool { return ta.Stats().Evicted == int64(i+1) })
	}
	// A reader that pings now and then is served.
	c := mustDial(t, ta.url)
	for range 3 {
		if err := c.conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
	}
	if _, ok := c.next().(*wire.Hello); !ok || ta.Stats().Evicted != 3 {
		t.Fatalf("a reader pinging three times a second was cut off: %+v", ta.Stats())
	}
}

// TestExposedWithoutTokenWarns: served beyond loopback without a token,
// the agent says so once, in Stats and through Logf; on loopback, or with a
// token, it says nothing.
func TestExposedWithoutTokenWarns(t *testing.T) {
	for _, c := range []struct {
		addr, token string
		warn        bool
	}{{"0.0.0.0:0", "", true}, {"127.0.0.1:0", "", false}, {"0.0.0.0:0", "s3cret", false}} {
		var logged []string
		a, err := New(Options{App: "svc", Instance: "svc-1", Token: c.token, ManualShip: true,
			Logf: func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }})
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", c.addr)
		if err != nil {
			t.Fatal(err)
		}
		served := make(chan struct{})
		go func() { a.Serve(ln); close(served) }()
		waitFor(t, func() bool { return a.Stats().Warning != "" || !c.warn })
		a.Close()
		<-served
		w := a.Stats().Warning
		if c.warn != (w != "") || c.warn != (len(logged) == 1) || c.warn && logged[0] != w {
			t.Errorf("%s token %q: warning %q, logged %q", c.addr, c.token, w, logged)
		}
		if c.warn && !strings.Contains(w, "Options.Token") {
			t.Errorf("the warning does not say what to do: %q", w)
		}
	}
}
