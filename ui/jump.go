// The jump prompt (:): go to an app, a resource or an instance by name,
// completed against what the snapshot shown knows.

package ui

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/sentinel-top/sentinel-top/collector"
)

// jumpKind is what a jump goes to.
type jumpKind uint8

const (
	jumpApp jumpKind = iota
	jumpResource
	jumpInstance
)

func (k jumpKind) String() string {
	switch k {
	case jumpApp:
		return "app"
	case jumpResource:
		return "resource"
	}
	return "instance"
}

// jumpTarget is one name the prompt completes: an app, an app x resource,
// or an instance with the resource its jump opens (its worst breaker's,
// else that of a finding naming it; none when it is known only as a
// dialed target, whose row in the targets screen it selects).
type jumpTarget struct {
	kind           jumpKind
	app, res, inst string // as received
	target         string // the dialed target of an instance known only as one
	label          string // the name as shown: sanitized
	lower          string // label, lower case: what the typed text matches
}

// jumpScreen is the jump prompt, k9s's ":": it covers the screen it was
// opened from, which it shows with the candidates over its bottom lines,
// and takes every key. Typing narrows the candidates (case insensitive,
// anywhere in the name: exact names first, then those it begins, then the
// others; apps, resources, instances), tab completes (to what the
// candidates share, else to the highlighted one), ↑/↓ choose, enter jumps
// to the highlighted one, esc goes back. Where it jumps:
//   - an app: the main screen's table, on the app's first row in the
//     table's order;
//   - a resource: the table, on its row;
//   - an instance: the detail of its resource (its worst breaker's, else
//     that of a finding naming it), the instance selected in the timeline;
//     an instance known only as a dialed target: the targets screen on it.
//
// A filter that would hide the row is cleared; the keyboard goes to the
// table.
type jumpScreen struct {
	*common
	under   screen
	main    *mainScreen
	targets *targetsScreen

	input   textinput.Model
	all     []jumpTarget // from the snapshot shown when the prompt opened
	order   []int32      // into all, by kind then name
	matches []int32      // into all, best first
	sel     int          // the highlighted match

	width, height int
}

var _ screen = (*jumpScreen)(nil)

// jumpListMax is the most candidates shown at once.
const jumpListMax = 8

func newJumpScreen(c *common) *jumpScreen {
	return &jumpScreen{common: c, input: newPromptInput(c.st, ":", "app, resource or instance")}
}

// Open shows the prompt over under, its candidates taken from the
// snapshot shown.
func (j *jumpScreen) Open(under screen) (screen, tea.Cmd) {
	j.under = under
	j.all = jumpTargets(j.all[:0], j.snap)
	// once: each keystroke keeps this order within a rank.
	j.order = j.order[:0]
	for i := range j.all {
		j.order = append(j.order, int32(i))
	}
	all := j.all
	slices.SortFunc(j.order, func(a, b int32) int {
		return cmp.Or(cmp.Compare(all[a].kind, all[b].kind), cmp.Compare(all[a].lower, all[b].lower))
	})
	j.input.SetValue("")
	j.match()
	return j, j.input.Focus()
}

// isJumpTyped reports whether a key message is ':' and more runes, as a
// terminal delivers keys typed faster than it is read (or pasted).
func isJumpTyped(msg tea.KeyMsg) bool {
	return msg.Type == tea.KeyRunes && !msg.Paste && len(msg.Runes) > 1 && msg.Runes[0] == ':'
}

// jumpTargets appends to dst the apps, resources and instances of s.
func jumpTargets(dst []jumpTarget, s *collector.Snapshot) []jumpTarget {
	add := func(t jumpTarget, name string) {
		t.label = sanitize(name)
		t.lower = strings.ToLower(t.label)
		dst = append(dst, t)
	}
	apps := map[string]bool{}
	for i := range s.Rows {
		r := &s.Rows[i]
		if !apps[r.App] {
			apps[r.App] = true
			add(jumpTarget{kind: jumpApp, app: r.App}, r.App)
		}
		add(jumpTarget{kind: jumpResource, app: r.App, res: r.Resource}, r.Resource)
	}
	// instances: each with its worst breaker's resource, else a finding's,
	// else as a dialed target.
	type seen struct {
		at    int // in dst
		worst int // the breaker's state, -1 without one
	}
	inst := map[string]seen{}
	for i := range s.Breakers {
		b := &s.Breakers[i]
		bad := -1
		if b.Provenance != collector.ProvenanceUnknown {
			bad = int(b.State)
		}
		if k, ok := inst[b.Instance]; ok {
			if bad > k.worst {
				dst[k.at].app, dst[k.at].res = b.App, b.Resource
				inst[b.Instance] = seen{k.at, bad}
			}
			continue
		}
		inst[b.Instance] = seen{len(dst), bad}
		add(jumpTarget{kind: jumpInstance, app: b.App, res: b.Resource, inst: b.Instance}, b.Instance)
	}
	for i := range s.Findings {
		f := &s.Findings[i]
		for _, n := range f.Instances {
			if _, ok := inst[n]; !ok {
				inst[n] = seen{len(dst), -1}
				add(jumpTarget{kind: jumpInstance, app: f.App, res: f.Resource, inst: n}, n)
			}
		}
	}
	for i := range s.Targets {
		t := s.Targets[i]
		if n := t.Instance; n != "" {
			if _, ok := inst[n]; !ok {
				inst[n] = seen{len(dst), -1}
				add(jumpTarget{kind: jumpInstance, inst: n, target: t.Name}, n)
			}
		}
	}
	return dst
}

// match finds the candidates of the text typed, best first, and
// highlights the first.
func (j *jumpScreen) match() {
	q := strings.ToLower(strings.TrimSpace(j.input.Value()))
	j.matches = j.matches[:0]
	// the names equal to the text, those it begins, those holding it: each
	// in the order Open sorted them (apps, resources, instances; by name).
	for _, i := range j.order {
		if j.all[i].lower == q {
			j.matches = append(j.matches, i)
		}
	}
	for _, i := range j.order {
		if l := j.all[i].lower; l != q && strings.HasPrefix(l, q) {
			j.matches = append(j.matches, i)
		}
	}
	for _, i := range j.order {
		if l := j.all[i].lower; !strings.HasPrefix(l, q) && strings.Contains(l, q) {
			j.matches = append(j.matches, i)
		}
	}
	j.sel = 0
}

// complete extends the text typed to what every candidate beginning with
// it shares, or else to the highlighted candidate's name.
func (j *jumpScreen) complete() {
	if len(j.matches) == 0 {
		return
	}
	typed := j.input.Value()
	q := strings.ToLower(typed)
	common := ""
	first := true
	for _, i := range j.matches {
		t := &j.all[i]
		if !strings.HasPrefix(t.lower, q) {
			continue
		}
		if first {
			common, first = t.label, false
			continue
		}
		common = foldedPrefix(common, t.label)
	}
	if len([]rune(common)) > len([]rune(typed)) {
		j.input.SetValue(common)
	} else {
		j.input.SetValue(j.all[j.matches[j.sel]].label)
	}
	j.input.CursorEnd()
	j.match()
}

// foldedPrefix is the longest prefix of a and b, case insensitive, in a's
// case, on rune boundaries.
func foldedPrefix(a, b string) string {
	ra, rb := []rune(a), []rune(strings.ToLower(b))
	n := 0
	for n < len(ra) && n < len(rb) && strings.ToLower(string(ra[n])) == string(rb[n]) {
		n++
	}
	return string(ra[:n])
}

// Update edits the text typed, chooses, completes, jumps or goes back.
func (j *jumpScreen) Update(msg tea.Msg) (screen, tea.Cmd) {
	km, ok := msg.(tea.KeyMsg)
	if !ok {
		return j, nil // the mouse stays off the screen under the prompt
	}
	switch km.Type {
	case tea.KeyEsc:
		j.input.Blur()
		return j.under, nil
	case tea.KeyEnter:
		if len(j.matches) == 0 {
			return j, nil
		}
		j.input.Blur()
		return j.jump(&j.all[j.matches[j.sel]])
	case tea.KeyTab:
		j.complete()
		return j, nil
	case tea.KeyUp, tea.KeyShiftTab, tea.KeyCtrlP:
		j.sel = max(0, j.sel-1)
		return j, nil
	case tea.KeyDown, tea.KeyCtrlN:
		j.sel = max(0, min(len(j.matches)-1, j.sel+1))
		return j, nil
	}
	before := j.input.Value()
	var cmd tea.Cmd
	j.input, cmd = j.input.Update(km)
	if j.input.Value() != before {
		j.match()
	}
	return j, cmd
}

// jump goes to t: the table's row, the detail, or the targets screen.
func (j *jumpScreen) jump(t *jumpTarget) (screen, tea.Cmd) {
	m := j.main
	switch {
	case t.kind == jumpApp:
		m.detail.Close()
		m.jumpTo(t.app, "", true)
		return m, nil
	case t.kind == jumpResource:
		m.detail.Close()
		m.jumpTo(t.app, t.res, false)
		return m, nil
	case t.target != "":
		under := j.under
		if under == j.targets {
			under = j.targets.under
		}
		j.targets.Open(under)
		j.targets.selectTarget(t.target)
		return j.targets, nil
	}
	m.jumpTo(t.app, t.res, false) // esc from the detail comes back to its row
	return m.detail, m.detail.OpenInstance(t.app, t.res, t.inst)
}

// SetSize sets the screen area.
func (j *jumpScreen) SetSize(w, h int) {
	j.width, j.height = w, h
	j.input.Width = max(8, w/2)
}

// View is the screen under, its bottom lines covered by the candidates.
func (j *jumpScreen) View() string {
	lines := strings.Split(j.under.View(), "\n")
	list := j.list()
	if len(list) > len(lines) {
		list = list[len(list)-len(lines):]
	}
	copy(lines[len(lines)-len(list):], list)
	return strings.Join(lines, "\n")
}

// list renders the title and the candidates in sight, the highlighted one
// among them.
func (j *jumpScreen) list() []string {
	st, w := j.st, j.width
	n := min(len(j.matches), jumpListMax, max(1, j.height/2-1))
	from := max(0, min(j.sel-n+1, len(j.matches)-n))
	title := st.title.on("JUMP") + "  "
	switch {
	case len(j.all) == 0:
		title += st.dim.on("nothing known yet")
	case len(j.matches) == 0:
		title += st.dim.on("no app, resource or instance matches")
	default:
		title += st.dim.on(strconv.Itoa(len(j.matches)) + " of " + strconv.Itoa(len(j.all)))
		if len(j.matches) > n {
			title += st.dim.on(" · " + strconv.Itoa(from+1) + "-" + strconv.Itoa(from+n) + " in sight")
		}
	}
	out := []string{fitLine(st.title.on(strings.Repeat("─", 2))+" "+title, w)}
	// the names in a column as wide as the widest in sight, up to what
	// leaves a third of the line to where they are.
	nameW := 8
	for i := from; i < from+n; i++ {
		nameW = max(nameW, width(j.all[j.matches[i]].label))
	}
	nameW = min(nameW, max(8, w-jumpKindW-2-w/3))
	for i := from; i < from+n; i++ {
		out = append(out, j.line(&j.all[j.matches[i]], i == j.sel, nameW))
	}
	return out
}

// jumpKindW is the width of a candidate's mark and kind ("▸ resource ").
const jumpKindW = 2 + 9

// line renders a candidate: its kind, its name, and where it is.
func (j *jumpScreen) line(t *jumpTarget, selected bool, nameW int) string {
	st, w := j.st, j.width
	var b strings.Builder
	b.WriteString(listMark(selected, true))
	padRight(&b, t.kind.String(), jumpKindW-2)
	where := ""
	switch {
	case t.kind == jumpResource:
		where = "in " + sanitize(t.app)
	case t.target != "":
		where = "target " + sanitize(t.target)
	case t.kind == jumpInstance:
		where = sanitize(t.app) + " · " + sanitize(t.res)
	}
	name := elide(t.label, nameW)
	if t.kind == jumpResource {
		name = resourceName(t.res, nameW)
	}
	padRight(&b, name, nameW)
	if where != "" {
		b.WriteString("  ")
		b.WriteString(elide(where, max(1, w-jumpKindW-nameW-2)))
	}
	s := fitLine(b.String(), w)
	if selected {
		s = st.selected.on(s)
	}
	return s
}

// Keys are the screen under's hints.
func (j *jumpScreen) Keys() help.KeyMap { return j.under.Keys() }

// Modal is true: the prompt takes every key.
func (j *jumpScreen) Modal() bool { return true }

// Footer is the prompt and what its keys do.
func (j *jumpScreen) Footer(w int) string {
	return fitLine(j.input.View()+j.st.dim.on("  tab completes · ↑↓ choose · enter jumps · esc back"), w)
}

// jumpTo shows app x res in the table (the app's first row in the
// table's order when wholeApp), clearing the filter when it hides the row,
// and gives the table the keyboard.
func (s *mainScreen) jumpTo(app, res string, wholeApp bool) {
	s.filtering = false
	s.filter.Blur()
	s.setFocus(focusTable)
	var ok bool
	if s.table, ok = s.table.selectRow(app, res, wholeApp); !ok && s.filter.Value() != "" {
		s.filter.SetValue("")
		s.applyFilter()
		s.table, _ = s.table.selectRow(app, res, wholeApp)
	}
}

// selectRow selects app x res, or the first row of app in the table's
// order when wholeApp; ok is false when no such row is shown.
func (t resourceTable) selectRow(app, res string, wholeApp bool) (resourceTable, bool) {
	for i, v := range t.view {
		r := &t.rows[v]
		if r.App == app && (wholeApp || r.Resource == res) {
			return t.pick(i), true
		}
	}
	return t, false
}

// pick selects the i-th row shown, as a move of the user's.
func (t resourceTable) pick(i int) resourceTable {
	t.cur = t.cur.Select(i)
	t.moved = true
	return t.remember()
}

// Close marks the detail screen as no longer shown.
func (d *detailScreen) Close() { d.open = false }

// OpenInstance opens app x res with inst selected in the timeline once its
// data arrives.
func (d *detailScreen) OpenInstance(app, res, inst string) tea.Cmd {
	cmd := d.Open(app, res, nil)
	d.goInst = inst
	return cmd
}

// selectInstance selects the instance named in the timeline, when it is
// there.
func (v detailView) selectInstance(name string) detailView {
	if v.d == nil {
		return v
	}
	for i := range v.d.Instances {
		if v.d.Instances[i].Instance == name {
			v.tl.cur = v.tl.cur.Select(i)
			v = v.build()
			return v.reveal()
		}
	}
	return v
}

// selectTarget selects the dialed target named.
func (t *targetsScreen) selectTarget(name string) {
	for i, k := range t.order {
		if t.snap.Targets[k].Name == name {
			t.cur = t.cur.Select(i)
			return
		}
	}
}
