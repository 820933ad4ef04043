// Command sentinel-top is htop for circuit breakers: a terminal dashboard
// and triage engine for services protected by Sentinel-style breakers and
// flow rules.
//
//	sentinel-top --targets HOST:PORT,...      watch live instances
//	sentinel-top --replay FILE|NAME           replay a recorded incident
//	sentinel-top --demo [NAME]                a simulated fleet, no setup
//	sentinel-top report --replay FILE --format md
//
// Exit codes: 0 success; 1 a finding matched --fail-on; 2 bad usage; 3 the
// input could not be read or a run failed.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/sentinel-top/sentinel-top/internal/bench"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailOn  = 1
	exitUsage   = 2
	exitRuntime = 3
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the whole program, with its streams injected for tests.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "report":
			return runReport(ctx, args[1:], stdout, stderr)
		case "serve":
			return runServe(ctx, args[1:], stdout, stderr)
		case "whatif":
			return runWhatif(ctx, args[1:], stdout, stderr)
		case "bench":
			return runBench(ctx, args[1:], stdout, stderr)
		case bench.AgentsCommand: // internal: bench's agents' processes
			return runBenchAgents(ctx, args[1:], stdin, stdout, stderr)
		case "version", "--version", "-version":
			fmt.Fprintln(stdout, versionString())
			return exitOK
		case "help", "-h", "-help", "--help":
			if len(args) > 1 && args[1] == "report" {
				return runReport(ctx, []string{"--help"}, stdout, stderr)
			}
			if len(args) > 1 && args[1] == "whatif" {
				return runWhatif(ctx, []string{"--help"}, stdout, stderr)
			}
			return runWatch(ctx, []string{"--help"}, stdout, stderr)
		}
	}
	return runWatch(ctx, args, stdout, stderr)
}

// usageError marks an error that is the user's input, not the program.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// openFailed says on stderr, after the command's name, why its input did
// not open, and returns the exit code: bad usage or a failed input.
func openFailed(stderr io.Writer, name string, err error) int {
	fmt.Fprintf(stderr, "%s: %v\n", name, err)
	if errors.As(err, new(usageError)) {
		return exitUsage
	}
	return exitRuntime
}
