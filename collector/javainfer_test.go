package collector

import (
	"bufio"
	"cmp"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/collector/metriclog"
	"github.com/sentinel-top/sentinel-top/collector/source"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// The recordings of a Java Sentinel 1.8.9 application (docs/JAVA.md says
// how they were made): its transport API as the poller reads it, its
// metric log, and every transition its breakers made, as its
// CircuitBreakerStateChangeObserver logged them. sparse-1.8.9 is the same
// application at a quarter of the traffic, with timeWindow 1 s and 2 s.
//
// logPct is the share of real transitions the metric log alone (no rules)
// must match: with rules, the poller matches at least 90 % of both; without
// them, sparse traffic and a 1 s timeWindow leave some trips and probe
// outcomes unseen (docs/JAVA.md). logLone and lone bound the inferred
// transitions with no real one within 2 s, from the metric log and over
// the transport; logShown the ms a metric log's replay shows CLOSED~ while
// Java's breaker was OPEN, beyond 1 s of its transitions (none over the
// transport). Each is what was measured (docs/JAVA.md's table): the
// replays are deterministic.
var javaRecordings = []struct {
	dir, log      string
	logPct        int
	logLone, lone int
	logShown      int64
}{
	{"testdata/java/price-1.8.9", "price-service-metrics.log.2026-12-01", 90, 0, 0, 0},
	{"testdata/java/sparse-1.8.9", "price-sparse-metrics.log.2026-12-01", 70, 0, 0, 0},
	{"testdata/java/lowtraffic-1.8.9", "price-lowtraffic-metrics.log.2026-12-04", 75, 8, 1, 0},
}

var javaShowMissed = os.Getenv("SENTINEL_TOP_JAVA_MISSED") != ""

// javaResources are the resources of the recordings' applications.
var javaResources = []string{"queryPrice", "checkStock", "chargeCard", "GET:/api/v1/items", "GET:/api/v1/users", "listPrices", "price_cache"}

// javaTransition is one breaker transition, real or inferred.
type javaTransition struct {
	at       int64
	resource string
	from, to core.State
}

func (t javaTransition) String() string {
	return fmt.Sprintf("%d %s %s->%s", t.at, t.resource, t.from, t.to)
}

// javaRealTransitions reads the observer's log: ms,resource,grade,from,to,value.
func javaRealTransitions(t *testing.T, dir string) []javaTransition {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "transitions.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []javaTransition
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ",")
		at, err1 := strconv.ParseInt(fields[0], 10, 64)
		from, err2 := core.ParseState(fields[3])
		to, err3 := core.ParseState(fields[4])
		if len(fields) != 6 || err1 != nil || err2 != nil || err3 != nil {
			t.Fatalf("transitions.csv: %q", sc.Text())
		}
		out = append(out, javaTransition{at, fields[1], from, to})
	}
	return out
}

// javaMatch pairs real and inferred transitions of the same resource and
// states, each used once: in time order, each takes the earliest one of the
// other side within the tolerance (which pairs the most). It returns how
// many real ones have an inferred one within 1 s, the inferred ones with
// no real one within 2 s, and, for the real ones paired within 1 s, then
// those of the others paired within 2 s, how late the inferred one is
// (ms, negative when early), in order.
func javaMatch(real, inferred []javaTransition) (matched int, lone []javaTransition, late []int64) {
	pair := func(a, b []javaTransition, tol int64, taken ...[]int) []int {
		got := make([]int, len(a))
		used := make([]bool, len(b))
		for i := range got {
			got[i] = -1
		}
		for _, tk := range taken { // pairs made already
			for i, j := range tk {
				if j >= 0 {
					got[i], used[j] = -2, true
				}
			}
		}
		for i, x := range a {
			if got[i] == -2 {
				continue
			}
			for j, y := range b {
				if !used[j] && x.resource == y.resource && x.from == y.from && x.to == y.to && abs64(x.at-y.at) <= tol {
					used[j], got[i] = true, j
					break
				}
			}
		}
		return got
	}
	byTime := func(ts []javaTransition) []javaTransition {
		ts = slices.Clone(ts)
		slices.SortStableFunc(ts, func(a, b javaTransition) int { return cmp.Compare(a.at, b.at) })
		return ts
	}
	real, inferred = byTime(real), byTime(inferred)
	near := pair(real, inferred, 1000)
	for i, j := range near {
		if j >= 0 {
			matched++
			late = append(late, inferred[j].at-real[i].at)
		} else if javaShowMissed {
			fmt.Println("missed", real[i])
		}
	}
	// The others within 2 s, for the timing.
	for i, j := range pair(real, inferred, 2000, near) {
		if j >= 0 {
			late = append(late, inferred[j].at-real[i].at)
		}
	}
	slices.Sort(late)
	for i, j := range pair(inferred, real, 2000) {
		if j < 0 {
			lone = append(lone, inferred[i])
		}
	}
	return matched, lone, late
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// javaCheckMatch requires pct % of the real transitions matched within 1 s
// and at most lone inferred ones without a real one within 2 s.
func javaCheckMatch(t *testing.T, real, inferred []javaTransition, pct, lone int) {
	t.Helper()
	matched, alone, late := javaMatch(real, inferred)
	t.Logf("%d real transitions, %d inferred: %d real matched within 1 s (%.1f %%), %d inferred without a real one within 2 s",
		len(real), len(inferred), matched, 100*float64(matched)/float64(len(real)), len(alone))
	if n := len(late); n > 0 {
		after := len(late) - sort.Search(n, func(i int) bool { return late[i] > 0 })
		t.Logf("paired within 2 s: %d, the inferred one %d ms to %+d ms from the real one (median %d ms), %d after it",
			n, late[0], late[n-1], late[n/2], after)
	}
	if matched*100 < len(real)*pct {
		t.Errorf("only %d of %d real transitions matched", matched, len(real))
	}
	if len(alone) > lone {
		for _, x := range alone {
			t.Errorf("inferred %v has no real transition within 2 s", x)
		}
	}
}

// javaOpenGzip opens a gzip file of a recording.
func javaOpenGzip(t *testing.T, dir, name string) io.Reader {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	return zr
}

func TestJavaInferenceFromMetricLog(t *testing.T) {
	for _, rec := range javaRecordings {
		t.Run(filepath.Base(rec.dir), func(t *testing.T) {
			r := metriclog.Convert(javaOpenGzip(t, rec.dir, rec.log+".gz"), rec.log, "", "")
			var inferred []javaTransition
			for _, m := range r.Messages {
				if s, ok := m.(*wire.State); ok {
					inferred = append(inferred, javaTransition{s.Ts, s.Resource, s.From, s.To})
				}
			}
			javaCheckMatch(t, javaRealTransitions(t, rec.dir), inferred, rec.logPct, rec.logLone)
		})
	}
}

// javaReplayServer answers like the recorded Java transport, on the
// collector's virtual clock: /metric gives the recorded lines of the
// seconds asked for that had been written by then (the recording says when
// each line was first answered), the other commands the last answer
// recorded by then.
type javaReplayServer struct {
	clock   core.Clock
	lines   []javaRecordedLine
	answers map[string][]javaExchange // by path, in time order
	mu      sync.Mutex
	polls   int
}

// javaExchange is one recorded request to a Java transport command API
// (as collector/source's TestRecordJavaTransport writes them): when it was
// asked (the recorder's clock, Unix ms), what, and the answer.
type javaExchange struct {
	At     int64  `json:"at"`
	Path   string `json:"path"`
	Status int    `json:"status"`
	Body   string `json:"body"`
}

type javaRecordedLine struct {
	second, seen int64
	text         string
}

func newJavaReplayServer(t *testing.T, clock core.Clock, dir string) (*javaReplayServer, int64) {
	t.Helper()
	srv := &javaReplayServer{clock: clock, answers: map[string][]javaExchange{}}
	dec := json.NewDecoder(javaOpenGzip(t, dir, "transport.ndjson.gz"))
	first := int64(0)
	seen := map[string]bool{}
	for {
		var e javaExchange
		if err := dec.Decode(&e); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if first == 0 {
			first = e.At
		}
		path, _, _ := strings.Cut(e.Path, "?startTime")
		if path != "/metric" {
			srv.answers[e.Path] = append(srv.answers[e.Path], e)
			continue
		}
		for _, line := range strings.Split(e.Body, "\n") {
			l, err := metriclog.ParseThin(line)
			if err != nil || l.Resource == metriclog.CPUUsage || l.Resource == metriclog.SystemLoad || seen[line] {
				continue
			}
			seen[line] = true
			srv.lines = append(srv.lines, javaRecordedLine{l.Timestamp / 1000 * 1000, e.At, line})
		}
	}
	return srv, first
}

func (s *javaReplayServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := s.clock.UnixMilli()
	if r.URL.Path == "/metric" {
		start, _ := strconv.ParseInt(r.URL.Query().Get("startTime"), 10, 64)
		end, _ := strconv.ParseInt(r.URL.Query().Get("endTime"), 10, 64)
		var b strings.Builder
		for _, l := range s.lines {
			if l.seen <= now && l.second/1000 >= start/1000 && l.second/1000 <= end/1000 {
				b.WriteString(l.text + "\n")
			}
		}
		s.mu.Lock()
		s.polls++
		s.mu.Unlock()
		io.WriteString(w, b.String())
		return
	}
	list := s.answers[r.URL.RequestURI()]
	if len(list) == 0 {
		http.Error(w, "Unknown command", http.StatusBadRequest)
		return
	}
	e := list[0]
	for _, x := range list {
		if x.At <= now {
			e = x
		}
	}
	w.WriteHeader(e.Status)
	io.WriteString(w, e.Body)
}

// TestJavaInferenceFromTransport plays the recorded transport API to a
// poller, second by second, and measures the transitions it infers against
// those Java's breakers made, and what the detail shows against what
// Java's breakers were (closed-not-shown-while-open: no CLOSED~ while
// OPEN beyond 1 s of a transition).
func TestJavaInferenceFromTransport(t *testing.T) {
	for _, rec := range javaRecordings {
		t.Run(filepath.Base(rec.dir), func(t *testing.T) {
			t.Parallel() // each its own server, clock and collector, waiting on its polls
			javaInferFromTransport(t, rec.dir, rec.lone)
		})
	}
}

// javaReplayPolled serves the Java transport recorded in dir to a new
// collector polling it as app, on a virtual clock that starts at the
// recording's first request and moves one metric poll at a time, each
// after the poll before it was answered, until it reaches until(first,
// srv).
func javaReplayPolled(t *testing.T, dir, app string, until func(first int64, srv *javaReplayServer) int64) (*Collector, *javaReplayServer, *core.VirtualClock, int64) {
	t.Helper()
	clock := core.NewVirtualClock(time.UnixMilli(0))
	srv, first := newJavaReplayServer(t, clock, dir)
	clock.Set(time.UnixMilli(first))
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	c := New(Options{Clock: clock})
	javaDial(t, c, "sentinel://"+strings.TrimPrefix(hs.URL, "http://")+"?app="+app)
	end := until(first, srv)
	for i := int64(1); ; i++ {
		javaWaitPolls(t, c, "poll", []int64{i}) // applied, not only answered
		if clock.UnixMilli() >= end {
			return c, srv, clock, first
		}
		if i == 1 {
			javaTicking(t, clock, 1)
		}
		clock.Advance(source.JavaMetricEvery)
	}
}

func javaInferFromTransport(t *testing.T, dir string, lone int) {
	real := javaRealTransitions(t, dir)
	last := real[len(real)-1].at
	c, _, clock, first := javaReplayPolled(t, dir, "price-service", func(int64, *javaReplayServer) int64 { return last + 5000 })
	var inferred []javaTransition
	for _, res := range javaResources {
		d := c.Detail("price-service", res, first-60000, clock.UnixMilli())
		for _, in := range d.Instances {
			for _, tr := range in.Transitions {
				if !tr.Inferred {
					t.Errorf("%s: a transition not marked inferred: %+v", res, tr)
				}
				inferred = append(inferred, javaTransition{tr.AtMs, res, tr.From, tr.To})
			}
		}
	}
	slices.SortFunc(inferred, func(a, b javaTransition) int { return cmp.Compare(a.at, b.at) })
	t.Run("transitions", func(t *testing.T) { javaCheckMatch(t, real, inferred, 90, lone) })
	// What the detail shows against what Java's breaker was: see
	// javaCheckShown (one replay for both, which the race detector makes
	// slow).
	t.Run("closed-not-shown-while-open", func(t *testing.T) {
		javaCheckShown(t, c, "price-service", real, first-60000, clock.UnixMilli(), 0)
	})
}
