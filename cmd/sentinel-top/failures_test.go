package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/agent"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/fixtures"
	"github.com/sentinel-top/sentinel-top/internal/fifo"
)

// TestReportOfFailedInputExits3: an input that gave nothing is a failure
// with one line that says why, never an empty report: unreachable targets,
// a plain HTTP server, a directory, garbage, random bytes, an empty file.
func TestReportOfFailedInputExits3(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.ndjson")
	os.WriteFile(garbage, []byte("not json\n{\"v\":2}\n"), 0o600)
	random := filepath.Join(dir, "random.bin")
	b := make([]byte, 4096)
	rand.Read(b)
	os.WriteFile(random, b, 0o600)
	empty := filepath.Join(dir, "empty.ndjson")
	os.WriteFile(empty, nil, 0o600)
	plain := &http.Server{Handler: http.NotFoundHandler(), ReadHeaderTimeout: time.Second}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go plain.Serve(ln)
	defer plain.Close()

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--targets", "127.0.0.1:1", "--for", "1s", "--fail-on", "critical"}, "no data: all 1 target down: 127.0.0.1:1"},
		{[]string{"--targets", ln.Addr().String(), "--for", "1s"}, "no data: all 1 target down: " + ln.Addr().String()},
		{[]string{"--replay", dir}, "nothing replayable in " + dir + ": it is a directory"},
		{[]string{"--replay", garbage}, "nothing replayable in " + garbage + ": 2 lines rejected, the first at " + garbage + ":1"},
		{[]string{"--replay", random}, "nothing replayable in " + random},
		{[]string{"--replay", empty}, "nothing replayable in " + empty + ": it holds no messages"},
	} {
		code, out, errOut := runCmd(t, append([]string{"report"}, c.args...)...)
		if code != exitRuntime || !strings.Contains(errOut, c.want) || strings.Contains(out, "No findings") {
			t.Errorf("report %v: exit %d, stdout %q, stderr %q; want exit 3 and %q", c.args, code, out, errOut, c.want)
		}
	}
	// The dashboard refuses the same before it needs a terminal.
	if code, _, errOut := runCmd(t, "--replay", garbage); code != exitRuntime || !strings.Contains(errOut, "nothing replayable") {
		t.Errorf("dashboard --replay garbage: exit %d, stderr %q", code, errOut)
	}
}

// TestReportWarnsOfATargetDown: one target of two down is a warning, in
// the report's header and on stderr, and the report of the other goes on.
func TestReportWarnsOfATargetDown(t *testing.T) {
	a, err := agent.New(agent.Options{App: "order", Instance: "order-1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.LoadRules([]core.BreakerRule{{Resource: "db", Strategy: core.ErrorRatio, Threshold: 0.5,
		MinRequestAmount: 20, StatIntervalMs: 10000, RetryTimeoutMs: 30000}}, nil); err != nil {
		a.Close()
		t.Fatal(err)
	}
	addr := busyAgent(t, a)
	code, out, errOut := runCmd(t, "report", "--targets", addr+",127.0.0.1:1", "--for", "2s")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if !strings.Contains(errOut, "warning: target 127.0.0.1:1: ") || !strings.Contains(out, "Warning:") ||
		!strings.Contains(out, "target 127.0.0.1:1: ") {
		t.Fatalf("the down target is not a warning:\nstdout %s\nstderr %s", out, errOut)
	}
}

// TestReportUsageAndFailOnSaysWhy: --for with a replay is a usage error;
// --fail-on names the findings that tripped it.
func TestReportUsageAndFailOnSaysWhy(t *testing.T) {
	if code, _, errOut := runCmd(t, "report", "--replay", "rule-push-partial", "--for", "3s"); code != exitUsage ||
		!strings.Contains(errOut, "--for applies to live input") {
		t.Errorf("--for with --replay: exit %d, %q", code, errOut)
	}
	code, _, errOut := runCmd(t, "report", "--replay", "rule-push-partial", "--fail-on", "warning")
	if code != exitFailOn || !strings.Contains(errOut, "--fail-on warning: critical rule-drift gateway/createOrder") {
		t.Errorf("--fail-on: exit %d, %q", code, errOut)
	}
	// A postmortem of an incident that was critical fails the gate, though
	// the sawtooth had ended by the end of the recording.
	code, _, errOut = runCmd(t, "report", "--replay", "sawtooth-db-slow", "--fail-on", "critical")
	if code != exitFailOn || !strings.Contains(errOut, "--fail-on critical: critical (now warning) sawtooth ") {
		t.Errorf("--fail-on critical of an ended incident: exit %d, %q", code, errOut)
	}
	if _, out, _ := runCmd(t, "--version"); !strings.HasPrefix(out, "sentinel-top ") || strings.Contains(out, "(devel)") {
		t.Errorf("--version: %q", out)
	}
	_, out, errOut := runCmd(t, "--help")
	for _, sub := range []string{"report --help", "serve --help", "bench --help"} {
		if !strings.Contains(out+errOut, sub) {
			t.Errorf("--help does not name %q", sub)
		}
	}
}

// TestRecordingSurvivesKill9 runs a recording report in a child process,
// kills it with SIGKILL after a few seconds, and replays what is on disk:
// flushed every second, the .gz recording holds data up to about the
// kill, not the 10 bytes of a gzip header.
func TestRecordingSurvivesKill9(t *testing.T) {
	if path := os.Getenv("SENTINEL_TOP_TEST_RECORD_CHILD"); path != "" {
		// The child: record a demo for far longer than the parent waits.
		runCmd(t, "report", "--demo", "recovery-herd", "--for", "10m", "--speed", "5", "--record", path)
		return
	}
	path := filepath.Join(t.TempDir(), "killed.ndjson.gz")
	cmd := exec.Command(os.Args[0], "-test.run", "^TestRecordingSurvivesKill9$")
	cmd.Env = append(os.Environ(), "SENTINEL_TOP_TEST_RECORD_CHILD="+path)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(4 * time.Second)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	code, out, errOut := runCmd(t, "report", "--replay", path, "--format", "json")
	if code != exitOK {
		t.Fatalf("replaying the killed recording: exit %d, %s", code, errOut)
	}
	var rep struct {
		Messages int64 `json:"messages"`
		From, To int64
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	// 4 s of wall time at 5x is about 20 s of demo: at least a few
	// seconds of it must be on disk.
	if rep.Messages < 20 || rep.To-rep.From < 5_000 {
		t.Fatalf("the killed recording holds %d messages over %d ms (%s)", rep.Messages, rep.To-rep.From, errOut)
	}
	t.Logf("killed after 4 s: %d messages over %d ms replayable", rep.Messages, rep.To-rep.From)
}

// TestRecordRefusesToOverwriteOrFollowLinks: --record never replaces an
// existing file unless --record-overwrite, and never writes through a
// symbolic link.
func TestRecordRefusesToOverwriteOrFollowLinks(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "old.ndjson")
	os.WriteFile(existing, []byte("precious\n"), 0o600)
	link := filepath.Join(dir, "link.ndjson")
	os.Symlink(existing, link)
	for _, args := range [][]string{
		{"--record", existing},
		{"--record", link},
		{"--record", link, "--record-overwrite"},
	} {
		code, _, errOut := runCmd(t, append([]string{"report", "--demo", "recovery-herd", "--for", "1s"}, args...)...)
		if code == exitOK {
			t.Errorf("%v: exit 0 (%s)", args, errOut)
		}
		if len(args) == 2 && args[1] == existing && !strings.Contains(errOut, "--record-overwrite replaces it") {
			t.Errorf("%v: the flag that would replace it is not named: %s", args, errOut)
		}
		if b, _ := os.ReadFile(existing); string(b) != "precious\n" {
			t.Fatalf("%v: the existing file was changed", args)
		}
	}
	code, _, errOut := runCmd(t, "report", "--demo", "recovery-herd", "--for", "1s", "--speed", "10", "--record", existing, "--record-overwrite")
	if b, _ := os.ReadFile(existing); code != exitOK || string(b) == "precious\n" {
		t.Fatalf("--record-overwrite: exit %d (%s)", code, errOut)
	}
}

// TestReplayFromAPipe: a gzipped recording read from a FIFO (as
// <(zcat ...) or a named pipe gives it) is read once, not sniffed first and
// then read again from a stream that cannot rewind.
func TestReplayFromAPipe(t *testing.T) {
	pipe := filepath.Join(t.TempDir(), "recording.fifo")
	if err := fifo.Make(pipe, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	src, err := fixtures.Open("sawtooth-db-slow")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	go func() {
		w, err := os.OpenFile(pipe, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		zw := gzip.NewWriter(w)
		io.Copy(zw, src)
		zw.Close()
		w.Close()
	}()
	code, out, errOut := runCmd(t, "report", "--replay", pipe, "--format", "json", "--fail-on", "warning")
	if code != exitFailOn || !strings.Contains(out, `"kind": "sawtooth"`) || strings.Contains(errOut, "rejected:") {
		t.Fatalf("replay from a FIFO: exit %d\n%s\n%s", code, out, errOut)
	}
}

// TestEnvErrorsSayTheFormat: a SENTINEL_TOP_* variable that does not parse
// says what it should look like.
func TestEnvErrorsSayTheFormat(t *testing.T) {
	t.Setenv("SENTINEL_TOP_RETENTION", "5")
	code, _, errOut := runCmd(t, "report", "--demo", "--for", "1s")
	if code != exitUsage || !strings.Contains(errOut, `SENTINEL_TOP_RETENTION="5"`) || !strings.Contains(errOut, "a duration such as 90s") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

// TestServeWarnsWithoutATokenBeyondLoopback: serve bound beyond loopback
// with no --serve-token says so on stderr.
func TestServeWarnsWithoutATokenBeyondLoopback(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--replay", "sawtooth-db-slow", "--listen", "0.0.0.0:0"}, nil, io.Discard, &errb)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(errb.String(), "without --serve-token") {
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatalf("no warning: %s", errb.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	<-done
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// TestMissingRotationIsNamed: of several files named to --replay, the one
// that does not exist is named, and the input failed (exit 3), as a single
// file that does not exist.
func TestMissingRotationIsNamed(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "order-metrics.log.2026-11-30")
	os.WriteFile(log, []byte("1764460800000|2026-11-30 00:00:00|db|10|0|10|0|5|0|0|0\n"), 0o600)
	missing := log + ".1"
	code, _, errOut := runCmd(t, "report", "--replay", missing+","+log)
	if code != exitRuntime || !strings.Contains(errOut, "--replay: "+missing+": no such file") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	code, _, errOut = runCmd(t, "report", "--replay", missing)
	if code != exitRuntime || !strings.Contains(errOut, "file does not exist, and not a built-in fixture") {
		t.Fatalf("one file: exit %d: %s", code, errOut)
	}
}

// TestReplayOfEndlessInputEnds: /dev/zero, and garbage written into a FIFO
// without end, end with an error naming the bound and exit 3, not a
// report of nothing.
func TestReplayOfEndlessInputEnds(t *testing.T) {
	pipe := filepath.Join(t.TempDir(), "garbage.fifo")
	if err := fifo.Make(pipe, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		w, err := os.OpenFile(pipe, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer w.Close()
		line := []byte("not a message at all\n")
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := w.Write(bytes.Repeat(line, 1000)); err != nil {
				return // the reader gave up
			}
		}
	}()
	for _, input := range []string{"/dev/zero", pipe} {
		if _, err := os.Stat(input); err != nil {
			continue
		}
		code, out, errOut := runCmd(t, "report", "--replay", input, "--max-replay-bytes", "8MiB", "--fail-on", "warning")
		if code != exitRuntime || out != "" || !strings.Contains(errOut, "over 8 MiB") || !strings.Contains(errOut, "split the recording") {
			t.Errorf("%s: exit %d\n%s\n%s", input, code, out, errOut)
		}
	}
}

// TestHintOnlyWithoutInput: "try: sentinel-top --demo" follows the error
// of no input, not an error of another flag.
func TestHintOnlyWithoutInput(t *testing.T) {
	code, _, errOut := runCmd(t)
	if code != exitUsage || !strings.Contains(errOut, "try: sentinel-top --demo") {
		t.Errorf("no input: exit %d: %s", code, errOut)
	}
	code, _, errOut = runCmd(t, "--replay", "sawtooth-db-slow", "--speed", "0")
	if code != exitUsage || strings.Contains(errOut, "try:") || !strings.Contains(errOut, "--speed") {
		t.Errorf("--speed 0: exit %d: %s", code, errOut)
	}
}

// busyAgent serves a's stream on a loopback port, with a call of "db"
// every 5 ms, until the test ends; it returns the address.
func busyAgent(t *testing.T, a *agent.Agent) string {
	t.Helper()
	t.Cleanup(func() { a.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go a.Serve(ln)
	stop := make(chan struct{})
	done := make(chan struct{})
	t.Cleanup(func() { close(stop); <-done })
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
				if e, err := a.Entry("db"); err == nil {
					e.Exit(nil)
				}
			}
		}
	}()
	return ln.Addr().String()
}

// saidAddr waits for the address `serve` says it listens on ("... on
// http://ADDR (...)") in its stderr, failing the test when ended closes
// first or 30 s pass.
func saidAddr(t *testing.T, stderr *syncBuffer, ended <-chan struct{}) string {
	t.Helper()
	said := regexp.MustCompile(` on https?://([^ ]+) \(`)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m := said.FindStringSubmatch(stderr.String()); m != nil {
			return m[1]
		}
		select {
		case <-ended:
			t.Fatalf("serve ended before it said where it listens: %s", stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not say where it listens within 30 s: %s", stderr.String())
		}
	}
}
