package source

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/collector/feed"
	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/internal/deadport"
)

func TestParseTargets(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "targets.txt")
	os.WriteFile(file, []byte("# gateways\n10.0.0.1:8720  # first\n\nwss://gw-2.example:443/custom\n10.0.0.1:8720\n"), 0o600)
	got, err := ParseTargets("127.0.0.1:8720, ws://h:1 ,https://secure:9/x,@" + file)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ws://127.0.0.1:8720/sentinel/stream", "ws://h:1/sentinel/stream", "wss://secure:9/x",
		"ws://10.0.0.1:8720/sentinel/stream", "wss://gw-2.example:443/custom"}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i].URL != want[i] {
			t.Errorf("target %d: %s, want %s", i, got[i].URL, want[i])
		}
	}
	for spec, msg := range map[string]string{
		"":                    "no targets",
		"localhost":           "want HOST:PORT",
		"h:99999":             "bad port",
		"ftp://h:1":           "scheme",
		"ws://user:pw@h:1":    "--token",
		"@" + dir + "/absent": "targets file",
		"h:1\x1b[2J":          "control characters",
	} {
		if _, err := ParseTargets(spec); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: err %v, want %q", spec, err, msg)
		}
	}
}

// dialOnce dials targets until each reports down with an error, and returns
// the snapshot's target statuses.
func dialUntilDown(t *testing.T, targets []Target) []*feed.TargetStatus {
	t.Helper()
	c := collector.New(collector.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { dial(ctx, c, targets, DialOptions{Seed: 7}); close(done) }()
	defer func() { cancel(); <-done }()
	var out []*feed.TargetStatus
	eventually(t, "targets down", func() error {
		out = c.Publish().Targets
		if len(out) != len(targets) {
			return fmt.Errorf("%d of %d targets registered", len(out), len(targets))
		}
		for _, st := range out {
			if st.State != feed.TargetDown || collector.ProblemText(st.Problem) == "" {
				return fmt.Errorf("%s: %s %q", st.Name, st.State, collector.ProblemText(st.Problem))
			}
		}
		return nil
	})
	return out
}

func TestDialBadTargetsReportWhy(t *testing.T) {
	// Unreachable: a port nobody listens on.
	closedAddr := deadport.Addr(t)
	// Not a websocket: a plain HTTP server.
	plain := httptest.NewServer(http.NotFoundHandler())
	defer plain.Close()
	// A websocket that speaks garbage.
	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer conn.Close()
		for i := 0; i < 100; i++ {
			if conn.WriteMessage(websocket.TextMessage, []byte("<html>hello</html>")) != nil {
				return
			}
		}
	}))
	defer garbage.Close()
	// A stream that wants a token.
	locked := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "401", http.StatusUnauthorized)
	}))
	defer locked.Close()

	targets := []Target{
		{Name: closedAddr, URL: "ws://" + closedAddr + DefaultStreamPath},
		{Name: "plain", URL: strings.Replace(plain.URL, "http", "ws", 1) + DefaultStreamPath},
		{Name: "garbage", URL: strings.Replace(garbage.URL, "http", "ws", 1) + DefaultStreamPath},
		{Name: "locked", URL: strings.Replace(locked.URL, "http", "ws", 1) + DefaultStreamPath},
	}
	st := dialUntilDown(t, targets)
	for i, want := range []string{"connection refused", "not a sentinel-top stream: HTTP 404", "incompatible", "HTTP 401"} {
		if !strings.Contains(collector.ProblemText(st[i].Problem), want) {
			t.Errorf("%s: %q, want %q", st[i].Name, collector.ProblemText(st[i].Problem), want)
		}
		if st[i].RetryAt == 0 || st[i].Reconnects == 0 {
			t.Errorf("%s: no retry scheduled: %+v", st[i].Name, st[i])
		}
	}
}

// Handshakes wait their turn: with MaxHandshakes 4, 48 targets whose
// upgrades each take 250 ms are never more than 4 in flight, and every one
// comes up on its first dial although the last waits about 3 s for its turn
// with a 1 s HandshakeTimeout: the timeout starts with the turn.
func TestHandshakesTakeTurns(t *testing.T) {
	const (
		targets = 48
		turns   = 4
		upgrade = 250 * time.Millisecond
	)
	var inFlight, most atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(upgrade)
		inFlight.Add(-1)
		conn, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer conn.Close()
		for { // until the collector closes it
			if _, _, err := conn.ReadMessage(); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	var ts []Target
	for i := range targets {
		ts = append(ts, Target{Name: fmt.Sprint("t", i), URL: "ws" + strings.TrimPrefix(srv.URL, "http") + "/sentinel/stream"})
	}
	c := collector.New(collector.Options{Mode: collector.ModeLive})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		dial(ctx, c, ts, DialOptions{MaxHandshakes: turns, HandshakeTimeout: time.Second, Seed: 1})
	}()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		up, reconnects := 0, int64(0)
		for _, st := range c.Publish().Targets {
			if st.State == feed.TargetUp {
				up++
			}
			reconnects += st.Reconnects
		}
		if reconnects > 0 {
			t.Fatalf("%d reconnects with %d of %d up: a handshake timed out while it waited for its turn", reconnects, up, targets)
		}
		if up == targets {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d targets up after 30 s", up, targets)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if m := most.Load(); m > turns || m < 2 {
		t.Errorf("at most %d upgrades in flight at once, want 2 to %d", m, turns)
	}
}
func TestRateLimitTokenBucket(t *testing.T) {
	for _, rate := range []float64{-1, 0} {
		r := newRateLimit(rate, time.Time{})
		for range 3 * rateBurstSeconds {
			if !r.allow(time.Time{}) {
				t.Fatalf("rate %v must mean no limit", rate)
			}
		}
	}
	at := time.UnixMilli(t0ms)
	r := newRateLimit(2, at)
	n := 0
	for r.allow(at) {
		n++
	}
	if n != 2*rateBurstSeconds {
		t.Fatalf("burst %d", n)
	}
	if r.allow(at.Add(-time.Hour)) {
		t.Fatal("a clock that went back refilled the bucket")
	}
	if !r.allow(at.Add(500*time.Millisecond)) || r.allow(at.Add(500*time.Millisecond)) {
		t.Fatal("half a second at 2/s is one token")
	}
	n = 0
	for r.allow(at.Add(time.Hour)) {
		n++
	}
	if n != 2*rateBurstSeconds {
		t.Fatalf("an hour refilled %d tokens, want the burst", n)
	}
}

// TestEachTargetGetsOnlyItsOwnToken: a --targets file gives two targets
// tokens of their own (token= and token-file=) and leaves a third to the
// default: three real loopback servers record every Authorization header
// they receive, and each saw its own token alone. No printed form of the
// targets, and no status the collector shows, holds a token.
func TestEachTargetGetsOnlyItsOwnToken(t *testing.T) {
	type seen struct {
		mu      sync.Mutex
		headers []string
	}
	serve := func() (*seen, string) {
		s := &seen{}
		up := websocket.Upgrader{}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.mu.Lock()
			s.headers = append(s.headers, r.Header.Get("Authorization"))
			s.mu.Unlock()
			conn, err := up.Upgrade(w, r, nil)
			if err != nil {
				return
			}
			defer conn.Close()
			for {
				if _, _, err := conn.ReadMessage(); err != nil {
					return
				}
			}
		}))
		t.Cleanup(srv.Close)
		return s, strings.TrimPrefix(srv.URL, "http://")
	}
	a, addrA := serve()
	b, addrB := serve()
	c, addrC := serve()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "b.token"), []byte("bravo-secret-2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "targets.txt")
	lines := fmt.Sprintf("# each its own\n%s token=alpha-secret-1\n%s token-file=b.token # relative to this file\n%s\n", addrA, addrB, addrC)
	if err := os.WriteFile(file, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	targets, err := ParseTargets("@" + file)
	if err != nil {
		t.Fatal(err)
	}
	secrets := []string{"alpha-secret-1", "bravo-secret-2", "shared-default-3"}
	for _, s := range []string{fmt.Sprint(targets), fmt.Sprintf("%+v", targets), fmt.Sprintf("%#v", targets), TargetNames(targets)} {
		for _, secret := range secrets {
			if strings.Contains(s, secret) {
				t.Errorf("a printed target holds its token: %s", s)
			}
		}
	}
	if !targets[0].HasToken() || !targets[1].HasToken() || targets[2].HasToken() {
		t.Fatalf("tokens of their own: %v %v %v", targets[0].HasToken(), targets[1].HasToken(), targets[2].HasToken())
	}
	col := collector.New(collector.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { dial(ctx, col, targets, DialOptions{Seed: 1, Token: secrets[2]}); close(done) }()
	defer func() { cancel(); <-done }()
	eventually(t, "every target up", func() error {
		sts := col.Publish().Targets
		if len(sts) != 3 {
			return fmt.Errorf("%d targets", len(sts))
		}
		for _, st := range sts {
			if st.State != feed.TargetUp {
				return fmt.Errorf("%s is %s", st.Name, st.State)
			}
		}
		return nil
	})
	for i, s := range []*seen{a, b, c} {
		s.mu.Lock()
		got := slices.Clone(s.headers)
		s.mu.Unlock()
		if len(got) == 0 {
			t.Fatalf("target %d received no request", i)
		}
		for _, h := range got {
			if h != "Bearer "+secrets[i] {
				t.Errorf("target %d received Authorization %q, want its own token alone", i, h)
			}
		}
	}
	for _, st := range col.Publish().Targets {
		for _, secret := range secrets {
			if strings.Contains(fmt.Sprintf("%+v", st), secret) {
				t.Errorf("a target's status holds a token: %+v", st)
			}
		}
	}
}

// TestTargetTokensRefusedWhereTheyWouldShow: a token on the command line,
// a Java target's token, an empty or oversized token file, two tokens on a
// line, a token with no target, a target listed again with another token:
// each refused, and no error quotes the token.
func TestTargetTokensRefusedWhereTheyWouldShow(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("empty.token", "\n")
	write("big.token", strings.Repeat("k", MaxTokenBytes+1))
	write("spaced.token", "top secret-7")
	for spec, msg := range map[string]string{
		"h:1,token=secret-7": "not on the command line",
		"h:1,token-file=x":   "not on the command line",
		"@" + write("java.txt", "sentinel://h:8719 token=secret-7\n"):                "takes no token",
		"@" + write("empty.txt", "h:1 token-file=empty.token\n"):                     "empty token",
		"@" + write("big.txt", "h:1 token-file=big.token\n"):                         "over 4096 bytes",
		"@" + write("spaced.txt", "h:1 token-file=spaced.token\n"):                   "visible ASCII",
		"@" + write("absent.txt", "h:1 token-file=absent.token\n"):                   "token file",
		"@" + write("two.txt", "h:1 token=secret-7 token=secret-8\n"):                "more than one token",
		"@" + write("alone.txt", "token=secret-7\nh:1\n"):                            "no target on its line",
		"@" + write("again.txt", "h:1 token=secret-7\nh:1 token=secret-8\n"):         "another token",
		"@" + write("ctl.txt", "h:1 token=secret-7\x01\n"):                           "visible ASCII",
		"@" + write("default.txt", "h:1 token=secret-7\nws://h:1/sentinel/stream\n"): "another token",
	} {
		_, err := ParseTargets(spec)
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: err %v, want %q", spec, err, msg)
			continue
		}
		if strings.Contains(err.Error(), "secret-") {
			t.Errorf("%q: the error quotes the token: %v", spec, err)
		}
	}
}

// TestDownSinceOutlastsRetries: a target nobody listens on is down since
// its first failure however often it is dialed again; Since is the latest
// attempt's.
func TestDownSinceOutlastsRetries(t *testing.T) {
	closedAddr := deadport.Addr(t)
	c := collector.New(collector.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		dial(ctx, c, []Target{{Name: closedAddr, URL: "ws://" + closedAddr + DefaultStreamPath}}, DialOptions{Seed: 7})
		close(done)
	}()
	defer func() { cancel(); <-done }()
	var first feed.TargetStatus
	eventually(t, "the first failure", func() error {
		first = firstTarget(c.Publish())
		if first.State != feed.TargetDown {
			return fmt.Errorf("%s", first.State)
		}
		return nil
	})
	if first.DownSince == 0 || first.DownSince > first.Since {
		t.Fatalf("down since %d, the attempt at %d", first.DownSince, first.Since)
	}
	eventually(t, "two more attempts", func() error {
		st := firstTarget(c.Publish())
		if st.Reconnects < first.Reconnects+2 || st.State != feed.TargetDown {
			return fmt.Errorf("%d reconnects, %s", st.Reconnects, st.State)
		}
		if st.DownSince != first.DownSince {
			t.Fatalf("down since %d, then %d: a retry moved it", first.DownSince, st.DownSince)
		}
		if st.Since <= first.Since {
			return fmt.Errorf("the latest attempt at %d, the first at %d", st.Since, first.Since)
		}
		return nil
	})
}

// TestTargetCountsTheInstancesItNames: a target that relays several
// instances (a re-served stream) is counted as that many on its status,
// the latest named beside; a hello again of a name counted adds none, and
// a peer naming endless instances is counted up to MaxTargetInstances.
func TestTargetCountsTheInstancesItNames(t *testing.T) {
	hellos := func(names ...string) string {
		up := websocket.Upgrader{}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			conn, err := up.Upgrade(w, r, nil)
			if err != nil {
				return
			}
			defer conn.Close()
			for _, n := range names {
				b, err := wire.Append(nil, &wire.Hello{Header: wire.Header{Ts: 1_700_000_000_000, Instance: n},
					App: "relay", StartedAt: 1_699_999_000_000, BucketMs: 500})
				if err != nil {
					t.Error(err)
					return
				}
				if conn.WriteMessage(websocket.TextMessage, b) != nil {
					return
				}
			}
			for {
				if _, _, err := conn.ReadMessage(); err != nil {
					return
				}
			}
		}))
		t.Cleanup(srv.Close)
		return strings.TrimPrefix(srv.URL, "http://")
	}
	var endless []string
	for i := range feed.MaxTargetInstances + 40 {
		endless = append(endless, fmt.Sprintf("gw-%d", i))
	}
	targets := []Target{
		{Name: "one", URL: "ws://" + hellos("order-1", "order-1") + DefaultStreamPath},
		// Names of its own: a name another target announced too would be
		// the first announcer's, and shown NAME@TARGET on the other,
		// whichever connected first (TestSameNameFromTwoTargetsIsTwoInstances).
		{Name: "relay", URL: "ws://" + hellos("order-7", "order-2", "order-7", "cart-1") + DefaultStreamPath},
		{Name: "endless", URL: "ws://" + hellos(endless...) + DefaultStreamPath},
	}
	c := collector.New(collector.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { dial(ctx, c, targets, DialOptions{Seed: 1}); close(done) }()
	defer func() { cancel(); <-done }()
	want := map[string][2]any{"one": {1, "order-1"}, "relay": {3, "cart-1"}, "endless": {feed.MaxTargetInstances, endless[len(endless)-1]}}
	eventually(t, "every target's instances counted", func() error {
		for _, st := range c.Publish().Targets {
			if w := want[st.Name]; st.Instances != w[0] || st.Instance != w[1] {
				return fmt.Errorf("%s: %d instances, the latest %q; want %v", st.Name, st.Instances, st.Instance, w)
			}
		}
		return nil
	})
}
