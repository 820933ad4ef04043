// The detail screen's plans: the change proposed for a rule of the
// resource, its verdict, and its what-if replay, the current rule beside
// the proposed one.

package ui

import (
	"strconv"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/collector/triage"
	"github.com/sentinel-top/sentinel-top/collector/whatif"
)

// snapshotPlans are the plans of app x res in s.
func snapshotPlans(s *collector.Snapshot, app, res string) []triage.Plan {
	var out []triage.Plan
	for i := range s.Plans {
		if s.Plans[i].App == app && s.Plans[i].Resource == res {
			out = append(out, s.Plans[i])
		}
	}
	return out
}

// planLines adds a PLAN section per plan of the resource: its rule, instances
// and findings, the verdict (why no change is safe, or what was left out),
// then one table: the rule's fields the plan changes and the what-if
// measures, the current rule's column beside the proposed one's.
func (v *detailView) planLines(add func(string)) {
	st := v.st
	const indent = "  "
	for i := range v.plans {
		if i > 0 {
			add("")
		}
		p := &v.plans[i]
		verdict, why := p.Verdict()
		var h strings.Builder
		h.WriteString(st.title.on("PLAN") + "  " + p.Rule + " rule")
		if p.RuleID != "" {
			h.WriteString(" id " + safeName(p.RuleID, 16))
		}
		h.WriteString(" · ")
		if p.Safe {
			h.WriteString(st.closed.on(glyphPlan + " " + verdict))
		} else {
			h.WriteString(st.warn.on(verdict))
		}
		kinds := make([]string, len(p.Because))
		for k := range p.Because {
			kinds[k] = string(p.Because[k])
		}
		h.WriteString(" · because " + strings.Join(kinds, ", "))
		if room := v.width - ansi.StringWidth(h.String()) - 7; room >= 12 { // the instances when they fit
			h.WriteString(" · " + joinNames(p.Instances, room))
		}
		add(fitLine(h.String(), v.width))
		if why != "" {
			for _, l := range wrap(why, v.width-len(indent)) {
				add(indent + st.dim.on(l))
			}
		}
		v.planTable(add, p)
	}
}

// planTable adds the rule's changes and the what-if measures in three
// columns, the values cut to fit narrow screens.
func (v *detailView) planTable(add func(string), p *triage.Plan) {
	st := v.st
	changes, other := p.Changes(), "PROPOSED"
	if !p.Safe {
		changes, other = p.LeftOut(), "CONSIDERED"
	}
	var rows []whatif.Row
	for i := range changes {
		c := &changes[i]
		label := c.Field
		if c.Key != "" {
			label += "[" + safeName(c.Key, 24) + "]"
		}
		rows = append(rows, whatif.Row{Label: label, Current: c.CurrentValue(), Proposed: c.ProposedRange()})
	}
	nChanges := len(rows)
	replay, basis, replayed := p.Replay()
	rows = append(rows, replay...)
	labelW, valW := 8, len(other)
	for _, r := range rows {
		labelW = max(labelW, width(r.Label))
		valW = max(valW, width(r.Current), width(r.Proposed))
	}
	labelW = min(labelW, max(8, v.width/2))
	valW = max(4, min(valW, (v.width-2-labelW-4)/2))
	line := func(label, cur, prop string) string {
		var b strings.Builder
		b.WriteString("  ")
		padRight(&b, cut(label, labelW), labelW)
		padLeft(&b, cut(cur, valW), valW+2)
		padLeft(&b, cut(prop, valW), valW+2)
		return b.String()
	}
	add(st.dim.on(line("", "CURRENT", other)))
	for i, r := range rows[:nChanges] {
		add(line(r.Label, r.Current, r.Proposed))
		if per := changes[i].PerInstance; per != nil {
			add("    " + st.dim.on(cut("per instance: "+instanceValues(per, v.width-24), max(10, v.width-4))))
		}
	}
	if !replayed {
		add("  " + st.dim.on("not replayed"))
		return
	}
	add("  " + st.bold.on("WHAT IF"))
	for _, l := range wrap(basis, v.width-2) {
		add("  " + st.dim.on(l))
	}
	for _, r := range rows[nChanges:] {
		add(line(r.Label, r.Current, r.Proposed))
	}
}

// instanceValues lists instances' own values, names sanitized, in about w
// cells: "gw-1 10000, gw-2 10400 +6".
func instanceValues(vals []triage.InstanceValue, w int) string {
	return joinEach(len(vals), w, func(i int) string {
		return safeName(vals[i].Instance, 24) + " " + strconv.FormatInt(vals[i].Value, 10)
	})
}
