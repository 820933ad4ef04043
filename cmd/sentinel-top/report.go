package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/collector/report"
	"github.com/sentinel-top/sentinel-top/collector/triage"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

const reportUsage = `Usage: sentinel-top report (--replay FILE|NAME | --targets LIST --for DURATION | --demo [NAME] --for DURATION | --prometheus URL [--from T] [--to T]) [flags]

Prints the triage findings of an input and exits: for postmortems, CI and
scripts. With --format json, standard output carries the report alone
(findings-v1); progress and warnings go to standard error.

Examples:
  sentinel-top report --replay incident.ndjson.gz --format md > postmortem.md
  sentinel-top report --replay sawtooth-db-slow --format json | jq '.findings[].kind'
  sentinel-top report --targets @gateways.txt --for 60s --fail-on critical
  sentinel-top report --demo recovery-herd --for 90s
  sentinel-top report --prometheus http://127.0.0.1:9090 --from -30m --prometheus-step 5s

Exit codes: 0 done; 1 a finding at or above --fail-on; 2 bad usage; 3 the input failed.

Flags:
`

func runReport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := newCommand("sentinel-top report", reportUsage, stderr)
	format := cmd.fs.String("format", "text", "output format: text, md or json")
	failOn := cmd.fs.String("fail-on", "", "exit 1 when a finding was at least this severe at its peak (though it ended): warning or critical")
	dur := cmd.fs.Duration("for", 0, "how long to watch live input (--targets, --demo) before reporting")
	if code, ok := cmd.parse(args, stdout, stderr); !ok {
		return code
	}
	render, threshold, err := reportOptions(*format, *failOn, cmd.in.replay == "" && cmd.in.prom.url == "", cmd.in.prom.url != "", *dur)
	if err != nil {
		fmt.Fprintln(stderr, "sentinel-top report:", err)
		return exitUsage
	}
	cmd.in.keepGone = true // every finding's instances drawn, however early they left
	s, err := cmd.in.open(ctx, 0)
	if err != nil {
		return openFailed(stderr, "sentinel-top report", err)
	}
	began := s.c.Clock().UnixMilli()
	snap, err := watch(ctx, s, *dur, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "sentinel-top report:", err)
		return exitRuntime
	}
	rep := report.FromSnapshot(s.source, snap, s.c)
	if s.prom != nil {
		st := s.prom.Stats()
		fmt.Fprintf(stderr, "%s: %d queries, %d bytes, %d series, %d samples (%s at %s steps)\n", report.Sanitize(s.source),
			st.Queries, st.Bytes, st.Series, st.Points, strings.Join(st.Families, ", "), cmd.in.prom.step)
		if st.Unannounced > 0 {
			fmt.Fprintf(stderr, "warning: %d instances past --prometheus-max-series not read\n", st.Unannounced)
		}
		if st.TransitionsCut > 0 {
			fmt.Fprintf(stderr, "warning: %d breaker transitions beyond what a step can hold not read (a state-change counter jumped)\n", st.TransitionsCut)
		}
		rep.Bound(s.promFrom.UnixMilli(), s.promTo.UnixMilli())
	} else if cmd.in.replay == "" {
		// A live input's range is what was watched, on the collector's
		// clock, with the backlog a connection is sent first: a peer whose
		// clock is hours off (within the collector's 24 h clock-skew window, and warned
		// about) does not stretch it.
		rep.Bound(began-liveBacklog.Milliseconds(), s.c.Clock().UnixMilli())
	}
	if err := rep.NoData(*dur); err != nil {
		fmt.Fprintln(stderr, "sentinel-top report:", err)
		return exitRuntime
	}
	for _, w := range rep.WarningLines() {
		fmt.Fprintln(stderr, "warning:", w)
	}
	if err := render(stdout, rep); err != nil {
		fmt.Fprintln(stderr, "sentinel-top report:", err)
		return exitRuntime
	}
	if *failOn == "" {
		return exitOK
	}
	if tripped := rep.AtLeast(threshold); len(tripped) > 0 {
		fmt.Fprintf(stderr, "--fail-on %s: %s\n", *failOn, strings.Join(tripped, "; "))
		return exitFailOn
	}
	return exitOK
}

// reportOptions checks the report's own flags: the renderer of --format,
// the severity of --fail-on, and that --for goes with live input alone.
func reportOptions(format, failOn string, live, prom bool, dur time.Duration) (render func(io.Writer, *report.Report) error, threshold triage.Severity, err error) {
	if render, err = report.Renderer(format); err != nil {
		return nil, 0, fmt.Errorf("--format %w", err)
	}
	if failOn != "" {
		if threshold, err = triage.ParseSeverity(failOn); err != nil {
			return nil, 0, fmt.Errorf("--fail-on %w", err)
		}
	}
	if !live && dur > 0 && prom {
		return nil, 0, errors.New("--for applies to live input (--targets, --demo); --prometheus reads --from to --to")
	}
	if !live && dur > 0 {
		return nil, 0, errors.New("--for applies to live input (--targets, --demo); a replay ends with its file")
	}
	if live && dur <= 0 {
		return nil, 0, errors.New("live input needs --for DURATION (e.g. --for 60s)")
	}
	return render, threshold, nil
}

// liveBacklog is how far before a live report's watch its data may begin:
// a new connection is sent the last 60 s of buckets an agent still holds
// (wire-v1 "Transport", wire.BacklogMs), and a Java target's first poll
// reads as far back.
const liveBacklog = wire.BacklogMs * time.Millisecond

// watch feeds the session's input to its end (a replay) or, given a
// duration (live input), for that long on the collector's clock; closes
// it; says on stderr what was rejected and accepted; and publishes the
// snapshot the report is made of: the findings, judged once at the end of
// the input.
func watch(ctx context.Context, s *session, dur time.Duration, stderr io.Writer) (*collector.Snapshot, error) {
	feedCtx := ctx
	if dur > 0 {
		// --for is measured on the collector's clock: wall time for
		// targets, the simulation's time for a demo (which may run faster).
		var cancel context.CancelFunc
		feedCtx, cancel = context.WithCancel(ctx)
		defer cancel()
		timer := s.c.Clock().AfterFunc(dur, cancel)
		defer timer.Stop()
		fmt.Fprintf(stderr, "watching %s for %s...\n", report.Sanitize(s.source), dur)
	}
	// A recording that stops ends the run there: exit 3 at the error, not
	// after --for.
	feedCtx, stopFeed := context.WithCancel(feedCtx)
	defer stopFeed()
	go func() {
		select {
		case <-s.recordFailed():
			stopFeed()
		case <-feedCtx.Done():
		}
	}()
	began := time.Now()
	err := s.feed(feedCtx)
	if rerr := s.recordError(); rerr != nil {
		s.close()
		return nil, rerr
	}
	if ctx.Err() != nil {
		s.close()
		return nil, errors.New("interrupted")
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		s.close()
		return nil, err
	}
	if err := s.close(); err != nil {
		return nil, err
	}
	messages, rejected, dups := s.c.Counters()
	kept, more := s.rejects.Rejects()
	for _, r := range kept {
		fmt.Fprintln(stderr, "rejected:", report.Sanitize(r.Place+": "+r.Err.Error()))
	}
	if more > 0 {
		fmt.Fprintf(stderr, "rejected: ... and %d more\n", more)
	}
	fmt.Fprintf(stderr, "%d messages accepted, %d rejected, %d duplicates dropped, in %s\n",
		messages, rejected, dups, time.Since(began).Round(time.Millisecond))
	return s.c.Publish(), nil
}
