package main

import (
	"regexp"
	"runtime"
	"strings"
	"testing"
)

func TestBenchSmallFleet(t *testing.T) {
	code, out, errOut := runCmd(t, "bench", "--agents", "4", "--resources", "3", "--rate", "50", "--duration", "1s")
	if code != exitOK {
		t.Fatalf("exit %d: %s\n%s", code, errOut, out)
	}
	for _, want := range []string{
		`(?m)^sentinel-top bench: 4 agents x 3 resources, 50 calls/s per resource \(600 calls/s\), measuring 1s$`,
		`(?m)^connected:  4 targets in `,
		`(?m)^ingest:     [0-9,]+ items/s, [0-9,]+ messages/s, `,
		`(?m)^accounted:  [0-9,]+ calls made, [0-9,]+ counted by the collector \(exact\)$`,
		`(?m)^memory:     RSS `,
		`(?m)^health:     0 reconnects, 0 messages dropped by agents, 0 rejected, 0 over limits$`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("no %s in\n%s", want, out)
		}
	}
	if runtime.GOOS == "linux" && !strings.Contains(out, "without the collector") {
		t.Errorf("no CPU split on Linux:\n%s", out)
	}
}

func TestBenchUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--agents", "0"},
		{"--agents", "20000"},
		{"--resources", "0"},
		{"--rate", "-1"},
		{"--duration", "10ms"},
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

func TestBenchHelpers(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -4500: "-4,500"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
	if runtime.GOOS != "linux" {
		return
	}
	if cpu, ok := procCPU(); !ok || cpu < 0 {
		t.Errorf("process CPU %v %v", cpu, ok)
	}
	if rss := procStatusBytes("VmRSS:"); rss < 1<<20 {
		t.Errorf("RSS %d bytes", rss)
	}
	if openFilesLimit() <= 0 {
		t.Error("no open files limit read")
	}
}
