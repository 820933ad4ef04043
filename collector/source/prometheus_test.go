package source

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/collector/feed"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/internal/deadport"
)

// The Prometheus source's bounds, against peers on loopback that behave as
// a slow, huge, unreachable or misbehaving server would: real sockets and
// a real HTTP server, answering what such a server answers. What a real
// Prometheus serves is read in cmd/sentinel-top's
// TestPrometheusSourceReadsSentinelGolang.

// promPeer serves handler on loopback until the test ends.
func promPeer(t *testing.T, handler http.HandlerFunc) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// answer writes a success answer with data.
func answer(w http.ResponseWriter, data string) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"status":"success","data":%s}`, data)
}

// goServer answers discovery with sentinel_go_handled_total and every
// range query with series, each a counter rising by 10 a step.
func goServer(series int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/label/__name__/values":
			if strings.Contains(r.URL.Query().Get("match[]"), "sentinel_go") {
				answer(w, `["sentinel_go_handled_total"]`)
				return
			}
			answer(w, `[]`)
		case "/api/v1/query_range":
			var b strings.Builder
			b.WriteString(`{"resultType":"matrix","result":[`)
			for i := range series {
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `{"metric":{"app":"a","host":"h","pid":"%d","resource":"r","result":"pass"},"values":[[1000,"0"],[1001,"10"],[1002,"20"]]}`, i)
			}
			b.WriteString(`]}`)
			answer(w, b.String())
		default:
			http.NotFound(w, r)
		}
	}
}

func rangeOf(t *testing.T, o PromOptions) ([]wire.Message, error) {
	t.Helper()
	p, err := NewPrometheus(o)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	msgs, _, err := p.Range(context.Background(), time.UnixMilli(1_000_000), time.UnixMilli(1_002_000))
	return msgs, err
}

func TestPromCountsFromCounters(t *testing.T) {
	msgs, err := rangeOf(t, PromOptions{URL: promPeer(t, goServer(2)), Step: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var pass int64
	hellos := 0
	for _, m := range msgs {
		switch m := m.(type) {
		case *wire.Hello:
			hellos++
			if m.SDK != PromSDK+"/"+promFamilyGo || m.BucketMs != 1000 || m.StartedAt != 0 {
				t.Errorf("hello %+v", m)
			}
		case *wire.Buckets:
			for _, it := range m.Items {
				pass += it.Pass
			}
		}
	}
	// Each series: the value at the range's start is the baseline, two
	// steps of 10 follow.
	if hellos != 2 || pass != 40 {
		t.Errorf("%d hellos, %d passes; want 2 and 40", hellos, pass)
	}
}

func TestPromRefusesTooManySeries(t *testing.T) {
	_, err := rangeOf(t, PromOptions{URL: promPeer(t, goServer(5)), Step: time.Second, MaxSeries: 4})
	if !errors.Is(err, ErrPromTooManySeries) || !strings.Contains(err.Error(), "more than 4 series") {
		t.Fatalf("err = %v, want ErrPromTooManySeries", err)
	}
}

func TestPromRefusesAHugeAnswer(t *testing.T) {
	var sent atomic.Int64
	url := promPeer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/label/__name__/values" {
			answer(w, `["sentinel_go_handled_total"]`)
			return
		}
		// An answer that never ends: one name, padded without end.
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"resource":"`)
		pad := strings.Repeat("x", 32<<10)
		for r.Context().Err() == nil {
			n, err := fmt.Fprint(w, pad)
			sent.Add(int64(n))
			if err != nil {
				return
			}
		}
	})
	p, err := NewPrometheus(PromOptions{URL: url, Step: time.Second, MaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	_, _, err = p.Range(context.Background(), time.UnixMilli(1_000_000), time.UnixMilli(1_002_000))
	if !errors.Is(err, ErrPromTooLarge) {
		t.Fatalf("err = %v, want ErrPromTooLarge", err)
	}
	if st := p.Stats(); st.Bytes <= 1<<20 || st.Bytes > 1<<20+64<<10 {
		t.Errorf("read %d bytes, want just over the 1 MiB bound", st.Bytes)
	}
}

func TestPromSlowServerTimesOut(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // accepts, reads, never answers
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	began := time.Now()
	_, err = rangeOf(t, PromOptions{URL: "http://" + ln.Addr().String(), Step: time.Second, Timeout: 300 * time.Millisecond})
	if !errors.Is(err, ErrPromUnavailable) || !errors.Is(err, ErrPromTimeout) || time.Since(began) > 5*time.Second {
		t.Fatalf("err = %v after %s, want ErrPromTimeout (ErrPromUnavailable) within the timeout", err, time.Since(began))
	}
}

func TestPromUnreachableAndErrorAnswers(t *testing.T) {
	closed := "http://" + deadport.Addr(t)
	if _, err := rangeOf(t, PromOptions{URL: closed, Step: time.Second}); !errors.Is(err, ErrPromUnavailable) {
		t.Errorf("closed port: err = %v, want ErrPromUnavailable", err)
	}
	bad := promPeer(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"status":"error","errorType":"bad_data","error":"exceeded maximum resolution \u001b]52;c;cGF3bmVk\u0007\nsecond line"}`)
	})
	if _, err := rangeOf(t, PromOptions{URL: bad, Step: time.Second}); !errors.Is(err, ErrPromUnavailable) ||
		!strings.Contains(err.Error(), "exceeded maximum resolution") || strings.Contains(err.Error(), "second line") ||
		strings.ContainsAny(err.Error(), "\x1b\x07") {
		t.Errorf("error answer: err = %v", err)
	}
	denied := promPeer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		goServer(1)(w, r)
	})
	if _, err := rangeOf(t, PromOptions{URL: denied, Step: time.Second}); !errors.Is(err, ErrPromUnavailable) || !strings.Contains(err.Error(), "401") {
		t.Errorf("no token: err = %v", err)
	}
	if _, err := rangeOf(t, PromOptions{URL: denied, Step: time.Second, Token: "s3cret"}); err != nil {
		t.Errorf("with the token: %v", err)
	}
	if _, err := NewPrometheus(PromOptions{URL: denied, Token: "s3cret\x1b"}); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("a token with a control character: %v", err)
	}
	empty := promPeer(t, func(w http.ResponseWriter, r *http.Request) { answer(w, `[]`) })
	if _, err := rangeOf(t, PromOptions{URL: empty, Step: time.Second}); !errors.Is(err, ErrPromNoMetrics) {
		t.Errorf("no metrics: err = %v", err)
	}
}

// TestPromMalformedAnswersDoNotPanic: answers of the wrong shape, values
// that are not numbers, names the wire refuses: errors or rejects, never
// a panic.
func TestPromMalformedAnswersDoNotPanic(t *testing.T) {
	long := strings.Repeat("n", 10_000)
	for _, body := range []string{
		`{"status":"success","data":{"resultType":"matrix","result":{}}}`,
		`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"resource":"r","result":"pass"},"values":[["x","y"],[1001,"NaN"],[1002,"-5"],[1e30,"1"],[1003]]}]}}`,
		`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"resource":"` + long + `","result":"pass"},"values":[[1001,"1"]]}]}}`,
		`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"resource":"r","from_state":"Closed","to_state":"Open"},"values":[[1000,"0"],[1001,"1e18"]]}]}}`,
		`not json`,
		`{"status":"success","data":`,
	} {
		url := promPeer(t, func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/api/v1/label/__name__/values" {
				answer(w, `["sentinel_go_handled_total","sentinel_go_circuit_breaker_state_changed_total"]`)
				return
			}
			fmt.Fprint(w, body)
		})
		p, err := NewPrometheus(PromOptions{URL: url, Step: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		msgs, rejects, err := p.Range(context.Background(), time.UnixMilli(1_000_000), time.UnixMilli(1_003_000))
		states := 0
		for _, m := range msgs {
			if _, ok := m.(*wire.State); ok {
				states++
			}
			if err := wire.Validate(m, wire.Limits{}); err != nil {
				t.Errorf("%.60s: an invalid message written: %v", body, err)
			}
			if st, ok := m.(*wire.State); ok && !st.Inferred {
				t.Errorf("a transition not marked inferred: %+v", st)
			}
		}
		if strings.Contains(body, "1e18") && (states != 16 || p.Stats().TransitionsCut != 1e18-16) {
			t.Errorf("a counter claiming 1e18 transitions in a step: %d written, %d cut; want 16 and the rest", states, p.Stats().TransitionsCut)
		}
		t.Logf("%.60s: %d messages, %d rejected, %v", body, len(msgs), len(rejects), err)
		p.Close()
	}
}

// TestPromTransitionsChainWithinAStep: the transitions one step counted
// are ordered as the states chain, from the state the last one left.
func TestPromTransitionsChainWithinAStep(t *testing.T) {
	var c promConv
	c.init(1000, 10)
	w := c.begin(0, 2000)
	d := w.inst(promInstance{name: "i", app: "a", family: promFamilyGo})
	d.seen(0)
	d.trans[0] = map[string]map[[2]core.State]int64{"r": {
		{core.HalfOpen, core.Closed}: 1, {core.Closed, core.Open}: 1, {core.Open, core.HalfOpen}: 2, {core.HalfOpen, core.Open}: 1}}
	msgs, _, _ := c.finish(w, wire.Limits{})
	var got []string
	last := int64(0)
	for _, m := range msgs {
		if st, ok := m.(*wire.State); ok {
			got = append(got, st.From.String()+">"+st.To.String())
			if st.Ts <= last || st.Ts >= 1000 || !st.Inferred {
				t.Errorf("%+v: want inferred, inside the step, in order", st)
			}
			last = st.Ts
		}
	}
	want := "[CLOSED>OPEN OPEN>HALF_OPEN HALF_OPEN>OPEN OPEN>HALF_OPEN HALF_OPEN>CLOSED]"
	if fmt.Sprint(got) != want {
		t.Errorf("got %v, want %s", got, want)
	}
}

// TestPromFollowShowsTheServerAsATarget: live mode writes what each step
// holds to a real store, and shows the server as a target: up while its
// windows are read, down with the server's problem while they fail, up
// again after.
func TestPromFollowShowsTheServerAsATarget(t *testing.T) {
	var failing atomic.Bool
	now := func() int64 { return time.Now().UnixMilli() / 1000 * 1000 }
	url := promPeer(t, func(w http.ResponseWriter, r *http.Request) {
		if failing.Load() {
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
			return
		}
		if r.URL.Path == "/api/v1/query_range" {
			// one process whose counter rose by 5 each second of the last minute
			var b strings.Builder
			b.WriteString(`{"resultType":"matrix","result":[{"metric":{"app":"a","host":"h","pid":"1","resource":"r","result":"pass"},"values":[`)
			for i, ts := 0, now()-60_000; ts <= now(); i, ts = i+1, ts+1000 {
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `[%d,"%d"]`, ts/1000, ts/200)
			}
			b.WriteString(`]}]}`)
			answer(w, b.String())
			return
		}
		goServer(0)(w, r)
	})
	p, err := NewPrometheus(PromOptions{URL: url, Step: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	c := collector.New(collector.Options{Resolution: time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Follow(ctx, c); close(done) }()
	defer func() { cancel(); <-done }()
	state := func() (feed.TargetState, feed.Problem, int64) {
		s := c.Publish()
		if len(s.Targets) != 1 {
			return feed.TargetConnecting, feed.Problem{}, 0
		}
		var pass int64
		for _, tot := range s.Totals {
			pass += tot.Pass
		}
		return s.Targets[0].State, s.Targets[0].Problem, pass
	}
	eventually(t, "up, with the last minute's passes", func() error {
		if st, _, pass := state(); st != feed.TargetUp || pass < 250 {
			return fmt.Errorf("%s, %d passes", st, pass)
		}
		return nil
	})
	failing.Store(true)
	eventually(t, "down, saying why", func() error {
		if st, pr, _ := state(); st != feed.TargetDown || !strings.Contains(pr.Detail, "503") {
			return fmt.Errorf("%s %+v", st, pr)
		}
		return nil
	})
	failing.Store(false)
	eventually(t, "up again", func() error {
		if st, _, _ := state(); st != feed.TargetUp {
			return fmt.Errorf("%s", st)
		}
		return nil
	})
	// The target counts the bytes of the server's answers: those of every
	// poll it reports (a poll under way has read more).
	shown, read := c.Publish().Targets[0].Bytes, p.Stats().Bytes
	if shown <= 0 || shown > read {
		t.Errorf("the target shows %d bytes read, the source read %d", shown, read)
	}
}

// seriesServer answers discovery with sentinel_go_* and every range query
// of a metric with the series given for it.
func seriesServer(handled, changed string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/label/__name__/values":
			if strings.Contains(r.URL.Query().Get("match[]"), "sentinel_go") {
				answer(w, `["sentinel_go_handled_total","sentinel_go_circuit_breaker_state_changed_total"]`)
				return
			}
			answer(w, `[]`)
		case "/api/v1/query_range":
			res := handled
			if strings.Contains(r.URL.Query().Get("query"), promGoChanged) {
				res = changed
			}
			answer(w, `{"resultType":"matrix","result":[`+res+`]}`)
		default:
			http.NotFound(w, r)
		}
	}
}

// TestPromFirstSampleIsTheBaseline: a series first seen inside the range
// (a long-running process newly scraped) counts from its first value, not
// its lifetime total in one step; its state-change counters too. A series
// that appears after its instance's others began inside the range.
func TestPromFirstSampleIsTheBaseline(t *testing.T) {
	url := promPeer(t, seriesServer(
		`{"metric":{"app":"a","host":"h","pid":"1","resource":"r","result":"pass"},"values":[[1001,"862000"],[1002,"862010"]]},`+
			`{"metric":{"app":"a","host":"h","pid":"1","resource":"r","result":"block"},"values":[[1002,"3"]]}`,
		`{"metric":{"app":"a","host":"h","pid":"1","resource":"r","from_state":"Closed","to_state":"Open"},"values":[[1001,"7"],[1002,"8"]]},`+
			`{"metric":{"app":"a","host":"h","pid":"1","resource":"r","from_state":"Open","to_state":"HalfOpen"},"values":[[1002,"1"]]}`))
	msgs, err := rangeOf(t, PromOptions{URL: url, Step: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var pass, block int64
	var states []string
	for _, m := range msgs {
		switch m := m.(type) {
		case *wire.Buckets:
			for _, it := range m.Items {
				pass, block = pass+it.Pass, block+it.Block
			}
		case *wire.State:
			states = append(states, fmt.Sprintf("%d:%s>%s", m.Ts/1000, m.From, m.To))
		}
	}
	if pass != 10 {
		t.Errorf("%d passes, want 10 (the first sample is the baseline)", pass)
	}
	// A series that appears after its instance was seen began inside the
	// range, from 0: its first value counts.
	if block != 3 {
		t.Errorf("%d blocks, want 3 (a series begun after its instance counts whole)", block)
	}
	if fmt.Sprint(states) != "[1001:CLOSED>OPEN 1001:OPEN>HALF_OPEN]" {
		t.Errorf("transitions %v, want the one counted after the baseline, then the new series'", states)
	}
}

// TestPromResponseTimesAreUnknown: the completions the Prometheus source
// writes carry no response time; a store fed its hello's origin shows
// their RT unknown, never an average of 0 ms.
func TestPromResponseTimesAreUnknown(t *testing.T) {
	const t0 = int64(1_764_460_800_000)
	clock := core.NewVirtualClock(time.UnixMilli(t0))
	c := collector.New(collector.Options{Clock: clock})
	sdk := PromSDK + "/" + promFamilyTop
	if !c.Hello("prometheus", &wire.Hello{Header: wire.Header{Ts: t0, Instance: "a@x"}, App: "a", SDK: sdk, BucketMs: 1000}, OriginOf(sdk)) {
		t.Fatal("hello refused")
	}
	for k := range int64(5) {
		clock.Set(time.UnixMilli(t0 + (k+1)*1000))
		c.Ingest("prometheus", &wire.Buckets{Header: wire.Header{Ts: t0 + (k+1)*1000, Instance: "a@x"}, BucketMs: 1000,
			Items: []wire.BucketItem{{Resource: "r", Start: t0 + k*1000, Metrics: core.Metrics{Pass: 10, Complete: 10}}}})
	}
	s := c.Publish()
	if len(s.Rows) != 1 || s.Rows[0].Completed == 0 {
		t.Fatalf("rows %+v: want one with completions", s.Rows)
	}
	if !s.Rows[0].RTUnknown {
		t.Errorf("row %+v: response times not marked unknown", s.Rows[0])
	}
}
