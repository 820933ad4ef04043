package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/sentinel-top/sentinel-top/internal/bench"
)

// TestMain runs the agents' processes of bench: bench runs this test
// binary again (os.Executable) as its children, with bench.ChildEnv set,
// and they go through run as the program's would. The harness itself is
// tested in internal/bench; here, what the command wires: its flags, its
// messages and exit codes, its agents' subcommand.
func TestMain(m *testing.M) {
	if os.Getenv(bench.ChildEnv) != "" {
		if why := os.Getenv(benchChildFailEnv); why != "" {
			fmt.Fprintln(os.Stderr, why)
			os.Exit(1)
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// benchChildFailEnv makes the agents' process fail at once, saying why.
const benchChildFailEnv = "SENTINEL_TOP_BENCH_TEST_FAIL"

// An agents' process that fails is an error that carries its stderr.
func TestBenchChildFails(t *testing.T) {
	t.Setenv(benchChildFailEnv, "no agents today\x1b[31m")
	code, out, errOut := runCmd(t, "bench", "--agents", "3", "--per-process", "2", "--duration", "1s")
	if code != exitRuntime {
		t.Errorf("exit %d, want %d", code, exitRuntime)
	}
	if !regexp.MustCompile(`\nsentinel-top bench: agents 0-1: exit status 1; its stderr: no agents today\\x1b\[31m\n$`).MatchString(errOut) {
		t.Errorf("stderr %q", errOut)
	}
	if strings.Contains(out, "accounted:") {
		t.Errorf("results printed:\n%s", out)
	}
}

// TestBenchAgentsNice: the agents' processes run at the niceness asked for
// (nice(1) adds it to this process's own: 5 from a test run at 0, 15 from
// one CI runs at 10, at most 19), as the kernel reports it
// (/proc/PID/stat), and the fleet is measured as without it. It is the
// whole run through the command: its flags, and its agents' processes
// started as this program's bench-agents subcommand.
func TestBenchAgentsNice(t *testing.T) {
	if _, err := exec.LookPath("nice"); err != nil {
		t.Skip("no nice(1) here")
	}
	own, err := procNiceness("self")
	if err != nil {
		t.Skip("no /proc to read a niceness from:", err)
	}
	code, out, errOut := runCmd(t, "bench", "--agents", "2", "--resources", "2", "--rate", "50", "--duration", "1s",
		"--per-process", "1", "--agents-nice", "5")
	if code != exitOK {
		t.Fatalf("exit %d: %s\n%s", code, errOut, out)
	}
	want := min(own+5, 19)
	if !regexp.MustCompile(`(?m)^connected:  2 targets in [0-9.]+ s, served by 2 agents' processes at niceness ` + fmt.Sprint(want) + ` `).MatchString(out) {
		t.Errorf("no niceness %d (this process's %d, and 5) in\n%s", want, own, out)
	}
	if !regexp.MustCompile(`(?m)^accounted:  [1-9][0-9,]* calls made, [0-9,]+ counted by the collector \(exact\)$`).MatchString(out) {
		t.Errorf("not every call counted in\n%s", out)
	}
}

func TestBenchUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--agents", "0"},
		{"--agents", "20000"},
		{"--resources", "0"},
		{"--rate", "-1"},
		{"--max-memory", "lots"},
		{"--duration", "10ms"},
		{"--after", "-1s"},
		{"--after", "2h"},
		{"--agents-nice", "20"},
		{"--agents-nice", "-1"},
		{"extra"},
		{"--nope"},
	} {
		if code, _, _ := runCmd(t, append([]string{"bench"}, args...)...); code != exitUsage {
			t.Errorf("bench %v: exit %d, want %d", args, code, exitUsage)
		}
	}
	code, out, _ := runCmd(t, "bench", "--help")
	if code != exitOK || !strings.Contains(out, "--agents") && !strings.Contains(out, "-agents") {
		t.Fatalf("help: exit %d\n%s", code, out)
	}
}

// The agents' subcommand refuses a share bench would not give, saying so
// where bench reads it, with the usage exit code.
func TestBenchAgentsUsage(t *testing.T) {
	code, _, errOut := runCmd(t, bench.AgentsCommand, "--count", "2", "--fleet", "1")
	if code != exitUsage || !strings.HasPrefix(errOut, bench.AgentsCommand+": bad share {first:0 count:2 fleet:1 ") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	if code, _, _ := runCmd(t, bench.AgentsCommand, "--nope"); code != exitUsage {
		t.Errorf("--nope: exit %d, want %d", code, exitUsage)
	}
}

// procNiceness is a process's niceness ("self": this one's), the 19th field
// of /proc/PID/stat, the fields from the 3rd on following the command's ")".
func procNiceness(pid string) (int, error) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 17 {
		return 0, fmt.Errorf("/proc/%s/stat: %d fields after the command", pid, len(f))
	}
	return strconv.Atoi(f[16])
}
