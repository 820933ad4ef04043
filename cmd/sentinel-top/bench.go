package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sentinel-top/sentinel-top/agent"
	"github.com/sentinel-top/sentinel-top/collector"
)

const benchUsage = `Usage: sentinel-top bench [--agents N] [--resources R] [--rate CALLS] [--duration D]

Measures the collector at fleet scale on this machine. N agents, each with R
resources called CALLS times a second, serve their streams on loopback; an
in-process collector dials every one, aggregates, runs triage and publishes
4 snapshots a second, as the dashboard's does. Prints the ingest rate, the
CPU and memory it took, and checks that every call was counted.

The agents and their traffic run in this process too, so the CPU figure
includes them; a second phase runs them without the collector (--baseline)
and the difference is the collector's share.

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
	calls     atomic.Int64 // made, ever
}

func startBenchFleet(n, resources int) (*benchFleet, error) {
	f := &benchFleet{}
	for r := 0; r < resources; r++ {
		f.resources = append(f.resources, fmt.Sprintf("GET:http://svc-%d/api/v1/resource/%d", r%7, r))
	}
	for i := 0; i < n; i++ {
		a, err := agent.New(agent.Options{App: fmt.Sprintf("bench-%d", i%10), Instance: fmt.Sprintf("bench-%04d", i)})
		if err != nil {
			f.close()
			return nil, err
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			a.Close()
			f.close()
			return nil, fmt.Errorf("listening for agent %d: %w", i, err)
		}
		done := make(chan error, 1)
		go func() { done <- a.Serve(ln) }()
		f.agents, f.served = append(f.agents, a), append(f.served, done)
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
			mine := f.agents[w*len(f.agents)/workers : (w+1)*len(f.agents)/workers]
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
						for _, a := range mine {
							for _, r := range f.resources {
								e, err := a.Entry(r)
								if err != nil {
									continue
								}
								var cause error
								if (done+k)%10 == 0 {
									cause = errBench
								}
								e.Exit(cause)
							}
						}
					}
					done += due
					f.calls.Add(due * int64(len(mine)*len(f.resources)))
				}
			}
		}()
	}
	wg.Wait()
}

var errBench = errors.New("bench: a failed call")

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
	cfg                     benchConfig
	connect                 time.Duration
	messages, bytes         int64 // over the measured window
	window                  time.Duration
	calls, counted          int64
	cpu, cpuBaseline        float64 // cores
	cpuKnown                bool
	rss, rssPeak            int64
	heap, heapSys, heapPeak uint64
	reconnects, dropped     int64
	rejected, overflow      int64
	filesLimit              int64
	// What is left once the agents are gone: the collector's.
	collectorHeap uint64
	collectorRSS  int64
}

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
	go func() { fleet.traffic(trafficCtx, cfg.rate); close(trafficDone) }()
	defer func() { stopTraffic(); <-trafficDone }()

	c := collector.New(collector.Options{Mode: collector.ModeLive, Source: "bench"})
	dialCtx, stopDial := context.WithCancel(ctx)
	var dialing sync.WaitGroup
	dialing.Add(2)
	go func() { defer dialing.Done(); c.Dial(dialCtx, fleet.targets, collector.DialOptions{}) }()
	go func() { defer dialing.Done(); c.Run(dialCtx) }()
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
	if err := watch(time.Now().Add(cfg.duration)); err != nil {
		return err
	}
	p1 := sampleProc()
	m1, b1 := targetTotals(c)
	res.window = p1.at.Sub(p0.at)
	res.messages, res.bytes = m1-m0, b1-b0
	res.cpuKnown = p0.cpuKnown && p1.cpuKnown
	res.cpu = (p1.cpu - p0.cpu).Seconds() / res.window.Seconds()
	res.rss, res.rssPeak = p1.rss, max(peak.rss, p1.rss)
	res.heap, res.heapSys, res.heapPeak = p1.heap, p1.heapSys, max(peak.heap, p1.heap)

	// Every call made must be counted, once the last buckets are in.
	stopTraffic()
	<-trafficDone
	res.calls = fleet.calls.Load()
	deadline := time.Now().Add(10 * time.Second)
	for {
		res.counted = 0
		for _, a := range fleet.agents {
			for _, r := range fleet.resources {
				pass, _, _, _, _, _ := c.Totals(a.Instance(), r)
				res.counted += pass
			}
		}
		if res.counted == res.calls || time.Now().After(deadline) {
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
		return fmt.Errorf("the collector counted %d calls of %d", res.counted, res.calls)
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
	// Every resource is called in every 500 ms bucket, so each buckets
	// message carries one item per resource.
	fmt.Fprintf(w, "ingest:     %s items/s, %s messages/s, %.1f MB/s of websocket payload, over %.1f s\n",
		thousands(int64(float64(r.messages)*float64(r.cfg.resources)/secs)), thousands(int64(float64(r.messages)/secs)),
		float64(r.bytes)/secs/(1<<20), secs)
	exact := "exact"
	if r.counted != r.calls {
		exact = "MISSING " + thousands(r.calls-r.counted)
	}
	fmt.Fprintf(w, "accounted:  %s calls made, %s counted by the collector (%s)\n", thousands(r.calls), thousands(r.counted), exact)
	switch {
	case !r.cpuKnown:
		fmt.Fprintln(w, "cpu:        unknown on this system (/proc/self/stat)")
	case r.cfg.baseline:
		fmt.Fprintf(w, "cpu:        %.2f cores for the process (agents, traffic and collector); %.2f without the collector:\n"+
			"            the collector (and the agents' serving it) %.2f cores, %.1f µs per item\n",
			r.cpu, r.cpuBaseline, r.cpu-r.cpuBaseline, (r.cpu-r.cpuBaseline)*secs*1e6/max(float64(r.messages)*float64(r.cfg.resources), 1))
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
