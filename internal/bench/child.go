package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"

	"github.com/sentinel-top/sentinel-top/agent"
	"github.com/sentinel-top/sentinel-top/collector/source"
	"github.com/sentinel-top/sentinel-top/internal/termtext"
)

// child is one child process serving agents first to first+count-1
// (agents.go), as the bench sees it.
type child struct {
	first, count int
	cmd          *exec.Cmd
	stdin        io.WriteCloser
	stderr       *tailBuffer
	replies      chan event    // ready, mark and done; made lines go to onMade
	exited       chan struct{} // closed once the process is waited for
	err          error         // why it ended, set before exited is closed
}

// childHooks receive a child's reports from its reading goroutine.
type childHooks struct {
	transition func(agent int, e *event)
	made       func(agent int, calls []int64)
	resources  int
}

// startChild runs exe as the agents first to first+count-1 of a fleet.
func startChild(ctx context.Context, exe string, cfg share, hooks childHooks) (*child, error) {
	ch := &child{first: cfg.first, count: cfg.count, stderr: &tailBuffer{max: 16 << 10},
		replies: make(chan event, 8), exited: make(chan struct{})}
	ch.cmd = exec.CommandContext(ctx, exe, AgentsCommand,
		"--first", strconv.Itoa(cfg.first), "--count", strconv.Itoa(cfg.count), "--fleet", strconv.Itoa(cfg.fleet),
		"--resources", strconv.Itoa(cfg.resources), "--rate", strconv.FormatFloat(cfg.rate, 'g', -1, 64))
	if cfg.cpuProfile != "" {
		ch.cmd.Args = append(ch.cmd.Args, "--cpuprofile", cfg.cpuProfile)
	}
	if cfg.metrics {
		ch.cmd.Args = append(ch.cmd.Args, "--metrics")
	}
	if cfg.nice > 0 {
		// nice(1) sets the niceness before it runs exe, so every thread of
		// the agents' process has it (a thread's own would not pass to
		// the runtime's threads already running).
		nice, err := exec.LookPath("nice")
		if err != nil {
			return nil, fmt.Errorf("--agents-nice: %w", err)
		}
		ch.cmd.Path = nice
		ch.cmd.Args = append([]string{nice, "-n", strconv.Itoa(cfg.nice), exe}, ch.cmd.Args[1:]...)
	}
	ch.cmd.Env = append(os.Environ(), ChildEnv+"=1")
	ch.cmd.Stderr = ch.stderr
	ch.cmd.SysProcAttr = childAttr() // killed with us (Linux)
	ch.cmd.WaitDelay = 5 * time.Second
	stdin, err := ch.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := ch.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	ch.stdin = stdin
	if err := ch.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the agents' process: %w", err)
	}
	go func() {
		err := ch.read(quietReader(stdout), hooks)
		if err != nil {
			_ = ch.cmd.Process.Kill() // it speaks nonsense: no use waiting for it
		}
		werr := ch.cmd.Wait()
		switch {
		case err != nil:
			ch.err = err
		case werr != nil:
			ch.err = werr
		default:
			ch.err = io.EOF // ended, without error, when asked
		}
		close(ch.exited)
	}()
	return ch, nil
}

// read reads the child's lines until its standard output ends.
func (ch *child) read(r io.Reader, hooks childHooks) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), lineLimit)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return fmt.Errorf("a line from the agents' process: %w", err)
		}
		if e.V != protocolVersion {
			return fmt.Errorf("the agents' process speaks version %d of the bench protocol, not %d", e.V, protocolVersion)
		}
		agentOK := e.Agent >= ch.first && e.Agent < ch.first+ch.count
		switch e.Kind {
		case "transition":
			if !agentOK {
				return fmt.Errorf("a transition of agent %d, not one of %d-%d", e.Agent, ch.first, ch.first+ch.count-1)
			}
			hooks.transition(e.Agent, &e)
			continue
		case "made":
			if !agentOK || len(e.Calls) != hooks.resources {
				return fmt.Errorf("calls of agent %d for %d resources: want one of %d-%d, %d resources",
					e.Agent, len(e.Calls), ch.first, ch.first+ch.count-1, hooks.resources)
			}
			hooks.made(e.Agent, e.Calls)
			continue
		case "ready":
			if len(e.Ports) != ch.count {
				return fmt.Errorf("%d ports for %d agents", len(e.Ports), ch.count)
			}
		case "mark", "done", "started":
		default:
			return fmt.Errorf("unknown report %q from the agents' process", termtext.Sanitize(e.Kind, 40))
		}
		select {
		case ch.replies <- e:
		default:
			return fmt.Errorf("the agents' process reports %q unasked", e.Kind)
		}
	}
	return sc.Err()
}

// wait returns the next reply of the given kind, or why none came.
func (ch *child) wait(ctx context.Context, kind string, timeout time.Duration) (event, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	check := func(e event) (event, error) {
		if e.Kind != kind {
			return e, fmt.Errorf("the agents' process answered %q, not %q", e.Kind, kind)
		}
		return e, nil
	}
	select {
	case e := <-ch.replies:
		return check(e)
	case <-ch.exited:
		select {
		case e := <-ch.replies: // what it said before it went
			return check(e)
		default:
		}
		return event{}, ch.failure()
	case <-ctx.Done():
		return event{}, ctx.Err()
	case <-t.C:
		return event{}, fmt.Errorf("agents %d-%d: no %q after %v", ch.first, ch.first+ch.count-1, kind, timeout)
	}
}

// send writes one command.
func (ch *child) send(cmd string) error {
	if _, err := io.WriteString(ch.stdin, cmd+"\n"); err != nil {
		return fmt.Errorf("agents %d-%d: %w", ch.first, ch.first+ch.count-1, errors.Join(err, ch.failureNow()))
	}
	return nil
}

// failure describes how the child ended, with the end of its stderr; call
// it once exited is closed.
func (ch *child) failure() error {
	why := ch.err
	if errors.Is(why, io.EOF) {
		why = errors.New("exited before it was asked to")
	}
	msg := termtext.Sanitize(string(bytes.TrimSpace(ch.stderr.bytes())), 4000)
	if msg == "" {
		return fmt.Errorf("agents %d-%d: %w", ch.first, ch.first+ch.count-1, why)
	}
	return fmt.Errorf("agents %d-%d: %w; its stderr: %s", ch.first, ch.first+ch.count-1, why, msg)
}

// failureNow is failure if the child has ended.
func (ch *child) failureNow() error {
	select {
	case <-ch.exited:
		return ch.failure()
	default:
		return nil
	}
}

// stop closes the child's standard input, on which it closes its agents
// and exits, and waits for it (killing it after timeout). It returns an
// error when the child failed.
func (ch *child) stop(timeout time.Duration) error {
	_ = ch.stdin.Close()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-ch.exited:
	case <-t.C:
		_ = ch.cmd.Process.Kill()
		<-ch.exited
		return fmt.Errorf("agents %d-%d: did not exit within %v of being told to", ch.first, ch.first+ch.count-1, timeout)
	}
	if errors.Is(ch.err, io.EOF) {
		return nil
	}
	return ch.failure()
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf)
}

// niceness is the least niceness of the agents' processes as the kernel
// reports it, -1 when it cannot be read.
func (kids children) niceness() int {
	least := -1
	for _, ch := range kids {
		n, ok := procNice(ch.cmd.Process.Pid)
		if !ok {
			return -1
		}
		if least < 0 || n < least {
			least = n
		}
	}
	return least
}

// children are the agents' processes, in the order of their agents.
type children []*child

// start runs cfg's fleet as processes of perProcess agents each, and
// returns its targets once every agent serves.
func (kids *children) start(ctx context.Context, cfg Config, hooks childHooks) ([]source.Target, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding this executable to run the agents: %w", err)
	}
	for first := 0; first < cfg.Agents; first += cfg.PerProcess {
		part := share{first: first, count: min(cfg.PerProcess, cfg.Agents-first), fleet: cfg.Agents,
			resources: cfg.Resources, rate: cfg.Rate, nice: cfg.AgentsNice, metrics: cfg.Prometheus != ""}
		if cfg.AgentsCPUProfile != "" {
			part.cpuProfile = cfg.AgentsCPUProfile + "." + strconv.Itoa(len(*kids))
		}
		ch, err := startChild(ctx, exe, part, hooks)
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
func (kids children) ask(ctx context.Context, cmd, kind string, timeout time.Duration) ([]event, error) {
	for _, ch := range kids {
		if err := ch.send(cmd); err != nil {
			return nil, err
		}
	}
	out := make([]event, len(kids))
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
func (kids children) failed() error {
	for _, ch := range kids {
		if err := ch.failureNow(); err != nil {
			return err
		}
	}
	return nil
}

// stop ends every child and waits for them.
func (kids children) stop() error {
	var first error
	for _, ch := range kids {
		if err := ch.stop(30 * time.Second); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// sum adds the children's counters up.
func sumStats(es []event) childStats {
	var s childStats
	for _, e := range es {
		c := e.childStats
		s.Messages, s.Buckets, s.Items = s.Messages+c.Messages, s.Buckets+c.Buckets, s.Items+c.Items
		s.CPUNs, s.RSS, s.RSSPeak = s.CPUNs+c.CPUNs, s.RSS+c.RSS, s.RSSPeak+c.RSSPeak
		s.Dropped, s.Evicted, s.Skipped = s.Dropped+c.Dropped, s.Evicted+c.Evicted, s.Skipped+c.Skipped
		s.WriteTimeouts, s.ReadTimeouts, s.ConnErrors = s.WriteTimeouts+c.WriteTimeouts, s.ReadTimeouts+c.ReadTimeouts, s.ConnErrors+c.ConnErrors
		s.FirstPong, s.Unrecorded = s.FirstPong+c.FirstPong, s.Unrecorded+c.Unrecorded
		s.Refused, s.LostEvents = s.Refused+c.Refused, s.LostEvents+c.LostEvents
	}
	return s
}
