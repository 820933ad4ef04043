package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// startServe runs `serve` with args on a loopback port of its choosing (a
// --listen in args overrides it) until the test ends, when it must exit
// cleanly; it returns the address serve says it listens on, and its
// stderr.
func startServe(t *testing.T, args ...string) (addr string, stderr *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done, ended := make(chan int, 1), make(chan struct{})
	stderr = &syncBuffer{}
	go func() {
		done <- run(ctx, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...), nil, io.Discard, stderr)
		close(ended)
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != exitOK {
			t.Errorf("serve exit %d: %s", code, stderr.String())
		}
	})
	return saidAddr(t, stderr, ended), stderr
}

// TestServeRefusesRebindingPages: `serve` without a token answers 403 to a
// request naming it by another name than its address (a page whose name
// was rebound to 127.0.0.1) or sent from a web page, on every endpoint, and
// serves the names --allow-host lists.
func TestServeRefusesRebindingPages(t *testing.T) {
	addr, errb := startServe(t, "--replay", "sawtooth-db-slow", "--allow-host", "collector-a")
	_, port, _ := net.SplitHostPort(addr)
	client := &http.Client{Timeout: 10 * time.Second}
	status := func(path, host, origin string) int {
		req, err := http.NewRequest("GET", "http://"+addr+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	deadline := time.Now().Add(10 * time.Second)
	for status("/healthz", addr, "") != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatalf("serve did not come up: %s", errb.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, path := range []string{"/metrics", "/report", "/sentinel/stream", "/healthz"} {
		if got := status(path, "evil.example:"+port, "http://evil.example:"+port); got != http.StatusForbidden {
			t.Errorf("%s from a rebound page: %d", path, got)
		}
		if got := status(path, "localhost:"+port, "http://localhost:3000"); got != http.StatusForbidden {
			t.Errorf("%s from another local page: %d", path, got)
		}
	}
	for _, host := range []string{addr, "localhost:" + port, "collector-a:" + port} {
		if got := status("/metrics", host, ""); got != http.StatusOK {
			t.Errorf("/metrics as %s: %d", host, got)
		}
	}
}

// TestServeAllowsTheNameItListensOn: --listen NAME:PORT lists NAME, the
// name its clients use (here the machine's, which localhost is not).
func TestServeAllowsTheNameItListensOn(t *testing.T) {
	name, err := os.Hostname()
	if err != nil || strings.EqualFold(name, "localhost") {
		t.Skip("no host name")
	}
	if _, err := net.LookupHost(name); err != nil {
		t.Skipf("the host name %s does not resolve: %v", name, err)
	}
	_, port, _ := net.SplitHostPort(freePort(t))
	startServe(t, "--replay", "sawtooth-db-slow", "--listen", net.JoinHostPort(name, port))
	client := &http.Client{Timeout: 10 * time.Second}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := client.Get("http://" + net.JoinHostPort(name, port) + "/metrics")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("/metrics as %s: %d", name, resp.StatusCode)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
