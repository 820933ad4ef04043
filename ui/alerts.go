package ui

import (
	"strconv"
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/sentinel-top/sentinel-top/collector/triage"
)

// alertsPanel lists the findings, most severe first, one line each: the
// severity, the kind, the app and resource, "✓ plan" when a plan for its
// rule was found safe on the input's traffic, and the summary. The table's
// filter (/) applies to its findings too, matched the same way.
type alertsPanel struct {
	st       *Styles
	keys     *keyMap
	findings []triage.Finding
	planned  []bool // per finding: a safe plan covers it
	filter   string // lower case, as the table's
	shown    []int  // the findings the filter keeps

	cur           cursor
	focused       bool
	kindW         int // the widest kind listed
	whereW        int // the widest app/resource listed
	width, height int // height includes the title line
}

func newAlertsPanel(st *Styles, keys *keyMap) alertsPanel {
	return alertsPanel{st: st, keys: keys}
}

// SetFindings replaces the findings and the plans that cover them,
// keeping the cursor's position.
func (a alertsPanel) SetFindings(f []triage.Finding, plans []triage.Plan) alertsPanel {
	a.findings = f
	a.planned = make([]bool, len(f))
	a.kindW, a.whereW = 8, 0
	for i := range f {
		a.kindW = max(a.kindW, len(f[i].Kind))
		a.whereW = max(a.whereW, width(sanitize(f[i].App))+1+width(sanitize(f[i].Resource)))
		a.planned[i] = planned(plans, &f[i])
	}
	a.kindW = min(a.kindW, 24)
	return a.refilter()
}

// SetFilter keeps only the findings whose app or resource contains f
// (case insensitive), as the table does.
func (a alertsPanel) SetFilter(f string) alertsPanel {
	a.filter = strings.ToLower(f)
	return a.refilter()
}

func (a alertsPanel) refilter() alertsPanel {
	a.shown = a.shown[:0]
	for i := range a.findings {
		if matchesFilter(a.findings[i].App, a.findings[i].Resource, a.filter) {
			a.shown = append(a.shown, i)
		}
	}
	a.cur = a.cur.SetCount(len(a.shown))
	return a
}

// Len is the number of findings shown (after the filter).
func (a alertsPanel) Len() int { return len(a.shown) }

// SetSize sets the panel's size in cells, title line included.
func (a alertsPanel) SetSize(w, h int) alertsPanel {
	a.width, a.height = w, h
	a.cur = a.cur.SetPage(max(1, h-1))
	return a
}

// Focus marks whether the panel has the keyboard.
func (a alertsPanel) Focus(on bool) alertsPanel { a.focused = on; return a }

// Selected returns the selected finding.
func (a alertsPanel) Selected() (triage.Finding, bool) {
	i := a.cur.Pos()
	if i >= len(a.shown) {
		return triage.Finding{}, false
	}
	return a.findings[a.shown[i]], true
}

// Update moves the cursor (keys and the mouse wheel).
func (a alertsPanel) Update(msg tea.Msg) (alertsPanel, tea.Cmd) {
	a.cur, _ = a.cur.Update(msg, a.keys)
	return a, nil
}

// severityCounts counts the findings fs[i] for i in idx per severity.
func severityCounts(fs []triage.Finding, idx []int) (crit, warn, info int) {
	for _, i := range idx {
		switch fs[i].Severity {
		case triage.Critical:
			crit++
		case triage.Warning:
			warn++
		default:
			info++
		}
	}
	return
}

// View renders the title line and the findings in sight.
func (a alertsPanel) View() string {
	if a.width <= 0 || a.height <= 0 {
		return ""
	}
	st := a.st
	var b strings.Builder
	crit, warn, info := severityCounts(a.findings, a.shown)
	shown := a.shown
	title := "ALERTS"
	if a.focused {
		title = glyphCursor + " ALERTS"
	}
	var t strings.Builder
	t.WriteString(st.title.on(title))
	switch {
	case len(a.findings) == 0:
		t.WriteString(st.dim.on("  none"))
	case len(shown) == 0:
		t.WriteString(st.dim.on("  none of " + strconv.Itoa(len(a.findings)) + " matches the filter"))
	default:
		t.WriteString("  ")
		t.WriteString(st.crit.on(strconv.Itoa(crit) + " critical"))
		t.WriteString("  ")
		t.WriteString(st.warning.on(strconv.Itoa(warn) + " warning"))
		t.WriteString("  ")
		t.WriteString(st.info.on(strconv.Itoa(info) + " info"))
		if body := a.height - 1; len(shown) > body && body > 0 {
			first := a.cur.Offset()
			t.WriteString(st.dim.on("  " + strconv.Itoa(first+1) + "-" +
				strconv.Itoa(min(len(shown), first+body)) + " of " + strconv.Itoa(len(shown))))
		}
		if hidden := len(a.findings) - len(shown); hidden > 0 {
			t.WriteString(st.dim.on("  (" + strconv.Itoa(hidden) + " hidden by the filter)"))
		}
	}
	b.WriteString(fitLine(t.String(), a.width))
	body := a.height - 1
	first, sel := a.cur.Offset(), a.cur.Pos()
	end := min(len(a.shown), first+body)
	for i := first; i < end; i++ {
		b.WriteByte('\n')
		f := a.shown[i]
		b.WriteString(a.line(&a.findings[f], a.planned[f], i == sel))
	}
	for i := max(0, end-first); i < body; i++ {
		b.WriteByte('\n')
	}
	return b.String()
}

// line renders one finding in the panel's width.
func (a alertsPanel) line(f *triage.Finding, planned, selected bool) string {
	st := a.st
	sel := selected && a.focused
	var b strings.Builder
	b.WriteString(strings.TrimSuffix(listMark(selected, a.focused), " "))
	sev := sevMark(f.Severity)
	if a.width >= sevWordW {
		sev += " " + sevWord(f.Severity)
	}
	if sel {
		b.WriteString(sev)
	} else {
		st.sevPaint(f.Severity).write(&b, sev)
	}
	b.WriteByte(' ')
	padRight(&b, cut(string(f.Kind), a.kindW), a.kindW)
	b.WriteByte(' ')
	// the names up to the widest, at most a quarter of the width: the
	// summary takes the rest.
	nameW := min(a.whereW, max(16, min(48, a.width/4)))
	where := findingWhere(f, nameW)
	padRight(&b, where, nameW)
	b.WriteByte(' ')
	if planned {
		mark := glyphPlan + " plan"
		if sel {
			b.WriteString(mark)
		} else {
			st.closed.write(&b, mark)
		}
		b.WriteByte(' ')
	}
	b.WriteString(sanitize(f.Summary))
	s := fitLine(b.String(), a.width)
	if sel {
		s = st.selected.on(s)
	}
	return s
}

// sevWordW is the least width at which a finding's severity is said in a
// word beside its mark ("!! CRIT"); narrower, the summary takes its room.
const sevWordW = 100

// findingWhere names a finding's app and resource in w cells.
func findingWhere(f *triage.Finding, w int) string {
	app := sanitize(f.App)
	if app == "" {
		return resourceName(f.Resource, w)
	}
	res := sanitize(f.Resource)
	if width(app)+1+width(res) <= w {
		return app + "/" + res
	}
	// the resource's last part whole, as in the table: the app gives way
	// first, down to a few cells ("gat…/…:queryPrice").
	appW := min(width(app), max(4, w*2/5))
	need := lastPartW(res) + 1 // the mark and the last part
	if strings.Contains(res, "://") {
		need++ // and a cell of the host
	}
	switch need = min(width(res), need); {
	case w-1-width(app) >= need: // the app whole, the resource the rest
		appW = width(app)
	case w-1-appW < need:
		appW = max(min(width(app), appMinW), w-1-need)
	default: // room the resource does not use goes to the app
		appW = min(width(app), max(appW, w-1-width(res)))
	}
	resW := w - 1 - appW
	return elide(app, appW) + "/" + resourceName(f.Resource, max(1, resW))
}

// appMinW is the least of an app's name the alerts panel keeps beside a
// resource whose last part takes the rest ("g…y").
const appMinW = 3

// lastPartW is the width of a name's last part with the separator before
// it (":queryPrice", "/info"); the whole name when it has none.
func lastPartW(s string) int {
	for i := len(s) - 2; i > 0; i-- {
		if strings.IndexByte(nameSeparators, s[i]) >= 0 {
			return width(s[i:])
		}
	}
	return width(s)
}

// planned reports whether a safe plan covers f: a change to its rule,
// checked on the input's traffic.
func planned(plans []triage.Plan, f *triage.Finding) bool {
	for i := range plans {
		if plans[i].Safe && plans[i].Covers(f) {
			return true
		}
	}
	return false
}

// filterKey is what the filter (/) matches in a row or a finding: its app
// and resource as shown, lower case.
func filterKey(app, res string) string { return strings.ToLower(sanitize(app) + " " + sanitize(res)) }

// matchesFilter reports whether app x res passes the filter f (lower
// case; "" passes everything).
func matchesFilter(app, res, f string) bool {
	return f == "" || strings.Contains(filterKey(app, res), f)
}
