package main

import (
	"context"
	"io"

	"github.com/sentinel-top/sentinel-top/ui"
)

const watchUsage = `Usage: sentinel-top [--targets LIST | --replay FILE|NAME | --demo [NAME] | --prometheus URL] [flags]
       sentinel-top report --help    findings of an input, for postmortems and CI
       sentinel-top whatif --help    a proposed rule set replayed on recordings: a gate before a rule push
       sentinel-top serve --help     the collector without a terminal: /metrics, /report, a merged stream
       sentinel-top bench --help     a fleet of agents on loopback against a collector: rate, CPU, memory

htop for circuit breakers: a live terminal dashboard of breaker states,
ratios and timelines, with a triage engine that names failure patterns.

Examples:
  sentinel-top --demo                              a simulated fleet with incidents, over loopback
  sentinel-top --targets 10.0.0.11:8720,10.0.0.12:8720 --token "$TOKEN"
  sentinel-top --targets @gateways.txt --record incident.ndjson.gz
                                                   a line "HOST:PORT token-file=PATH" gives a target its own token
  sentinel-top --replay incident.ndjson.gz --speed 10
  sentinel-top --prometheus http://127.0.0.1:9090 --prometheus-step 5s
                                                   the fleet a Prometheus scrapes (sentinel-golang's, Java's or sentinel-top's metrics)

Flags also come from SENTINEL_TOP_<FLAG> environment variables
(e.g. SENTINEL_TOP_TARGETS, SENTINEL_TOP_TOKEN).

Flags:
`

func runWatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := newCommand("sentinel-top", watchUsage, stderr)
	cmd.hint = "try: sentinel-top --demo"
	noColor := cmd.fs.Bool("no-color", false, "no colours (also: NO_COLOR=1)")
	mouse := cmd.fs.Bool("mouse", false, "the mouse from the start: a click selects and opens, the wheel scrolls (m turns it on and off)")
	if code, ok := cmd.parse(args, stdout, stderr); !ok {
		return code
	}
	return dashboard(ctx, &cmd.in, ui.Options{NoColor: *noColor, Mouse: *mouse}, stdout, stderr)
}
