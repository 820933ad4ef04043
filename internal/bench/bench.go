package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/collector/feed"
	"github.com/sentinel-top/sentinel-top/collector/source"
	"github.com/sentinel-top/sentinel-top/internal/english"
	"github.com/sentinel-top/sentinel-top/internal/termtext"
)

// Config is what a run measures: DefaultConfig has the defaults, Validate
// the bounds.
type Config struct {
	// Agents is how many agents (targets) serve on loopback: 1 to
	// source.MaxTargets (default 100).
	Agents int
	// Resources is how many resources each agent has: 1 to 1000 (default 20).
	Resources int
	// Rate is how many calls a second each resource gets, one in ten of
	// them failing: (0, 10000] (default 20).
	Rate float64
	// Duration is how long the window measured lasts: at least 1s
	// (default 20s).
	Duration time.Duration
	// After is how long the window begins after the fleet settled (every
	// series seen, the collector caught up): 0 to an hour (default 0). The
	// collector's traffic log for plans fills for minutes at a fleet's
	// scale (Snapshot.MemoryTraffic), and what it holds and what replaying
	// plans on it costs grow meanwhile: a window once it is full measures
	// the collector as it runs from then on.
	After time.Duration
	// PerProcess is how many agents one child process serves: 1 to 5000
	// (default 2500).
	PerProcess int
	// MaxMemory is the collector's memory budget, collector.Options.MaxMemory
	// (default 2 GiB: 200,000 series need about 1 GiB). Run leaves the Go
	// runtime's memory limit as it finds it: a program that sets it to
	// follow the dashboard's budget sets it for this one too.
	MaxMemory int64
	// AgentsNice is the niceness the agents' processes run at, through
	// nice(1): 0 to 19 (default 0: as this process).
	AgentsNice int
	// CPUProfile, when set, is where a CPU profile (pprof) of the collector
	// over the measured window is written.
	CPUProfile string
	// MemProfile, when set, is where the collector's allocations (pprof) at
	// the end of the measured window are written, and at its start
	// MemProfile+".base".
	MemProfile string
	// AgentsCPUProfile, when set, is where each agents' process writes a
	// CPU profile of the measured window: AgentsCPUProfile+".0", ".1"...
	AgentsCPUProfile string
	// Prometheus, when set, is a Prometheus server's executable: the
	// agents also serve their metrics (agent.Options.ServeMetrics), and a
	// Prometheus run from it scrapes them every second over the same
	// window as the collector reads their streams (prometheus.go).
	Prometheus string
	// Floor, when set, leaves the collector's store out of the buckets:
	// its sources read and decode every stream as usual and hand each
	// buckets message to a sink that only counts it (floor.go), the rest
	// to the collector. The CPU per item is then this machine's floor,
	// what reading and decoding cost before the store's and triage's work;
	// the calls are not accounted.
	Floor bool
}

// DefaultConfig is the run `sentinel-top bench` makes without flags.
func DefaultConfig() Config {
	return Config{Agents: 100, Resources: 20, Rate: 20, Duration: 20 * time.Second, PerProcess: 2500, MaxMemory: 2 << 30}
}

// Validate says which field is out of its bounds, if one is, naming it by
// the flag of `sentinel-top bench` that sets it.
func (cfg Config) Validate() error {
	switch {
	case cfg.Agents < 1 || cfg.Agents > source.MaxTargets:
		return fmt.Errorf("--agents %d: want 1 to %d", cfg.Agents, source.MaxTargets)
	case cfg.Resources < 1 || cfg.Resources > maxResources:
		return fmt.Errorf("--resources %d: want 1 to %d", cfg.Resources, maxResources)
	case cfg.Rate <= 0 || cfg.Rate > maxRate:
		return fmt.Errorf("--rate %v: want (0, %d] calls a second", cfg.Rate, maxRate)
	case cfg.Duration < time.Second:
		return fmt.Errorf("--duration %v: want at least 1s", cfg.Duration)
	case cfg.After < 0 || cfg.After > time.Hour:
		return fmt.Errorf("--after %v: want 0 to 1h", cfg.After)
	case cfg.PerProcess < 1 || cfg.PerProcess > 5000:
		return fmt.Errorf("--per-process %d: want 1 to 5000", cfg.PerProcess)
	case cfg.AgentsNice < 0 || cfg.AgentsNice > 19:
		return fmt.Errorf("--agents-nice %d: want 0 to 19", cfg.AgentsNice)
	}
	return nil
}

// Bounds shared by a run's Config and an agents' process's share of it.
const (
	maxResources = 1000  // resources per agent
	maxRate      = 10000 // calls a second per resource
)

// Run runs the fleet cfg describes and measures the collector reading it.
// The results go to stdout once the run is over, what it is doing until
// then to stderr. It fails when cfg is out of bounds, when an agents'
// process fails, and when the collector did not count every call the
// agents admitted (after printing the results, which name the series that
// came up short).
//
// The agents' processes are this executable run again (os.Executable)
// with AgentsCommand as its first argument: the program's main must hand
// that command to RunAgents.
func Run(ctx context.Context, cfg Config, stdout, stderr io.Writer) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	return run(ctx, cfg, stdout, newProgressWriter(stderr))
}

// run is Run, once cfg is known to be in bounds.
func run(ctx context.Context, cfg Config, w io.Writer, progress *progressWriter) error {
	limit, err := checkOpenFiles(cfg.Agents)
	if err != nil {
		return err
	}
	r := &runner{cfg: cfg, progress: progress, resources: resourceNames(cfg.Resources), made: make([][]int64, cfg.Agents),
		res: &result{cfg: cfg, filesLimit: limit, lat: newLatency(), processes: (cfg.Agents + cfg.PerProcess - 1) / cfg.PerProcess}}
	after := ""
	if cfg.After > 0 {
		after = fmt.Sprintf(", %v after the fleet settled", cfg.After)
	}
	fmt.Fprintf(w, "sentinel-top bench: %d agents x %d resources, %g calls/s per resource (%s calls/s), measuring %v%s\n",
		cfg.Agents, cfg.Resources, cfg.Rate, thousands(int64(float64(cfg.Agents*cfg.Resources)*cfg.Rate)), cfg.Duration, after)

	childCtx, killChildren := context.WithCancel(ctx)
	defer killChildren()
	stopped := false
	defer func() {
		if !stopped {
			_ = r.kids.stop()
		}
	}()
	progress.say("starting %s agents in %d %s", thousands(int64(cfg.Agents)), r.res.processes, english.Plural(r.res.processes, "process", "processes"))
	targets, err := r.kids.start(childCtx, cfg, r.hooks())
	if err != nil {
		return err
	}
	r.res.niceness = r.kids.niceness()
	if cfg.Prometheus != "" {
		progress.say("starting prometheus to scrape the agents' metrics every %v", promScrapeInterval)
		var addrs []string
		for _, t := range targets {
			addrs = append(addrs, t.Name)
		}
		if r.prom, err = startPrometheus(childCtx, cfg.Prometheus, addrs); err != nil {
			return err
		}
		defer r.prom.stop()
		r.res.prom = &promResult{}
	}

	r.c = collector.New(collector.Options{Mode: collector.ModeLive, Source: "bench", MaxMemory: cfg.MaxMemory})
	var sink feed.DialSink = r.c
	if cfg.Floor {
		r.floor = &floorSink{DialSink: r.c}
		sink = r.floor
		r.res.floor = true
	}
	dialCtx, stopDial := context.WithCancel(ctx)
	var dialing sync.WaitGroup
	dialing.Add(3)
	go func() { defer dialing.Done(); source.Dial(dialCtx, sink, targets, source.DialOptions{}) }()
	go func() { defer dialing.Done(); r.c.Run(dialCtx) }()
	go func() { defer dialing.Done(); r.res.lat.watch(dialCtx, r.c, r.resources[0]) }()
	defer func() { stopDial(); dialing.Wait() }()

	progress.say("agents ready; the collector dials them")
	if r.res.connect, err = r.waitUp(ctx); err != nil {
		return err
	}
	if r.prom != nil {
		if err := r.prom.waitUp(ctx, cfg.Agents, progress); err != nil {
			return err
		}
	}
	if err := r.startCalls(ctx); err != nil {
		return err
	}
	if err := r.measure(ctx); err != nil {
		return err
	}
	if err := r.count(ctx); err != nil {
		return err
	}
	if r.prom != nil {
		pr := r.res.prom
		if pr.counted, pr.countedOK, err = r.prom.count(ctx, r.res.calls); err != nil {
			return err
		}
	}
	r.res.health(r.c.Publish())
	// What the collector holds once garbage is gone, before it goes.
	runtime.GC()
	end := sampleProc()
	r.res.live, r.res.rss, r.res.rssPeak = end.heap, end.rss, end.rssPeak
	r.res.huge.mode = hugePageMode()
	r.res.huge.bytes, r.res.huge.known = procHugeBytes()
	r.res.reads = readPath()
	runtime.KeepAlive(r.c)
	stopDial()
	dialing.Wait()
	stopped = true
	if err := r.kids.stop(); err != nil {
		return err
	}
	// With the agents gone, this process has the machine to itself.
	progress.say("timing encoding/json and the collector's decoder on an agent's messages, for reference")
	r.res.ref, r.res.refErr = measureReference(cfg.Resources, cfg.Rate)
	r.res.print(w)
	if !cfg.Floor && r.res.counted != r.res.calls {
		return fmt.Errorf("the collector counted %d calls of the %d the agents admitted", r.res.counted, r.res.calls)
	}
	return nil
}

// checkOpenFiles fails when the limit on open files is too low for the
// collector's connections to agents; it returns the limit, 0 when unknown.
func checkOpenFiles(agents int) (int64, error) {
	// The collector holds a connection per agent; the agents' processes
	// their own files.
	need := int64(agents + 64)
	limit := openFilesLimit()
	if limit > 0 && limit < need {
		return limit, fmt.Errorf("%d agents need about %d open files in the collector's process and the limit is %d: raise it (ulimit -n %d) or run fewer agents",
			agents, need, limit, need)
	}
	return limit, nil
}

// runner is a run under way: the agents' processes, the collector reading
// them, and what is measured so far.
type runner struct {
	cfg       Config
	progress  *progressWriter
	kids      children
	prom      *promServer // when Config.Prometheus is set
	c         *collector.Collector
	floor     *floorSink // the collector's sink with its store left out (Config.Floor)
	resources []string
	// made[i] is the calls agent i admitted, by resource, as its process
	// reports them after "stop".
	made [][]int64
	res  *result
}

// hooks take the children's reports: the latency breakers' transitions,
// and the calls each agent made.
func (r *runner) hooks() childHooks {
	return childHooks{resources: r.cfg.Resources,
		transition: func(i int, e *event) {
			r.res.lat.transition(instanceName(i), e.To, e.AtMs, time.Unix(0, e.AtNs))
		},
		made: func(i int, calls []int64) { r.made[i] = calls }}
}

// waitUp waits for every target to be up, and returns how long it took.
func (r *runner) waitUp(ctx context.Context) (time.Duration, error) {
	began := time.Now()
	for {
		up := upTargets(r.c.Snapshot())
		if up == r.cfg.Agents {
			return time.Since(began), nil
		}
		r.progress.waiting("%s of %s targets up", thousands(int64(up)), thousands(int64(r.cfg.Agents)))
		if time.Since(began) > 2*time.Minute {
			return 0, fmt.Errorf("%d of %d targets connected after two minutes; the others: %s (a machine too small for the fleet makes the agents too slow to answer: try fewer agents, a lower --rate, or --agents-nice)",
				up, r.cfg.Agents, whyDown(r.c.Snapshot()))
		}
		if err := r.kids.failed(); err != nil {
			return 0, err
		}
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
			return 0, err
		}
	}
}

// upTargets counts the targets up in s (0 before the first snapshot).
func upTargets(s *collector.Snapshot) int {
	up := 0
	if s != nil {
		for _, t := range s.Targets {
			if t.State == collector.TargetUp {
				up++
			}
		}
	}
	return up
}

// startCalls starts the agents' calls, and returns once the collector
// has settled into reading them.
func (r *runner) startCalls(ctx context.Context) error {
	// The calls begin once every target is up: an agent keeps a minute of
	// buckets for a reader that comes later, and at 10,000 targets on a
	// small machine connecting takes longer than that (the calls made in
	// the first half minute never reached the targets connected last, and
	// were counted as missing).
	r.progress.say("every target up in %.1f s; starting the calls", r.res.connect.Seconds())
	if _, err := r.kids.ask(ctx, "start", "started", time.Minute); err != nil {
		return err
	}
	if err := sleepCtx(ctx, time.Second); err != nil { // the first buckets come in
		return err
	}
	series := r.cfg.Agents * r.cfg.Resources
	seen := series
	if r.floor != nil {
		seen = 0 // no store holds them: only the items read are waited for
	}
	if err := settle(ctx, r.kids, r.c, seen, int64(series), r.progress); err != nil {
		return err
	}
	return r.wait(ctx)
}

// wait lets the fleet run for cfg.After before the window, checking on the
// agents' processes every second.
func (r *runner) wait(ctx context.Context) error {
	if r.cfg.After <= 0 {
		return nil
	}
	r.progress.say("settled; measuring in %v", r.cfg.After)
	return r.every(ctx, r.cfg.After, func(left time.Duration) {
		r.progress.waiting("measuring in %v", left.Round(time.Second))
	})
}

// every waits d, a second at a time: after each, it checks on the agents'
// processes (an error when one failed) and calls each with what is left
// of d.
func (r *runner) every(ctx context.Context, d time.Duration, each func(left time.Duration)) error {
	until := time.Now().Add(d)
	for time.Now().Before(until) {
		if err := sleepCtx(ctx, min(time.Second, time.Until(until))); err != nil {
			return err
		}
		if err := r.kids.failed(); err != nil {
			return err
		}
		each(time.Until(until))
	}
	return nil
}

// measure runs the measured window, and fills in what it measured. The
// collector's side of it (its CPU and the messages, bytes and items it
// read) is taken before the agents' first mark and after their second, so
// that it holds the window the agents count what they wrote in (their
// answers can take seconds on a loaded machine); µs per item divides the
// collector's CPU by the items it read over the same window.
func (r *runner) measure(ctx context.Context) error {
	res := r.res
	if err := writeAllocs(r.cfg.MemProfile, ".base"); err != nil {
		return err
	}
	m0, b0, i0 := targetTotals(r.c)
	res.traffic[0] = trafficKept(r.c.Snapshot())
	p0 := sampleProc()
	var q0 procSample
	if r.prom != nil {
		q0 = r.prom.sample()
	}
	mark0, err := r.kids.ask(ctx, "mark 0", "mark", time.Minute)
	if err != nil {
		return err
	}
	_, _, lag0 := targetTotals(r.c) // read after the agents' answers, as at the end
	res.seriesStart = listedSeries(r.c.Snapshot())
	peakHeap, err := r.window(ctx, p0.heap)
	if err != nil {
		return err
	}
	mark1, err := r.kids.ask(ctx, "mark 1", "mark", time.Minute)
	if err != nil {
		return err
	}
	p1 := sampleProc()
	if r.prom != nil {
		q1, pr := r.prom.sample(), res.prom
		pr.cpuKnown = q0.cpuKnown && q1.cpuKnown
		pr.cpu = (q1.cpu - q0.cpu).Seconds() / q1.at.Sub(q0.at).Seconds()
		pr.rss, pr.rssPeak = q1.rss, q1.rssPeak
		if err := r.prom.measure(pr, q1.at.Sub(q0.at)); err != nil {
			return err
		}
		if err := r.prom.failed(); err != nil {
			return err
		}
	}
	m1, b1, i1 := targetTotals(r.c)
	res.traffic[1] = trafficKept(r.c.Snapshot())
	if err := writeAllocs(r.cfg.MemProfile, ""); err != nil {
		return err
	}
	s0, s1 := sumStats(mark0), sumStats(mark1)
	res.lagStart, res.lagEnd = max(s0.Items-lag0, 0), max(s1.Items-i1, 0)
	res.window = p1.at.Sub(p0.at)
	res.messages, res.bytes, res.read = m1-m0, b1-b0, i1-i0
	res.written, res.bucketsWritten, res.items = s1.Messages-s0.Messages, s1.Buckets-s0.Buckets, s1.Items-s0.Items
	res.cpuKnown = p0.cpuKnown && p1.cpuKnown && s1.CPUNs > 0
	res.cpu = (p1.cpu - p0.cpu).Seconds() / res.window.Seconds()
	res.sys = (p1.sys - p0.sys).Seconds() / res.window.Seconds()
	res.faults = float64(p1.faults-p0.faults) / res.window.Seconds()
	res.agentsCPU = time.Duration(s1.CPUNs-s0.CPUNs).Seconds() / res.window.Seconds()
	res.agentsRSS = s1.RSS
	res.heap, res.heapSys, res.heapPeak = p1.heap, p1.heapSys, max(peakHeap, p1.heap)
	return nil
}

// window waits cfg.Duration, under the CPU profile when one is asked for,
// checking on the agents' processes and sampling the heap every second;
// it returns the heap's peak, from heap at its start. The latency
// breakers' transitions are measured meanwhile.
func (r *runner) window(ctx context.Context, heap uint64) (uint64, error) {
	if r.cfg.CPUProfile != "" {
		f, err := os.Create(r.cfg.CPUProfile)
		if err != nil {
			return 0, fmt.Errorf("--cpuprofile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return 0, fmt.Errorf("--cpuprofile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	r.progress.say("measuring for %v", r.cfg.Duration)
	r.res.lat.measure(true)
	defer r.res.lat.measure(false)
	inUse := newHeapReader()
	err := r.every(ctx, r.cfg.Duration, func(time.Duration) { heap = max(heap, inUse.read()) })
	return heap, err
}

// count stops the calls and counts them at both ends: the calls each agent
// made, and those the collector counted, series by series, until they
// agree or the collector's count stops moving.
func (r *runner) count(ctx context.Context) error {
	// Every call made must be counted, once the last buckets are in: the
	// agents ship a bucket when it ends, every 500 ms, and re-send the last
	// 4 for late additions. A count that has not moved for 8 s will not
	// move again: at 10,000 targets the last buckets of 200,000 series
	// took more than 2 s to come in (2 s ended the count with 8,872 calls
	// still on their way; 8 s: every one counted).
	res := r.res
	r.progress.say("stopping the calls; counting them at both ends")
	done, err := r.kids.ask(ctx, "stop", "done", 2*time.Minute)
	if err != nil {
		return err
	}
	res.agents = sumStats(done)
	for i := range r.made {
		for _, n := range r.made[i] {
			res.calls += n
		}
	}
	if r.floor != nil {
		// No store counts them: once the agents stopped, what they wrote
		// is read within a few passes.
		if err := sleepCtx(ctx, time.Second); err != nil {
			return err
		}
		res.floorItems, res.floorMessages = r.floor.items.Load(), r.floor.messages.Load()
		return nil
	}
	deadline := time.Now().Add(2 * time.Minute) // a collector far behind catches up first
	last, lastMoved := int64(-1), time.Now()
	for {
		if res.counted != last {
			last, lastMoved = res.counted, time.Now()
		}
		r.tally()
		if res.counted == res.calls || time.Now().After(deadline) ||
			res.counted == last && time.Since(lastMoved) >= 8*time.Second && res.downAtEnd == 0 {
			return nil
		}
		r.progress.waiting("%s of %s calls counted, %d targets not up", thousands(res.counted), thousands(res.calls), res.downAtEnd)
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
}

// tally compares the collector's counts with the calls made, series by
// series, and counts the targets not up.
func (r *runner) tally() {
	res := r.res
	res.counted, res.short = 0, res.short[:0]
	for i := range r.made {
		for j, rs := range r.resources {
			tm, _ := r.c.Totals(instanceName(i), rs)
			res.counted += tm.Pass
			if tm.Pass != r.made[i][j] {
				res.short = append(res.short, seriesShort{instance: instanceName(i), resource: rs, made: r.made[i][j], counted: tm.Pass})
			}
		}
	}
	// A target still reconnecting has its last buckets to deliver.
	res.downAtEnd = 0
	if s := r.c.Snapshot(); s != nil {
		res.downAtEnd = len(s.Targets) - upTargets(s)
	}
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
		why := collector.ProblemText(t.Problem)
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
func settle(ctx context.Context, kids children, c *collector.Collector, series int, slack int64, progress *progressWriter) error {
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
