package ui

import (
	"bytes"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/core"
)

// The habits htop and k9s users reach for: F1, F10, the jump prompt (:),
// the mouse, and the alerts under the / filter.

// jumpSource is the test fleet with its breakers' states: order-3's worst
// breaker is on GET:/member/info, whose detail lists order-1 to order-4.
func jumpSource() *staticSource {
	s := testSnapshot()
	s.Breakers = []collector.BreakerState{
		{App: "order", Resource: "POST:/order/create", Instance: "order-3", State: core.Closed},
		{App: "order", Resource: "GET:/member/info", Instance: "order-3", State: core.Open},
		{App: "order", Resource: "订单查询/按用户", Instance: "order-3", State: core.HalfOpen},
		{App: "order", Resource: "POST:/order/create", Instance: "order-9", State: core.Closed},
	}
	src := newStaticSource(s)
	src.details["order\x00GET:/member/info"] = testDetail()
	return src
}

// selected is the main table's selected row as "app resource".
func selected(m *Model) string {
	r, ok := m.main.table.Selected()
	if !ok {
		return ""
	}
	return r.App + " " + r.Resource
}

func TestFlowF1HelpF10Quit(t *testing.T) {
	tm := startFlow(t, goldenSource())
	waitText(t, tm, "ALERTS")
	typeKeys(tm, "<f1>")
	waitText(t, tm, "sentinel-top keys", "?/F1", "q/ctrl+c/F10", "MOUSE")
	typeKeys(tm, "<f1>") // closes it, as ? does
	tm.Send(tea.WindowSizeMsg{Width: 100, Height: 30})
	waitText(t, tm, "BREAKERS")
	typeKeys(tm, "<f10>")
	tm.WaitFinished(t, teatest.WithFinalTimeout(5*time.Second))
	if s := ansi.Strip(tm.FinalModel(t).View()); strings.Contains(s, "GLYPHS") {
		t.Errorf("F1 did not close the help:\n%s", s)
	}
}

func TestF10QuitsFromEveryScreen(t *testing.T) {
	for _, open := range []string{"", "<enter>", "t", "?"} {
		m := newTestModel(goldenSource(), 120, 40)
		press(m, open)
		_, cmd := m.Update(keys("<f10>")[0])
		if cmd == nil {
			t.Errorf("after %q F10 does nothing", open)
			continue
		}
		if _, ok := cmd().(tea.QuitMsg); !ok {
			t.Errorf("after %q F10 does not quit", open)
		}
	}
}

func TestFlowJump(t *testing.T) {
	src := jumpSource()
	tm := startFlow(t, src)
	waitText(t, tm, "GET:/pay/status")
	// candidates as typed: the app first (its name begins with the text),
	// then the instances, then the resources that contain it.
	typeKeys(tm, ":pay")
	waitText(t, tm, "JUMP  5 of", "app      payment", "instance payment-1", "resource GET:/pay/status", "in payment")
	// tab completes what they share, then the highlighted one; enter jumps.
	typeKeys(tm, "<tab>")
	waitText(t, tm, ":payment ", "JUMP  3 of")
	typeKeys(tm, "<esc>:stat<tab>")
	waitText(t, tm, ":GET:/pay/status", "JUMP  1 of")
	typeKeys(tm, "<enter>")
	waitText(t, tm, "rows 5/5")
	fm := finalModel(t, tm)
	if got := selected(fm); got != "payment GET:/pay/status" {
		t.Errorf("the jump selected %q", got)
	}
	if s := ansi.Strip(fm.View()); strings.Contains(s, "JUMP") || !strings.Contains(s, "ALERTS") {
		t.Errorf("the jump did not go back to the table:\n%s", s)
	}
}

// finalModel quits and returns the model.
func finalModel(t *testing.T, tm *teatest.TestModel) *Model {
	t.Helper()
	typeKeys(tm, "q")
	return tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).(*Model)
}

func TestJumpTargets(t *testing.T) {
	cases := []struct {
		typed, want string // want: the table's selected row, or "detail ..." or "targets ..."
	}{
		{":payment<enter>", "payment POST:/pay/charge/with/a/rather/long/path/that/does/not/fit/anywhere"},
		{"jj:ORDER<enter>", "order GET:/member/info"}, // the app, its first row in the table's order
		{":订单<enter>", "order 订单查询/按用户"},
		{":create<enter>", "order POST:/order/create"},
		{":pay<down><down><down><enter>", "payment GET:/pay/status"},
		// payment-2: a finding's instance; the resource's detail lists none.
		{":pay<down><down><down><up><enter>", "detail payment POST:/pay/charge/with/a/rather/long/path/that/does/not/fit/anywhere "},
		// an instance: its worst breaker's resource, it selected there.
		{":order-3<enter>", "detail order GET:/member/info order-3"},
		{":order-9<enter>", "detail order POST:/order/create "},
		// a finding names order-4 (rule drift on POST:/order/create).
		{":order-4<enter>", "detail order POST:/order/create "},
		// a target's instance a finding names: the finding's resource.
		{":payment-1<down><enter>", "detail payment POST:/pay/charge/with/a/rather/long/path/that/does/not/fit/anywhere "},
		{":zzz<enter><esc>", "order GET:/member/info"},
		{":pay<esc>", "order GET:/member/info"},
	}
	for _, c := range cases {
		m := newTestModel(jumpSource(), 120, 40)
		press(m, c.typed)
		var got string
		switch m.active {
		case m.main:
			got = selected(m)
		case m.detail:
			got = "detail " + m.detail.view.app + " " + m.detail.view.res + " "
			if d := m.detail.view.d; d != nil && len(d.Instances) > 0 {
				got += d.Instances[m.detail.view.tl.cur.Pos()].Instance
			}
		case m.targets:
			got = "targets " + m.snap.Targets[m.targets.order[m.targets.cur.Pos()]].Name
		default:
			got = "still prompting"
		}
		if got != c.want {
			t.Errorf("%s: got %q, want %q", c.typed, got, c.want)
		}
	}
}

func TestJumpToATargetOnlyInstance(t *testing.T) {
	s := testSnapshot()
	s.Findings = nil // order-2 is known only as the target 10.0.0.2:8719
	m := newTestModel(newStaticSource(s), 120, 40)
	press(m, ":order-2")
	if f := screenText(m); !strings.Contains(f, "target 10.0.0.2:8719") {
		t.Errorf("the candidate does not say it is a target:\n%s", f)
	}
	press(m, "<enter>")
	if m.active != m.targets {
		t.Fatalf("the jump did not open the targets screen:\n%s", screenText(m))
	}
	if got := m.snap.Targets[m.targets.order[m.targets.cur.Pos()]].Name; got != "10.0.0.2:8719" {
		t.Errorf("the targets screen selected %s", got)
	}
	press(m, "<esc>")
	if m.active != m.main {
		t.Error("esc from the targets screen did not go back to the table")
	}
}

func TestJumpClearsAFilterThatHidesTheRow(t *testing.T) {
	m := newTestModel(jumpSource(), 120, 40)
	press(m, "/member<enter>")
	press(m, ":status<enter>")
	if got := selected(m); got != "payment GET:/pay/status" {
		t.Errorf("the jump selected %q", got)
	}
	if f := m.main.filter.Value(); f != "" {
		t.Errorf("the filter %q that hid the row is kept", f)
	}
	// a filter that shows the row stays.
	press(m, "/pay<enter>:status<enter>")
	if f := m.main.filter.Value(); f != "pay" || selected(m) != "payment GET:/pay/status" {
		t.Errorf("filter %q, selected %q", f, selected(m))
	}
	// the keyboard goes to the table.
	press(m, "a:create<enter>")
	if m.main.focus != focusTable || selected(m) != "order POST:/order/create" {
		t.Errorf("focus %d, selected %q", m.main.focus, selected(m))
	}
}

func TestJumpFromTheDetailGoesBackToTheTable(t *testing.T) {
	m := newTestModel(jumpSource(), 120, 40)
	press(m, "<enter>:status<enter>")
	if m.active != m.main || m.detail.open {
		t.Fatalf("a jump to a resource from the detail shows %T, the detail open: %v", m.active, m.detail.open)
	}
	// from an instance's detail, esc goes back to its resource's row.
	press(m, ":order-3<enter><esc>")
	if got := selected(m); m.active != m.main || got != "order GET:/member/info" {
		t.Errorf("esc from the instance's detail: %q", got)
	}
}

func TestFlowJumpHostileNames(t *testing.T) {
	src := hostileSource()
	tm := startFlow(t, src)
	waitText(t, tm, `clear\x1`)
	var out bytes.Buffer
	typeKeys(tm, ":clear")
	// the hostile resource and app as candidates, escaped; completed and
	// jumped to.
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		out.Write(b)
		s := ansi.Strip(out.String())
		return strings.Contains(s, `resource clear\x1b[2Jscreen`) && strings.Contains(s, `app      clear\x1b[2Jscreen`)
	}, teatest.WithDuration(5*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
	typeKeys(tm, "<tab>")
	waitText(t, tm, `:clear\x1b[2Jscreen`)
	typeKeys(tm, "<down><enter>") // the resource, below the app of that name
	fm := finalModel(t, tm)
	if r, _ := fm.main.table.Selected(); r.Resource != hostile[0] {
		t.Errorf("the jump to the hostile name selected %q", r.Resource)
	}
	// every name in the prompt at every size, escaped.
	for _, size := range [][2]int{{60, 15}, {80, 24}, {200, 60}} {
		for _, typed := range []string{":", ":\\", ":x1b", ":u20"} {
			m := newModel(hostileSource(), Options{Profile: ColorANSI256})
			m.noTick = true
			send(m, sizeMsg(size[0], size[1]))
			press(m, typed)
			f := m.View()
			rest := sgrOnly.ReplaceAllString(f, "")
			if d, i := findDanger(rest); i >= 0 {
				t.Errorf("%s at %v: raw %q reached the terminal", typed, size, d)
			}
			if strings.ContainsRune(rest, '\x1b') {
				t.Errorf("%s at %v: an escape other than SGR", typed, size)
			}
			checkFrame(t, f, size[0], size[1])
			if !strings.Contains(ansi.Strip(f), "JUMP") {
				t.Errorf("%s at %v: no prompt:\n%s", typed, size, ansi.Strip(f))
			}
		}
	}
}

// click is a left click at x, y of the terminal.
func click(x, y int) tea.MouseMsg {
	return tea.MouseMsg{X: x, Y: y, Action: tea.MouseActionPress, Button: tea.MouseButtonLeft}
}

func wheel(y int, down bool) tea.MouseMsg {
	b := tea.MouseButtonWheelUp
	if down {
		b = tea.MouseButtonWheelDown
	}
	return tea.MouseMsg{X: 10, Y: y, Action: tea.MouseActionPress, Button: b}
}

// lineOf is the first line of the frame holding text, -1 if none.
func lineOf(m *Model, text string) int {
	for i, l := range strings.Split(screenText(m), "\n") {
		if strings.Contains(l, text) {
			return i
		}
	}
	return -1
}

func TestFlowMouse(t *testing.T) {
	src := goldenSource()
	tm := startFlow(t, src)
	waitText(t, tm, "GET:/pay/status", "rows 1/5")
	// at 120x40: the status bar, the table's header, its five rows from
	// line 3; the alerts' title and three findings above the footer.
	tm.Send(click(40, 7)) // the fifth row
	waitText(t, tm, "rows 5/5")
	tm.Send(wheel(5, false)) // three up
	waitText(t, tm, "rows 2/5")
	tm.Send(wheel(5, false))
	waitText(t, tm, "rows 1/5")
	tm.Send(click(40, 3)) // the selected row: opened
	waitText(t, tm, "order / GET:/member/info", "TIMELINE", "1-37/")
	tm.Send(wheel(10, true))
	waitText(t, tm, "4-40/")
	typeKeys(tm, "<esc>")
	waitText(t, tm, "ALERTS")
	tm.Send(click(40, 37)) // the second finding: the alerts take the keyboard
	waitText(t, tm, "alerts 2/3")
	tm.Send(click(40, 37)) // and open it
	waitText(t, tm, "order / POST:/order/create")
	typeKeys(tm, "<esc>")
	tm.Send(click(40, 3)) // a click on the table gives it the keyboard back
	waitText(t, tm, "rows 1/5")
	tm.Send(click(3, 0)) // the header's targets: the targets screen
	waitText(t, tm, "TARGETS  3/4 up")
	fm := finalModel(t, tm)
	if fm.active != fm.targets {
		t.Errorf("a click on the header's targets did not open them")
	}
}

// TestMouseHitsWhatIsDrawn clicks on the lines where the frame shows each
// row, finding and target, at every size: the click selects what is drawn
// there.
func TestMouseHitsWhatIsDrawn(t *testing.T) {
	for _, size := range [][2]int{{60, 15}, {80, 24}, {120, 40}, {200, 50}} {
		m := newTestModel(goldenSource(), size[0], size[1])
		clicked := 0
		for _, res := range []string{"GET:/pay/status", "POST:/order/create", "订单查询"} {
			y := lineOf(m, res)
			if y < 0 {
				continue // not in sight at this size
			}
			clicked++
			send(m, click(20, y))
			if got := selected(m); !strings.Contains(got, res) {
				t.Errorf("%v: a click on line %d (%s) selected %q", size, y, res, got)
			}
		}
		// the alerts: the line drawn with a kind selects that finding.
		for _, kind := range []string{"rule-advice", "rule-drift", "sawtooth"} {
			y := lineOf(m, kind)
			if y < 0 {
				continue
			}
			clicked++
			send(m, click(20, y))
			f, ok := m.main.alerts.Selected()
			if !ok || string(f.Kind) != kind || m.main.focus != focusAlerts {
				t.Errorf("%v: a click on line %d (%s) selected %s, focus %d", size, y, kind, f.Kind, m.main.focus)
			}
		}
		// the footer and the status bar's second line take nothing.
		before := selected(m)
		send(m, click(20, size[1]-1))
		send(m, click(20, 1))
		if m.active != m.main || selected(m) != before {
			t.Errorf("%v: a click on the footer or the counts changed the screen", size)
		}
		// the targets screen: a click on a target selects it.
		press(m, "t")
		for _, name := range []string{"10.0.0.2:8719", "10.0.0.1:8719"} {
			y := lineOf(m, name)
			if y < 0 {
				continue
			}
			clicked++
			send(m, click(20, y))
			if got := m.snap.Targets[m.targets.order[m.targets.cur.Pos()]].Name; got != name {
				t.Errorf("%v: a click on line %d (%s) selected %s", size, y, name, got)
			}
		}
		press(m, "t")
		if clicked < 6 {
			t.Errorf("%v: only %d of 8 rows, findings and targets in sight to click", size, clicked)
		}
	}
}

func TestMouseWheelScrollsTheHelp(t *testing.T) {
	m := newTestModel(goldenSource(), 60, 15)
	press(m, "?")
	first := strings.Split(screenText(m), "\n")[2]
	send(m, wheel(5, true))
	if after := strings.Split(screenText(m), "\n")[2]; after == first {
		t.Errorf("the wheel did not scroll the help: %q", after)
	}
	if m.active != m.help {
		t.Error("the wheel closed the help")
	}
	send(m, click(10, 6)) // a click on the help does nothing under it
	if m.active != m.help || m.main.table.moved {
		t.Error("a click on the help reached the table")
	}
}

func TestFlowMouseSwitch(t *testing.T) {
	tm := startFlow(t, goldenSource())
	waitText(t, tm, "ALERTS")
	var out bytes.Buffer
	seen := func(seq string) func([]byte) bool {
		return func(b []byte) bool {
			out.Write(b)
			return bytes.Contains(out.Bytes(), []byte(seq))
		}
	}
	opts := []teatest.WaitForOption{teatest.WithDuration(5 * time.Second), teatest.WithCheckInterval(10 * time.Millisecond)}
	typeKeys(tm, "m") // on: button events (cell motion, 1002)
	teatest.WaitFor(t, tm.Output(), seen(ansi.SetModeMouseButtonEvent), opts...)
	out.Reset()
	typeKeys(tm, "m") // off
	teatest.WaitFor(t, tm.Output(), seen(ansi.ResetModeMouseButtonEvent), opts...)
	finalScreen(t, tm)
}

func TestAlertsHonourTheFilter(t *testing.T) {
	m := newTestModel(goldenSource(), 120, 40)
	press(m, "/pay")
	s := screenText(m)
	if !strings.Contains(s, "rule-advice") || strings.Contains(s, "sawtooth") || strings.Contains(s, "rule-drift") {
		t.Errorf("/pay does not filter the alerts:\n%s", s)
	}
	if !strings.Contains(s, "0 critical  0 warning  1 info  (2 hidden by the filter)") {
		t.Errorf("the alerts' title does not count what the filter hides:\n%s", s)
	}
	press(m, "<enter>a<enter>")
	if m.active != m.detail || !m.detail.view.Is("payment", "POST:/pay/charge/with/a/rather/long/path/that/does/not/fit/anywhere") {
		t.Errorf("enter on the only alert shown opened %s %s", m.detail.view.app, m.detail.view.res)
	}
	press(m, "<esc>")
	press(m, "/zzz<enter>")
	if s := screenText(m); !strings.Contains(s, "ALERTS  none of 3 matches the filter") {
		t.Errorf("no finding matches, the alerts do not say so:\n%s", s)
	}
	press(m, "<esc>")
	if s := screenText(m); !strings.Contains(s, "1 critical  1 warning  1 info") || strings.Contains(s, "hidden") {
		t.Errorf("esc did not clear the alerts' filter:\n%s", s)
	}
}

// TestAlertsAndTableFilterAlike checks the alerts keep a finding exactly
// when the table keeps its row, for filters of every kind (case, a
// name's middle, app and resource together, non-ASCII, escaped hostile
// names).
func TestAlertsAndTableFilterAlike(t *testing.T) {
	for _, src := range []*staticSource{goldenSource(), hostileSource()} {
		for _, f := range []string{"pay", "ORDER", "member/", "order get", "订单", "zzz", `\x1b`, `admin\u202e`, "ENT ", "t:/"} {
			m := newTestModel(src, 200, 60)
			press(m, "/"+f+"<enter>")
			rows := map[string]bool{}
			for _, v := range m.main.table.view {
				r := m.main.table.rows[v]
				rows[r.App+"\x00"+r.Resource] = true
			}
			for i := range m.snap.Findings {
				fd := &m.snap.Findings[i]
				kept := false
				for _, k := range m.main.alerts.shown {
					kept = kept || k == i
				}
				if kept != rows[fd.App+"\x00"+fd.Resource] {
					t.Errorf("filter %q: finding %s on %q kept %v, its row %v", f, fd.Kind, fd.Resource, kept, !kept)
				}
			}
		}
	}
}

// TestJumpTypedFast is ':' and a name arriving in one read, as a terminal
// delivers keys typed faster than the program reads them.
func TestJumpTypedFast(t *testing.T) {
	m := newTestModel(jumpSource(), 120, 40)
	send(m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(":stat")})
	if m.active != m.jump || m.jump.input.Value() != "stat" {
		t.Fatalf("':stat' in one message: prompt %v, typed %q", m.active == m.jump, m.jump.input.Value())
	}
	press(m, "<enter>")
	if got := selected(m); got != "payment GET:/pay/status" {
		t.Errorf("the jump selected %q", got)
	}
}

func TestClickWhileTypingTheFilterKeepsIt(t *testing.T) {
	m := newTestModel(goldenSource(), 120, 40)
	press(m, "/pay")
	y := lineOf(m, "GET:/pay/status")
	send(m, click(20, y))
	if m.main.filtering || m.main.filter.Value() != "pay" || selected(m) != "payment GET:/pay/status" {
		t.Errorf("after a click: typing %v, filter %q, selected %q", m.main.filtering, m.main.filter.Value(), selected(m))
	}
	press(m, "q") // the filter is no longer typed: q quits
	if m.main.filter.Value() != "pay" {
		t.Errorf("q was typed into the filter: %q", m.main.filter.Value())
	}
}

// TestHeldKeysCountEach: keys typed faster than the terminal is read
// arrive as one message of several runes; each must act as a key press of
// its own (a held j moves as many rows, "/pay" typed at once filters).
func TestHeldKeysCountEach(t *testing.T) {
	one := newTestModel(goldenSource(), 120, 40)
	press(one, "jj")
	want := selected(one)
	held := newTestModel(goldenSource(), 120, 40)
	send(held, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("jj")})
	if got := selected(held); got != want || got == selected(newTestModel(goldenSource(), 120, 40)) {
		t.Errorf("jj in one message selected %q; pressed apart %q", got, want)
	}
	send(held, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("/pay")})
	if !held.main.filtering || held.main.filter.Value() != "pay" {
		t.Errorf("/pay in one message: typing %v, filter %q", held.main.filtering, held.main.filter.Value())
	}
}
