package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
)

const watchUsage = `Usage: sentinel-top [--targets LIST | --replay FILE|NAME | --demo [NAME]] [flags]
       sentinel-top report --help

htop for circuit breakers: a live terminal dashboard of breaker states,
ratios and timelines, with a triage engine that names failure patterns.

Examples:
  sentinel-top --demo                              a simulated fleet with incidents, over loopback
  sentinel-top --targets 10.0.0.11:8720,10.0.0.12:8720 --token "$TOKEN"
  sentinel-top --targets @gateways.txt --record incident.ndjson.gz
  sentinel-top --replay incident.ndjson.gz --speed 10

Flags also come from SENTINEL_TOP_<FLAG> environment variables
(e.g. SENTINEL_TOP_TARGETS, SENTINEL_TOP_TOKEN).

Flags:
`

func runWatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sentinel-top", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var in inputFlags
	in.register(fs)
	noColor := fs.Bool("no-color", false, "no colours (also: NO_COLOR=1)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), watchUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(in.fixDemoArgs(args)); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			fs.Usage()
			return exitOK
		}
		return exitUsage
	}
	if err := applyEnv(fs); err != nil {
		fmt.Fprintln(stderr, "sentinel-top:", err)
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "sentinel-top: unexpected argument %q (see sentinel-top --help)\n", fs.Arg(0))
		return exitUsage
	}
	if err := in.validate(); err != nil {
		fmt.Fprintln(stderr, "sentinel-top:", err)
		fmt.Fprintln(stderr, "try: sentinel-top --demo")
		return exitUsage
	}
	return dashboard(ctx, &in, *noColor, stdout, stderr)
}
