package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/collector/source"
	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/internal/cliflag"
)

// opened are the options of the collector the session opens, with the
// limits of the source that dials its targets.
type opened struct {
	collector.Options
	Limits         wire.Limits
	MaxMessageRate float64
}

// openedOptions parses args as the dashboard does and returns the options
// of the collector the session opens and of its source (nothing is
// dialed).
func openedOptions(t *testing.T, args ...string) (opened, error) {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var in inputFlags
	in.register(fs)
	if err := fs.Parse(append([]string{"--targets", "127.0.0.1:1"}, args...)); err != nil {
		return opened{}, err
	}
	if err := cliflag.FromEnv(fs, "SENTINEL_TOP_"); err != nil {
		return opened{}, err
	}
	if err := in.validate(); err != nil {
		return opened{}, err
	}
	s, err := in.open(context.Background(), -1)
	if err != nil {
		return opened{}, err
	}
	t.Cleanup(func() { s.close() })
	return opened{s.c.Options(), s.dial.Limits, s.dial.MaxMessageRate}, nil
}

func TestLimitFlagsDefaults(t *testing.T) {
	o, err := openedOptions(t)
	if err != nil {
		t.Fatal(err)
	}
	if o.Limits.MaxFrameBytes != wire.DefaultMaxFrameBytes || o.Limits.MaxNameBytes != wire.DefaultMaxNameBytes ||
		o.MaxMessageRate != source.DefaultMaxMessageRate || o.MaxInstances != collector.DefaultMaxInstances ||
		o.MaxResourcesPerInstance != collector.DefaultMaxResourcesPerApp {
		t.Fatalf("defaults: %+v %+v rate %v", o.Limits, o, o.MaxMessageRate)
	}
}

func TestLimitFlagsReachTheCollector(t *testing.T) {
	o, err := openedOptions(t, "--max-frame-bytes", "65536", "--max-name-bytes", "128", "--max-rate", "50",
		"--max-instances", "7", "--max-resources", "9")
	if err != nil {
		t.Fatal(err)
	}
	if o.Limits.MaxFrameBytes != 65536 || o.Limits.MaxNameBytes != 128 || o.MaxMessageRate != 50 ||
		o.MaxInstances != 7 || o.MaxResourcesPerInstance != 9 {
		t.Fatalf("options %+v", o)
	}
	if o, err = openedOptions(t, "--max-rate", "0"); err != nil || o.MaxMessageRate >= 0 {
		t.Fatalf("--max-rate 0 must mean no limit: %v %v", o.MaxMessageRate, err)
	}
	t.Setenv("SENTINEL_TOP_MAX_RATE", "5")
	t.Setenv("SENTINEL_TOP_MAX_NAME_BYTES", "100")
	t.Setenv("SENTINEL_TOP_MAX_FRAME_BYTES", "10000")
	if o, err = openedOptions(t); err != nil || o.MaxMessageRate != 5 || o.Limits.MaxNameBytes != 100 || o.Limits.MaxFrameBytes != 10000 {
		t.Fatalf("from the environment: rate %v limits %+v, %v", o.MaxMessageRate, o.Limits, err)
	}
}

func TestLimitFlagsRefuseNonsense(t *testing.T) {
	for _, args := range [][]string{
		{"--max-frame-bytes", "100"},
		{"--max-name-bytes", "10"},
		{"--max-name-bytes", "9000", "--max-frame-bytes", "8192"},
		{"--max-rate", "-1"},
		{"--max-rate", "lots"},
		{"--max-instances", "0"},
		{"--max-resources", "-3"},
	} {
		code, _, errOut := runCmd(t, append([]string{"report", "--replay", "sawtooth-db-slow"}, args...)...)
		if code != exitUsage || errOut == "" {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
	_, out, _ := runCmd(t, "--help")
	for _, name := range []string{"--max-frame-bytes", "--max-name-bytes", "--max-rate", "--max-instances", "--max-resources"} {
		if !strings.Contains(out, "-"+strings.TrimLeft(name, "-")) {
			t.Errorf("--help does not list %s", name)
		}
	}
}

// TestLimitFlagsApplyToReplays replays a file with a long resource name
// and a long line: the flags decide what is rejected.
func TestLimitFlagsApplyToReplays(t *testing.T) {
	const ts = 1764460800000
	lines := []string{
		fmt.Sprintf(`{"v":1,"kind":"hello","ts":%d,"instance":"i","app":"a","startedAt":%d,"bucketMs":500}`, ts, ts),
		fmt.Sprintf(`{"v":1,"kind":"buckets","ts":%d,"instance":"i","bucketMs":500,"items":[{"resource":%q,"start":%d,"pass":1,"complete":1}]}`,
			ts+500, strings.Repeat("r", 100), ts),
		fmt.Sprintf(`{"v":1,"kind":"buckets","ts":%d,"instance":"i","bucketMs":500,"items":[{"resource":"ok","start":%d,"pass":1,"complete":1}],"pad":%q}`,
			ts+1000, ts+500, strings.Repeat("p", 5000)),
	}
	file := filepath.Join(t.TempDir(), "limits.ndjson")
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rejected := func(args ...string) int64 {
		t.Helper()
		code, out, errOut := runCmd(t, append([]string{"report", "--replay", file, "--format", "json"}, args...)...)
		if code != exitOK {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		var rep jsonReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		return rep.Rejected
	}
	if n := rejected(); n != 0 {
		t.Fatalf("default limits rejected %d", n)
	}
	if n := rejected("--max-name-bytes", "64"); n != 1 {
		t.Fatalf("--max-name-bytes 64 rejected %d, want the long name", n)
	}
	if n := rejected("--max-frame-bytes", "4096"); n != 1 {
		t.Fatalf("--max-frame-bytes 4096 rejected %d, want the long line", n)
	}
}

func TestLimitRateFollowsTheDemoSpeed(t *testing.T) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var in inputFlags
	in.register(fs)
	if err := fs.Parse([]string{"--demo", "sawtooth-db-slow", "--speed", "50", "--max-rate", "100"}); err != nil {
		t.Fatal(err)
	}
	s, err := in.open(context.Background(), -1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	if got := s.dial.MaxMessageRate; got != 5000 {
		t.Fatalf("rate %v at --speed 50, want 50 x 100", got)
	}
}
