package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sentinel-top/sentinel-top/internal/promapi"
	"github.com/sentinel-top/sentinel-top/internal/termtext"
)

// A run with Config.Prometheus set also starts a real Prometheus server
// that scrapes every agent's metrics page (agent.MetricsPath, the same
// counts their streams carry) every second while the collector reads their
// streams: the two are measured over the same window, each in its own
// process, so that their CPU and memory per series stand side by side.

// promScrapeInterval is how often Prometheus scrapes each agent: 1 s, the
// resolution breaker dynamics need (a retry timeout is seconds).
const promScrapeInterval = time.Second

// promServer is the Prometheus process of a run.
type promServer struct {
	cmd    *exec.Cmd
	dir    string
	addr   string
	log    *tailBuffer
	exited chan struct{}
	client *http.Client
}

// startPrometheus runs bin with a configuration that scrapes targets'
// metrics every second, its data in a temporary directory, listening on a
// free loopback port, and returns once it is ready.
func startPrometheus(ctx context.Context, bin string, targets []string) (*promServer, error) {
	dir, err := os.MkdirTemp("", "sentinel-top-bench-prometheus-")
	if err != nil {
		return nil, err
	}
	p := &promServer{dir: dir, log: &tailBuffer{max: 16 << 10}, exited: make(chan struct{}),
		client: &http.Client{Timeout: 30 * time.Second}}
	fail := func(err error) (*promServer, error) {
		p.stop()
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fail(err)
	}
	p.addr = ln.Addr().String()
	ln.Close() // Prometheus listens on it next: a race with another program, lost only rarely
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "global:\n  scrape_interval: %s\n  scrape_timeout: %s\nscrape_configs:\n  - job_name: agents\n    honor_labels: true\n    static_configs:\n      - targets:\n",
		promScrapeInterval, promScrapeInterval)
	for _, t := range targets {
		fmt.Fprintf(&cfg, "          - %q\n", t)
	}
	cfgFile := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgFile, []byte(cfg.String()), 0o600); err != nil {
		return fail(err)
	}
	p.cmd = exec.CommandContext(ctx, bin, "--config.file="+cfgFile, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+p.addr, "--log.level=warn")
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	p.cmd.SysProcAttr = childAttr() // killed with us (Linux)
	p.cmd.WaitDelay = 5 * time.Second
	if err := p.cmd.Start(); err != nil {
		return fail(fmt.Errorf("--with-prometheus: starting %s: %w", bin, err))
	}
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := p.client.Get("http://" + p.addr + "/-/ready")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		if err := p.failed(); err != nil {
			return fail(err)
		}
		if time.Now().After(deadline) {
			return fail(fmt.Errorf("prometheus not ready after a minute: %v", err))
		}
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			return fail(err)
		}
	}
}

// failed says how Prometheus ended, if it has.
func (p *promServer) failed() error {
	select {
	case <-p.exited:
		return fmt.Errorf("prometheus exited (%v): %s", p.cmd.ProcessState,
			termtext.Sanitize(string(bytes.TrimSpace(p.log.bytes())), 2000))
	default:
		return nil
	}
}

// stop ends Prometheus and removes its data.
func (p *promServer) stop() {
	if p.cmd != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
	_ = os.RemoveAll(p.dir)
}

// sample is Prometheus's CPU time and memory now, as the kernel counts
// them (/proc/PID/stat and status, Linux).
func (p *promServer) sample() procSample {
	s := procSample{at: time.Now()}
	pid := strconv.Itoa(p.cmd.Process.Pid)
	s.cpu, s.cpuKnown = pidCPU(pid)
	s.rss, s.rssPeak = pidStatusBytes(pid, "VmRSS:"), pidStatusBytes(pid, "VmHWM:")
	return s
}

// get decodes the data of a successful answer of the HTTP API at path.
func (p *promServer) get(path string, params url.Values, data any) error {
	if err := (promapi.Client{HTTP: p.client, Base: "http://" + p.addr}).Get(path, params, data); err != nil {
		return fmt.Errorf("prometheus: %w", err)
	}
	return nil
}

// query runs an instant query and returns the value of its one sample:
// false when it has none.
func (p *promServer) query(q string) (float64, bool, error) {
	samples, err := promapi.Client{HTTP: p.client, Base: "http://" + p.addr}.Vector(q)
	if err != nil {
		return 0, false, fmt.Errorf("prometheus: %w", err)
	}
	if len(samples) != 1 {
		return 0, false, nil
	}
	return samples[0].Value, true, nil
}

// promResult is what a run measured of Prometheus.
type promResult struct {
	cpu              float64 // cores over the window
	cpuKnown         bool
	rss, rssPeak     int64
	headSeries       float64 // series in its head block (/api/v1/status/tsdb)
	samplesPerScrape float64 // the samples of one scrape of every agent
	targetsUp        float64
	scrapes, failed  float64 // of the agents, over the window
	scrapeMax        float64 // seconds: the slowest scrape of an agent, over the window
	counted          float64 // the calls the passes it stored sum, once the traffic stopped
	countedOK        bool
	// A global view's query (globalQuery) over the measured window: how
	// long it took, the series it read and the rows it returned.
	queryTook           time.Duration
	queryRead, queryOut int
}

// globalQuery is what a global view (`sentinel-top --prometheus`) asks of
// Prometheus: every app x resource's pass rate, summed over instances on
// the server, step by step.
const globalQuery = `sum by (app, resource) (rate(sentinel_top_resource_pass_total{job="agents"}[5s]))`

// timeQuery runs q as a range query over [start, end] at a step of 1 s and
// returns how long it took and how many series it returned.
func (p *promServer) timeQuery(q string, start, end time.Time) (time.Duration, int, error) {
	var data struct {
		Result []json.RawMessage `json:"result"`
	}
	began := time.Now()
	err := p.get("/api/v1/query_range", url.Values{"query": {q}, "start": {promapi.Unix(start)}, "end": {promapi.Unix(end)}, "step": {"1"}}, &data)
	return time.Since(began), len(data.Result), err
}

// measure reads what Prometheus says of itself at the window's
// end (over the last window seconds).
func (p *promServer) measure(res *promResult, window time.Duration) error {
	w := fmt.Sprintf("%ds", max(int(window.Seconds()), 2))
	var tsdb struct {
		HeadStats struct {
			NumSeries float64 `json:"numSeries"`
		} `json:"headStats"`
	}
	if err := p.get("/api/v1/status/tsdb", nil, &tsdb); err != nil {
		return err
	}
	res.headSeries = tsdb.HeadStats.NumSeries
	end := time.Now()
	var err error
	if res.queryTook, res.queryOut, err = p.timeQuery(globalQuery, end.Add(-window), end); err != nil {
		return err
	}
	read, _, err := p.query(`count(sentinel_top_resource_pass_total{job="agents"})`)
	if err != nil {
		return err
	}
	res.queryRead = int(read)
	for _, q := range []struct {
		expr string
		to   *float64
	}{
		{`sum(scrape_samples_scraped{job="agents"})`, &res.samplesPerScrape},
		{`sum(up{job="agents"})`, &res.targetsUp},
		{`sum(count_over_time(up{job="agents"}[` + w + `]))`, &res.scrapes},
		{`sum(count_over_time(up{job="agents"}[` + w + `])) - sum(sum_over_time(up{job="agents"}[` + w + `]))`, &res.failed},
		{`max(max_over_time(scrape_duration_seconds{job="agents"}[` + w + `]))`, &res.scrapeMax},
	} {
		v, ok, err := p.query(q.expr)
		if err != nil {
			return err
		}
		if ok && q.to != nil {
			*q.to = v
		}
	}
	return nil
}

// waitUp waits until Prometheus has scraped each of the agents (its
// targets are applied within 5 s of its start, then scraped within a
// scrape interval), for at most a minute.
func (p *promServer) waitUp(ctx context.Context, agents int, progress *progressWriter) error {
	deadline := time.Now().Add(time.Minute)
	for {
		up, _, err := p.query(`sum(up{job="agents"})`)
		if err != nil || int(up) == agents {
			return err
		}
		if err := p.failed(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("prometheus scraped %.0f of %d agents after a minute", up, agents)
		}
		progress.waiting("prometheus has scraped %.0f of %d agents", up, agents)
		if err := sleepCtx(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
}

// count waits until the passes Prometheus stored of the agents sum calls
// (the traffic has stopped: their pages stand still), or the sum has not
// moved for 5 scrape intervals, for at most 30 s, and returns the last sum
// it saw. Each series counts with the latest value it stored in the last
// minute: a scrape that failed (its series stale) takes nothing away.
func (p *promServer) count(ctx context.Context, calls int64) (float64, bool, error) {
	deadline := time.Now().Add(30 * time.Second)
	last, moved := -1.0, time.Now()
	for {
		v, ok, err := p.query(`sum(max_over_time(sentinel_top_resource_pass_total{job="agents"}[1m]))`)
		if v != last {
			last, moved = v, time.Now()
		}
		if err != nil || ok && int64(v) == calls || time.Since(moved) > 5*promScrapeInterval || time.Now().After(deadline) {
			return v, ok && int64(v) == calls, err
		}
		if err := sleepCtx(ctx, 250*time.Millisecond); err != nil {
			return v, false, err
		}
	}
}

// pidCPU is a process's user and system time, from /proc/PID/stat (in
// clock ticks: 100 a second on Linux).
func pidCPU(pid string) (time.Duration, bool) {
	f, ok := pidStat(pid, 13)
	if !ok {
		return 0, false
	}
	// After ")": state is the 3rd field, utime the 14th, stime the 15th.
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	const ticks = 100 // sysconf(_SC_CLK_TCK) on Linux
	return time.Duration(u+s) * time.Second / ticks, true
}

// pidStatusBytes reads a "kB" line of /proc/PID/status.
func pidStatusBytes(pid, key string) int64 {
	n, _ := procKB("/proc/"+pid+"/status", key)
	return n
}

// procKB is the value of the line "key N kB" of a /proc file, in bytes;
// false when the file or the line cannot be read.
func procKB(path, key string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, key); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err == nil {
				return kb << 10, true
			}
		}
	}
	return 0, false
}
