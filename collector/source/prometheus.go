package source

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sentinel-top/sentinel-top/collector/feed"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/internal/termtext"
)

// The Prometheus source reads, through a Prometheus server's HTTP API
// (or any engine that serves it: Thanos, Mimir, VictoriaMetrics), the
// Sentinel metrics it already holds, and writes them as wire v1 messages:
//
//   - sentinel-golang's exporter (exporter/metric, v1.0.4):
//     sentinel_go_handled_total{resource,result,block_type} and
//     sentinel_go_circuit_breaker_state_changed_total{resource,from_state,to_state},
//     with the host, app and pid labels it adds: one instance per
//     app, host and pid (APP/HOST/PID). Its app label is the default
//     unknown_go_service in v1.0.4 (read before any configuration): then
//     the scrape job's name is the app. It counts passes and blocks, never
//     completions, errors or response times.
//   - sentinel-top's own export (collector/prom.go):
//     sentinel_top_resource_{pass,block,complete,error,slow}_total{app,resource},
//     summed over a collector's instances: one instance per app and scraped
//     collector (APP@INSTANCE). Its transition counters sum the breakers
//     of many instances, which no one breaker's states can be told from:
//     they are not read, and the states are unknown.
//   - Java Sentinel's sentinel-prometheus-metric-exporter: a gauge named
//     after the app with the labels resource, classification and type
//     (passQps, blockQps, successQps, exceptionQps, rt, ...), one sample a
//     second stamped with its second: one instance per app and scraped
//     target. Its states are not exported: they stay unknown.
//
// Which of them exist is asked first (the label values of __name__ over
// the range). Counts are taken at the step: the difference of a counter's
// value between two evaluation times, summed server-side by the labels
// that name an instance (sum by), so a bucket of the step holds what the
// scrapes of that step saw; a counter that falls restarted. The first
// sample of a series that came with its instance is a baseline, not
// counted (a process newly scraped may have counted for days); one that
// appears after its instance's others began inside the range, from 0. A step shorter
// than the scrape interval leaves buckets empty and the next one double:
// the step must be at least the scrape interval. Breaker transitions come
// from state-change counters: each is marked inferred, timed within the
// step it was counted in, and ordered within it as the states chain; a
// breaker's state before its first counted transition is unknown, never
// CLOSED. Hellos name the sdk PromSDK/FAMILY, so that every reader of a
// recording takes them as polled with unknown states (OriginOf).

// PromSDK begins the sdk of the hellos the Prometheus source writes.
const PromSDK = "prometheus"

// The Prometheus source's defaults.
const (
	DefaultPromStep      = 15 * time.Second
	DefaultPromMaxSeries = 10_000
	DefaultPromMaxBytes  = 64 << 20
	DefaultPromMaxPoints = 1_000_000
	DefaultPromTimeout   = 30 * time.Second
	// promMaxStepsPerQuery keeps each query under Prometheus's 11,000
	// points a series: a longer range is read in several.
	promMaxStepsPerQuery = 10_000
	// promRediscover is how often live mode asks which families exist.
	promRediscover = 5 * time.Second
	// promBacklog is how far back live mode begins, as an agent's backlog.
	promBacklog = 60 * time.Second
)

// Errors of the Prometheus source, matched with errors.Is.
var (
	// ErrPromTooManySeries: a query returned more series than
	// PromOptions.MaxSeries; the query is refused, not cut.
	ErrPromTooManySeries = errors.New("too many series")
	// ErrPromTooLarge: an answer was larger than PromOptions.MaxBytes, or
	// the range more samples than MaxPoints.
	ErrPromTooLarge = errors.New("answer too large")
	// ErrPromUnavailable: the server could not be reached, timed out, or
	// answered with an error.
	ErrPromUnavailable = errors.New("prometheus unavailable")
	// ErrPromTimeout: the server did not answer within PromOptions.Timeout
	// (an ErrPromUnavailable too).
	ErrPromTimeout error = promTimeout{}
	// ErrPromNoMetrics: the range holds none of the metrics the source
	// reads.
	ErrPromNoMetrics = errors.New("no Sentinel metrics")
)

// promTimeout is ErrPromTimeout: said as ErrPromUnavailable, after the
// time waited ("no answer within 30s: prometheus unavailable").
type promTimeout struct{}

func (promTimeout) Error() string { return ErrPromUnavailable.Error() }
func (promTimeout) Unwrap() error { return ErrPromUnavailable }

// PromOptions configure the Prometheus source. Zero values take the
// defaults stated beside each field.
type PromOptions struct {
	// URL is the server's base URL, http:// or https://, e.g.
	// http://127.0.0.1:9090 (a path prefix is kept).
	URL string
	// Token is sent as Authorization: Bearer TOKEN ("" sends none).
	Token string
	// TLS configures https:// (nil: the system roots).
	TLS *tls.Config
	// Step is the resolution of the counts (default 15 s, at least 1 s):
	// at least the scrape interval.
	Step time.Duration
	// MaxSeries is the most series one query may return (default
	// 10,000); a query returning more fails with ErrPromTooManySeries.
	MaxSeries int
	// MaxBytes is the most bytes one answer may take (default 64 MiB); a
	// larger one fails with ErrPromTooLarge.
	MaxBytes int64
	// MaxPoints is the most samples a Range reads in all (default
	// 1,000,000): what it converts is held until it returns, a bucket item
	// (about 250 bytes) for each sample at most.
	MaxPoints int64
	// Timeout bounds each request, and is passed to the server as its
	// query timeout (default 30 s).
	Timeout time.Duration
	// Clock is the clock live mode follows (default the real one).
	Clock core.Clock
	// Limits are the names' bounds every message is validated against
	// (zero: wire's defaults).
	Limits wire.Limits
}

// PromStats is what the source asked and read.
type PromStats struct {
	Queries int64
	Bytes   int64
	Series  int64
	Points  int64
	// Rejected counts messages that failed validation (a name too long,
	// ...), Unannounced the instances past MaxSeries, not read.
	Rejected, Unannounced int64
	// TransitionsCut counts the transitions a state-change counter claimed
	// beyond what a step can hold (16, or one per 100 ms of the step, for
	// each resource and pair of states): not written.
	TransitionsCut int64
	// Families are those found, in the order read: sentinel-golang,
	// sentinel-top, java-sentinel.
	Families []string
}

// Prometheus reads Sentinel metrics from a Prometheus server.
type Prometheus struct {
	o      PromOptions
	base   *url.URL
	client *http.Client
	step   int64

	mu    sync.Mutex
	stats PromStats
	conv  promConv
}

// NewPrometheus checks the options and returns a source; it asks nothing
// yet.
func NewPrometheus(o PromOptions) (*Prometheus, error) {
	u, err := url.Parse(o.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("prometheus URL %q: want http://HOST:PORT or https://HOST:PORT", o.URL)
	}
	if u.User != nil {
		return nil, fmt.Errorf("prometheus URL: credentials in the URL would be shown and logged; use a bearer token")
	}
	if len(o.Token) > 4096 || strings.IndexFunc(o.Token, func(r rune) bool { return r <= ' ' || r > '~' }) >= 0 {
		return nil, errors.New("prometheus token: want at most 4 KiB of visible ASCII (the token is not shown)")
	}
	if o.Step == 0 {
		o.Step = DefaultPromStep
	}
	if o.Step < time.Second || o.Step%time.Second != 0 {
		return nil, fmt.Errorf("prometheus step %s: want whole seconds, at least 1s", o.Step)
	}
	if o.MaxSeries <= 0 {
		o.MaxSeries = DefaultPromMaxSeries
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultPromMaxBytes
	}
	if o.MaxPoints <= 0 {
		o.MaxPoints = DefaultPromMaxPoints
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultPromTimeout
	}
	if o.Clock == nil {
		o.Clock = core.NewRealClock()
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		TLSClientConfig:       o.TLS,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: o.Timeout,
		MaxIdleConnsPerHost:   2,
	}
	p := &Prometheus{o: o, base: u, step: o.Step.Milliseconds(),
		client: &http.Client{Transport: tr, Timeout: o.Timeout + 5*time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	p.conv.init(p.step, o.MaxSeries)
	return p, nil
}

// Name is the source as views name it: the server's URL.
func (p *Prometheus) Name() string { return "prometheus " + p.base.Redacted() }

// Step is the resolution of the counts.
func (p *Prometheus) Step() time.Duration { return p.o.Step }

// readBytes is how many bytes of answers have been read.
func (p *Prometheus) readBytes() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats.Bytes
}

// Stats is what the source asked and read so far.
func (p *Prometheus) Stats() PromStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.Families = slices.Clone(s.Families)
	return s
}

// Close lets the source's idle connections go.
func (p *Prometheus) Close() { p.client.CloseIdleConnections() }

// Range reads [from, to) and returns its messages in time order, and
// those that could not be used (each a wire error). The buckets are
// aligned on the step: the first begins at from rounded down.
func (p *Prometheus) Range(ctx context.Context, from, to time.Time) ([]wire.Message, []error, error) {
	start, end := floorTo(from.UnixMilli(), p.step), floorTo(to.UnixMilli(), p.step)
	if end <= start {
		return nil, nil, fmt.Errorf("prometheus range %s to %s: shorter than one step (%s)",
			from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339), p.o.Step)
	}
	fams, err := p.discover(ctx, start, end)
	if err != nil {
		return nil, nil, err
	}
	if fams.empty() {
		return nil, nil, fmt.Errorf("%s from %s to %s: %w (sentinel_go_*, sentinel_top_*, or Java's exporter)", p.Name(),
			from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339), ErrPromNoMetrics)
	}
	var out []wire.Message
	var rejects []error
	for ws := start; ws < end; ws += promMaxStepsPerQuery * p.step {
		we := min(ws+promMaxStepsPerQuery*p.step, end)
		msgs, rej, err := p.window(ctx, fams, ws, we)
		if err != nil {
			return nil, nil, err
		}
		out, rejects = append(out, msgs...), append(rejects, rej...)
	}
	return out, rejects, nil
}

// Check asks the server which families the last minute holds: an error
// when it cannot be reached or does not answer, so that live mode fails
// at its start rather than showing an empty fleet. A server that holds
// none of them yet is no error: its target says so while it lasts.
func (p *Prometheus) Check(ctx context.Context) error {
	now := p.o.Clock.UnixMilli()
	_, err := p.discover(ctx, now-promBacklog.Milliseconds(), now)
	return err
}

// Follow reads live until ctx ends: the last minute first, then each step
// once it is a step old (so that its scrapes have come), writing what it
// reads to sink. The families are asked again every promRediscover (or
// step), so that a kind of exporter that begins to be scraped shows. The
// server is a target of sink's (AddTargets), up while its windows are
// read, down with the problem while they fail; a window that fails is read
// again at the next step.
func (p *Prometheus) Follow(ctx context.Context, sink feed.DialSink) {
	place := p.Name()
	rec := feed.NewTargetRecord(feed.TargetStatus{Name: place, State: feed.TargetConnecting,
		Since: p.o.Clock.UnixMilli(), DownSince: p.o.Clock.UnixMilli()})
	sink.AddTargets(rec)
	next := floorTo(p.o.Clock.UnixMilli()-promBacklog.Milliseconds(), p.step)
	var fams promFamilies
	asked := int64(0)
	for {
		now := p.o.Clock.UnixMilli()
		if end := floorTo(now-p.step, p.step); end > next {
			var err error
			readBefore := p.readBytes()
			if fams.empty() || now-asked >= max(promRediscover.Milliseconds(), p.step) {
				var f promFamilies
				if f, err = p.discover(ctx, next, end); err == nil {
					fams, asked = f, now
				}
			}
			var msgs []wire.Message
			var rejects []error
			if err == nil && fams.empty() {
				err = fmt.Errorf("%w yet (sentinel_go_*, sentinel_top_*, or Java's exporter)", ErrPromNoMetrics)
				next = end // nothing to read back later
			} else if err == nil {
				// At most promMaxStepsPerQuery steps at a time.
				we := min(end, next+promMaxStepsPerQuery*p.step)
				if msgs, rejects, err = p.window(ctx, fams, next, we); err == nil {
					next = we
				}
			}
			if ctx.Err() != nil {
				return
			}
			at := p.o.Clock.UnixMilli()
			read := p.readBytes() - readBefore
			rec.Update(func(st *feed.TargetStatus) {
				st.Bytes += read // answers failed or not: read all the same
				if err != nil {
					if st.State != feed.TargetDown {
						st.State, st.Since, st.DownSince = feed.TargetDown, at, at
					}
					st.Problem = feed.Problem{Kind: feed.ProblemOther, Detail: err.Error()}
					if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrPromTimeout) {
						st.Problem.Kind = feed.ProblemTimeout
					}
					st.RetryAt = at + p.step
					return
				}
				if st.State != feed.TargetUp {
					st.State, st.Since, st.DownSince = feed.TargetUp, at, 0
				}
				st.Problem, st.Polls = feed.Problem{}, st.Polls+1
				st.Messages += int64(len(msgs))
				st.Rejected += int64(len(rejects))
				if len(msgs) > 0 {
					st.LastMessageAt = at
				}
			})
			for _, err := range rejects {
				sink.Reject(place, err)
			}
			for _, m := range msgs {
				if h, ok := m.(*wire.Hello); ok {
					sink.Hello(place, h, OriginOf(h.SDK))
					continue
				}
				sink.Ingest(place, m)
			}
		}
		// The next step is read once it is a step old.
		wait := max(time.Duration(next+2*p.step-p.o.Clock.UnixMilli())*time.Millisecond, 100*time.Millisecond)
		ch := make(chan struct{})
		t := p.o.Clock.AfterFunc(wait, func() { close(ch) })
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-ch:
		}
	}
}

// The metric names the source reads.
const (
	promGoHandled  = "sentinel_go_handled_total"
	promGoChanged  = "sentinel_go_circuit_breaker_state_changed_total"
	promTopPrefix  = "sentinel_top_resource_"
	promJavaTypes  = "passQps|blockQps|successQps|exceptionQps"
	promFamilyGo   = "sentinel-golang"
	promFamilyTop  = "sentinel-top"
	promFamilyJava = "java-sentinel"
)

// promFamilies is what discovery found.
type promFamilies struct {
	goHandled, goChanged bool
	topCounts            []string // the count kinds found: pass, block, ...
	java                 []string // the metric names of Java apps
}

func (f promFamilies) empty() bool {
	return !f.goHandled && !f.goChanged && len(f.topCounts) == 0 && len(f.java) == 0
}

// discover asks which of the metrics exist over [start, end].
func (p *Prometheus) discover(ctx context.Context, start, end int64) (promFamilies, error) {
	var f promFamilies
	names, err := p.labelNames(ctx, start, end,
		`{__name__=~"sentinel_go_handled_total|sentinel_go_circuit_breaker_state_changed_total|sentinel_top_resource_(pass|block|complete|error|slow)_total"}`)
	if err != nil {
		return f, err
	}
	for _, n := range names {
		switch {
		case n == promGoHandled:
			f.goHandled = true
		case n == promGoChanged:
			f.goChanged = true
		case strings.HasPrefix(n, promTopPrefix):
			f.topCounts = append(f.topCounts, strings.TrimSuffix(strings.TrimPrefix(n, promTopPrefix), "_total"))
		}
	}
	java, err := p.labelNames(ctx, start, end, `{type=~"`+promJavaTypes+`",resource!="",classification!=""}`)
	if err != nil {
		return f, err
	}
	for _, n := range java {
		if !strings.HasPrefix(n, "sentinel_") && validMetricName(n) && len(f.java) < 1000 {
			f.java = append(f.java, n)
		}
	}
	p.mu.Lock()
	p.stats.Families = p.stats.Families[:0]
	if f.goHandled || f.goChanged {
		p.stats.Families = append(p.stats.Families, promFamilyGo)
	}
	if len(f.topCounts) > 0 {
		p.stats.Families = append(p.stats.Families, promFamilyTop)
	}
	if len(f.java) > 0 {
		p.stats.Families = append(p.stats.Families, promFamilyJava)
	}
	p.mu.Unlock()
	return f, nil
}

// validMetricName: a name that may go into a query as it is.
func validMetricName(n string) bool {
	for i, r := range n {
		if !(r == '_' || r == ':' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return n != ""
}

// labelNames asks the values of __name__ of the series matching match in
// [start, end].
func (p *Prometheus) labelNames(ctx context.Context, start, end int64, match string) ([]string, error) {
	q := url.Values{"match[]": {match}, "start": {promTime(start)}, "end": {promTime(end)}}
	var names []string
	err := p.get(ctx, "/api/v1/label/__name__/values", q, func(dec *json.Decoder) error {
		if err := expectDelim(dec, '['); err != nil {
			return err
		}
		for dec.More() {
			var s string
			if err := dec.Decode(&s); err != nil {
				return err
			}
			if len(names) >= p.o.MaxSeries {
				return fmt.Errorf("more than %d metric names: %w", p.o.MaxSeries, ErrPromTooManySeries)
			}
			names = append(names, s)
		}
		return expectDelim(dec, ']')
	})
	return names, err
}

// promTime is a Unix ms time as the API takes it.
func promTime(ms int64) string { return strconv.FormatFloat(float64(ms)/1000, 'f', 3, 64) }

// promSeries is one series of a matrix answer.
type promSeries struct {
	Metric map[string]string `json:"metric"`
	Values [][2]any          `json:"values"`
}

// queryRange runs expr over [start, end] at the step and hands each series
// to each, refusing more than MaxSeries.
func (p *Prometheus) queryRange(ctx context.Context, expr string, start, end int64, each func(*promSeries) error) error {
	q := url.Values{"query": {expr}, "start": {promTime(start)}, "end": {promTime(end)},
		"step": {strconv.FormatInt(p.step/1000, 10)}, "timeout": {p.o.Timeout.String()}}
	return p.get(ctx, "/api/v1/query_range", q, func(dec *json.Decoder) error { return p.matrix(dec, expr, each) })
}

// matrix reads a matrix answer's data, handing each series to each,
// refusing more than MaxSeries and, over the source's life, MaxPoints.
func (p *Prometheus) matrix(dec *json.Decoder, expr string, each func(*promSeries) error) error {
	if err := expectKey(dec, "result"); err != nil {
		return err
	}
	if err := expectDelim(dec, '['); err != nil {
		return err
	}
	n := 0
	for dec.More() {
		if n++; n > p.o.MaxSeries {
			return fmt.Errorf("%q returned more than %d series (raise --prometheus-max-series, or narrow the range): %w",
				expr, p.o.MaxSeries, ErrPromTooManySeries)
		}
		var s promSeries
		if err := dec.Decode(&s); err != nil {
			return err
		}
		p.mu.Lock()
		p.stats.Series++
		p.stats.Points += int64(len(s.Values))
		over := p.stats.Points > p.o.MaxPoints
		p.mu.Unlock()
		if over {
			return fmt.Errorf("more than %d samples in all (narrow the range or raise the step): %w", p.o.MaxPoints, ErrPromTooLarge)
		}
		if err := each(&s); err != nil {
			return err
		}
	}
	return nil
}

// get asks path with q and decodes the answer's data with data: an
// answer is read through MaxBytes, counted.
func (p *Prometheus) get(ctx context.Context, path string, q url.Values, data func(*json.Decoder) error) error {
	ctx, cancel := context.WithTimeout(ctx, p.o.Timeout)
	defer cancel()
	u := *p.base
	u.Path += path
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return fmt.Errorf("%s: %w", p.Name(), err)
	}
	if p.o.Token != "" {
		req.Header.Set("Authorization", "Bearer "+p.o.Token)
	}
	p.mu.Lock()
	p.stats.Queries++
	p.mu.Unlock()
	resp, err := p.client.Do(req)
	if err != nil {
		var ne net.Error
		if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
			return fmt.Errorf("%s%s: no answer within %s: %w", p.Name(), path, p.o.Timeout, ErrPromTimeout)
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL, with its long query, is said once, without it
		}
		return fmt.Errorf("%s%s: %w: %w", p.Name(), path, ErrPromUnavailable, err)
	}
	defer resp.Body.Close()
	body := &countingReader{r: io.LimitReader(resp.Body, p.o.MaxBytes+1), waiting: func(bool) {}}
	defer func() {
		p.mu.Lock()
		p.stats.Bytes += body.n
		p.mu.Unlock()
	}()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusBadRequest && resp.StatusCode != http.StatusUnprocessableEntity {
		msg, _ := io.ReadAll(io.LimitReader(body, 512))
		return fmt.Errorf("%s%s: %w: HTTP %d %s", p.Name(), path, ErrPromUnavailable, resp.StatusCode, firstLine(string(msg)))
	}
	dec := json.NewDecoder(body)
	dec.UseNumber()
	err = decodeAnswer(dec, data)
	if body.n > p.o.MaxBytes {
		return fmt.Errorf("%s%s: an answer of more than %d bytes (raise --prometheus-max-bytes, or narrow the range): %w",
			p.Name(), path, p.o.MaxBytes, ErrPromTooLarge)
	}
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			return fmt.Errorf("%s%s: no answer within %s: %w", p.Name(), path, p.o.Timeout, ErrPromTimeout)
		}
		return fmt.Errorf("%s%s: %w", p.Name(), path, err)
	}
	return nil
}

// decodeAnswer reads {"status":..., "data":..., "error":...}, handing data
// to data when it comes; an error status is ErrPromUnavailable with the
// server's words.
func decodeAnswer(dec *json.Decoder, data func(*json.Decoder) error) error {
	if err := expectDelim(dec, '{'); err != nil {
		return err
	}
	var status, errType, errText string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return err
		}
		switch k {
		case "status":
			err = dec.Decode(&status)
		case "errorType":
			err = dec.Decode(&errType)
		case "error":
			err = dec.Decode(&errText)
		case "data":
			if status == "error" {
				var skip json.RawMessage
				err = dec.Decode(&skip)
			} else {
				err = data(dec)
			}
		default:
			var skip json.RawMessage
			err = dec.Decode(&skip)
		}
		if err != nil {
			return err
		}
	}
	if status != "success" {
		return fmt.Errorf("%w: %s %s", ErrPromUnavailable, errType, firstLine(errText))
	}
	return nil
}

// expectDelim reads one delimiter token.
func expectDelim(dec *json.Decoder, d json.Delim) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if t != d {
		return fmt.Errorf("unexpected %v in the answer, want %v: %w", t, d, wire.ErrMalformed)
	}
	return nil
}

// expectKey reads an object's opening and skips its members up to key.
func expectKey(dec *json.Decoder, key string) error {
	if err := expectDelim(dec, '{'); err != nil {
		return err
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return err
		}
		if k == key {
			return nil
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return err
		}
	}
	return fmt.Errorf("no %q in the answer: %w", key, wire.ErrMalformed)
}

// firstLine is the first line of what the server said, at most 200
// runes, safe for a terminal (the server's words reach stderr).
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return termtext.Sanitize(s, 200)
}

// window reads the buckets of [start, end) (step multiples) with every
// family found and returns its messages in time order, and what could not
// be used. Nothing of a window that fails is kept.
func (p *Prometheus) window(ctx context.Context, f promFamilies, start, end int64) ([]wire.Message, []error, error) {
	w := p.conv.begin(start, end)
	if err := p.readWindow(ctx, f, w); err != nil {
		return nil, nil, err
	}
	w.settle()
	msgs, rejects, unannounced := p.conv.finish(w, p.o.Limits)
	p.mu.Lock()
	p.stats.TransitionsCut, p.conv.cut = p.stats.TransitionsCut+p.conv.cut, 0
	p.stats.Unannounced += unannounced
	p.stats.Rejected += int64(len(rejects))
	p.mu.Unlock()
	return msgs, rejects, nil
}

func (p *Prometheus) readWindow(ctx context.Context, f promFamilies, w *promWindow) error {
	// A counter's value at start is the baseline of the window's first
	// bucket; each later sample ends a bucket.
	from, start, end := w.start, w.start, w.end
	if f.goHandled {
		// max by the series' own labels first: a process scraped by two
		// jobs is counted once.
		expr := `sum by (job, app, host, pid, resource, result) (max by (job, app, host, pid, resource, result, block_type) (` + promGoHandled + `))`
		if err := p.queryRange(ctx, expr, from, end, func(s *promSeries) error {
			id := goInstance(s.Metric)
			switch s.Metric["result"] {
			case "pass":
				w.counter(id, s, fieldPass)
			case "block":
				w.counter(id, s, fieldBlock)
			}
			return nil
		}); err != nil {
			return err
		}
	}
	if f.goChanged {
		expr := `sum by (job, app, host, pid, resource, from_state, to_state) (max by (job, app, host, pid, resource, from_state, to_state) (` + promGoChanged + `))`
		if err := p.queryRange(ctx, expr, from, end, func(s *promSeries) error {
			w.transitions(goInstance(s.Metric), s, s.Metric["from_state"], s.Metric["to_state"])
			return nil
		}); err != nil {
			return err
		}
	}
	if len(f.topCounts) > 0 {
		expr := `sum by (instance, app, resource, count) (label_replace({__name__=~"sentinel_top_resource_(pass|block|complete|error|slow)_total"}, "count", "$1", "__name__", "sentinel_top_resource_(.*)_total"))`
		if err := p.queryRange(ctx, expr, from, end, func(s *promSeries) error {
			fl, ok := map[string]itemField{"pass": fieldPass, "block": fieldBlock, "complete": fieldComplete,
				"error": fieldError, "slow": fieldSlow}[s.Metric["count"]]
			if ok {
				w.counter(topInstance(s.Metric), s, fl)
			}
			return nil
		}); err != nil {
			return err
		}
	}
	for _, name := range f.java {
		// A range of a step less a millisecond: Prometheus before 3.0
		// includes both ends of a range, and a sample on a step's boundary
		// would count in two steps.
		expr := fmt.Sprintf(`sum by (instance, resource, type) (sum_over_time(%s{type=~"%s",resource!=""}[%dms]))`,
			name, promJavaTypes, p.step-1)
		if err := p.queryRange(ctx, expr, start, end, func(s *promSeries) error {
			fl, ok := map[string]itemField{"passQps": fieldPass, "blockQps": fieldBlock, "successQps": fieldComplete,
				"exceptionQps": fieldError}[s.Metric["type"]]
			if ok {
				w.gauge(promInstance{name: name + "@" + s.Metric["instance"], app: name, family: promFamilyJava}, s, fl)
			}
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}

// promInstance is what names the instance a series belongs to.
type promInstance struct {
	name, app, host, family string
	pid                     int64
}

// goUnknownApp is the app label sentinel-golang v1.0.4's exporter gives
// every process: it reads the app name when its package is initialised,
// before any configuration.
const goUnknownApp = "unknown_go_service"

// goInstance names a sentinel-golang process: APP/HOST/PID, its app the
// scrape job's name when the exporter's app label is the default one.
func goInstance(m map[string]string) promInstance {
	pid, _ := strconv.ParseInt(m["pid"], 10, 64)
	app := m["app"]
	if (app == "" || app == goUnknownApp) && m["job"] != "" {
		app = m["job"]
	}
	return promInstance{name: app + "/" + m["host"] + "/" + m["pid"], app: app, host: m["host"],
		pid: max(pid, 0), family: promFamilyGo}
}

func topInstance(m map[string]string) promInstance {
	return promInstance{name: m["app"] + "@" + m["instance"], app: m["app"], family: promFamilyTop}
}

// itemField is the bucket item count a series feeds.
type itemField uint8

const (
	fieldPass itemField = iota
	fieldBlock
	fieldComplete
	fieldError
	fieldSlow
)

// promConv turns answers into messages: what it keeps from one window to
// the next is each counter's last value and time, each breaker's last
// inferred state, and the instances already announced.
type promConv struct {
	step      int64
	maxSeries int
	last      map[string]promLast
	state     map[string]core.State // instance \x00 resource
	announced map[string]bool
	// cut counts the transitions a counter claimed past a step's bound.
	cut int64
}

type promLast struct {
	v  float64
	at int64
}

func (c *promConv) init(step int64, maxSeries int) {
	c.step, c.maxSeries = step, maxSeries
	c.last, c.state, c.announced = map[string]promLast{}, map[string]core.State{}, map[string]bool{}
}

// promWindow is one window's data being gathered.
type promWindow struct {
	c          *promConv
	start, end int64
	insts      map[string]*promInstData
	last       map[string]promLast
	// earliest is each instance's earliest sample in the window, of any
	// series; firsts are the series first seen inside the window, their
	// first value held until every series is read (see settle).
	earliest map[string]int64
	firsts   []promFirst
}

// promFirst is a series' first sample, inside the window.
type promFirst struct {
	inst  string
	t     int64
	count func()
}

type promInstData struct {
	id    promInstance
	first int64
	// items by bucket start, then resource.
	items map[int64]map[string]*wire.BucketItem
	// present: bucket starts at which some series of the instance had a
	// value.
	present map[int64]bool
	// counted transitions by bucket start, resource, from>to.
	trans map[int64]map[string]map[[2]core.State]int64
}

func (c *promConv) begin(start, end int64) *promWindow {
	return &promWindow{c: c, start: start, end: end, insts: map[string]*promInstData{}, last: map[string]promLast{},
		earliest: map[string]int64{}}
}

func (w *promWindow) inst(id promInstance) *promInstData {
	d := w.insts[id.name]
	if d == nil {
		d = &promInstData{id: id, first: math.MaxInt64, items: map[int64]map[string]*wire.BucketItem{},
			present: map[int64]bool{}, trans: map[int64]map[string]map[[2]core.State]int64{}}
		w.insts[id.name] = d
	}
	return d
}

// points are a series' samples as (ms, value), skipping any that does not
// parse.
func points(s *promSeries) (ts []int64, vs []float64) {
	for _, v := range s.Values {
		t, ok1 := v[0].(json.Number)
		x, ok2 := v[1].(string)
		if !ok1 || !ok2 {
			continue
		}
		sec, err1 := t.Float64()
		f, err2 := strconv.ParseFloat(x, 64)
		if err1 != nil || err2 != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || sec < 0 || sec > wire.MaxTimeMs/1000 {
			continue
		}
		ts, vs = append(ts, int64(math.Round(sec*1000))), append(vs, f)
	}
	return ts, vs
}

// deltas walks a counter's samples and calls each with the bucket start
// and the count of the step ending at each sample: the difference from
// the value before (the last seen, in an earlier window too), or the value
// itself after a fall (a restart). The first sample of a series is its
// baseline, counted as 0: a long-running process newly seen has counted
// its whole life before it. A sample at the window's start only sets the
// value before. The values
// are kept with the window, and become the converter's when it finishes.
func (w *promWindow) deltas(inst, key string, s *promSeries, each func(bucket int64, n int64)) {
	ts, vs := points(s)
	prev, had := w.last[key]
	if !had {
		prev, had = w.c.last[key]
	}
	for i, t := range ts {
		v := vs[i]
		if e, ok := w.earliest[inst]; !ok || t < e {
			w.earliest[inst] = t
		}
		if t <= w.start {
			if !had || prev.at < t {
				prev, had = promLast{v, t}, true
			}
			continue
		}
		if t > w.end || had && prev.at >= t {
			continue
		}
		if !had {
			// A series first seen here: its value is what the process
			// counted before (Prometheus cannot tell whether it started
			// inside the range), the baseline, not one step's increase;
			// unless its instance was seen before it (settle).
			prev, had = promLast{v, t}, true
			each(t-w.c.step, 0)
			if n := int64(math.Round(v)); n > 0 {
				bucket := t - w.c.step
				w.firsts = append(w.firsts, promFirst{inst: inst, t: t, count: func() { each(bucket, n) }})
			}
			continue
		}
		n := v
		if v >= prev.v {
			n = v - prev.v
		}
		prev = promLast{v, t}
		each(t-w.c.step, int64(math.Round(n)))
	}
	if had {
		w.last[key] = prev
	}
}

// settle counts the first value of each series first seen inside the
// window whose instance was seen before it (in an earlier window, or an
// earlier sample of another series): such a series demonstrably began
// inside the range, from 0 (an exporter shows a counter from its first
// increment: a resource's first call, a breaker's first change). A series
// that came with its instance is a baseline.
func (w *promWindow) settle() {
	for _, f := range w.firsts {
		if w.c.announced[f.inst] || w.earliest[f.inst] < f.t {
			f.count()
		}
	}
	w.firsts = nil
}

func seriesKey(s *promSeries) string {
	keys := make([]string, 0, len(s.Metric))
	for k := range s.Metric {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(s.Metric[k])
		b.WriteByte(0)
	}
	return b.String()
}

// counter takes a counter series of id into field.
func (w *promWindow) counter(id promInstance, s *promSeries, field itemField) {
	d := w.inst(id)
	res := s.Metric["resource"]
	w.deltas(id.name, seriesKey(s), s, func(bucket, n int64) {
		d.seen(bucket)
		if n > 0 {
			d.add(bucket, res, field, n)
		}
	})
}

// gauge takes a series whose samples are each a step's count already.
func (w *promWindow) gauge(id promInstance, s *promSeries, field itemField) {
	d := w.inst(id)
	res := s.Metric["resource"]
	ts, vs := points(s)
	for i, t := range ts {
		if t <= w.start || t > w.end {
			continue
		}
		d.seen(t - w.c.step)
		if n := int64(math.Round(vs[i])); n > 0 {
			d.add(t-w.c.step, res, field, n)
		}
	}
}

// transitions takes a state-change counter of id, from and to as the
// exporter names them.
func (w *promWindow) transitions(id promInstance, s *promSeries, from, to string) {
	f, ok1 := promState(from)
	t, ok2 := promState(to)
	if !ok1 || !ok2 || f == t {
		return
	}
	d := w.inst(id)
	res := s.Metric["resource"]
	w.deltas(id.name, seriesKey(s), s, func(bucket, n int64) {
		d.seen(bucket)
		if n <= 0 {
			return
		}
		byRes := d.trans[bucket]
		if byRes == nil {
			byRes = map[string]map[[2]core.State]int64{}
			d.trans[bucket] = byRes
		}
		if byRes[res] == nil {
			byRes[res] = map[[2]core.State]int64{}
		}
		// A breaker changes state a few times a step; a counter that
		// claims more is cut, and counted.
		limit := max(16, w.c.step/100)
		if n > limit {
			w.c.cut += n - limit
			n = limit
		}
		byRes[res][[2]core.State{f, t}] += n
	})
}

// promState reads a state as sentinel-golang ("Closed", "HalfOpen") or
// sentinel-top ("CLOSED", "HALF_OPEN") names it.
func promState(s string) (core.State, bool) {
	switch strings.ToUpper(strings.ReplaceAll(s, "_", "")) {
	case "CLOSED":
		return core.Closed, true
	case "OPEN":
		return core.Open, true
	case "HALFOPEN":
		return core.HalfOpen, true
	}
	return 0, false
}

func (d *promInstData) seen(bucket int64) {
	d.present[bucket] = true
	d.first = min(d.first, bucket)
}

func (d *promInstData) add(bucket int64, res string, field itemField, n int64) {
	byRes := d.items[bucket]
	if byRes == nil {
		byRes = map[string]*wire.BucketItem{}
		d.items[bucket] = byRes
	}
	it := byRes[res]
	if it == nil {
		it = &wire.BucketItem{Resource: res, Start: bucket}
		byRes[res] = it
	}
	switch field {
	case fieldPass:
		it.Pass += n
	case fieldBlock:
		it.Block += n
	case fieldComplete:
		it.Complete += n
	case fieldError:
		it.Error += n
	case fieldSlow:
		it.Slow += n
	}
}

// promKeepLast is how long a counter's last value is kept once its series
// is no longer seen: a series back within it continues from it.
const promKeepLast = int64(time.Hour / time.Millisecond)

// finish orders the window's messages: by bucket, each instance's hello
// (the first time), its transitions, then its buckets message; each is
// validated against lim, those that fail returned apart. It counts the
// instances not announced past maxSeries.
func (c *promConv) finish(w *promWindow, lim wire.Limits) (out []wire.Message, rejects []error, unannounced int64) {
	for k, v := range w.last {
		c.last[k] = v
	}
	for k, v := range c.last {
		if v.at < w.end-promKeepLast {
			delete(c.last, k)
		}
	}
	names := make([]string, 0, len(w.insts))
	for n, d := range w.insts {
		if d.first != math.MaxInt64 {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	valid := func(m wire.Message) bool {
		if err := wire.Validate(m, lim); err != nil {
			rejects = append(rejects, err)
			return false
		}
		return true
	}
	refused := map[string]bool{}
	for b := w.start; b < w.end; b += c.step {
		for _, n := range names {
			d := w.insts[n]
			if !d.present[b] || refused[n] {
				continue
			}
			if !c.announced[n] {
				h := &wire.Hello{Header: wire.Header{Ts: b, Instance: n}, App: d.id.app,
					Host: d.id.host, Pid: d.id.pid, SDK: PromSDK + "/" + d.id.family, BucketMs: c.step}
				if len(c.announced) >= c.maxSeries || !valid(h) {
					// bounded as the series are, and a name the wire
					// refuses refuses its instance
					refused[n] = true
					unannounced += b2i(len(c.announced) >= c.maxSeries)
					continue
				}
				c.announced[n] = true
				out = append(out, h)
			}
			for _, m := range c.chain(d, n, b) {
				if valid(m) {
					out = append(out, m)
				}
			}
			m := &wire.Buckets{Header: wire.Header{Ts: b + c.step, Instance: n}, BucketMs: c.step}
			for _, it := range d.items[b] {
				// Errors and slow calls are at most the completions, as
				// the wire wants: a family without completions has none.
				it.Error, it.Slow = min(it.Error, it.Complete), min(it.Slow, it.Complete)
				one := &wire.Buckets{Header: m.Header, BucketMs: c.step, Items: []wire.BucketItem{*it}}
				if valid(one) {
					m.Items = append(m.Items, *it)
				}
			}
			slices.SortFunc(m.Items, func(a, b wire.BucketItem) int { return strings.Compare(a.Resource, b.Resource) })
			out = append(out, m)
		}
	}
	return out, rejects, unannounced
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// chain orders the transitions counted in one step of an instance: per
// resource, each from the state the one before left, when one does; the
// times are spread evenly inside the step (all that is known is the step).
func (c *promConv) chain(d *promInstData, name string, b int64) []wire.Message {
	byRes := d.trans[b]
	if len(byRes) == 0 {
		return nil
	}
	resources := make([]string, 0, len(byRes))
	for r := range byRes {
		resources = append(resources, r)
	}
	slices.Sort(resources)
	var out []wire.Message
	for _, r := range resources {
		counts := byRes[r]
		total := int64(0)
		for _, n := range counts {
			total += n
		}
		key := name + "\x00" + r
		cur, known := c.state[key]
		for i := int64(1); i <= total; i++ {
			pick, found := [2]core.State{}, false
			// From the state the last one left; without one, from a
			// state no other counted transition leads to.
			for _, from := range []core.State{cur, core.Closed, core.Open, core.HalfOpen} {
				if from == cur && !known {
					continue
				}
				for _, to := range []core.State{core.Open, core.HalfOpen, core.Closed} {
					if counts[[2]core.State{from, to}] > 0 && (known || !leadsTo(counts, from)) {
						pick, found = [2]core.State{from, to}, true
						break
					}
				}
				if found {
					break
				}
			}
			if !found {
				for k, n := range counts { // a cycle: any one
					if n > 0 && (!found || k[0] < pick[0] || k[0] == pick[0] && k[1] < pick[1]) {
						pick, found = k, true
					}
				}
			}
			if !found {
				break
			}
			counts[pick]--
			out = append(out, &wire.State{Header: wire.Header{Ts: b + i*c.step/(total+1), Instance: name}, Resource: r,
				From: pick[0], To: pick[1], Inferred: true})
			cur, known = pick[1], true
		}
		if known && (len(c.state) < 4*c.maxSeries || c.state[key] != cur) {
			c.state[key] = cur
		}
	}
	return out
}

// leadsTo reports whether a counted transition leads to s.
func leadsTo(counts map[[2]core.State]int64, s core.State) bool {
	for k, n := range counts {
		if n > 0 && k[1] == s {
			return true
		}
	}
	return false
}

// floorTo rounds t down to a multiple of step.
func floorTo(t, step int64) int64 {
	q := t / step
	if t%step != 0 && t < 0 {
		q--
	}
	return q * step
}
