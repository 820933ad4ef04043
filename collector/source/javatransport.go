package source

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sentinel-top/sentinel-top/collector/feed"
	"github.com/sentinel-top/sentinel-top/collector/metriclog"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// Java Sentinel targets: sentinel://HOST[:PORT][?app=NAME] names the
// transport command API of a Java service (sentinel-transport-simple-http
// or -netty-http, port 8719 by default). It is read the way Sentinel's own
// dashboard reads it, without any change to the service: GET /metric every
// JavaMetricEvery and GET /getRules?type=degrade and ?type=flow every
// JavaRulesEvery, turned into wire v1 messages of instance HOST:PORT.
//
// What the API does not give is not made up. It has no breaker states: they
// are inferred from the per-second counts (metriclog.Inference) and sent as
// state messages marked inferred, for resources whose only rules are
// degrade rules (the target's status says so: TargetRemark.StatesInferred);
// no slow counts and no histogram (see package metriclog for the mapping of
// its metric lines); no app name, hence ?app= (without it the app is the
// instance, and instances of one service are not compared with each
// other). The bearer token of --token is never sent to these targets: the
// command API has no authentication, and the token belongs to the wire
// streams.
//
// Lines of one second that share a name (Java writes "|" as "_") are
// summed, and each such name is a Notice. Regex rules (Sentinel 1.8.7+)
// are listed once for each resource of the app their pattern fully
// matches, with Pattern set; rules of a service before 1.8 (by /version)
// keep their meaning (core.SemanticsJava16).
const (
	// JavaScheme is the scheme of Java Sentinel targets.
	JavaScheme = "sentinel"
	// JavaDefaultPort is the transport API's default port (csp.sentinel.api.port).
	JavaDefaultPort = "8719"
)

// Polling periods and bounds of Java targets.
const (
	// JavaMetricEvery is how often /metric is polled (the dashboard's pace).
	JavaMetricEvery = time.Second
	// JavaRulesEvery is how often the rules are polled.
	JavaRulesEvery = 5 * time.Second
	// javaBacklog is how far back the first poll of a connection to a new
	// instance reads.
	javaBacklog = 60 * time.Second
	// javaCatchUp is how far back the first poll of a reconnect may read,
	// from where the data the target's polls delivered ends, so that it
	// fills its gap from Java's metric logs (an answer holds at most
	// javaMaxLines: the rest comes with the next polls); the collector
	// drops what it has.
	javaCatchUp = 10 * time.Minute
	// javaMaxBody bounds one answer.
	javaMaxBody = 32 << 20
	// javaChunkItems is how many items of a /metric answer are held
	// before the whole seconds among them are delivered, while the rest
	// is read; javaMaxHeld is the most held at once: an answer with more
	// lines for one second than that (Java has at most 6,000 resources)
	// has the second cut there, and its lines after the cut are not read
	// as part of it.
	javaChunkItems = 4096
	javaMaxHeld    = 16384
	// javaItemBytes is what an item held while a /metric answer is read is
	// charged to the memory budget, beyond its name: the item and its
	// share of the slice it is held in.
	javaItemBytes = 256
	// javaChargeStep is how many bytes of items are charged to the budget
	// at once while an answer is read.
	javaChargeStep = 64 << 10
	// javaMetricTimeout bounds reading one /metric answer, which is parsed
	// and delivered as it is read; a read waiting for the next bytes longer
	// than twice the handshake timeout (the bound of the other commands'
	// whole exchange) ends it too.
	javaMetricTimeout = 2 * time.Minute
	// javaMaxLines is the most lines Java's /metric returns at once
	// (MetricsReader.MAX_LINES_RETURN): an answer that long may end in the
	// middle of a second.
	javaMaxLines = 100000
	// javaEndSlack is how far past the collector's clock a poll asks for,
	// so a service whose clock is ahead is not cut off.
	javaEndSlack = 60 * time.Second
	// javaGrace is how long a second may stay unwritten before it counts as
	// empty: Java writes a second's lines when its metric timer runs, about
	// a second after the second ends, later under load; a service without
	// traffic writes none.
	javaGrace = 3 * time.Second
	// javaSDK prefixes the hello's sdk of Java targets.
	javaSDK = "java-sentinel"
)

// isJavaTarget reports whether t names a Java transport API.
func isJavaTarget(t Target) bool { return strings.HasPrefix(t.URL, JavaScheme+"://") }

// parseJavaTarget checks a sentinel:// target: a host, a port (8719 when
// omitted), no path, and no query but app.
func parseJavaTarget(s string, u *url.URL) (Target, error) {
	if u.User != nil {
		return Target{}, fmt.Errorf("target %q: the Java command API takes no credentials", s)
	}
	host := u.Hostname()
	if host == "" {
		return Target{}, fmt.Errorf("target %q: no host", s)
	}
	port := u.Port()
	if port == "" {
		port = JavaDefaultPort
	}
	if p, err := strconv.Atoi(port); err != nil || p <= 0 || p > 65535 {
		return Target{}, fmt.Errorf("target %q: bad port %q", s, port)
	}
	if u.Path != "" && u.Path != "/" || u.Opaque != "" || u.Fragment != "" {
		return Target{}, fmt.Errorf("target %q: a sentinel:// target is sentinel://HOST:PORT[?app=NAME], without a path", s)
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return Target{}, fmt.Errorf("target %q: %w", s, err)
	}
	app := q.Get("app")
	for k, v := range q {
		if k != "app" || len(v) != 1 {
			return Target{}, fmt.Errorf("target %q: only ?app=NAME is understood", s)
		}
	}
	if len(app) > wire.DefaultMaxNameBytes || !utf8.ValidString(app) {
		return Target{}, fmt.Errorf("target %q: app name too long or not UTF-8", s)
	}
	out := url.URL{Scheme: JavaScheme, Host: net.JoinHostPort(host, port)}
	if _, ok := q["app"]; ok {
		if app == "" {
			return Target{}, fmt.Errorf("target %q: empty app name", s)
		}
		out.RawQuery = url.Values{"app": {app}}.Encode()
	}
	return Target{Name: s, URL: out.String()}, nil
}

// javaTarget is a parsed sentinel:// target.
type javaTarget struct {
	base     string // http://HOST:PORT
	instance string // HOST:PORT
	app      string
}

func javaTargetOf(t Target) (javaTarget, error) {
	u, err := url.Parse(t.URL)
	if err != nil {
		return javaTarget{}, err
	}
	jt := javaTarget{base: "http://" + u.Host, instance: u.Host, app: u.Query().Get("app")}
	if jt.app == "" {
		jt.app = jt.instance
	}
	return jt, nil
}

// javaPoller is one connection's worth of polling one Java target.
type javaPoller struct {
	d      *dialer
	sink   feed.BoundSink // bound to the target
	t      Target
	st     *targetState
	jt     javaTarget
	client *http.Client
	// next is the first second not fetched yet, Unix ms.
	next int64
	// accepted counts metric lines accepted, to tell a Sentinel API from
	// something else answering 200.
	accepted int64
	// written is the end of the newest second Java has written, Unix ms
	// (any line counts but the CPU and load lines, which carry the current
	// second): the data is complete up to there, unless the last answer
	// was cut short (javaMaxLines: a reconnect reading its gap back), when
	// it is complete up to next only.
	written int64
	short   bool
	// rulesVersion is the last rule set sent; breakers, flows and params
	// are the rules read, regex rules (Pattern set) not yet listed per
	// resource.
	rulesVersion string
	rulesErr     feed.TargetRemark
	breakers     []core.BreakerRule
	flows        []core.FlowRule
	params       []core.HotParamRule
	paramPath    int // the index in javaParamPaths that answered last
	// version is the service's Sentinel version ("" when /version did not
	// say).
	version string
	// seen are the resources the target reported (told to d.apps too),
	// at most javaMaxResources;
	// patterns the compiled regex rules; governable the names they were
	// last listed over.
	seen       map[string]bool
	patterns   map[string]*regexp.Regexp
	governable []string
	// inf infers breaker states from the counts; fed is the next second to
	// feed it and pending the items delivered for it.
	inf     *metriclog.Inference
	fed     int64
	pending []wire.BucketItem
	// pendingCharged is what pending is charged to the memory budget.
	pendingCharged int64
	// up: the connection is known to be a Sentinel command API's, and
	// announced (hello, rules); lost, lostFrom are the data a reconnect
	// could not read back, told when it is.
	up             bool
	lost, lostFrom int64
}

// pollJava polls a Java target until it fails or ctx ends; dialLoop
// reconnects as for a stream. Each connection starts with a hello, the
// rules, and the metrics since the data the target's polls delivered ends
// (the last javaBacklog for a new one; see javaResume).
func (d *dialer) pollJava(ctx context.Context, t Target, st *targetState) error {
	opts := d.opts
	jt, err := javaTargetOf(t)
	if err != nil {
		return err
	}
	tr := &http.Transport{Proxy: http.ProxyFromEnvironment, MaxIdleConnsPerHost: 2,
		DialContext: (&net.Dialer{Timeout: opts.HandshakeTimeout}).DialContext, ResponseHeaderTimeout: opts.HandshakeTimeout,
		MaxResponseHeaderBytes: handshakeLimit} // as for a stream's upgrade: a target's headers are bounded
	defer tr.CloseIdleConnections()
	p := &javaPoller{d: d, sink: d.sink.Bound(t.Name), t: t, st: st, jt: jt, seen: map[string]bool{}, patterns: map[string]*regexp.Regexp{},
		client: &http.Client{Transport: tr, Timeout: 2 * opts.HandshakeTimeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	defer func() { p.charge(-p.pendingCharged) }()
	now := d.clock.UnixMilli()
	p.inf, p.next, p.fed, p.lost = st.java.resume(jt.instance, now)
	p.lostFrom = p.next

	// The first answer decides whether this is a Sentinel command API;
	// the connection is announced with its first items (start).
	if err := p.pollMetrics(ctx, now); err != nil {
		return err
	}
	st.Update(func(s *feed.TargetStatus) { s.Polls++ })

	tk := d.clock.NewTicker(JavaMetricEvery)
	defer tk.Stop()
	rulesDue := d.clock.UnixMilli() + JavaRulesEvery.Milliseconds()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tk.C():
		}
		now := d.clock.UnixMilli()
		if err := p.pollMetrics(ctx, now); err != nil {
			return err
		}
		if now >= rulesDue {
			rulesDue = now + JavaRulesEvery.Milliseconds()
			p.pollRules(ctx)
		}
		st.Update(func(s *feed.TargetStatus) { s.Polls++ })
	}
}

// start announces the connection once its first answer shows a Sentinel
// command API: the target is up, the data a reconnect could not read back
// is told, then the hello and the rules.
func (p *javaPoller) start(ctx context.Context) {
	p.up = true
	if p.lost > 0 {
		p.sink.Unreceived(p.jt.instance, p.lost, p.lostFrom)
	}
	p.st.Update(func(s *feed.TargetStatus) {
		s.State, s.Since, s.Problem, s.Note, s.Instance = feed.TargetUp, p.d.clock.UnixMilli(), feed.Problem{}, feed.TargetRemark{StatesInferred: true}, p.jt.instance
		s.DownSince = 0
	})
	p.ingest(p.hello(ctx))
	p.pollRules(ctx)
}

func (p *javaPoller) metricPath(now int64) string {
	end := max(now, p.next) + javaEndSlack.Milliseconds()
	return "/metric?startTime=" + itoa(p.next) + "&endTime=" + itoa(end)
}

// get fetches one command; anything but a 200 is an error.
func (p *javaPoller) get(ctx context.Context, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.jt.base+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, javaMaxBody+1))
	if err != nil {
		return nil, err
	}
	p.st.Update(func(s *feed.TargetStatus) { s.Bytes += int64(len(body)) })
	if len(body) > javaMaxBody {
		return nil, fmt.Errorf("%s: answer over %d bytes", path, javaMaxBody)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, notSentinel(path, resp.StatusCode, body)
	}
	return body, nil
}

// notSentinel is the error of an answer other than HTTP 200, quoting the
// start of its first line.
func notSentinel(path string, status int, body []byte) error {
	first, _, _ := strings.Cut(strings.TrimSpace(string(body)), "\n")
	if len(first) > 80 {
		first = strings.ToValidUTF8(first[:80], "") + "..."
	}
	return fmt.Errorf("not a Sentinel command API: %s: HTTP %d %s %q", strings.SplitN(path, "?", 2)[0],
		status, http.StatusText(status), first)
}

// metricRead is one /metric answer being read: its lines so far, and the
// items held, not delivered yet (charged to the memory budget: held bytes,
// of which charged are charged already).
type metricRead struct {
	lines, bad    int
	firstErr      error
	rejects       []error
	items         []wire.BucketItem
	newest        int64 // the newest second held
	delivered     bool  // items of the answer were delivered
	held, charged int64
	maxName       int
}

// pollMetrics reads the target's /metric answer for the seconds up to
// now as it arrives, line by line (never the whole answer at once), and
// delivers it whole seconds at a time: what an answer holds is at most
// javaMaxHeld items, charged to the memory budget while they are held.
// Bad lines are rejected one by one; an answer of nothing but bad lines
// from a target that never gave a good one is not Sentinel's. Java answers
// at most javaMaxLines lines at once: reading stops there, and the newest
// second is asked again (it may have been cut).
func (p *javaPoller) pollMetrics(ctx context.Context, now int64) error {
	path := p.metricPath(now)
	// The client's timeout bounds the other commands' whole exchange; this
	// one's reading is parsing and delivering too: bounded by the peer's
	// stalls (until the headers, then while a read waits), and by
	// javaMetricTimeout in all.
	ctx, cancel := context.WithTimeoutCause(ctx, javaMetricTimeout, fmt.Errorf("/metric: answer not read in %v", javaMetricTimeout))
	defer cancel()
	stall := 2 * p.d.opts.HandshakeTimeout
	reading, stalled := context.WithCancelCause(ctx)
	defer stalled(nil)
	watch := time.AfterFunc(stall, func() { stalled(fmt.Errorf("/metric: nothing received for %v", stall)) })
	defer watch.Stop()
	req, err := http.NewRequestWithContext(reading, http.MethodGet, p.jt.base+path, nil)
	if err != nil {
		return err
	}
	client := *p.client
	client.Timeout = 0
	resp, err := client.Do(req)
	if err != nil {
		return cmp.Or(context.Cause(reading), err)
	}
	defer resp.Body.Close()
	r := &metricRead{maxName: cmp.Or(p.d.opts.Limits.MaxNameBytes, wire.DefaultMaxNameBytes)}
	defer func() { p.charge(-r.charged) }()
	// The stall is the peer's: the watch runs while a read waits, not
	// while what was read is parsed and delivered.
	watch.Stop()
	body := &countingReader{r: io.LimitReader(resp.Body, javaMaxBody+1),
		waiting: func(on bool) {
			if on {
				watch.Reset(stall)
			} else {
				watch.Stop()
			}
		}}
	defer func() {
		n := body.n
		p.st.Update(func(s *feed.TargetStatus) { s.Bytes += n })
	}()
	if resp.StatusCode != http.StatusOK {
		start, _ := io.ReadAll(io.LimitReader(body, 4<<10))
		return notSentinel(path, resp.StatusCode, start)
	}
	br := bufio.NewReaderSize(body, metriclog.MaxLineBytes+2)
	p.short = false
	for r.lines < javaMaxLines {
		line, long, err := readLine(br)
		if len(bytes.TrimSpace(line)) > 0 || long {
			r.lines++
			p.metricLine(ctx, r, line, long)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			if cause := context.Cause(reading); cause != nil {
				return cause
			}
			return fmt.Errorf("/metric: %w", err)
		}
	}
	if body.n > javaMaxBody {
		return fmt.Errorf("/metric: answer over %d bytes", javaMaxBody)
	}
	if r.bad > 0 && r.bad == r.lines && p.accepted == 0 {
		return fmt.Errorf("incompatible: /metric answered %d lines, none of them Sentinel metric lines (%v)", r.lines, r.firstErr)
	}
	for _, err := range r.rejects {
		p.sink.Reject(p.t.Name, fmt.Errorf("/metric: %w", err))
	}
	if r.bad > 0 {
		p.st.Update(func(s *feed.TargetStatus) { s.Rejected += int64(r.bad) })
	}
	p.accepted += int64(r.lines - r.bad)
	p.short = r.lines >= javaMaxLines
	p.flush(ctx, r, true)
	return nil
}

// metricLine reads one line of a /metric answer into r (long: it was over
// metriclog.MaxLineBytes, and only its start is given). The items held
// are delivered, whole seconds, when javaChunkItems of them are held and
// the line begins a newer second, and at javaMaxHeld in any case.
func (p *javaPoller) metricLine(ctx context.Context, r *metricRead, line []byte, long bool) {
	var l metriclog.Line
	err := fmt.Errorf("%w: line over %d bytes", wire.ErrTooLarge, metriclog.MaxLineBytes)
	if !long {
		l, err = metriclog.ParseThin(string(line))
	}
	if err == nil && len(l.Resource) > r.maxName {
		err = fmt.Errorf("%w: resource name of %d bytes exceeds %d", wire.ErrTooLarge, len(l.Resource), r.maxName)
	}
	if err != nil {
		r.bad++
		r.firstErr = cmp.Or(r.firstErr, err)
		if len(r.rejects) < 100 {
			r.rejects = append(r.rejects, err)
		}
		return
	}
	if l.Resource != metriclog.CPUUsage && l.Resource != metriclog.SystemLoad {
		p.written = max(p.written, floorDown(l.Timestamp, metriclog.BucketMs)+metriclog.BucketMs)
	}
	if metriclog.Internal(l.Resource) {
		return
	}
	it := l.Item()
	if it.Start < p.next {
		return // already delivered
	}
	if n := len(r.items); n >= javaMaxHeld || n >= javaChunkItems && it.Start > r.newest {
		p.flush(ctx, r, false)
	}
	it.Resource = strings.Clone(it.Resource) // not the line it was cut from
	r.items = append(r.items, it)
	r.newest = max(r.newest, it.Start)
	r.held += javaItemBytes + int64(len(it.Resource))
	if r.held-r.charged >= javaChargeStep {
		p.charge(r.held - r.charged)
		r.charged = r.held
	}
}

// flush delivers the items r holds, and moves next past them; the first
// items of a connection announce it (start). The last flush of an answer
// cut at javaMaxLines keeps back its newest second, unless that is all
// the answer gave: it may be incomplete, and is asked again.
func (p *javaPoller) flush(ctx context.Context, r *metricRead, last bool) {
	items := r.items
	slices.SortStableFunc(items, func(a, b wire.BucketItem) int {
		return cmp.Or(cmp.Compare(a.Start, b.Start), strings.Compare(a.Resource, b.Resource))
	})
	if last && p.short && len(items) > 0 {
		i, _ := slices.BinarySearchFunc(items, r.newest, func(it wire.BucketItem, s int64) int { return cmp.Compare(it.Start, s) })
		if i > 0 || r.delivered {
			items = items[:i]
		}
	}
	if len(items) > 0 {
		p.next = items[len(items)-1].Start + metriclog.BucketMs
	}
	items, collided := metriclog.Merge(items)
	for _, x := range collided {
		p.sink.NameCollision(p.jt.instance, x.Resource, x.Start)
	}
	for i := range items {
		if name := items[i].Resource; !p.seen[name] && len(p.seen) < javaMaxResources {
			p.seen[name] = true
			p.d.apps.add(p.jt.app, name)
		}
	}
	if !p.up {
		p.start(ctx)
	}
	if len(p.patterns) > 0 {
		p.sendRules(false) // regex rules may govern a resource just seen
	}
	if len(items) > 0 || last {
		p.deliver(items, !last)
		r.delivered = r.delivered || len(items) > 0
	}
	clear(r.items) // let the names go
	r.items, r.newest = r.items[:0], 0
	p.charge(-r.charged)
	r.held, r.charged = 0, 0
}

// charge takes n bytes from the collector's memory budget while the
// answer is read (gives back -n): held, as a frame being decoded is.
func (p *javaPoller) charge(n int64) {
	if n != 0 {
		p.d.sink.Hold(n)
	}
}

// readLine reads one line without its newline. A line longer than br's
// buffer is read to its end and dropped: long, with its start.
func readLine(br *bufio.Reader) (line []byte, long bool, err error) {
	line, err = br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		for err == bufio.ErrBufferFull {
			_, err = br.ReadSlice('\n')
		}
		return nil, true, err
	}
	return bytes.TrimSuffix(line, []byte{'\n'}), false, err
}

// countingReader counts the bytes read through it, and tells waiting
// when each read begins (true) and ends (false).
type countingReader struct {
	r       io.Reader
	n       int64
	waiting func(bool)
}

func (c *countingReader) Read(b []byte) (int, error) {
	c.waiting(true)
	n, err := c.r.Read(b)
	c.waiting(false)
	c.n += int64(n)
	return n, err
}

// deliver sends items as buckets messages, or a heartbeat when there are
// none, then feeds the inference the seconds now complete.
//
// The collector takes a buckets message's ts as the end of the instance's
// data (rates are taken up to there). A polled service's data lags: Java
// writes a second's lines when its metric timer runs, about a second after
// the second ends and later under load. So the data is complete up to the
// newest second Java has written, or, when it wrote nothing for javaGrace
// (no traffic, or a stalled timer), up to javaGrace ago; ts is the last
// millisecond of that, never past the poll time. A second not written yet
// is never read as a second without traffic. (The collector does not take
// a polled instance's ts for its clock: it stamped it.)
//
// partial: the answer is still being read, so the data is complete up to
// next only.
func (p *javaPoller) deliver(items []wire.BucketItem, partial bool) {
	now := p.d.clock.UnixMilli()
	end := max(p.written, floorDown(now-javaGrace.Milliseconds(), metriclog.BucketMs))
	if p.short || partial {
		end = min(end, p.next) // the seconds after the cut come with the next polls
	}
	ts := min(end+metriclog.BucketMs-1, now)
	for batch := items; ; {
		n := min(len(batch), wire.DefaultMaxItems)
		p.ingest(&wire.Buckets{Header: wire.Header{Ts: ts, Instance: p.jt.instance}, BucketMs: metriclog.BucketMs, Items: batch[:n:n]})
		batch = batch[n:]
		if len(batch) == 0 {
			break
		}
	}
	p.infer(items, min(end, floorDown(now, metriclog.BucketMs)+metriclog.BucketMs))
}

// infer feeds the inference every second before end, each with its items,
// and sends the transitions it decides. A second delivered after it was
// fed (written more than javaGrace late) is not fed again.
func (p *javaPoller) infer(items []wire.BucketItem, end int64) {
	p.pending = append(p.pending, items...)
	if end-p.fed > javaBacklog.Milliseconds() {
		p.fed = end - javaBacklog.Milliseconds() // a long gap: its start is gone anyway
	}
	for ; p.fed < end; p.fed += metriclog.BucketMs {
		i := 0
		for i < len(p.pending) && p.pending[i].Start < p.fed {
			i++
		}
		k := i
		for k < len(p.pending) && p.pending[k].Start == p.fed {
			k++
		}
		for _, m := range p.inf.Second(p.fed, p.pending[i:k]) {
			p.ingest(m)
		}
		p.pending = p.pending[k:]
	}
	if len(p.pending) == 0 {
		p.pending = nil // let the backing array go
	}
	held := int64(0)
	for i := range p.pending {
		held += javaItemBytes + int64(len(p.pending[i].Resource))
	}
	p.charge(held - p.pendingCharged)
	p.pendingCharged = held
}

// ingest validates and feeds one synthesized message; what the sink took
// is remembered for a reconnect (javaMemory). A hello states its sender:
// polled, without breaker states of its own.
func (p *javaPoller) ingest(m wire.Message) {
	if err := wire.Validate(m, p.d.opts.Limits); err != nil {
		p.sink.Reject(p.t.Name, err)
		p.st.Update(func(s *feed.TargetStatus) { s.Rejected++ })
		return
	}
	p.st.Update(func(s *feed.TargetStatus) { s.Messages++ })
	var ok bool
	if h, isHello := m.(*wire.Hello); isHello {
		ok = p.sink.Hello(p.t.Name, h, javaOrigin())
	} else {
		ok = p.sink.Ingest(p.t.Name, m)
	}
	if ok {
		p.st.java.took(m)
	}
}

// hello synthesizes the connection's hello: the host the service reports
// (/basicInfo) and its Sentinel version (/version), when it answers them.
func (p *javaPoller) hello(ctx context.Context) *wire.Hello {
	h := &wire.Hello{Header: wire.Header{Ts: p.d.clock.UnixMilli(), Instance: p.jt.instance},
		App: p.jt.app, SDK: javaSDK, BucketMs: metriclog.BucketMs}
	if body, err := p.get(ctx, "/basicInfo"); err == nil {
		var info struct{ Machine, IP string }
		if json.Unmarshal(body, &info) == nil {
			h.Host = cleanName(cmp.Or(info.IP, info.Machine), 255)
		}
	}
	if body, err := p.get(ctx, "/version"); err == nil {
		if v := cleanName(string(bytes.TrimSpace(body)), 64); v != "" && !strings.ContainsAny(v, " <{\t") {
			h.SDK = javaSDK + "/" + v
			p.version = v
		}
	}
	return h
}

// cleanName keeps a short, valid UTF-8 name out of what a peer said.
func cleanName(s string, n int) string {
	s = strings.ToValidUTF8(s, "")
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s)
	if len(s) > n {
		return ""
	}
	return s
}

// floorDown rounds t down to a multiple of step (step > 0).
func floorDown(t, step int64) int64 {
	m := t % step
	if m < 0 {
		m += step
	}
	return t - m
}

// itoa is strconv.Itoa for int64.
func itoa(n int64) string { return strconv.FormatInt(n, 10) }
