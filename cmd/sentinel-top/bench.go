package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sentinel-top/sentinel-top/agent"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/collector/source"
	"github.com/sentinel-top/sentinel-top/internal/termtext"
)

const benchUsage = `Usage: sentinel-top bench [--agents N] [--resources R] [--rate CALLS] [--duration D] [--per-process P] [--agents-nice K]

Measures the collector at fleet scale on this machine. N agents, each with R
resources called CALLS times a second, serve their streams on loopback from
child processes of this command (P agents each); the collector runs alone
in this process: it dials every one, aggregates, runs triage and publishes
4 snapshots a second, as the dashboard's does. Prints the ingest rate, the
collector's CPU (this process's, per item too) and memory, the agents' CPU,
the time from a breaker transition at an agent to the first snapshot
showing it (p50, p99), reconnects and their causes, and checks that every
call was counted.

Items are counted in the websocket frames the agents write to the
collector's connections. Each agent needs 2 open files in its process (its
listener and its connection), the collector 1 per agent in this one.

Results go to standard output once the run is over; what it is doing
until then (starting, connecting, catching up, measuring, counting) goes to
standard error as it happens, every 5 s while it waits.

Exits 3 when the collector did not count every call the agents admitted,
naming the instances and resources that came up short, or when an agents'
process failed.

Examples:
  sentinel-top bench
  sentinel-top bench --agents 2000 --resources 20 --duration 30s
  sentinel-top bench --agents 10000 --resources 20 --rate 2

Flags:
`

// benchConfig is what to run.
type benchConfig struct {
	agents, resources int
	rate              float64 // calls a second per resource
	duration          time.Duration
	perProcess        int    // agents in one child process
	cpuProfile        string // where to write a CPU profile of the measured window
	memProfile        string // where to write the allocations at its end (FILE) and start (FILE.base)
	agentsProfile     string // the same for the agents' processes: FILE.0, FILE.1...
	maxMemory         int64  // collector.Options.MaxMemory
	agentsNice        int    // the agents' processes' niceness
}

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := newPlainCommand("sentinel-top bench", benchUsage, stderr)
	fs := cmd.fs
	var cfg benchConfig
	fs.IntVar(&cfg.agents, "agents", 100, "agents (targets) on loopback")
	fs.IntVar(&cfg.resources, "resources", 20, "resources per agent")
	fs.Float64Var(&cfg.rate, "rate", 20, "calls a second per resource (errors: one in ten); at 2 or more every 500 ms bucket gets calls")
	fs.DurationVar(&cfg.duration, "duration", 20*time.Second, "how long to measure")
	cfg.maxMemory = 2 << 30
	fs.Func("max-memory", "most memory the agents can make the collector keep, as the dashboard's --max-memory, which sets the Go runtime's memory limit to 7/8 of it too (default 2GiB: 200,000 series need about 1GiB); what does not fit is counted, and its calls missing", func(s string) error {
		n, err := parseBytes(s)
		cfg.maxMemory = n
		return err
	})
	fs.IntVar(&cfg.perProcess, "per-process", 2500, "agents per child process (2 open files each)")
	fs.IntVar(&cfg.agentsNice, "agents-nice", 0, "run the agents' processes at this niceness (1 to 19, through nice(1)), so that on a machine too small for both the collector is not starved by the load it measures")
	fs.StringVar(&cfg.cpuProfile, "cpuprofile", "", "write a CPU profile (pprof) of the collector over the measured window to FILE")
	fs.StringVar(&cfg.memProfile, "memprofile", "", "write the collector's allocations (pprof) at the end of the measured window to FILE and at its start to FILE.base: go tool pprof -sample_index=alloc_space -diff_base FILE.base BINARY FILE")
	fs.StringVar(&cfg.agentsProfile, "agents-cpuprofile", "", "write one of each agents' process to FILE.0, FILE.1, ...")
	if code, ok := cmd.parse(args, stdout, stderr); !ok {
		return code
	}
	var err error
	switch {
	case cfg.agents < 1 || cfg.agents > source.MaxTargets:
		err = fmt.Errorf("--agents %d: want 1 to %d", cfg.agents, source.MaxTargets)
	case cfg.resources < 1 || cfg.resources > 1000:
		err = fmt.Errorf("--resources %d: want 1 to 1000", cfg.resources)
	case cfg.rate <= 0 || cfg.rate > 10000:
		err = fmt.Errorf("--rate %v: want (0, 10000] calls a second", cfg.rate)
	case cfg.duration < time.Second:
		err = fmt.Errorf("--duration %v: want at least 1s", cfg.duration)
	case cfg.perProcess < 1 || cfg.perProcess > 5000:
		err = fmt.Errorf("--per-process %d: want 1 to 5000", cfg.perProcess)
	case cfg.agentsNice < 0 || cfg.agentsNice > 19:
		err = fmt.Errorf("--agents-nice %d: want 0 to 19", cfg.agentsNice)
	}
	if err != nil {
		fmt.Fprintln(stderr, "sentinel-top bench:", err)
		return exitUsage
	}
	if err := bench(ctx, cfg, stdout, newBenchProgress(stderr)); err != nil {
		fmt.Fprintln(stderr, "sentinel-top bench:", err)
		return exitRuntime
	}
	return exitOK
}

// procSample is the process's CPU time and memory at one instant.
type procSample struct {
	at       time.Time
	cpu      time.Duration // user + system, all threads
	rss      int64         // bytes; 0 when unknown
	rssPeak  int64         // the most RSS ever
	heap     uint64        // Go heap in use
	heapSys  uint64
	cpuKnown bool
}

func sampleProc() procSample {
	s := procSample{at: time.Now()}
	s.cpu, s.cpuKnown = procCPU()
	s.rss, s.rssPeak = procStatusBytes("VmRSS:"), procStatusBytes("VmHWM:")
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s.heap, s.heapSys = ms.HeapInuse, ms.HeapSys
	return s
}

// procNice is a process's niceness, from /proc/PID/stat (Linux).
func procNice(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// After the command's ")" come the fields from the 3rd on; nice is the 19th.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 17 {
		return 0, false
	}
	n, err := strconv.Atoi(f[16])
	return n, err == nil
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
	cfg       benchConfig
	processes int
	// niceness is the least niceness the agents' processes have, as
	// /proc/PID/stat tells it (-1: not known here).
	niceness int
	connect  time.Duration
	// Read by the collector over the measured window: messages, bytes, and
	// the items of its buckets messages (its µs per item divides by them).
	messages, bytes, read int64
	// lagStart and lagEnd are the items the agents had written and the
	// collector not read yet, at the window's start and end.
	lagStart, lagEnd int64
	// seriesStart is the series the collector had as the window began, of
	// the fleet's series (agents x resources).
	seriesStart int
	// Written by the agents over the measured window, counted on the wire.
	written, bucketsWritten, items int64
	window                         time.Duration
	calls, counted                 int64
	short                          []seriesShort
	worstTarget                    string  // how the target of the series most short ended
	cpu, agentsCPU                 float64 // cores
	cpuKnown                       bool
	rss, rssPeak, agentsRSS        int64
	heap, heapSys, heapPeak, live  uint64
	reconnects, dropped            int64
	unreceivedMs                   int64 // sender time the collector knows it never received
	downAtEnd                      int   // targets not up when the counting ended
	rejected, overflow             int64
	overflows                      []collector.RejectCount
	filesLimit                     int64
	lat                            *latency
	agents                         benchChildStats // summed over the children, at the end
}

// seriesShort is an instance x resource whose calls the collector did not
// all count.
type seriesShort struct {
	instance, resource string
	made, counted      int64
	reconnected        bool // its target reconnected during the run
}

// benchAfterTraffic, when set (tests), runs in an agents' process once its
// traffic has stopped, before its calls are reported.
var benchAfterTraffic func(*benchFleet)

// benchChildren are the agents' processes, in the order of their agents.
type benchChildren []*benchChild

// start runs cfg's fleet as processes of perProcess agents each, and
// returns its targets once every agent serves.
func (kids *benchChildren) start(ctx context.Context, cfg benchConfig, hooks benchChildHooks) ([]source.Target, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding this executable to run the agents: %w", err)
	}
	for first := 0; first < cfg.agents; first += cfg.perProcess {
		share := benchAgentsConfig{first: first, count: min(cfg.perProcess, cfg.agents-first), fleet: cfg.agents,
			resources: cfg.resources, rate: cfg.rate, nice: cfg.agentsNice}
		if cfg.agentsProfile != "" {
			share.cpuProfile = cfg.agentsProfile + "." + strconv.Itoa(len(*kids))
		}
		ch, err := startBenchChild(ctx, exe, share, hooks)
		if err != nil {
			return nil, err
		}
		*kids = append(*kids, ch)
	}
	var targets []source.Target
	for _, ch := range *kids {
		e, err := ch.wait(ctx, "ready", 2*time.Minute)
		if err != nil {
			return nil, err
		}
		for _, port := range e.Ports {
			if port < 1 || port > 65535 {
				return nil, fmt.Errorf("agents %d-%d: port %d", ch.first, ch.first+ch.count-1, port)
			}
			addr := "127.0.0.1:" + strconv.Itoa(port)
			targets = append(targets, source.Target{Name: addr, URL: "ws://" + addr + agent.StreamPath})
		}
	}
	return targets, nil
}

// ask sends cmd to every child and returns each one's reply of kind.
func (kids benchChildren) ask(ctx context.Context, cmd, kind string, timeout time.Duration) ([]benchEvent, error) {
	for _, ch := range kids {
		if err := ch.send(cmd); err != nil {
			return nil, err
		}
	}
	out := make([]benchEvent, len(kids))
	for i, ch := range kids {
		e, err := ch.wait(ctx, kind, timeout)
		if err != nil {
			return nil, err
		}
		out[i] = e
	}
	return out, nil
}

// failed is the first child found to have ended, if one has.
func (kids benchChildren) failed() error {
	for _, ch := range kids {
		if err := ch.failureNow(); err != nil {
			return err
		}
	}
	return nil
}

// stop ends every child and waits for them.
func (kids benchChildren) stop() error {
	var first error
	for _, ch := range kids {
		if err := ch.stop(30 * time.Second); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// sum adds the children's counters up.
func sumStats(es []benchEvent) benchChildStats {
	var s benchChildStats
	for _, e := range es {
		c := e.benchChildStats
		s.Messages, s.Buckets, s.Items = s.Messages+c.Messages, s.Buckets+c.Buckets, s.Items+c.Items
		s.CPUNs, s.RSS, s.RSSPeak = s.CPUNs+c.CPUNs, s.RSS+c.RSS, s.RSSPeak+c.RSSPeak
		s.Dropped, s.Evicted, s.Skipped = s.Dropped+c.Dropped, s.Evicted+c.Evicted, s.Skipped+c.Skipped
		s.WriteTimeouts, s.ReadTimeouts, s.ConnErrors = s.WriteTimeouts+c.WriteTimeouts, s.ReadTimeouts+c.ReadTimeouts, s.ConnErrors+c.ConnErrors
		s.FirstPong, s.Unrecorded = s.FirstPong+c.FirstPong, s.Unrecorded+c.Unrecorded
		s.Refused, s.LostEvents = s.Refused+c.Refused, s.LostEvents+c.LostEvents
	}
	return s
}

func bench(ctx context.Context, cfg benchConfig, w io.Writer, progress *benchProgress) error {
	// The collector holds a connection per agent; the agents' processes
	// their own files.
	need := int64(cfg.agents + 64)
	limit := openFilesLimit()
	if limit > 0 && limit < need {
		return fmt.Errorf("%d agents need about %d open files in the collector's process and the limit is %d: raise it (ulimit -n %d) or run fewer agents",
			cfg.agents, need, limit, need)
	}
	res := benchResult{cfg: cfg, filesLimit: limit, lat: newLatency(), processes: (cfg.agents + cfg.perProcess - 1) / cfg.perProcess}
	fmt.Fprintf(w, "sentinel-top bench: %d agents x %d resources, %g calls/s per resource (%s calls/s), measuring %v\n",
		cfg.agents, cfg.resources, cfg.rate, thousands(int64(float64(cfg.agents*cfg.resources)*cfg.rate)), cfg.duration)

	resources := benchResources(cfg.resources)
	made := make([][]int64, cfg.agents)
	hooks := benchChildHooks{resources: cfg.resources,
		transition: func(i int, e *benchEvent) {
			res.lat.transition(benchInstance(i), e.To, e.AtMs, time.Unix(0, e.AtNs))
		},
		made: func(i int, calls []int64) { made[i] = calls }}
	childCtx, killChildren := context.WithCancel(ctx)
	defer killChildren()
	var kids benchChildren
	stopped := false
	defer func() {
		if !stopped {
			_ = kids.stop()
		}
	}()
	progress.say("starting %s agents in %d %s", thousands(int64(cfg.agents)), res.processes, plural(res.processes, "process", "processes"))
	targets, err := kids.start(childCtx, cfg, hooks)
	if err != nil {
		return err
	}
	res.niceness = kids.niceness()

	c := collector.New(collector.Options{Mode: collector.ModeLive, Source: "bench", MaxMemory: cfg.maxMemory})
	defer followBudget(cfg.maxMemory)() // as the dashboard's collector does
	dialCtx, stopDial := context.WithCancel(ctx)
	var dialing sync.WaitGroup
	dialing.Add(3)
	go func() { defer dialing.Done(); source.Dial(dialCtx, c, targets, source.DialOptions{}) }()
	go func() { defer dialing.Done(); c.Run(dialCtx) }()
	go func() { defer dialing.Done(); res.lat.watch(dialCtx, c, resources[0]) }()
	defer func() { stopDial(); dialing.Wait() }()

	progress.say("agents ready; the collector dials them")
	began := time.Now()
	for {
		up := 0
		if s := c.Snapshot(); s != nil {
			for _, t := range s.Targets {
				if t.State == collector.TargetUp {
					up++
				}
			}
		}
		if up == cfg.agents {
			break
		}
		progress.waiting("%s of %s targets up", thousands(int64(up)), thousands(int64(cfg.agents)))
		if time.Since(began) > 2*time.Minute {
			return fmt.Errorf("%d of %d targets connected after two minutes; the others: %s (a machine too small for the fleet makes the agents too slow to answer: try fewer agents, a lower --rate, or --agents-nice)",
				up, cfg.agents, whyDown(c.Snapshot()))
		}
		if err := kids.failed(); err != nil {
			return err
		}
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
	res.connect = time.Since(began)
	// The calls begin once every target is up: an agent keeps a minute of
	// buckets for a reader that comes later, and at 10,000 targets on a
	// small machine connecting takes longer than that (the calls made in
	// the first half minute never reached the targets connected last, and
	// were counted as missing).
	progress.say("every target up in %.1f s; starting the calls", res.connect.Seconds())
	if _, err := kids.ask(ctx, "start", "started", time.Minute); err != nil {
		return err
	}
	if err := sleepCtx(ctx, time.Second); err != nil { // the first buckets come in
		return err
	}
	if err := settle(ctx, kids, c, cfg.agents*cfg.resources, int64(cfg.agents*cfg.resources), progress); err != nil {
		return err
	}

	// The measured window. The collector's side of it (its CPU and the
	// messages, bytes and items it read) is taken before the agents' first
	// mark and after their second, so that it holds the window the agents
	// count what they wrote in (their answers can take seconds on a loaded
	// machine); µs per item divides the collector's CPU by the items it
	// read over the same window.
	if err := writeAllocs(cfg.memProfile, ".base"); err != nil {
		return err
	}
	m0, b0, i0 := targetTotals(c)
	p0 := sampleProc()
	mark0, err := kids.ask(ctx, "mark 0", "mark", time.Minute)
	if err != nil {
		return err
	}
	_, _, lag0 := targetTotals(c) // read after the agents' answers, as at the end
	res.seriesStart = listedSeries(c.Snapshot())
	peak := p0
	watch := func(until time.Time) error {
		for time.Now().Before(until) {
			if err := sleepCtx(ctx, min(time.Second, time.Until(until))); err != nil {
				return err
			}
			if err := kids.failed(); err != nil {
				return err
			}
			s := sampleProc()
			peak.heap = max(peak.heap, s.heap)
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
	progress.say("measuring for %v", cfg.duration)
	res.lat.measure(true)
	err = watch(time.Now().Add(cfg.duration))
	res.lat.measure(false)
	if cfg.cpuProfile != "" {
		pprof.StopCPUProfile()
	}
	if err != nil {
		return err
	}
	mark1, err := kids.ask(ctx, "mark 1", "mark", time.Minute)
	if err != nil {
		return err
	}
	p1 := sampleProc()
	m1, b1, i1 := targetTotals(c)
	if err := writeAllocs(cfg.memProfile, ""); err != nil {
		return err
	}
	s0, s1 := sumStats(mark0), sumStats(mark1)
	res.lagStart, res.lagEnd = max(s0.Items-lag0, 0), max(s1.Items-i1, 0)
	res.window = p1.at.Sub(p0.at)
	res.messages, res.bytes, res.read = m1-m0, b1-b0, i1-i0
	res.written, res.bucketsWritten, res.items = s1.Messages-s0.Messages, s1.Buckets-s0.Buckets, s1.Items-s0.Items
	res.cpuKnown = p0.cpuKnown && p1.cpuKnown && s1.CPUNs > 0
	res.cpu = (p1.cpu - p0.cpu).Seconds() / res.window.Seconds()
	res.agentsCPU = time.Duration(s1.CPUNs-s0.CPUNs).Seconds() / res.window.Seconds()
	res.agentsRSS = s1.RSS
	res.heap, res.heapSys, res.heapPeak = p1.heap, p1.heapSys, max(peak.heap, p1.heap)

	// Every call made must be counted, once the last buckets are in: the
	// agents ship a bucket when it ends, every 500 ms, and re-send the last
	// 4 for late additions. A count that has not moved for 8 s will not
	// move again: at 10,000 targets the last buckets of 200,000 series
	// took more than 2 s to come in (2 s ended the count with 8,872 calls
	// still on their way; 8 s: every one counted).
	progress.say("stopping the calls; counting them at both ends")
	done, err := kids.ask(ctx, "stop", "done", 2*time.Minute)
	if err != nil {
		return err
	}
	res.agents = sumStats(done)
	for i := range made {
		for _, n := range made[i] {
			res.calls += n
		}
	}
	deadline := time.Now().Add(2 * time.Minute) // a collector far behind catches up first
	last, lastMoved := int64(-1), time.Now()
	for {
		if res.counted != last {
			last, lastMoved = res.counted, time.Now()
		}
		res.counted, res.short = 0, res.short[:0]
		for i := range made {
			for j, r := range resources {
				tm, _ := c.Totals(benchInstance(i), r)
				res.counted += tm.Pass
				if tm.Pass != made[i][j] {
					res.short = append(res.short, seriesShort{instance: benchInstance(i), resource: r, made: made[i][j], counted: tm.Pass})
				}
			}
		}
		// A target still reconnecting has its last buckets to deliver.
		res.downAtEnd = 0
		if s := c.Snapshot(); s != nil {
			for _, t := range s.Targets {
				if t.State != collector.TargetUp {
					res.downAtEnd++
				}
			}
		}
		if res.counted == res.calls || time.Now().After(deadline) ||
			res.counted == last && time.Since(lastMoved) >= 8*time.Second && res.downAtEnd == 0 {
			break
		}
		progress.waiting("%s of %s calls counted, %d targets not up", thousands(res.counted), thousands(res.calls), res.downAtEnd)
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
	snap := c.Publish()
	reconnected := map[string]bool{}
	var worst seriesShort
	for i := range res.short {
		if s := res.short[i]; s.made-s.counted > worst.made-worst.counted {
			worst = s
		}
	}
	for _, t := range snap.Targets {
		res.reconnects += t.Reconnects
		if t.Reconnects > 0 {
			reconnected[t.Instance] = true
		}
		if worst.instance != "" && t.Instance == worst.instance {
			res.worstTarget = fmt.Sprintf("%s's target: %s for %.1f s, %s messages, the last %.1f s before the count ended, %d reconnects",
				t.Instance, t.State, float64(snap.At-t.Since)/1000, thousands(t.Messages), float64(snap.At-t.LastMessageAt)/1000, t.Reconnects)
		}
	}
	for i := range res.short {
		res.short[i].reconnected = reconnected[res.short[i].instance]
	}
	res.dropped, res.rejected, res.unreceivedMs = snap.Dropped, snap.Rejected, snap.UnreceivedMs
	for _, o := range snap.Overflow {
		res.overflow += o.Count
	}
	res.overflows = snap.Overflow
	// What the collector holds once garbage is gone, before it goes.
	runtime.GC()
	end := sampleProc()
	res.live, res.rss, res.rssPeak = end.heap, end.rss, end.rssPeak
	runtime.KeepAlive(c)
	stopDial()
	dialing.Wait()
	stopped = true
	if err := kids.stop(); err != nil {
		return err
	}
	res.print(w)
	if res.counted != res.calls {
		return fmt.Errorf("the collector counted %d calls of the %d the agents admitted", res.counted, res.calls)
	}
	return nil
}

// whyDown tells why the targets not up are down: their last errors, the
// most frequent first, each with one example (errors differing only in
// numbers, such as ports, count as one).
func whyDown(s *collector.Snapshot) string {
	if s == nil {
		return "no snapshot yet"
	}
	var down []downReason
	for _, t := range s.Targets {
		if t.State == collector.TargetUp {
			continue
		}
		why := t.LastError
		if why == "" {
			why = "not connected yet"
		}
		down = append(down, downReason{why: why, n: 1})
	}
	var parts []string
	reasons := groupReasons(down)
	for i, r := range reasons {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("%d more reasons", len(reasons)-i))
			break
		}
		parts = append(parts, fmt.Sprintf("%d %s", r.n, termtext.Sanitize(r.why, 200)))
	}
	return strings.Join(parts, "; ")
}

// settle waits for the steady state before the window begins: every
// agent's every resource a series of the collector's (a fleet's first
// second of calls reaches the agents' last resources seconds later on a
// small machine, and a window that holds them measures series being made),
// and the collector having read what the agents wrote (their backlogs, what
// they shipped before it came, arrive in bursts that cost less per item
// than a fleet's steady stream, and a window that holds them measures a
// collector catching up). It returns once the collector has series series
// and is behind by at most slack items (about one message an agent: what
// is on its way), or after two minutes (the series and the lag printed at
// the window's start then tell it).
func settle(ctx context.Context, kids benchChildren, c *collector.Collector, series int, slack int64, progress *benchProgress) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if have := listedSeries(c.Snapshot()); have < series && time.Now().Before(deadline) {
			progress.waiting("%s of %s series seen by the collector", thousands(int64(have)), thousands(int64(series)))
			if err := sleepCtx(ctx, 200*time.Millisecond); err != nil {
				return err
			}
			continue
		}
		marks, err := kids.ask(ctx, "mark -1", "mark", time.Minute)
		if err != nil {
			return err
		}
		_, _, read := targetTotals(c)
		behind := sumStats(marks).Items - read
		if behind <= slack || time.Now().After(deadline) {
			return nil
		}
		progress.waiting("the collector %s items behind the agents", thousands(behind))
		if err := sleepCtx(ctx, 500*time.Millisecond); err != nil {
			return err
		}
	}
}

// listedSeries is how many instance x resource series the snapshot's rows
// hold (0 before the first snapshot).
func listedSeries(s *collector.Snapshot) int {
	n := 0
	if s != nil {
		for _, r := range s.Rows {
			n += r.Instances
		}
	}
	return n
}

// targetTotals sums the messages, bytes and items read from every target.
func targetTotals(c *collector.Collector) (messages, bytes, items int64) {
	for _, t := range c.Publish().Targets {
		messages += t.Messages
		bytes += t.Bytes
		items += t.Items
	}
	return messages, bytes, items
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
	niceness := ""
	if r.niceness > 0 {
		niceness = fmt.Sprintf(" at niceness %d", r.niceness)
	}
	fmt.Fprintf(w, "connected:  %d targets in %.1f s, served by %d agents' %s%s (open files limit %d)\n",
		r.cfg.agents, r.connect.Seconds(), r.processes, plural(r.processes, "process", "processes"), niceness, r.filesLimit)
	fmt.Fprintf(w, "ingest:     %s items/s, %s messages/s, %.1f MB/s of websocket payload, over %.1f s\n",
		thousands(int64(float64(r.read)/secs)), thousands(int64(float64(r.messages)/secs)),
		float64(r.bytes)/secs/(1<<20), secs)
	fmt.Fprintf(w, "            %s items in %s buckets messages written by the agents (%s messages in all); %s items in %s messages read by the collector\n",
		thousands(r.items), thousands(r.bucketsWritten), thousands(r.written), thousands(r.read), thousands(r.messages))
	if line := r.fill(); line != "" {
		fmt.Fprintf(w, "            %s\n", line)
	}
	fmt.Fprintf(w, "            the collector %s items behind the agents as the window began (with %s of the %s series), %s as it ended\n",
		thousands(r.lagStart), thousands(int64(r.seriesStart)), thousands(int64(r.cfg.agents*r.cfg.resources)), thousands(r.lagEnd))
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
		var on, off [2]int64 // series, calls missing: on targets that reconnected, on the others
		for _, s := range r.short {
			p := &off
			if s.reconnected {
				p = &on
			}
			p[0]++
			p[1] += s.made - s.counted
		}
		fmt.Fprintf(w, "            of them, %s (%s calls) on targets that reconnected during the run, %s (%s calls) on targets that never did\n",
			thousands(on[0]), thousands(on[1]), thousands(off[0]), thousands(off[1]))
		if r.worstTarget != "" {
			fmt.Fprintf(w, "            %s\n", r.worstTarget)
		}
	}
	if r.agents.Refused > 0 {
		fmt.Fprintf(w, "            %s calls refused by the agents' guards (not counted as made)\n", thousands(r.agents.Refused))
	}
	r.lat.print(w)
	if r.agents.LostEvents > 0 {
		fmt.Fprintf(w, "            %s transitions not reported by the agents' processes (their pipe was full)\n", thousands(r.agents.LostEvents))
	}
	if r.cpuKnown {
		fmt.Fprintf(w, "cpu:        collector %.2f cores (this process), %.2f µs per item; agents %.2f cores (%d %s)\n",
			r.cpu, r.cpu*secs*1e6/max(float64(r.read), 1), r.agentsCPU, r.processes, plural(r.processes, "process", "processes"))
	} else {
		fmt.Fprintln(w, "cpu:        unknown on this system (getrusage)")
	}
	fmt.Fprintf(w, "memory:     collector heap in use %s (peak %s), %s live after a collection, heap reserved %s; RSS %s (peak %s)\n",
		mb(int64(r.heap)), mb(int64(r.heapPeak)), mb(int64(r.live)), mb(int64(r.heapSys)), mb(r.rss), mb(r.rssPeak))
	fmt.Fprintf(w, "            agents' processes: RSS %s\n", mb(r.agentsRSS))
	fmt.Fprintf(w, "health:     %d reconnects, %d messages dropped by agents, %d rejected, %d over limits\n",
		r.reconnects, r.dropped, r.rejected, r.overflow)
	if r.downAtEnd > 0 {
		fmt.Fprintf(w, "            %d targets still not up when the counting ended\n", r.downAtEnd)
	}
	if r.unreceivedMs > 0 {
		fmt.Fprintf(w, "            %.1f s of targets' data never received: out of reach longer than their backlog\n", float64(r.unreceivedMs)/1000)
	}
	for _, o := range r.overflows {
		fmt.Fprintf(w, "            over %s: %s (the last: %s)\n", termtext.Sanitize(o.Reason, 40), thousands(o.Count), termtext.Sanitize(o.Last, 200))
	}
	a := r.agents
	if a.Dropped+a.Evicted+a.WriteTimeouts+a.ReadTimeouts+a.ConnErrors > 0 {
		fmt.Fprintf(w, "            agents' side: %d messages dropped for slow readers, %d readers evicted, %d writes timed out, %d reads timed out (no pong; %d of them the first ping's), %d other connection errors\n",
			a.Dropped, a.Evicted, a.WriteTimeouts, a.ReadTimeouts, a.FirstPong, a.ConnErrors)
	}
	if a.Skipped > 0 {
		fmt.Fprintf(w, "            agents' side: %s resource buckets never shipped: overwritten while their agents ran more than 10 s late (a machine too small for the fleet), and what they counted is lost\n",
			thousands(a.Skipped))
	}
	if a.Unrecorded > 0 {
		fmt.Fprintf(w, "            agents' side: %s passes, blocks and completions not recorded: their calls read the clock 10 s or more before counting (goroutines starved of CPU)\n",
			thousands(a.Unrecorded))
	}
	reasons := r.lat.downReasons()
	for i, d := range reasons {
		if i == 8 {
			fmt.Fprintf(w, "            and %d other reasons\n", len(reasons)-i)
			break
		}
		alike := ""
		if d.alike > 0 {
			alike = fmt.Sprintf(" (and %d alike, numbers aside)", d.alike)
		}
		fmt.Fprintf(w, "            down %d times: %s%s\n", d.n, termtext.Sanitize(d.why, 200), alike)
	}
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

// writeAllocs writes the allocations since the start to file+suffix;
// nothing when file is empty. Two of them, taken just before and just
// after the measured window, are its allocations (pprof's -diff_base).
// Each forces a collection first, which brings the profile up to date:
// outside the window, whose CPU it would count.
func writeAllocs(file, suffix string) error {
	if file == "" {
		return nil
	}
	runtime.GC()
	f, err := os.Create(file + suffix)
	if err != nil {
		return fmt.Errorf("--memprofile: %w", err)
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("--memprofile: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("--memprofile: %w", err)
	}
	return nil
}

// fill tells how full the agents' buckets messages were: at --rate 2 or
// more every resource is due a call in every 500 ms bucket, and a message
// holding fewer items than the resources means the agents ran late and
// their calls bunched. µs per item then spreads each message's cost over
// fewer items than the fleet was to send. "" before any message.
func (r *benchResult) fill() string {
	if r.bucketsWritten <= 0 {
		return ""
	}
	per := float64(r.items) / float64(r.bucketsWritten)
	line := fmt.Sprintf("%.1f items a buckets message, of %d due", per, r.cfg.resources)
	if r.cfg.rate >= 2 && per < 0.9*float64(r.cfg.resources) {
		line += fmt.Sprintf(" (%.0f %%): the agents ran late and their calls bunched, so the collector's cost a message is spread over fewer items than the fleet was to send (a machine too small for the fleet)",
			100*per/float64(r.cfg.resources))
	}
	return line
}
