package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/sentinel-top/sentinel-top/collector/triage"
	"github.com/sentinel-top/sentinel-top/collector/whatif"
)

// WhatIf is the `whatif` command's report: a proposed rule set replayed
// on each input, against the rules its instances ran.
type WhatIf struct {
	// Rules names the rule files.
	Rules  []string      `json:"rules"`
	Inputs []WhatIfInput `json:"inputs"`
}

// WhatIfInput is one input's checks.
type WhatIfInput struct {
	Source string `json:"source"`
	triage.RuleChecks
	// Error says why the input could not be read; its checks are empty.
	Error string `json:"error,omitempty"`
}

// Verdicts are what a whatif gate fails on: each breaker check that loses
// a caught outage (or ends in one not caught yet) or adds trips on fewer
// than 20 calls, one sanitized line each.
func (w *WhatIf) Verdicts() []string {
	var out []string
	for _, in := range w.Inputs {
		for _, c := range in.Breakers {
			where := fmt.Sprintf("%s: %s on %s", Sanitize(in.Source), Sanitize(c.App), Sanitize(c.Resource))
			if c.LosesOutage {
				out = append(out, where+": "+lossText(c.WhatIf))
			}
			if c.AddsLowConfidence {
				out = append(out, fmt.Sprintf("%s: %d trips on fewer than %d calls, %d with the current rule",
					where, c.WhatIf.Proposed.LowConfidenceTrips, whatif.SoundCalls, c.WhatIf.Current.LowConfidenceTrips))
			}
		}
	}
	return out
}

func lossText(r *whatif.Result) string {
	if r == nil {
		return "not replayed"
	}
	if len(r.Lost) > 0 {
		l := r.Lost[0]
		if l.ProposedMs < 0 {
			return fmt.Sprintf("loses %d of %d outages the current rule caught (on %s, the first after %d ms)",
				len(r.Lost), r.Current.OutagesCaught, Sanitize(l.Instance), l.CurrentMs)
		}
		return fmt.Sprintf("catches %d of %d outages more than one statIntervalMs later (on %s: %d ms instead of %d)",
			len(r.Lost), r.Current.OutagesCaught, Sanitize(l.Instance), l.ProposedMs, l.CurrentMs)
	}
	if len(r.Ongoing) > 0 {
		return fmt.Sprintf("the input ends during an outage not caught yet (on %s): no change can be judged", Sanitize(r.Ongoing[0].Instance))
	}
	return "safe"
}

// WhatIfJSON writes the whatif report as JSON, indented, every invisible
// character escaped (see JSON).
func WhatIfJSON(w io.Writer, r *WhatIf) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return err
	}
	_, err := w.Write(escapeInvisible(buf.Bytes()))
	return err
}

// planRuleText shows a rule's values: "strategy slow-ratio, threshold
// 0.5, ..." (triage.PlanRule.Fields), "none" for no rule.
func planRuleText(r *triage.PlanRule) string {
	if r == nil {
		return "none"
	}
	var parts []string
	for _, f := range r.Fields() {
		parts = append(parts, f.Name+" "+f.Value)
	}
	return strings.Join(parts, ", ")
}

// WhatIfText writes the whatif report for a terminal.
func WhatIfText(w io.Writer, r *WhatIf) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "sentinel-top whatif: %s\n", sanitize(strings.Join(r.Rules, ", "), maxWarningRunes))
	for _, in := range r.Inputs {
		fmt.Fprintf(bw, "\ninput %s\n", Sanitize(in.Source))
		if in.Error != "" {
			fmt.Fprintf(bw, "  failed: %s\n", sanitize(in.Error, maxWarningRunes))
			continue
		}
		for _, c := range in.Breakers {
			fmt.Fprintf(bw, "\n  breaker  app %s  resource %s  (%d %s)\n", Sanitize(c.App), Sanitize(c.Resource), len(c.Instances), plural(len(c.Instances), "instance", "instances"))
			fmt.Fprintf(bw, "    current:  %s\n", planRuleText(c.Current))
			if c.Mixed {
				bw.WriteString("              (the instances do not all run it)\n")
			}
			fmt.Fprintf(bw, "    proposed: %s\n", planRuleText(&c.Proposed))
			if c.WhatIf == nil {
				fmt.Fprintf(bw, "    not replayed: %s\n", sanitize(c.Error, maxWarningRunes))
				continue
			}
			verdict := lossText(c.WhatIf)
			if c.AddsLowConfidence {
				verdict += "; adds trips on fewer than 20 calls"
			}
			fmt.Fprintf(bw, "    verdict:  %s\n", verdict)
			fmt.Fprintf(bw, "    %-32s %-22s %s\n", "replay (step "+fmt.Sprint(c.WhatIf.StepMs)+" ms)", "current", "proposed")
			for _, row := range c.WhatIf.Rows() {
				fmt.Fprintf(bw, "    %-32s %-22s %s\n", row.Label, row.Current, row.Proposed)
			}
			if c.WhatIf.Estimated {
				bw.WriteString("    estimated: calls the breakers refused, and response times between histogram edges, are ranges\n")
			}
		}
		for _, c := range in.Flows {
			fmt.Fprintf(bw, "\n  flow  app %s  resource %s  (%d %s)\n", Sanitize(c.App), Sanitize(c.Resource), len(c.Instances), plural(len(c.Instances), "instance", "instances"))
			if c.WhatIf == nil {
				fmt.Fprintf(bw, "    not replayed: %s\n", sanitize(c.Error, maxWarningRunes))
				continue
			}
			fmt.Fprintf(bw, "    offered %d calls: the current rule passes %d (blocks %d), the proposed one passes %d (blocks %d)\n",
				c.WhatIf.Offered, c.WhatIf.Current.Passed, c.WhatIf.Current.Blocked, c.WhatIf.Proposed.Passed, c.WhatIf.Proposed.Blocked)
		}
		for _, u := range in.Unchecked {
			fmt.Fprintf(bw, "\n  %s rule for %s not checked: %s\n", u.Rule, Sanitize(u.Resource), u.Why)
		}
	}
	return bw.Flush()
}

// WhatIfMarkdown writes the whatif report for a document: names as code
// spans, the replay as a table.
func WhatIfMarkdown(w io.Writer, r *WhatIf) error {
	bw := bufio.NewWriter(w)
	bw.WriteString("# sentinel-top whatif\n\n")
	for _, f := range r.Rules {
		fmt.Fprintf(bw, "- **Rules:** %s\n", codeSpan(f, maxNameRunes))
	}
	for _, in := range r.Inputs {
		fmt.Fprintf(bw, "\n## Input %s\n", codeSpan(in.Source, maxNameRunes))
		if in.Error != "" {
			fmt.Fprintf(bw, "\n**Failed:** %s\n", escapeMarkdown(sanitize(in.Error, maxWarningRunes)))
			continue
		}
		for _, c := range in.Breakers {
			fmt.Fprintf(bw, "\n### Breaker: %s on %s\n\n", codeSpan(c.App, maxNameRunes), codeSpan(c.Resource, maxNameRunes))
			fmt.Fprintf(bw, "- **Instances:** %d\n- **Current:** %s\n- **Proposed:** %s\n", len(c.Instances),
				escapeMarkdown(planRuleText(c.Current)), escapeMarkdown(planRuleText(&c.Proposed)))
			if c.WhatIf == nil {
				fmt.Fprintf(bw, "- **Not replayed:** %s\n", escapeMarkdown(sanitize(c.Error, maxWarningRunes)))
				continue
			}
			verdict := lossText(c.WhatIf)
			if c.AddsLowConfidence {
				verdict += "; adds trips on fewer than 20 calls"
			}
			fmt.Fprintf(bw, "- **Verdict:** %s\n\n", escapeMarkdown(verdict))
			fmt.Fprintf(bw, "| replay (step %d ms) | current | proposed |\n|---|---|---|\n", c.WhatIf.StepMs)
			for _, row := range c.WhatIf.Rows() {
				fmt.Fprintf(bw, "| %s | %s | %s |\n", row.Label, row.Current, row.Proposed)
			}
			if c.WhatIf.Estimated {
				bw.WriteString("\nEstimated: calls the breakers refused, and response times between histogram edges, are ranges.\n")
			}
		}
		for _, c := range in.Flows {
			fmt.Fprintf(bw, "\n### Flow: %s on %s\n\n", codeSpan(c.App, maxNameRunes), codeSpan(c.Resource, maxNameRunes))
			if c.WhatIf == nil {
				fmt.Fprintf(bw, "- **Not replayed:** %s\n", escapeMarkdown(sanitize(c.Error, maxWarningRunes)))
				continue
			}
			fmt.Fprintf(bw, "| %d calls offered | current | proposed |\n|---|---|---|\n| passed | %d | %d |\n| blocked | %d | %d |\n",
				c.WhatIf.Offered, c.WhatIf.Current.Passed, c.WhatIf.Proposed.Passed, c.WhatIf.Current.Blocked, c.WhatIf.Proposed.Blocked)
		}
		for _, u := range in.Unchecked {
			fmt.Fprintf(bw, "\n- **Not checked:** %s rule for %s: %s\n", u.Rule, codeSpan(u.Resource, maxNameRunes), u.Why)
		}
	}
	return bw.Flush()
}
