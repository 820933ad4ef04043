package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/internal/bench"
	"github.com/sentinel-top/sentinel-top/internal/cliflag"
)

const benchUsage = `Usage: sentinel-top bench [--agents N] [--resources R] [--rate CALLS] [--duration D] [--after D] [--per-process P] [--agents-nice K] [--floor] [--with-prometheus]

Measures the collector at fleet scale on this machine. N agents, each with R
resources called CALLS times a second, serve their streams on loopback from
child processes of this command (P agents each); the collector runs alone
in this process: it dials every one, aggregates, runs triage and publishes
4 snapshots a second, as the dashboard's does. Prints the ingest rate, the
collector's CPU (this process's, per item too, and the kernel's share of
it) and memory (with the kernel's transparent huge page mode and how much
of the process was in huge pages: on the machine of docs/BENCHMARKS.md,
runs at "always" used about a tenth less CPU an item than at "madvise"),
the agents' CPU, the time from a breaker transition at an agent to the
first snapshot showing it (p50, p99), reconnects and their causes, and
checks that every call was counted.

Once the agents have stopped, it times encoding/json and the collector's
own decoder on the messages an agent of the fleet sends, in this process:
a reference for the machine, since the same code measured 2.3 to 3.5
times apart per item on two machines of the same kind. The collector's µs per item
is also printed as a multiple of encoding/json's decoding alone.

With --after, the window begins that long after the fleet settled: the
traffic kept to replay plans fills for minutes at a fleet's scale, and
the heap and the plans' replays grow with it (printed under memory).

With --floor, the collector's store takes no buckets: its sources read,
frame and decode every stream as usual and only count what they decoded,
so the CPU per item is this machine's floor, what the system calls, the
decoding and the runtime cost before the store's and triage's work (the
two runs' difference). Calls are then not accounted.

With --with-prometheus, each agent also serves its metrics page (the
collector's metric names, for its own instance), and a real Prometheus
server scrapes every agent every second over the same window: its CPU and
memory (its own process's), the series it holds and the calls its last
scrapes sum are printed beside the collector's, and both per series.

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
  sentinel-top bench --agents 1000 --resources 20 --with-prometheus
  sentinel-top bench --agents 2000 --resources 20 --rate 4 --floor

Flags:
`

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := newPlainCommand("sentinel-top bench", benchUsage, stderr)
	fs := cmd.fs
	cfg := bench.DefaultConfig()
	fs.IntVar(&cfg.Agents, "agents", cfg.Agents, "agents (targets) on loopback")
	fs.IntVar(&cfg.Resources, "resources", cfg.Resources, "resources per agent")
	fs.Float64Var(&cfg.Rate, "rate", cfg.Rate, "calls a second per resource (errors: one in ten); at 2 or more every 500 ms bucket gets calls")
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "how long to measure")
	fs.DurationVar(&cfg.After, "after", cfg.After, "begin measuring this long after every series is seen and the collector caught up (0 to 1h)")
	fs.Var(cliflag.Bytes(&cfg.MaxMemory), "max-memory", "most memory the collector's process may take, as the dashboard's --max-memory: three quarters of it for what the agents make it keep, and the Go runtime's memory limit at 7/8 of it (default 2GiB: 200,000 series need about 1GiB); what does not fit is counted, and its calls missing")
	fs.IntVar(&cfg.PerProcess, "per-process", cfg.PerProcess, "agents per child process (2 open files each)")
	fs.IntVar(&cfg.AgentsNice, "agents-nice", cfg.AgentsNice, "run the agents' processes at this niceness (1 to 19, through nice(1)), so that on a machine too small for both the collector is not starved by the load it measures")
	fs.StringVar(&cfg.CPUProfile, "cpuprofile", "", "write a CPU profile (pprof) of the collector over the measured window to FILE")
	fs.StringVar(&cfg.MemProfile, "memprofile", "", "write the collector's allocations (pprof) at the end of the measured window to FILE and at its start to FILE.base: go tool pprof -sample_index=alloc_space -diff_base FILE.base BINARY FILE")
	fs.StringVar(&cfg.AgentsCPUProfile, "agents-cpuprofile", "", "write one of each agents' process to FILE.0, FILE.1, ...")
	fs.BoolVar(&cfg.Floor, "floor", false, "leave the collector's store out of the buckets: its sources read and decode every stream and hand the buckets to no store, so the cpu per item is this machine's floor, what reading and decoding cost before the store's and triage's work (calls not accounted)")
	withProm := fs.Bool("with-prometheus", false, "also serve each agent's metrics page, and run a Prometheus server (--prometheus-bin) that scrapes them every second over the same window as the collector reads their streams: the CPU and memory of both, per series")
	promBin := fs.String("prometheus-bin", "prometheus", "the Prometheus server's executable, for --with-prometheus")
	if code, ok := cmd.parse(args, stdout, stderr); !ok {
		return code
	}
	if *withProm {
		bin, err := exec.LookPath(*promBin)
		if err != nil {
			fmt.Fprintf(stderr, "sentinel-top bench: --with-prometheus: %v (Debian: apt-get install prometheus)\n", err)
			return exitUsage
		}
		cfg.Prometheus = bin
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintln(stderr, "sentinel-top bench:", err)
		return exitUsage
	}
	defer collector.FollowBudget(cfg.MaxMemory)() // as the dashboard's collector does
	if err := bench.Run(ctx, cfg, stdout, stderr); err != nil {
		fmt.Fprintln(stderr, "sentinel-top bench:", err)
		return exitRuntime
	}
	return exitOK
}

// runBenchAgents is one of bench's agents' processes (bench.AgentsCommand,
// left out of the help): bench runs this executable again as them. It
// writes its errors itself, where bench reads them.
func runBenchAgents(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	err := bench.RunAgents(ctx, args, stdin, stdout, stderr)
	switch {
	case errors.Is(err, bench.ErrUsage):
		return exitUsage
	case err != nil:
		return exitRuntime
	}
	return exitOK
}
