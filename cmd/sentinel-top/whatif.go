package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/sentinel-top/sentinel-top/collector/report"
	"github.com/sentinel-top/sentinel-top/collector/rulefile"
	"github.com/sentinel-top/sentinel-top/internal/termtext"
)

const whatifUsage = `Usage: sentinel-top whatif --rules FILE[,FILE...] --replay INPUT[,INPUT...] [flags]

Replays each input's own traffic through the project's breakers and flow
rules twice per instance, with the rules it ran and with the rules in FILE,
and says what the proposal would have done: trips, trips on fewer than 20
calls, outages caught and how soon, probes, calls passed to a failing
downstream, healthy calls blocked. A gate before a rule push: the built-in
fixtures are a regression library.

FILE is a JSON array of rules, as sentinel-golang's file datasource reads
them (circuit-breaker or flow rules) or Java Sentinel's DegradeRule or
FlowRule arrays; the format is told from the content (or --rules-format).
Several files (a degrade file and a flow file) are one rule set.

Examples:
  sentinel-top whatif --rules breakers.json --replay incident.ndjson.gz
  sentinel-top whatif --rules degrade.json,flow.json --replay sawtooth-db-slow,recovery-herd --format md

Exit codes: 0 no caught outage lost and no trip on fewer than 20 calls added;
1 the proposal loses an outage the current rules caught (or catches it more
than one statIntervalMs later, or an input ends in one not caught yet), or
adds trips on fewer than 20 calls; 2 bad usage; 3 an input or a rule file
failed, or an input cannot judge a rule (a slow-ratio rule on an input
without response-time histograms).

Flags:
`

// maxErrRunes bounds an error line: a rule file's errors name the rule,
// its field and the file.
const maxErrRunes = 600

func runWhatif(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := newCommand("sentinel-top whatif", whatifUsage, stderr)
	rulesFlag := cmd.fs.String("rules", "", "the proposed rules: JSON rule files, comma-separated")
	formatFlag := cmd.fs.String("rules-format", "auto", "the rule files' format: auto, go-breaker, go-flow, java-degrade or java-flow")
	format := cmd.fs.String("format", "text", "output format: text, md or json")
	if code, ok := cmd.parse(args, stdout, stderr); !ok {
		return code
	}
	render, err := report.WhatIfRenderer(*format)
	switch {
	case err != nil:
		cmd.failf("--format %v", err)
		return exitUsage
	case *rulesFlag == "":
		cmd.failf("--rules FILE is required (see --help)")
		return exitUsage
	case cmd.in.replay == "":
		cmd.failf("whatif replays recordings: give --replay INPUT[,INPUT...]")
		return exitUsage
	}
	rf, err := rulefile.ParseFormat(*formatFlag)
	if err != nil {
		cmd.failf("--rules-format: %v", err)
		return exitUsage
	}
	var sets []rulefile.Rules
	files := strings.Split(*rulesFlag, ",")
	for _, f := range files {
		rs, _, err := rulefile.ReadFile(f, rf, 0)
		if err != nil {
			fmt.Fprintln(stderr, "sentinel-top whatif:", termtext.Sanitize(err.Error(), maxErrRunes))
			return exitRuntime
		}
		sets = append(sets, rs)
	}
	rules := rulefile.Merge(sets...)
	if len(rules.Breakers)+len(rules.Flows) == 0 {
		fmt.Fprintln(stderr, "sentinel-top whatif: the rule files hold no rule")
		return exitRuntime
	}
	out := &report.WhatIf{Rules: files}
	failed := false
	cmd.in.keepGone = true
	for _, input := range strings.Split(cmd.in.replay, ",") {
		in := report.WhatIfInput{Source: input}
		if err := checkInput(ctx, cmd, input, rules, &in, stderr); err != nil {
			if ctx.Err() != nil {
				fmt.Fprintln(stderr, "sentinel-top whatif: interrupted")
				return exitRuntime
			}
			fmt.Fprintf(stderr, "sentinel-top whatif: %s: %s\n", report.Sanitize(input), termtext.Sanitize(err.Error(), maxErrRunes))
			in.Error, failed = err.Error(), true
		}
		for _, c := range in.Breakers {
			if c.Error != "" { // a rule the input cannot judge passes no gate
				fmt.Fprintf(stderr, "sentinel-top whatif: %s: %s on %s not replayed: %s\n", report.Sanitize(input),
					report.Sanitize(c.App), report.Sanitize(c.Resource), termtext.Sanitize(c.Error, maxErrRunes))
				failed = true
			}
		}
		out.Inputs = append(out.Inputs, in)
	}
	if err := render(stdout, out); err != nil {
		fmt.Fprintln(stderr, "sentinel-top whatif:", err)
		return exitRuntime
	}
	if failed {
		return exitRuntime
	}
	if v := out.Verdicts(); len(v) > 0 {
		for _, line := range v {
			fmt.Fprintln(stderr, "whatif:", line)
		}
		return exitFailOn
	}
	return exitOK
}

// checkInput replays one input to its end and checks the rules on it.
func checkInput(ctx context.Context, cmd *command, input string, rules rulefile.Rules, out *report.WhatIfInput, stderr io.Writer) error {
	in := cmd.in
	in.replay = input
	s, err := in.open(ctx, 0)
	if err != nil {
		return err
	}
	snap, err := watch(ctx, s, 0, stderr)
	if err != nil {
		return err
	}
	if snap.Messages == 0 {
		return errors.New("the input holds no message")
	}
	out.RuleChecks = s.c.CheckRules(rules.Breakers, rules.Flows)
	return nil
}
