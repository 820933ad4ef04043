package wsstream

import (
	"net/http"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// TestLimitIdleReaderDroppedAfterPongTimeout: a connection that never reads
// never answers its first ping, and is dropped when PongTimeout has passed.
func TestLimitIdleReaderDroppedAfterPongTimeout(t *testing.T) {
	ln := listen(t, "tcp", "127.0.0.1:0")
	s := serve(t, ln, Options{PongTimeout: 200 * time.Millisecond})
	conn, _, err := websocket.DefaultDialer.Dial("ws://"+ln.Addr().String()+"/stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	began := time.Now()
	for readers, _ := s.Stats(); readers != 0; readers, _ = s.Stats() {
		if time.Since(began) > 5*time.Second {
			t.Fatal("the idle reader is still connected")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if took := time.Since(began); took < 150*time.Millisecond {
		t.Fatalf("dropped after %v, before its PongTimeout", took)
	}
}

// TestLimitSlotsGoToReadersThatRead: when MaxReaders are connected, a
// newcomer takes the slot of a connection that never answered its ping,
// never that of one that did, nor an in-process subscription's.
func TestLimitSlotsGoToReadersThatRead(t *testing.T) {
	ln := listen(t, "tcp", "127.0.0.1:0")
	s := serve(t, ln, Options{MaxReaders: 2})
	url := "ws://" + ln.Addr().String() + "/stream"
	if _, err := s.Subscribe(0); err != nil {
		t.Fatal(err)
	}
	idle, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	reader, _, err := websocket.DefaultDialer.Dial(url, nil) // takes the idle one's slot
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	pinged, pong := make(chan struct{}, 1), make(chan struct{}, 1)
	reader.SetPingHandler(func(data string) error {
		err := reader.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(time.Second))
		pinged <- struct{}{}
		return err
	})
	reader.SetPongHandler(func(string) error { pong <- struct{}{}; return nil })
	go func() {
		for {
			if _, _, err := reader.NextReader(); err != nil {
				return
			}
		}
	}()
	// The server answers the reader's ping after it took the reader's pong.
	<-pinged
	if err := reader.WriteControl(websocket.PingMessage, nil, time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	<-pong
	_, resp, err := websocket.DefaultDialer.Dial(url, nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a third reader got in (err %v): it took the slot of a reader that reads or of a subscription", err)
	}
	if got := s.Evicted(); got != 1 {
		t.Fatalf("evicted %d, want the idle connection only", got)
	}
}
