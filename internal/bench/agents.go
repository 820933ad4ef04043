package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sentinel-top/sentinel-top/agent"
	"github.com/sentinel-top/sentinel-top/core"
)

// The agents of `sentinel-top bench` run in child processes, apart from the
// collector: each is the same executable run as the internal subcommand
// `bench-agents` (not in the help), serving a share of the fleet on
// loopback. It talks to the bench over its standard streams, one JSON
// object a line, each with "v": protocolVersion:
//
//	child -> bench (stdout)
//	  {"kind":"ready","ports":[...]}           once serving: a port per agent, in order
//	  {"kind":"started"}                       the answer to "start": the traffic has begun
//	  {"kind":"transition","agent":I,...}      a latency breaker's transition, as it happens
//	  {"kind":"mark","id":N,...}               the answer to "mark N": what was written, CPU, memory
//	  {"kind":"made","agent":I,"calls":[...]}  after "stop": the calls agent I admitted, by resource
//	  {"kind":"done",...}                      after the last "made"
//	bench -> child (stdin)
//	  start       begin the traffic (once the collector is connected: an
//	              agent keeps a minute of buckets for a reader coming later)
//	  mark N      count now
//	  stop        stop the traffic, then report the calls made
//	  (EOF)       close the agents and exit
//
// A child exits when its standard input ends, which is also when the bench
// is gone (on Linux it is also killed with it: Pdeathsig).

// AgentsCommand is the subcommand, left out of the help, that runs an
// agents' process: Run runs its own executable with it as the first
// argument, and the program's main hands what follows it to RunAgents.
const AgentsCommand = "bench-agents"

// ChildEnv is set in the environment of every agents' process: a test
// binary that Run re-executes as one sees it, and runs AgentsCommand
// instead of its tests.
const ChildEnv = "SENTINEL_TOP_BENCH_CHILD"

const (
	protocolVersion = 1
	// lineLimit bounds a line either way.
	lineLimit = 1 << 20
)

// ErrUsage is the error of an agents' process whose arguments are not
// ones Run gives.
var ErrUsage = errors.New("bad usage")

// event is one line from a child.
type event struct {
	V    int    `json:"v"`
	Kind string `json:"kind"`
	// ready
	Ports []int `json:"ports,omitempty"`
	// transition (Agent, To, AtMs, AtNs) and made (Agent, Calls)
	Agent int        `json:"agent,omitempty"`
	To    core.State `json:"to,omitempty"`
	AtMs  int64      `json:"atMs,omitempty"` // the agent's clock
	AtNs  int64      `json:"atNs,omitempty"` // the wall clock when the callback ran
	Calls []int64    `json:"calls,omitempty"`
	// mark
	ID int64 `json:"id,omitempty"`
	childStats
}

// childStats is what a child counts of itself, reported by mark and
// done.
type childStats struct {
	Messages      int64 `json:"messages,omitempty"` // written, as counted on the wire
	Buckets       int64 `json:"buckets,omitempty"`
	Items         int64 `json:"items,omitempty"`
	CPUNs         int64 `json:"cpuNs,omitempty"` // user + system of the process
	RSS           int64 `json:"rss,omitempty"`
	RSSPeak       int64 `json:"rssPeak,omitempty"`
	Dropped       int64 `json:"dropped,omitempty"` // messages the agents dropped for a slow reader
	Evicted       int64 `json:"evicted,omitempty"`
	Skipped       int64 `json:"skipped,omitempty"`    // resource buckets overwritten before they were shipped
	Unrecorded    int64 `json:"unrecorded,omitempty"` // counts the statistics dropped (core.Guard.Unrecorded)
	WriteTimeouts int64 `json:"writeTimeouts,omitempty"`
	ReadTimeouts  int64 `json:"readTimeouts,omitempty"`
	FirstPong     int64 `json:"firstPongTimeouts,omitempty"` // of ReadTimeouts: the first ping's
	ConnErrors    int64 `json:"connErrors,omitempty"`
	Refused       int64 `json:"refused,omitempty"`         // calls the latency breakers turned away
	LostEvents    int64 `json:"lostTransitions,omitempty"` // transitions not reported: the pipe was full
}

// share is one child's share of the fleet.
type share struct {
	first, count, fleet, resources int
	rate                           float64
	cpuProfile                     string
	nice                           int  // the process's niceness (run through nice(1)); 0 runs it as is
	metrics                        bool // the agents serve their metrics page too
}

// RunAgents is an agents' process: args are what follows AgentsCommand
// on its command line. It serves its share of the fleet on loopback until
// stdin ends, and speaks to Run over stdin and stdout. It writes its
// errors to stderr itself, where Run reads them, and returns them too: an
// error wrapping ErrUsage when args are not ones Run gives.
func RunAgents(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return runAgents(ctx, args, stdin, stdout, stderr, nil)
}

// runAgents is RunAgents, with afterTraffic (tests) run once the traffic
// has stopped, before the calls are reported.
func runAgents(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, afterTraffic func(*childFleet)) error {
	fs := flag.NewFlagSet(AgentsCommand, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg share
	fs.IntVar(&cfg.first, "first", 0, "index of the first agent")
	fs.IntVar(&cfg.count, "count", 1, "agents")
	fs.IntVar(&cfg.fleet, "fleet", 1, "agents in the whole fleet")
	fs.IntVar(&cfg.resources, "resources", 20, "resources per agent")
	fs.Float64Var(&cfg.rate, "rate", 20, "calls a second per resource")
	fs.StringVar(&cfg.cpuProfile, "cpuprofile", "", "write a CPU profile from the first mark to the second to FILE")
	fs.BoolVar(&cfg.metrics, "metrics", false, "serve each agent's metrics page (agent.MetricsPath) beside its stream")
	if err := fs.Parse(args); err != nil { // the flag package has said why
		return fmt.Errorf("%w: %w", ErrUsage, err)
	}
	if cfg.first < 0 || cfg.count < 1 || cfg.first+cfg.count > cfg.fleet || cfg.fleet > 100000 ||
		cfg.resources < 1 || cfg.resources > maxResources || cfg.rate <= 0 || cfg.rate > maxRate || fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: bad share %+v\n", AgentsCommand, cfg)
		return fmt.Errorf("%w: share %+v", ErrUsage, cfg)
	}
	if err := serveAgents(ctx, cfg, stdin, stdout, afterTraffic); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", AgentsCommand, err)
		return err
	}
	return nil
}

// childOut writes a child's lines, from one goroutine. Transitions are
// queued without waiting (an agent's OnTransition must not block): when
// the queue is full they are counted as lost.
type childOut struct {
	lines chan event
	lost  atomic.Int64
}

func (o *childOut) send(e event) {
	e.V = protocolVersion
	o.lines <- e
}

func (o *childOut) trySend(e event) {
	e.V = protocolVersion
	select {
	case o.lines <- e:
	default:
		o.lost.Add(1)
	}
}

// transitionsEvery is how long, at most, a transition's line waits to be
// written with the others that come meanwhile. Each write wakes the
// bench's reader in the collector's process, whose CPU bench counts as
// the collector's: a line a transition woke it 70 times a second at
// 2,000 agents. A transition is timed where it happens (AtNs), and the
// bench matches one that a snapshot showed before its line came
// (latency.transition), so the wait moves no measured latency.
const transitionsEvery = 100 * time.Millisecond

// run writes lines until lines is closed: at once, but transitions'
// lines at most transitionsEvery after the first held.
func (o *childOut) run(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	var err error
	var due <-chan time.Time // the transitions held are written then
	urgent := false          // a line of another kind is held
	write := func(e event) {
		if err == nil {
			err = enc.Encode(e)
		}
		if e.Kind != "transition" {
			urgent = true
		} else if due == nil {
			due = time.After(transitionsEvery)
		}
		if urgent && len(o.lines) == 0 {
			if err == nil {
				err = bw.Flush()
			}
			urgent, due = false, nil
		}
	}
	for {
		select {
		case e, ok := <-o.lines:
			if !ok {
				if err == nil {
					err = bw.Flush()
				}
				return err
			}
			write(e)
		case <-due:
			if err == nil {
				err = bw.Flush()
			}
			due = nil
		}
	}
}

// serveAgents serves cfg's agents and answers the bench's commands until
// stdin ends.
func serveAgents(ctx context.Context, cfg share, stdin io.Reader, stdout io.Writer, afterTraffic func(*childFleet)) error {
	out := &childOut{lines: make(chan event, 4096)}
	written := make(chan error, 1)
	go func() { written <- out.run(stdout) }()
	fleet, err := startChildFleet(cfg, func(i int, t core.Transition) {
		out.trySend(event{Kind: "transition", Agent: i, To: t.To, AtMs: t.AtMs, AtNs: time.Now().UnixNano()})
	})
	if err != nil {
		close(out.lines)
		<-written
		return err
	}
	defer fleet.close()
	out.send(event{Kind: "ready", Ports: fleet.ports})

	trafficCtx, stopTraffic := context.WithCancel(ctx)
	trafficDone := make(chan struct{})
	started, stopped := false, false
	start := func() {
		if started || stopped {
			return
		}
		started = true
		go func() {
			var wg sync.WaitGroup
			wg.Add(1)
			go func() { defer wg.Done(); fleet.trip(trafficCtx) }()
			fleet.traffic(trafficCtx, cfg.rate)
			wg.Wait()
			close(trafficDone)
		}()
	}
	stop := func() {
		if !stopped {
			stopped = true
			stopTraffic()
			if started {
				<-trafficDone
			}
		}
	}
	defer stop()

	// Commands, read on their own goroutine so that a cancelled context
	// ends the child even while nothing comes.
	cmds := make(chan string)
	readErr := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdin)
		sc.Buffer(make([]byte, 0, 4096), lineLimit)
		for sc.Scan() {
			select {
			case cmds <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
		readErr <- sc.Err()
	}()
	profiling := false
	defer func() {
		if profiling {
			pprof.StopCPUProfile()
		}
	}()
	err = func() error {
		for {
			var line string
			select {
			case <-ctx.Done():
				return ctx.Err()
			case err := <-readErr:
				return err // EOF: the bench is done with us
			case line = <-cmds:
			}
			verb, arg, _ := strings.Cut(line, " ")
			switch verb {
			case "start":
				start()
				out.send(event{Kind: "started"})
			case "mark":
				id, err := strconv.ParseInt(arg, 10, 64)
				if err != nil {
					return fmt.Errorf("mark %q: %w", arg, err)
				}
				out.send(event{Kind: "mark", ID: id, childStats: fleet.stats(out)})
				if cfg.cpuProfile != "" && (id == 0 && !profiling || id == 1 && profiling) {
					if err := profileWindow(cfg.cpuProfile, id); err != nil {
						return err
					}
					profiling = id == 0
				}
			case "stop":
				stop()
				if afterTraffic != nil {
					afterTraffic(fleet)
				}
				for i := range fleet.agents {
					out.send(event{Kind: "made", Agent: cfg.first + i, Calls: fleet.madeBy(i)})
				}
				out.send(event{Kind: "done", childStats: fleet.stats(out)})
			default:
				return fmt.Errorf("unknown command %q", line)
			}
		}
	}()
	stop()
	fleet.close()
	close(out.lines)
	if werr := <-written; err == nil && werr != nil {
		err = fmt.Errorf("writing to the bench: %w", werr)
	}
	return err
}

// profileWindow starts a CPU profile into file at mark 0 (the measured
// window's start) and stops it at mark 1 (its end); the bench's other marks
// (-1, while it waits for the collector to catch up) leave it be.
func profileWindow(file string, id int64) error {
	switch id {
	case 0:
		f, err := os.Create(file)
		if err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return fmt.Errorf("--cpuprofile: %w", err)
		}
	case 1:
		pprof.StopCPUProfile()
	}
	return nil
}

// childFleet is one child's agents and their traffic.
type childFleet struct {
	first     int // the index of agents[0] in the whole fleet
	agents    []*agent.Agent
	served    []chan error
	ports     []int
	resources []string
	// made counts the calls each agent admitted, by resource: made[i][j]
	// is written only by the traffic goroutine that owns agent i, and read
	// once the traffic has stopped.
	made    [][]int64
	refused atomic.Int64 // calls an Entry turned away (the latency breakers, when open)
	wire    wireCount    // what the agents wrote to their stream connections
	// The latency breakers (latency.go): trippers are the agents the
	// driver trips, tripped[i] the calls it made on agent i (written by
	// the driver only); tripEvery is how often it trips one.
	trippers  []int
	tripped   []int64
	tripEvery time.Duration
}

// madeBy is the calls agent i admitted, by resource.
func (f *childFleet) madeBy(i int) []int64 {
	calls := append([]int64(nil), f.made[i]...)
	calls[0] += f.tripped[i]
	return calls
}

// instanceName names agent i of the fleet.
func instanceName(i int) string { return fmt.Sprintf("bench-%04d", i) }

// resourceNames names the resources of every agent.
func resourceNames(n int) []string {
	var rs []string
	for r := 0; r < n; r++ {
		rs = append(rs, fmt.Sprintf("GET:http://svc-%d/api/v1/resource/%d", r%7, r))
	}
	return rs
}

// isTripper says whether agent i of the fleet is one the latency driver
// trips: the first latencyTrippers agents of latencyApp.
func isTripper(i int) bool { return i%10 == 0 && i/10 < latencyTrippers }

// startChildFleet starts cfg's agents, each serving on a loopback port of
// its own; onTransition is told the transitions of their latency breakers.
func startChildFleet(cfg share, onTransition func(i int, t core.Transition)) (*childFleet, error) {
	f := &childFleet{first: cfg.first, resources: resourceNames(cfg.resources), tripped: make([]int64, cfg.count)}
	for k := 0; k < cfg.count; k++ {
		i := cfg.first + k
		opts := agent.Options{App: fmt.Sprintf("bench-%d", i%10), Instance: instanceName(i), ServeMetrics: cfg.metrics}
		if opts.App == latencyApp {
			opts.OnTransition = func(t core.Transition) {
				if t.Resource == f.resources[0] {
					onTransition(i, t)
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
			if isTripper(i) {
				f.trippers = append(f.trippers, k)
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
		f.made = append(f.made, make([]int64, cfg.resources))
		f.ports = append(f.ports, ln.Addr().(*net.TCPAddr).Port)
	}
	// The fleet's trippers take turns every latencyEvery: this share's
	// turns come as often as it holds of them.
	if total := min(latencyTrippers, (cfg.fleet+9)/10); len(f.trippers) > 0 {
		f.tripEvery = latencyEvery * time.Duration(total) / time.Duration(len(f.trippers))
	}
	return f, nil
}

func (f *childFleet) close() {
	for i, a := range f.agents {
		a.Close()
		<-f.served[i]
	}
	f.agents, f.served = nil, nil
}

// stats reads the child's counters now.
func (f *childFleet) stats(out *childOut) childStats {
	s := childStats{Refused: f.refused.Load(), LostEvents: out.lost.Load(),
		WriteTimeouts: f.wire.writeTimeouts.Load(), ReadTimeouts: f.wire.readTimeouts.Load(), FirstPong: f.wire.firstPongTimeouts.Load(), ConnErrors: f.wire.connErrors.Load()}
	s.Messages, s.Buckets, s.Items = f.wire.load()
	p := sampleProc()
	s.CPUNs, s.RSS, s.RSSPeak = int64(p.cpu), p.rss, p.rssPeak
	for _, a := range f.agents {
		st := a.Stats()
		s.Dropped += st.Dropped
		s.Evicted += st.Evicted
		s.Skipped += st.Skipped
		s.Unrecorded += st.Unrecorded
	}
	return s
}

// traffic calls every resource of every agent rate times a second until
// ctx ends, spread over one goroutine per CPU. The calls are placed half an
// interval away from the agents' bucket boundaries, so that at 2 calls a
// second each 500 ms bucket of each resource still gets its call.
func (f *childFleet) traffic(ctx context.Context, rate float64) {
	workers := min(runtime.GOMAXPROCS(0), len(f.agents))
	ms := time.Now().UnixMilli()
	boundary := ms - ms%core.ResourceBucketMs + core.ResourceBucketMs
	start := time.UnixMilli(boundary).Add(-time.Duration(float64(time.Second) / rate / 2))
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lo, hi := w*len(f.agents)/workers, (w+1)*len(f.agents)/workers
			tick := time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
			done := int64(0)
			for {
				select {
				case <-ctx.Done():
					return
				case now := <-tick.C:
					due := int64(rate*now.Sub(start).Seconds()) - done
					if due <= 0 {
						continue
					}
					for k := int64(0); k < due; k++ {
						for i := lo; i < hi; i++ {
							if ctx.Err() != nil { // a worker far behind stops at once
								return
							}
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
									cause = errFailedCall
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

var errFailedCall = errors.New("bench: a failed call")
