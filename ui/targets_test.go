package ui

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/agent"
	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/collector/source"
	"github.com/sentinel-top/sentinel-top/internal/deadport"
)

// wsURL is the stream URL of an httptest server.
func wsURL(s *httptest.Server, scheme string) string {
	return scheme + "://" + s.Listener.Addr().String() + source.DefaultStreamPath
}

// dialed runs a real collector dialing targets until every target but up
// is down with an error, and up (if any) has sent messages; the collector
// is then the source of a dashboard, as in the binary.
func dialed(t *testing.T, targets []source.Target, up string) *collector.Collector {
	t.Helper()
	c := collector.New(collector.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		source.Dial(ctx, c, targets, source.DialOptions{Seed: 7, HandshakeTimeout: 5 * time.Second})
		close(done)
	}()
	t.Cleanup(func() { cancel(); <-done })
	deadline := time.Now().Add(20 * time.Second)
	for {
		ready := true
		ts := c.Publish().Targets
		for _, st := range ts {
			if st.Name == up {
				ready = ready && st.State == collector.TargetUp && st.Messages > 0
			} else {
				ready = ready && st.State == collector.TargetDown && collector.ProblemText(st.Problem) != ""
			}
		}
		if ready && len(ts) == len(targets) {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("the targets did not settle: %+v", ts)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	return deadport.Addr(t)
}

// TestTargetsSayWhyTheyAreDown dials one target of each class of failure
// over loopback (and one that works) and reads the targets screen: each
// says why in words, the header counts them, and the empty table names
// the first one down.
func TestTargetsSayWhyTheyAreDown(t *testing.T) {
	refused := closedAddr(t)
	serve := func(code int) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, http.StatusText(code), code)
		}))
		t.Cleanup(s.Close)
		return s
	}
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("<html>hello</html>"))
	}))
	t.Cleanup(plain.Close)
	untrusted := httptest.NewUnstartedServer(http.NotFoundHandler())
	untrusted.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshake the test fails on purpose
	untrusted.StartTLS()
	t.Cleanup(untrusted.Close)
	a, err := agent.New(agent.Options{App: "order", Instance: "order-1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	good := httptest.NewServer(a.Handler())
	t.Cleanup(good.Close)

	cases := []struct {
		target source.Target
		words  string
	}{
		{source.Target{Name: refused, URL: "ws://" + refused + source.DefaultStreamPath}, "refused: nothing listens on " + refused},
		{source.Target{Name: "nohost.invalid:8720", URL: "ws://nohost.invalid:8720" + source.DefaultStreamPath}, "DNS: "},
		{source.Target{Name: "tls-to-plain", URL: wsURL(plain, "wss")}, "TLS: the target does not speak TLS"},
		{source.Target{Name: "untrusted", URL: wsURL(untrusted, "wss")}, "TLS: the certificate is not trusted"},
		{source.Target{Name: "failing", URL: wsURL(serve(http.StatusServiceUnavailable), "ws")}, "HTTP 503 Service Unavailable"},
		{source.Target{Name: "locked", URL: wsURL(serve(http.StatusUnauthorized), "ws")}, "HTTP 401 Unauthorized: the target wants a token (--token"},
		{source.Target{Name: "plain", URL: wsURL(plain, "ws")}, "plain HTTP server, not a sentinel-top stream: HTTP 200 OK"},
		{source.Target{Name: "web", URL: wsURL(serve(http.StatusNotFound), "ws")}, "plain HTTP server, not a sentinel-top stream: HTTP 404"},
	}
	var targets []source.Target
	for _, c := range cases {
		targets = append(targets, c.target)
	}
	targets = append(targets, source.Target{Name: "good", URL: wsURL(good, "ws")})
	c := dialed(t, targets, "good")
	m := newTestModel(c, 200, 50)
	if head := strings.Split(screenText(m), "\n")[0]; !strings.Contains(head, "targets 1/9 up ✖ 8 down: "+refused+", nohost.invalid:8720") {
		t.Errorf("the header does not count and name the targets down: %q", head)
	}
	press(m, "t")
	screen := screenText(m)
	lines := strings.Split(screen, "\n")
	for _, c := range cases {
		found := false
		for _, l := range lines {
			f := strings.Fields(strings.TrimPrefix(l, glyphCursor))
			if len(f) > 3 && f[0] == glyphOpen && f[1] == "down" && f[3] == c.target.Name {
				found = true
				if !strings.Contains(l, c.words) {
					t.Errorf("%s: the row does not say %q:\n%s", c.target.Name, c.words, l)
				}
			}
		}
		if !found {
			t.Errorf("no row for %s:\n%s", c.target.Name, screen)
		}
	}
	if !strings.Contains(screen, "● up") || !strings.Contains(screen, "order-1") || !strings.Contains(screen, "TARGETS  1/9 up · ✖ 8 down") {
		t.Errorf("the target up is not listed with its instance:\n%s", screen)
	}
	// the selected (first) target's story, in full.
	if !strings.Contains(screen, "    refused: nothing listens on "+refused+" (connection refused)") {
		t.Errorf("the selected target's error is not told in full:\n%s", screen)
	}
	press(m, "t")
	if m.active != m.main {
		t.Errorf("t did not close the targets")
	}
}

// TestNoTargetUpSaysWhy: with every target down, the empty table names
// the first one and why, not "waiting".
func TestNoTargetUpSaysWhy(t *testing.T) {
	addr := closedAddr(t)
	c := dialed(t, []source.Target{{Name: addr, URL: "ws://" + addr + source.DefaultStreamPath}}, "")
	s := screenText(newTestModel(c, 120, 40))
	if !strings.Contains(s, "no target is up, 1 down: "+addr+": refused: nothing listens") || strings.Contains(s, "waiting") {
		t.Errorf("the empty table does not say why:\n%s", s)
	}
	if !strings.Contains(s, "targets 0/1 up ✖ 1 down: "+addr) {
		t.Errorf("the header does not name the target down:\n%s", s)
	}
}

// TestTargetsLastMessageIsTheCollectors: the age of a target's last
// message is the collector's own LastMessageAt, known from the first
// snapshot on (a message count need not be seen growing), and "–" for a
// target that never sent one.
func TestTargetsLastMessageIsTheCollectors(t *testing.T) {
	m := newTestModel(newStaticSource(testSnapshot()), 120, 40)
	press(m, "t")
	want := map[string]string{"10.0.0.1:8719": "0.3s ago", "10.0.0.2:8719": "1.2s ago",
		"10.0.0.3:8719": "1m15s ago", "10.0.0.4:8719": "–"}
	for _, line := range strings.Split(screenText(m), "\n")[3:8] {
		for target, age := range want {
			if !strings.Contains(line, target) {
				continue
			}
			if !strings.Contains(line, " "+age+" ") || (age == "–" && strings.Contains(line, "ago")) {
				t.Errorf("%s: want last message %q: %q", target, age, line)
			}
			delete(want, target)
		}
	}
	if len(want) > 0 {
		t.Errorf("targets not listed: %v", want)
	}
}

// TestTargetOfManyInstancesSaysHowMany: a target relaying several
// instances (a re-served stream) is not shown as the one its latest hello
// named: its INSTANCE cell counts them, and its story says the latest.
func TestTargetOfManyInstancesSaysHowMany(t *testing.T) {
	snap := testSnapshot()
	relay, bound := false, false
	for i := range snap.Targets {
		switch snap.Targets[i].Name {
		case "10.0.0.1:8719":
			snap.Targets[i].Instance, snap.Targets[i].Instances, relay = "cart-7", 3, true
		case "10.0.0.2:8719":
			snap.Targets[i].Instance, snap.Targets[i].Instances, bound = "gw-999", collector.MaxTargetInstances, true
		}
	}
	if !relay || !bound {
		t.Fatal("the test snapshot has not the targets this test sets")
	}
	m := newTestModel(newStaticSource(snap), 120, 40)
	press(m, "t")
	screen := screenText(m)
	for target, want := range map[string]string{"10.0.0.1:8719": " 3 instances ", "10.0.0.2:8719": " 256+ instances "} {
		found := false
		for _, line := range strings.Split(screen, "\n") {
			if strings.Contains(line, target) && strings.Contains(line, "ago") {
				found = true
				if !strings.Contains(line, want) {
					t.Errorf("%s: want %q in %q", target, want, line)
				}
			}
		}
		if !found {
			t.Errorf("%s not listed:\n%s", target, screen)
		}
	}
	// The story is the selected target's: select the relay.
	for range len(snap.Targets) {
		if strings.Contains(screen, "\n10.0.0.1:8719  ") {
			break
		}
		press(m, "<down>")
		screen = screenText(m)
	}
	if !strings.Contains(screen, "3 instances, the latest named cart-7") {
		t.Errorf("the relay's story does not say how many:\n%s", screen)
	}
}
