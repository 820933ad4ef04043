package report

import (
	"strconv"
	"strings"

	"github.com/sentinel-top/sentinel-top/collector/triage"
	"github.com/sentinel-top/sentinel-top/collector/whatif"
)

// The plans' layout, shared by the Markdown and Text renderers as the
// findings' is: per plan, numbered, labelled values and a table of its
// what-if replay, the current rule's measures beside the proposed one's.

// table is a part's table of trusted cells: a header and rows, the first
// column labels, the others numbers.
type table struct {
	head []string
	rows [][]string
}

type planSection struct {
	p     *triage.Plan
	parts []part
}

// maxInstanceValues is how many instances' own values a plan lists in
// full; with more it gives their range and both ends.
const maxInstanceValues = 4

// planNumbers are the numbers of the plans (from 1) that cover each
// finding, in the findings' order.
func planNumbers(r *Report) [][]int {
	out := make([][]int, len(r.Findings))
	for i := range r.Findings {
		for j := range r.Plans {
			if r.Plans[j].Covers(&r.Findings[i]) {
				out[i] = append(out[i], j+1)
			}
		}
	}
	return out
}

// planRef is a finding's part naming the plans that cover it.
func planRef(r *Report, nums []int) part {
	refs := make([]string, len(nums))
	for i, n := range nums {
		verdict, _ := r.Plans[n-1].Verdict()
		refs[i] = "Plan " + strconv.Itoa(n) + " below (" + verdict + ")"
	}
	return part{label: "Plan", value: []seg{prose("%s", strings.Join(refs, ", "))}}
}

func planSections(r *Report) []planSection {
	out := make([]planSection, len(r.Plans))
	for i := range r.Plans {
		p := &r.Plans[i]
		s := planSection{p: p}
		add := func(label string, value ...seg) { s.parts = append(s.parts, part{label: label, value: value}) }
		add(nameCount("Instances", len(p.Instances)), nameList(p.Instances)...)
		if p.RuleID != "" {
			add("Rule id", input(p.RuleID))
		}
		var cur []string
		for _, f := range p.CurrentFields() {
			cur = append(cur, f.Name+" "+f.Value)
		}
		add("Current rule", prose("%s", strings.Join(cur, ", ")))
		changes := p.Changes()
		if len(changes) > 0 {
			add("Change", changeWords(changes)...)
		}
		for _, c := range changes {
			if c.PerInstance != nil {
				add("Per instance", perInstance(&c)...)
			}
		}
		add("Because", prose("%s", because(r, p)))
		verdict, why := p.Verdict()
		if left := p.LeftOut(); len(left) > 0 {
			label := "Left out"
			if !p.Safe {
				label = "Considered"
			}
			add(label, changeWords(left)...)
		}
		if why != "" {
			verdict += ": " + why
		}
		add("Verdict", prose("%s", verdict))
		if rows, basis, ok := p.Replay(); !ok {
			add("What if", prose("not replayed"))
		} else {
			add("What if", prose("%s", basis))
			s.parts = append(s.parts, part{table: whatIfTable(p, rows)})
		}
		out[i] = s
	}
	return out
}

func nameCount(label string, n int) string { return label + " (" + strconv.Itoa(n) + ")" }

// changeWords lists changes: "retryTimeoutMs 10000 -> 30000; ...", a
// map entry's key (input) as "specificItems[KEY]".
func changeWords(cs []triage.Change) []seg {
	var out []seg
	for i := range cs {
		if i > 0 {
			out = append(out, prose("; "))
		}
		if c := &cs[i]; c.Key != "" {
			out = append(out, prose("%s[", c.Field), input(c.Key), prose("] %s -> %s", c.CurrentValue(), c.Proposed()))
			continue
		}
		out = append(out, prose("%s", cs[i].String()))
	}
	return out
}

// perInstance lists the instances' own values of a field: every one, or
// with many their range and both ends.
func perInstance(c *triage.Change) []seg {
	out := []seg{prose("%s: ", c.Field)}
	vals := c.PerInstance
	one := func(i int) {
		if i > 0 {
			out = append(out, prose(", "))
		}
		out = append(out, input(vals[i].Instance), prose(" %d", vals[i].Value))
	}
	if len(vals) <= maxInstanceValues {
		for i := range vals {
			one(i)
		}
		return out
	}
	out = append(out, prose("%d to %d over %d instances (", c.Lowest, c.Highest, len(vals)))
	one(0)
	one(1)
	out = append(out, prose(", %d more", len(vals)-3))
	one(len(vals) - 1)
	return append(out, prose(")"))
}

// because lists the plan's finding kinds, each with the number of its
// finding in the report.
func because(r *Report, p *triage.Plan) string {
	words := make([]string, len(p.Because))
	for i, k := range p.Because {
		words[i] = string(k)
		for j := range r.Findings {
			f := &r.Findings[j]
			if f.Kind == k && f.App == p.App && f.Resource == p.Resource {
				words[i] += " (finding " + strconv.Itoa(j+1) + ")"
				break
			}
		}
	}
	return strings.Join(words, ", ")
}

// whatIfTable is the plan's replay, the current rule beside the proposed
// one (the one considered, when none is safe).
func whatIfTable(p *triage.Plan, rows []whatif.Row) *table {
	other := "proposed rule"
	if !p.Safe {
		other = "considered rule"
	}
	t := &table{head: []string{"", "current rule", other}}
	for _, row := range rows {
		t.rows = append(t.rows, []string{row.Label, row.Current, row.Proposed})
	}
	return t
}
