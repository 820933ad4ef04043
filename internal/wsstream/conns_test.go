package wsstream

import (
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/sentinel-top/sentinel-top/core/wire"
)

// TestStreamOutlivesRequestDeadlines: a reader that reads keeps its stream
// ten times longer than RequestTimeout and ResponseTimeout, receiving every
// frame: the deadlines of plain requests end with the upgrade. A plain
// response that is not taken is cut off after ResponseTimeout meanwhile.
func TestStreamOutlivesRequestDeadlines(t *testing.T) {
	const deadline = 150 * time.Millisecond
	ln := listen(t, "tcp", "127.0.0.1:0")
	big := make([]byte, 8<<20)
	s := New(Options{RequestTimeout: deadline, ResponseTimeout: deadline, PingInterval: deadline})
	mux := http.NewServeMux()
	mux.Handle("/stream", s)
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) { w.Write(big) })
	done := make(chan struct{})
	go func() { s.Serve(ln, mux); close(done) }()
	t.Cleanup(func() { s.Close(nil); <-done })

	conn, _, err := websocket.DefaultDialer.Dial("ws://"+ln.Addr().String()+"/stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var received atomic.Int64
	go func() {
		for {
			if _, _, err := conn.ReadMessage(); err != nil { // answers pings as it reads
				return
			}
			received.Add(1)
		}
	}()
	for readers, _ := s.Stats(); readers != 1; readers, _ = s.Stats() {
		time.Sleep(time.Millisecond)
	}

	// A client that asks for 8 MiB and never reads.
	slow, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	slow.(*net.TCPConn).SetReadBuffer(4 << 10)
	io.WriteString(slow, "GET /big HTTP/1.1\r\nHost: "+ln.Addr().String()+"\r\n\r\n")

	const frames = 30
	for k := range frames {
		f, err := Encode(&wire.Bye{Header: wire.Header{Ts: int64(k + 1), Instance: "a"}})
		if err != nil {
			t.Fatal(err)
		}
		s.Broadcast(f)
		time.Sleep(deadline / 3)
	}
	if open, _ := s.Conns(); open != 1 {
		t.Errorf("%d connections open at %s, want the stream alone (the slow client cut off)", open, 10*deadline)
	}
	for wait := time.Now().Add(5 * time.Second); received.Load() != frames && time.Now().Before(wait); {
		time.Sleep(time.Millisecond)
	}
	if n := received.Load(); n != frames {
		t.Fatalf("the reader received %d of %d frames", n, frames)
	}
	if readers, _ := s.Stats(); readers != 1 {
		t.Fatalf("%d readers, want the one", readers)
	}
}
