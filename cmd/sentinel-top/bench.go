package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sentinel-top/sentinel-top/agent"
	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/core"
)

const benchUsage = `Usage: sentinel-top bench [--agents N] [--resources R] [--rate CALLS] [--duration D]

Measures the collector at fleet scale on this machine. N agents, each with R
resources called CALLS times a second, serve their streams on loopback; an
in-process collector dials every one, aggregates, runs triage and publishes
4 snapshots a second, as the dashboard's does. Prints the ingest rate, the
CPU and memory it took, the time from a breaker transition at an agent to
the first snapshot showing it (p50, p99), and checks that every call was
counted.

The agents and their traffic run in this process too, so the CPU figure
includes them; a second phase runs them without the collector (--baseline)
and the difference is the collector's share. Items are counted in the
websocket frames the agents write to the collector's connections.

Exits 3 when the collector did not count every call the agents admitted,
naming the instances and resources that came up short.

Examples:
  sentinel-top bench
  sentinel-top bench --agents 1000 --resources 20 --duration 30s

Flags:
`

// benchConfig is what to run.
type benchConfig struct {
	agents, resources int
	rate              float64 // calls a second per resource
	duration          time.Duration
	baseline          bool
	cpuProfile        string // where to write a CPU profile of the measured window
}

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := newPlainCommand("sentinel-top bench", benchUsage, stderr)
	fs := cmd.fs
	var cfg benchConfig
	fs.IntVar(&cfg.agents, "agents", 100, "agents (targets) on loopback")
	fs.IntVar(&cfg.resources, "resources", 20, "resources per agent")
	fs.Float64Var(&cfg.rate, "rate", 20, "calls a second per resource (errors: one in ten)")
	fs.DurationVar(&cfg.duration, "duration", 20*time.Second, "how long to measure")
	fs.BoolVar(&cfg.baseline, "baseline", true, "also measure the agents and their traffic without a collector")
	fs.StringVar(&cfg.cpuProfile, "cpuprofile", "", "write a CPU profile (pprof) of the measured window, with the collector, to FILE")
	if code, ok := cmd.parse(args, stdout, stderr); !ok {
		return code
	}
	var err error
	switch {
	case cfg.agents < 1 || cfg.agents > collector.MaxTargets:
		err = fmt.Errorf("--agents %d: want 1 to %d", cfg.agents, collector.MaxTargets)
	case cfg.resources < 1 || cfg.resources > 1000:
		err = fmt.Errorf("--resources %d: want 1 to 1000", cfg.resources)
	case cfg.rate <= 0 || cfg.rate > 10000:
		err = fmt.Errorf("--rate %v: want (0, 10000] calls a second", cfg.rate)
	case cfg.duration < time.Second:
		err = fmt.Errorf("--duration %v: want at least 1s", cfg.duration)
	}
	if err != nil {
		fmt.Fprintln(stderr, "sentinel-top bench:", err)
		return exitUsage
	}
	if err := bench(ctx, cfg, stdout); err != nil {
		fmt.Fprintln(stderr, "sentinel-top bench:", err)
		return exitRuntime
	}
	return exitOK
}

// benchFleet is the agents and their traffic.
type benchFleet struct {
	agents    []*agent.Agent
	served    []chan error
	targets   []collector.Target
	resources []string
	// made counts the calls each agent admitted, by resource: made[i][j]
	// is written only by the traffic goroutine that owns agent i, and read
	// once the traffic has stopped.
	made    [][]int64
	refused atomic.Int64 // calls an Entry turned away (the latency breakers, when open)
	wire    wireCount    // what the agents wrote to their stream connections
	// The latency breakers (benchlatency.go): trippers are the agents the
	// driver trips, tripped[i] the calls it made on agent i (written by
	// the driver only).
	lat      *latency
	trippers []int
	tripped  []int64
}

// calls is every call the agents admitted.
func (f *benchFleet) calls() int64 {
	var n int64
	for i, m := range f.made {
		for j := range m {
			n += f.madeOn(i, j)
		}
	}
	return n
}

// madeOn is the calls agent i admitted for resource j.
func (f *benchFleet) madeOn(i, j int) int64 {
	if j == 0 {
		return f.made[i][j] + f.tripped[i]
	}
	return f.made[i][j]
}

func startBenchFleet(n, resources int) (*benchFleet, error) {
	f := &benchFleet{lat: newLatency(), tripped: make([]int64, n)}
	for r := 0; r < resources; r++ {
		f.resources = append(f.resources, fmt.Sprintf("GET:http://svc-%d/api/v1/resource/%d", r%7, r))
	}
	for i := 0; i < n; i++ {
		opts := agent.Options{App: fmt.Sprintf("bench-%d", i%10), Instance: fmt.Sprintf("bench-%04d", i)}
		if opts.App == latencyApp {
			instance := opts.Instance
			opts.OnTransition = func(t core.Transition) {
				if t.Resource == f.resources[0] {
					f.lat.transition(instance, t)
				}
			}
		}
		a, err := agent.New(opts)
		if err != nil {
			f.close()
			return nil, err
		}
		if opts.App == latencyApp {
			if err := a.LoadRules([]core.BreakerRule{latencyRule(f.resources[0])}, nil); err != nil {
				a.Close()
				f.close()
				return nil, err
			}
			if len(f.trippers) < latencyTrippers {
				f.trippers = append(f.trippers, i)
			}
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			a.Close()
			f.close()
			return nil, fmt.Errorf("listening for agent %d: %w", i, err)
		}
		done := make(chan error, 1)
		go func() { done <- a.Serve(countingListener{ln, &f.wire}) }()
		f.agents, f.served = append(f.agents, a), append(f.served, done)
		f.made = append(f.made, make([]int64, resources))
		addr := ln.Addr().String()
		f.targets = append(f.targets, collector.Target{Name: addr, URL: "ws://" + addr + agent.StreamPath})
	}
	return f, nil
}

func (f *benchFleet) close() {
	for i, a := range f.agents {
		a.Close()
		<-f.served[i]
	}
	f.agents, f.served = nil, nil
}

// traffic calls every resource of every agent rate times a second until
// ctx ends, spread over one goroutine per CPU.
func (f *benchFleet) traffic(ctx context.Context, rate float64) {
	workers := min(runtime.GOMAXPROCS(0), len(f.agents))
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lo, hi := w*len(f.agents)/workers, (w+1)*len(f.agents)/workers
			tick := time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
			start, done := time.Now(), int64(0)
			for {
				select {
				case <-ctx.Done():
					return
				case now := <-tick.C:
					due := int64(rate*now.Sub(start).Seconds()) - done
					for k := int64(0); k < due; k++ {
						for i := lo; i < hi; i++ {
							a, made := f.agents[i], f.made[i]
							for j, r := range f.resources {
								e, err := a.Entry(r)
								if err != nil {
									f.refused.Add(1)
									continue
								}
								made[j]++
								var cause error
								if (done+k)%10 == 0 {
									cause = errBench
								}
								e.Exit(cause)
							}
						}
					}
					done += due
				}
			}
		}()
	}
	wg.Wait()
}

var errBench = errors.New("bench: a failed call")

// wireCount counts what the agents write to their stream connections, read
// from the websocket frames on the agents' side: every data message, the
// buckets messages among them, and the items of those.
type wireCount struct {
	messages, buckets, items atomic.Int64
}

func (w *wireCount) load() (messages, buckets, items int64) {
	return w.messages.Load(), w.buckets.Load(), w.items.Load()
}

// countingListener hands out connections whose writes are counted.
type countingListener struct {
	net.Listener
	count *wireCount
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, scan: frameScanner{count: l.count}}, nil
}

// countingConn scans what is written through it. The websocket library
// writes from one goroutine at a time (the upgrade response, then frames
// under its write lock). Its writes reach the socket unchanged, one
// write(2) each; only a message over the 32 KB write buffer, which the
// library would hand to writev, goes out as two writes.
type countingConn struct {
	net.Conn
	scan frameScanner
}

func (c *countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.scan.feed(p[:n])
	return n, err
}

// bucketsPrefix opens every buckets message (wire.AppendBuckets); each of
// its items opens with itemStart. Those bytes cannot occur inside a JSON
// string, where a quote is always escaped, so counting them counts items.
const (
	bucketsPrefix = `{"v":1,"kind":"buckets"`
	itemStart     = `{"resource":`
)

var itemStartBytes = []byte(itemStart)

// frameScanner follows the server side of a websocket connection as it is
// written, in pieces of any size: the HTTP upgrade response, then frames
// (RFC 6455 5.2), counting complete data messages into count.
type frameScanner struct {
	count    *wireCount
	httpDone int // bytes of "\r\n\r\n" matched; 4 once the response is over
	// The frame being read.
	hdr     [14]byte
	hdrLen  int
	payload bool   // the header is complete
	left    uint64 // payload bytes still to come
	control bool
	fin     bool
	// The data message being read.
	pos     int  // payload bytes seen
	buckets bool // its first bytes are bucketsPrefix, so far
	items   int64
	tail    [len(itemStart) - 1]byte // its last bytes, for an itemStart split between writes
	tailLen int
}

func (s *frameScanner) feed(p []byte) {
	for s.httpDone < 4 && len(p) > 0 {
		switch {
		case p[0] == "\r\n\r\n"[s.httpDone]:
			s.httpDone++
		case p[0] == '\r':
			s.httpDone = 1
		default:
			s.httpDone = 0
		}
		p = p[1:]
	}
	for len(p) > 0 {
		if !s.payload {
			s.hdr[s.hdrLen] = p[0]
			s.hdrLen++
			p = p[1:]
			if s.hdrLen < 2 || s.hdrLen < s.headerLen() {
				continue
			}
			s.startFrame()
			if s.left > 0 {
				continue
			}
		} else {
			n := int(min(uint64(len(p)), s.left))
			if !s.control {
				s.scan(p[:n])
			}
			p, s.left = p[n:], s.left-uint64(n)
			if s.left > 0 {
				continue
			}
		}
		s.endFrame()
	}
}

// headerLen is the length of the frame header, once its first 2 bytes are in.
func (s *frameScanner) headerLen() int {
	n := 2
	switch s.hdr[1] & 0x7f {
	case 126:
		n += 2
	case 127:
		n += 8
	}
	if s.hdr[1]&0x80 != 0 { // masked: from a client, not here, but cheap to skip
		n += 4
	}
	return n
}

func (s *frameScanner) startFrame() {
	s.payload = true
	s.fin = s.hdr[0]&0x80 != 0
	opcode := s.hdr[0] & 0x0f
	s.control = opcode >= 8
	switch l := s.hdr[1] & 0x7f; l {
	case 126:
		s.left = uint64(s.hdr[2])<<8 | uint64(s.hdr[3])
	case 127:
		s.left = 0
		for _, b := range s.hdr[2:10] {
			s.left = s.left<<8 | uint64(b)
		}
	default:
		s.left = uint64(l)
	}
	if !s.control && opcode != 0 { // a new message; 0 continues one
		s.pos, s.buckets, s.items, s.tailLen = 0, true, 0, 0
	}
}

func (s *frameScanner) endFrame() {
	s.payload, s.hdrLen = false, 0
	if s.control || !s.fin {
		return
	}
	s.count.messages.Add(1)
	if s.buckets && s.pos >= len(bucketsPrefix) {
		s.count.buckets.Add(1)
		s.count.items.Add(s.items)
	}
}

// scan reads a piece of a data message's payload.
func (s *frameScanner) scan(q []byte) {
	if s.buckets && s.pos < len(bucketsPrefix) {
		k := min(len(q), len(bucketsPrefix)-s.pos)
		s.buckets = string(q[:k]) == bucketsPrefix[s.pos:s.pos+k]
	}
	s.pos += len(q)
	if !s.buckets {
		return
	}
	// An itemStart that began in an earlier piece: the tail is shorter
	// than itemStart, so a match starting in it ends in q.
	var j [2*len(itemStart) - 2]byte
	n := copy(j[:], s.tail[:s.tailLen])
	n += copy(j[n:], q)
	for i := 0; i < s.tailLen && i+len(itemStart) <= n; i++ {
		if string(j[i:i+len(itemStart)]) == itemStart {
			s.items++
		}
	}
	s.items += int64(bytes.Count(q, itemStartBytes))
	if len(q) >= len(s.tail) {
		s.tailLen = copy(s.tail[:], q[len(q)-len(s.tail):])
	} else {
		s.tailLen = copy(s.tail[:], j[max(0, n-len(s.tail)):n])
	}
}

// procSample is the process's CPU time and memory at one instant.
type procSample struct {
	at       time.Time
	cpu      time.Duration // user + system, all threads
	rss      int64         // bytes; 0 when unknown
	heap     uint64        // Go heap in use
	heapSys  uint64
	cpuKnown bool
}

func sampleProc() procSample {
	s := procSample{at: time.Now()}
	s.cpu, s.cpuKnown = procCPU()
	s.rss = procStatusBytes("VmRSS:")
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s.heap, s.heapSys = ms.HeapInuse, ms.HeapSys
	return s
}

// procCPU reads the process's user and system time from /proc/self/stat
// (Linux; clock ticks of 10 ms).
func procCPU() (time.Duration, bool) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, false
	}
	// The command name, in parentheses, may hold spaces: fields count from
	// after its closing parenthesis; utime and stime are fields 14 and 15.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	const tick = 10 * time.Millisecond // USER_HZ is 100 on Linux
	return time.Duration(utime+stime) * tick, true
}

// procStatusBytes reads a "kB" line of /proc/self/status (Linux).
func procStatusBytes(key string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

// openFilesLimit is the soft limit on open files (Linux), 0 when unknown.
// Go raises it to the hard limit at start-up.
func openFilesLimit() int64 {
	b, err := os.ReadFile("/proc/self/limits")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Max open files"); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n
			}
		}
	}
	return 0
}

// benchResult is what one run measured.
type benchResult struct {
	cfg             benchConfig
	connect         time.Duration
	messages, bytes int64 // read by the collector over the measured window
	// Written by the agents over the measured window, counted on the wire.
	written, bucketsWritten, items int64
	window                         time.Duration
	calls, counted, refused        int64
	short                          []seriesShort
	cpu, cpuBaseline               float64 // cores
	cpuKnown                       bool
	rss, rssPeak                   int64
	heap, heapSys, heapPeak        uint64
	reconnects, dropped            int64
	rejected, overflow             int64
	filesLimit                     int64
	lat                            *latency
	// What is left once the agents are gone: the collector's.
	collectorHeap uint64
	collectorRSS  int64
}

// seriesShort is an instance x resource whose calls the collector did not
// all count.
type seriesShort struct {
	instance, resource string
	made, counted      int64
}

// benchAfterTraffic, when set (tests), runs once the traffic has stopped,
// before the calls are counted.
var benchAfterTraffic func(*benchFleet)

func bench(ctx context.Context, cfg benchConfig, w io.Writer) error {
	// Each agent holds a listener and a connection, the collector one
	// connection: 3 files per agent.
	need := int64(3*cfg.agents + 64)
	limit := openFilesLimit()
	if limit > 0 && limit < need {
		return fmt.Errorf("%d agents need about %d open files and the limit is %d: raise it (ulimit -n %d) or run fewer agents",
			cfg.agents, need, limit, need)
	}
	res := benchResult{cfg: cfg, filesLimit: limit}
	fmt.Fprintf(w, "sentinel-top bench: %d agents x %d resources, %g calls/s per resource (%s calls/s), measuring %v\n",
		cfg.agents, cfg.resources, cfg.rate, thousands(int64(float64(cfg.agents*cfg.resources)*cfg.rate)), cfg.duration)

	fleet, err := startBenchFleet(cfg.agents, cfg.resources)
	if err != nil {
		return err
	}
	defer fleet.close()
	trafficCtx, stopTraffic := context.WithCancel(ctx)
	trafficDone := make(chan struct{})
	go func() {
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); fleet.trip(trafficCtx) }()
		fleet.traffic(trafficCtx, cfg.rate)
		wg.Wait()
		close(trafficDone)
	}()
	defer func() { stopTraffic(); <-trafficDone }()

	c := collector.New(collector.Options{Mode: collector.ModeLive, Source: "bench"})
	dialCtx, stopDial := context.WithCancel(ctx)
	var dialing sync.WaitGroup
	dialing.Add(3)
	go func() { defer dialing.Done(); c.Dial(dialCtx, fleet.targets, collector.DialOptions{}) }()
	go func() { defer dialing.Done(); c.Run(dialCtx) }()
	go func() { defer dialing.Done(); fleet.lat.watch(dialCtx, c, fleet.resources[0]) }()
	defer func() { stopDial(); dialing.Wait() }()

	began := time.Now()
	for {
		up := 0
		for _, t := range c.Publish().Targets {
			if t.State == collector.TargetUp {
				up++
			}
		}
		if up == cfg.agents {
			break
		}
		if time.Since(began) > 60*time.Second {
			return fmt.Errorf("%d of %d targets connected after a minute", up, cfg.agents)
		}
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
	res.connect = time.Since(began)
	if err := sleepCtx(ctx, time.Second); err != nil { // the backlogs come in first
		return err
	}

	// The measured window.
	m0, b0 := targetTotals(c)
	w0, wb0, i0 := fleet.wire.load()
	p0 := sampleProc()
	peak := p0
	watch := func(until time.Time) error {
		for time.Now().Before(until) {
			if err := sleepCtx(ctx, min(time.Second, time.Until(until))); err != nil {
				return err
			}
			s := sampleProc()
			peak.rss, peak.heap = max(peak.rss, s.rss), max(peak.heap, s.heap)
		}
		return nil
	}
	if cfg.cpuProfile != "" {
		f, err := os.Create(cfg.cpuProfile)
		if err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
	}
	fleet.lat.measure(true)
	err = watch(time.Now().Add(cfg.duration))
	fleet.lat.measure(false)
	if cfg.cpuProfile != "" {
		pprof.StopCPUProfile()
	}
	if err != nil {
		return err
	}
	p1 := sampleProc()
	m1, b1 := targetTotals(c)
	w1, wb1, i1 := fleet.wire.load()
	res.window = p1.at.Sub(p0.at)
	res.messages, res.bytes = m1-m0, b1-b0
	res.written, res.bucketsWritten, res.items = w1-w0, wb1-wb0, i1-i0
	res.cpuKnown = p0.cpuKnown && p1.cpuKnown
	res.cpu = (p1.cpu - p0.cpu).Seconds() / res.window.Seconds()
	res.rss, res.rssPeak = p1.rss, max(peak.rss, p1.rss)
	res.heap, res.heapSys, res.heapPeak = p1.heap, p1.heapSys, max(peak.heap, p1.heap)

	// Every call made must be counted, once the last buckets are in: the
	// agents ship a bucket when it ends, every 500 ms. A count that has not
	// moved for 2 s (4 buckets) will not move again.
	stopTraffic()
	<-trafficDone
	if benchAfterTraffic != nil {
		benchAfterTraffic(fleet)
	}
	res.calls, res.refused, res.lat = fleet.calls(), fleet.refused.Load(), fleet.lat
	deadline := time.Now().Add(10 * time.Second)
	last, lastMoved := int64(-1), time.Now()
	for {
		if res.counted != last {
			last, lastMoved = res.counted, time.Now()
		}
		res.counted, res.short = 0, res.short[:0]
		for i, a := range fleet.agents {
			for j, r := range fleet.resources {
				tm, _ := c.Totals(a.Instance(), r)
				pass := tm.Pass
				res.counted += pass
				if made := fleet.madeOn(i, j); pass != made {
					res.short = append(res.short, seriesShort{a.Instance(), r, made, pass})
				}
			}
		}
		if res.counted == res.calls || time.Now().After(deadline) ||
			res.counted == last && time.Since(lastMoved) >= 2*time.Second {
			break
		}
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
	snap := c.Publish()
	for _, t := range snap.Targets {
		res.reconnects += t.Reconnects
	}
	res.dropped, res.rejected = snap.Dropped, snap.Rejected
	for _, o := range snap.Overflow {
		res.overflow += o.Count
	}
	stopDial()
	dialing.Wait()

	if cfg.baseline {
		// The same agents and traffic, nobody reading.
		bctx, bstop := context.WithCancel(ctx)
		bdone := make(chan struct{})
		go func() { fleet.traffic(bctx, cfg.rate); close(bdone) }()
		err := sleepCtx(ctx, time.Second)
		q0 := sampleProc()
		if err == nil {
			err = sleepCtx(ctx, cfg.duration)
		}
		q1 := sampleProc()
		bstop()
		<-bdone
		if err != nil {
			return err
		}
		res.cpuBaseline = (q1.cpu - q0.cpu).Seconds() / q1.at.Sub(q0.at).Seconds()
	}
	// The agents go; the collector stays, with everything it holds.
	fleet.close()
	time.Sleep(time.Second) // timers of the agents' last bucket run out
	runtime.GC()            // what finalizers of closed connections kept goes in the next one
	debug.FreeOSMemory()
	s := sampleProc()
	res.collectorHeap, res.collectorRSS = s.heap, s.rss
	runtime.KeepAlive(c)
	res.print(w)
	if res.counted != res.calls {
		return fmt.Errorf("the collector counted %d calls of the %d the agents admitted", res.counted, res.calls)
	}
	return nil
}

// targetTotals sums messages and bytes read from every target.
func targetTotals(c *collector.Collector) (messages, bytes int64) {
	for _, t := range c.Publish().Targets {
		messages += t.Messages
		bytes += t.Bytes
	}
	return messages, bytes
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (r *benchResult) print(w io.Writer) {
	secs := r.window.Seconds()
	mb := func(n int64) string { return fmt.Sprintf("%.0f MB", float64(n)/(1<<20)) }
	fmt.Fprintf(w, "connected:  %d targets in %.1f s (open files limit %d)\n", r.cfg.agents, r.connect.Seconds(), r.filesLimit)
	fmt.Fprintf(w, "ingest:     %s items/s, %s messages/s, %.1f MB/s of websocket payload, over %.1f s\n",
		thousands(int64(float64(r.items)/secs)), thousands(int64(float64(r.messages)/secs)),
		float64(r.bytes)/secs/(1<<20), secs)
	fmt.Fprintf(w, "            %s items in %s buckets messages written by the agents (%s messages in all); %s messages read by the collector\n",
		thousands(r.items), thousands(r.bucketsWritten), thousands(r.written), thousands(r.messages))
	exact := "exact"
	switch {
	case r.counted < r.calls:
		exact = "MISSING " + thousands(r.calls-r.counted)
	case r.counted > r.calls:
		exact = "OVER BY " + thousands(r.counted-r.calls)
	}
	fmt.Fprintf(w, "accounted:  %s calls made, %s counted by the collector (%s)\n", thousands(r.calls), thousands(r.counted), exact)
	if len(r.short) > 0 {
		worst := int64(0)
		for _, s := range r.short {
			worst = max(worst, s.made-s.counted, s.counted-s.made)
		}
		calls := "calls"
		if worst == 1 {
			calls = "call"
		}
		fmt.Fprintf(w, "            %d instance x resource series of %s differ, by up to %s %s:\n", len(r.short),
			thousands(int64(r.cfg.agents*r.cfg.resources)), thousands(worst), calls)
		for _, s := range r.short[:min(len(r.short), 10)] {
			fmt.Fprintf(w, "            %s %s: %s made, %s counted\n", s.instance, s.resource, thousands(s.made), thousands(s.counted))
		}
		if len(r.short) > 10 {
			fmt.Fprintf(w, "            and %d more\n", len(r.short)-10)
		}
	}
	if r.refused > 0 {
		fmt.Fprintf(w, "            %s calls refused by the agents' guards (not counted as made)\n", thousands(r.refused))
	}
	if r.lat != nil {
		r.lat.print(w)
	}
	switch {
	case !r.cpuKnown:
		fmt.Fprintln(w, "cpu:        unknown on this system (/proc/self/stat)")
	case r.cfg.baseline:
		fmt.Fprintf(w, "cpu:        %.2f cores for the process (agents, traffic and collector); %.2f without the collector:\n"+
			"            the collector (and the agents' serving it) %.2f cores, %.1f µs per item\n",
			r.cpu, r.cpuBaseline, r.cpu-r.cpuBaseline, (r.cpu-r.cpuBaseline)*secs*1e6/max(float64(r.items), 1))
	default:
		fmt.Fprintf(w, "cpu:        %.2f cores for the process (agents, traffic and collector)\n", r.cpu)
	}
	fmt.Fprintf(w, "memory:     RSS %s (peak %s); Go heap in use %s (peak %s), heap reserved %s\n",
		mb(r.rss), mb(r.rssPeak), mb(int64(r.heap)), mb(int64(r.heapPeak)), mb(int64(r.heapSys)))
	fmt.Fprintf(w, "            once the agents are gone (the collector's share): heap in use %s, RSS %s\n",
		mb(int64(r.collectorHeap)), mb(r.collectorRSS))
	fmt.Fprintf(w, "health:     %d reconnects, %d messages dropped by agents, %d rejected, %d over limits\n",
		r.reconnects, r.dropped, r.rejected, r.overflow)
}

// thousands formats n with thousands separators.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
