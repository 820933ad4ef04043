package cliflag

import (
	"flag"
	"io"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{
		"1": 1, "512MiB": 512 << 20, "2GiB": 2 << 30, "64 MiB": 64 << 20, "4KB": 4 << 10, "3MB": 3 << 20, "1GB": 1 << 30, "100B": 100,
		"8589934591GiB": 8589934591 << 30,
	} {
		if got, err := ParseBytes(in); err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-1MiB", "1.5GiB", "MiB", "1TiB", "8589934592GiB", "9223372036854775808", "lots"} {
		if got, err := ParseBytes(in); err == nil {
			t.Errorf("ParseBytes(%q) = %d, want an error", in, got)
		}
	}
	if n, err := ParseBytes("9223372036854775807B"); err != nil || n != math.MaxInt64 {
		t.Errorf("the largest size: %d, %v", n, err)
	}
}

func TestOptionalValue(t *testing.T) {
	for _, tc := range []struct {
		args, want []string
	}{
		{nil, nil},
		{[]string{"--demo"}, []string{"--demo", ""}},
		{[]string{"-demo"}, []string{"-demo", ""}},
		{[]string{"--demo", "--speed", "2"}, []string{"--demo", "", "--speed", "2"}},
		{[]string{"--demo", "-speed=2"}, []string{"--demo", "", "-speed=2"}},
		{[]string{"--demo", "herd"}, []string{"--demo", "herd"}},
		{[]string{"--demo=herd"}, []string{"--demo=herd"}},
		{[]string{"--speed", "2", "--demo"}, []string{"--speed", "2", "--demo", ""}},
		{[]string{"--demo", "--demo"}, []string{"--demo", "", "--demo", ""}},
		{[]string{"--demos", "--record", "x"}, []string{"--demos", "--record", "x"}},
		{[]string{"---demo"}, []string{"---demo"}},
		{[]string{"demo"}, []string{"demo"}},
	} {
		got := OptionalValue(tc.args, "demo")
		if !slices.Equal(got, tc.want) {
			t.Errorf("OptionalValue(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
}

// TestFlagsFromEnv: a flag not on the command line comes from the
// environment, one given there is left as given, and a value the flag
// refuses names the variable and what the flag takes.
func TestFlagsFromEnv(t *testing.T) {
	newFS := func() (*flag.FlagSet, *int64, *time.Duration, *[]string) {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var size int64 = 7
		var hosts []string
		fs.Var(Bytes(&size), "max-memory", "")
		d := fs.Duration("retention", time.Hour, "")
		step := time.Second
		fs.Var(Duration(&step, nil), "step", "")
		fs.Var(List(&hosts), "allow-host", "")
		return fs, &size, d, &hosts
	}
	t.Setenv("X_MAX_MEMORY", "2GiB")
	t.Setenv("X_RETENTION", "90s")
	t.Setenv("X_ALLOW_HOST", "a, b,,c")
	fs, size, d, hosts := newFS()
	if err := fs.Parse([]string{"--retention", "5m"}); err != nil {
		t.Fatal(err)
	}
	if err := FromEnv(fs, "X_"); err != nil {
		t.Fatal(err)
	}
	if *size != 2<<30 || *d != 5*time.Minute || !slices.Equal(*hosts, []string{"a", "b", "c"}) {
		t.Errorf("size %d, retention %s, hosts %q", *size, *d, *hosts)
	}
	for env, want := range map[string]string{
		"X_RETENTION":  `X_RETENTION="ninety": `,
		"X_STEP":       `X_STEP="ninety": `,
		"X_MAX_MEMORY": `X_MAX_MEMORY="a lot": want a positive size such as 512MiB or 2GiB`,
	} {
		t.Setenv(env, map[string]string{"X_RETENTION": "ninety", "X_STEP": "ninety", "X_MAX_MEMORY": "a lot"}[env])
		fs, _, _, _ := newFS()
		fs.Parse(nil)
		err := FromEnv(fs, "X_")
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: %v, want %q...", env, err, want)
		}
		if flag, ok := map[string]string{"X_RETENTION": "retention", "X_STEP": "step"}[env]; ok &&
			(err == nil || !strings.HasSuffix(err.Error(), "want a duration such as 90s, 5m or 1h30m, as --"+flag+" takes")) {
			t.Errorf("%s: %v does not say what --%s takes", env, err, flag)
		}
		t.Setenv(env, map[string]string{"X_RETENTION": "90s", "X_STEP": "2s", "X_MAX_MEMORY": "2GiB"}[env])
	}
}

// TestShowsNoDefault: Bytes and List show no default of their own in the
// flags' usage, as a flag.Func does (their usage says it).
func TestShowsNoDefault(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	var b strings.Builder
	fs.SetOutput(&b)
	var size int64 = 512 << 20
	var hosts []string
	fs.Var(Bytes(&size), "max-memory", "most memory (default 512MiB)")
	fs.Var(List(&hosts), "allow-host", "names")
	fs.PrintDefaults()
	if strings.Count(b.String(), "default") != 1 {
		t.Errorf("usage:\n%s", b.String())
	}
}
