package cliflag_test

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/sentinel-top/sentinel-top/internal/cliflag"
)

func Example() {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var budget int64 = 512 << 20
	var hosts []string
	fs.Var(cliflag.Bytes(&budget), "max-memory", "most memory (default 512MiB)")
	fs.Var(cliflag.List(&hosts), "allow-host", "names clients use; repeat or separate with commas")
	os.Setenv("EXAMPLE_MAX_MEMORY", "2GiB")
	defer os.Unsetenv("EXAMPLE_MAX_MEMORY")
	if err := fs.Parse([]string{"--allow-host", "collector-a,collector-b"}); err != nil {
		fmt.Println(err)
		return
	}
	if err := cliflag.FromEnv(fs, "EXAMPLE_"); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(budget>>20, "MiB;", hosts)
	// Output: 2048 MiB; [collector-a collector-b]
}

// A range given as times before now, or as RFC 3339.
func ExampleParseWhen() {
	now := time.Date(2026, 3, 1, 10, 30, 0, 0, time.UTC)
	for _, s := range []string{"-30m", "now", "2026-03-01T09:00:00Z", "30m"} {
		t, err := cliflag.ParseWhen(s, now)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(t.Format(time.RFC3339))
	}
	// Output:
	// 2026-03-01T10:00:00Z
	// 2026-03-01T10:30:00Z
	// 2026-03-01T09:00:00Z
	// "30m": want RFC 3339 (2026-03-01T10:00:00Z), now, or a time before now such as -30m
}

// A duration flag that goes with another one: given at its default, it
// is still told apart from not given.
func ExampleDuration() {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	step, stepSet := 15*time.Second, false
	fs.Var(cliflag.Duration(&step, &stepSet), "prometheus-step", "resolution")
	if err := fs.Parse([]string{"--prometheus-step", "15s"}); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(step, stepSet)
	// Output: 15s true
}

// A flag whose value may be left out: --demo alone runs the default
// scenario, --demo NAME another.
func ExampleOptionalValue() {
	fs := flag.NewFlagSet("dashboard", flag.ContinueOnError)
	demo, given := "", false
	fs.Func("demo", "a simulated fleet (optionally a scenario NAME)", func(s string) error {
		demo, given = s, true
		return nil
	})
	speed := fs.Float64("speed", 1, "replay speed")
	args := cliflag.OptionalValue([]string{"--demo", "--speed", "2"}, "demo")
	if err := fs.Parse(args); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%q %t %g\n", demo, given, *speed)
	// Output: "" true 2
}

// A replay's speed: a factor, or max.
func ExampleParseSpeed() {
	for _, s := range []string{"10", "max", "0"} {
		x, err := cliflag.ParseSpeed(s)
		fmt.Println(x, err)
	}
	// Output:
	// 10 <nil>
	// 0 <nil>
	// 0 "0": want a factor in (0, 10000] or max
}
