package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// The service under the "errors" fault streams its traffic and its breaker
// rules; a real websocket client sees them.
func TestOrderServiceStreams(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--listen", "127.0.0.1:0", "--stream", "127.0.0.1:0", "--fault", "errors", "--load", "50"}, io.Discard, ready)
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatal(err)
	}
	conn, _, err := websocket.DefaultDialer.Dial("ws://"+addr+"/sentinel/stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	dec := wire.NewDecoder(wire.Limits{})
	var sawRules bool
	var errorsSeen int64
	deadline := time.Now().Add(10 * time.Second)
	for errorsSeen == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no errors streamed from the errors fault within 10 s")
		}
		_ = conn.SetReadDeadline(deadline)
		_, data, err := conn.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		m, err := dec.Decode(data)
		if err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		switch m := m.(type) {
		case *wire.Rules:
			sawRules = len(m.Breakers) == 1 && m.Breakers[0].Strategy == core.SlowRequestRatio
		case *wire.Buckets:
			for _, it := range m.Items {
				if strings.HasPrefix(it.Resource, "GET:") {
					errorsSeen += it.Error
				}
			}
		}
	}
	if !sawRules {
		t.Fatal("the rules message did not carry the built-in breaker")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestOrderServiceRejectsBadFlags(t *testing.T) {
	err := run(context.Background(), []string{"--fault", "meteor"}, io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), "meteor") {
		t.Fatalf("err = %v", err)
	}
}
