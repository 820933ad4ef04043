package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/collector/report"
	"github.com/sentinel-top/sentinel-top/collector/triage"
)

const reportUsage = `Usage: sentinel-top report (--replay FILE|NAME | --targets LIST --for DURATION | --demo [NAME] --for DURATION) [flags]

Prints the triage findings of an input and exits: for postmortems, CI and
scripts. With --format json, standard output carries the report alone
(findings-v1); progress and warnings go to standard error.

Examples:
  sentinel-top report --replay incident.ndjson.gz --format md > postmortem.md
  sentinel-top report --replay sawtooth-db-slow --format json | jq '.findings[].kind'
  sentinel-top report --targets @gateways.txt --for 60s --fail-on critical
  sentinel-top report --demo recovery-herd --for 90s

Exit codes: 0 done; 1 a finding at or above --fail-on; 2 bad usage; 3 the input failed.

Flags:
`

func runReport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := newCommand("sentinel-top report", reportUsage, stderr)
	fs, in := cmd.fs, &cmd.in
	format := fs.String("format", "text", "output format: text, md or json")
	failOn := fs.String("fail-on", "", "exit 1 when a finding is at least this severe: warning or critical")
	dur := fs.Duration("for", 0, "how long to watch live input (--targets, --demo) before reporting")
	if code, ok := cmd.parse(args, stdout, stderr); !ok {
		return code
	}
	render, ok := map[string]func(io.Writer, *report.Report) error{
		"text": report.Text, "md": report.Markdown, "markdown": report.Markdown, "json": report.JSON,
	}[*format]
	if !ok {
		fmt.Fprintf(stderr, "sentinel-top report: --format %q: want text, md or json\n", *format)
		return exitUsage
	}
	threshold, hasThreshold := triage.Severity(0), false
	switch *failOn {
	case "":
	case "warning":
		threshold, hasThreshold = triage.Warning, true
	case "critical":
		threshold, hasThreshold = triage.Critical, true
	default:
		fmt.Fprintf(stderr, "sentinel-top report: --fail-on %q: want warning or critical\n", *failOn)
		return exitUsage
	}
	live := in.replay == ""
	if !live && *dur > 0 {
		fmt.Fprintln(stderr, "sentinel-top report: --for applies to live input (--targets, --demo); a replay ends with its file")
		return exitUsage
	}
	if live && *dur <= 0 {
		fmt.Fprintln(stderr, "sentinel-top report: live input needs --for DURATION (e.g. --for 60s)")
		return exitUsage
	}

	s, err := in.open(ctx, 0)
	if err != nil {
		fmt.Fprintln(stderr, "sentinel-top report:", err)
		var ue usageError
		if errors.As(err, &ue) {
			return exitUsage
		}
		return exitRuntime
	}
	feedCtx := ctx
	if live {
		// --for is measured on the collector's clock: wall time for
		// targets, the simulation's time for a demo (which may run faster).
		var cancel context.CancelFunc
		feedCtx, cancel = context.WithCancel(ctx)
		defer cancel()
		timer := s.c.Clock().AfterFunc(*dur, cancel)
		defer timer.Stop()
		fmt.Fprintf(stderr, "watching %s for %s...\n", report.Sanitize(s.source), *dur)
	}
	began := time.Now()
	err = s.feed(feedCtx)
	if ctx.Err() != nil {
		s.close()
		fmt.Fprintln(stderr, "sentinel-top report: interrupted")
		return exitRuntime
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		s.close()
		fmt.Fprintln(stderr, "sentinel-top report:", err)
		return exitRuntime
	}
	if err := s.close(); err != nil {
		fmt.Fprintln(stderr, "sentinel-top report:", err)
		return exitRuntime
	}
	c := s.c
	messages, rejected, dups := c.Counters()
	for _, line := range s.rejectLog {
		fmt.Fprintln(stderr, "rejected:", line)
	}
	if s.rejectMore > 0 {
		fmt.Fprintf(stderr, "rejected: ... and %d more\n", s.rejectMore)
	}
	fmt.Fprintf(stderr, "%d messages accepted, %d rejected, %d duplicates dropped, in %s\n",
		messages, rejected, dups, time.Since(began).Round(time.Millisecond))
	snap := c.Publish() // the findings, judged once at the end of the input
	var down []string
	for _, t := range snap.Targets {
		if t.State != collector.TargetUp {
			down = append(down, report.Sanitize(t.Name)+": "+report.Sanitize(cmp.Or(t.LastError, t.State.String())))
		}
	}
	if messages == 0 {
		// A report of nothing would read as a quiet fleet: the input failed.
		switch {
		case len(snap.Targets) > 0 && len(down) == len(snap.Targets):
			fmt.Fprintf(stderr, "sentinel-top report: no data: all %d %s down: %s\n", len(down), plural(len(down), "target", "targets"), strings.Join(down, "; "))
		default:
			fmt.Fprintf(stderr, "sentinel-top report: no data from %s in %s\n", report.Sanitize(s.source), *dur)
		}
		return exitRuntime
	}
	rep := report.New(s.source, c.Engine(), messages, rejected)
	rep.Findings, rep.ResourcesSeen = snap.Findings, resourcesSeen(snap)
	rep.Targets, rep.Warnings = snap.Targets, snap.Warnings
	for _, w := range rep.WarningLines() {
		fmt.Fprintln(stderr, "warning:", w)
	}
	if err := render(stdout, rep); err != nil {
		fmt.Fprintln(stderr, "sentinel-top report:", err)
		return exitRuntime
	}
	if hasThreshold {
		var tripped []string
		for _, f := range rep.Findings {
			if f.Severity >= threshold {
				tripped = append(tripped, fmt.Sprintf("%s %s %s/%s", f.Severity, f.Kind,
					report.Sanitize(f.App), report.Sanitize(f.Resource)))
			}
		}
		if len(tripped) > 0 {
			fmt.Fprintf(stderr, "--fail-on %s: %s\n", *failOn, strings.Join(tripped, "; "))
			return exitFailOn
		}
	}
	return exitOK
}

// resourcesSeen is the report's list of app x resource totals, with where
// their breaker states came from.
func resourcesSeen(snap *collector.Snapshot) []report.ResourceSeen {
	out := make([]report.ResourceSeen, 0, len(snap.Totals))
	for _, t := range snap.Totals {
		out = append(out, report.ResourceSeen{App: t.App, Resource: t.Resource, Pass: t.Pass, Block: t.Block,
			Complete: t.Complete, Error: t.Error, Slow: t.Slow, States: t.States.String()})
	}
	return out
}
