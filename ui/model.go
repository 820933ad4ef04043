package ui

import (
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/sentinel-top/sentinel-top/collector"
)

// The smallest terminal the dashboard draws in.
const (
	MinWidth  = 60
	MinHeight = 15
)

// ranges are the steps of +/- (the configured range is the = one).
var ranges = []time.Duration{
	30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute,
	15 * time.Minute, 30 * time.Minute, time.Hour, 3 * time.Hour, 6 * time.Hour,
}

// tickMsg asks for the latest snapshot.
type tickMsg struct{}

// Model is the dashboard, a tea.Model. It reads the latest snapshot on a
// tick and renders it, at most once per tick: a frame is rendered only when
// its data, its size or the user changed something, and kept otherwise.
//
// It draws the status bar and hands the rest of the frame to the active
// screen: it takes the keys that apply everywhere (quit, help, freeze,
// zoom, replay) and sends the others to that screen, which answers with
// the screen to show next.
type Model struct {
	*common
	opts Options

	width, height int
	sized         bool

	latest *collector.Snapshot // the newest, ahead of the shown one when frozen

	header  statusBar
	main    *mainScreen
	detail  *detailScreen
	help    *helpScreen
	targets *targetsScreen
	jump    *jumpScreen
	active  screen

	mouse bool // mouse reporting is on (Options.Mouse, then m)

	replay replaySteer

	frame string
	dirty bool

	// for tests: ticks handled, frames rendered, and no timer (the test
	// sends the ticks).
	ticks, renders int
	noTick         bool
}

var _ tea.Model = (*Model)(nil)

// New returns the dashboard over src. It reads src.Snapshot once now and
// again on every tick; it calls Detail only from commands.
func New(src Source, opts Options) tea.Model { return newModel(src, opts) }

func newModel(src Source, opts Options) *Model {
	opts = opts.withDefaults()
	c := newCommon(src, newStyles(opts.termProfile()), opts.Location, opts.Range)
	m := &Model{
		common:  c,
		opts:    opts,
		header:  newStatusBar(c.st, opts.Location),
		main:    newMainScreen(c),
		detail:  newDetailScreen(c),
		help:    newHelpScreen(c),
		targets: newTargetsScreen(c),
		jump:    newJumpScreen(c),
		mouse:   opts.Mouse,
		replay:  replaySteer{ctrl: opts.Replay},
		dirty:   true,
	}
	m.main.detail, m.detail.main = m.detail, m.main
	m.jump.main, m.jump.targets = m.main, m.targets
	m.active = m.main
	m.header = m.header.SetRange(m.rng)
	s := src.Snapshot()
	if s == nil {
		s = &collector.Snapshot{}
	}
	m.latest = s
	m.setSnapshot(s)
	m.layout()
	return m
}

// Init starts the tick.
func (m *Model) Init() tea.Cmd { return m.tick() }

func (m *Model) tick() tea.Cmd {
	if m.noTick {
		return nil
	}
	return tea.Tick(m.opts.TickInterval, func(time.Time) tea.Msg { return tickMsg{} })
}

// replaying reports whether the data is a replay the user can steer.
func (m *Model) replaying() bool {
	return m.latest.Mode == collector.ModeReplay && m.latest.Replay.Active
}

// setSnapshot shows s.
func (m *Model) setSnapshot(s *collector.Snapshot) {
	m.snap = s
	m.main.Show(s)
	m.targets.Show(s)
	m.keys.setTargets(len(s.Targets) > 0)
	m.header = m.header.SetSnapshot(s, m.latest, m.frozen)
	m.replayKeys = m.replaying()
	m.keys.setReplay(m.replayKeys)
	m.dirty = true
}

// Update handles a message; while the main screen is shown, it also
// fetches the TREND of the rows in sight when they or their data changed.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	_, cmd := m.update(msg)
	if m.active == m.main {
		if trend := m.main.FetchTrends(); trend != nil {
			cmd = tea.Batch(cmd, trend)
		}
	}
	return m, cmd
}

func (m *Model) update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height, m.sized = msg.Width, msg.Height, true
		m.layout()
		m.dirty = true
		return m, nil
	case tickMsg:
		m.ticks++
		next := m.tick()
		if s := m.src.Snapshot(); s != nil && s != m.latest {
			m.latest = s
			m.replay.Seen()
			if m.frozen {
				m.header = m.header.SetSnapshot(m.snap, m.latest, true)
				m.dirty = true
			} else {
				m.setSnapshot(s)
			}
		}
		if fetch := m.detail.Refresh(); fetch != nil {
			return m, tea.Batch(next, fetch)
		}
		return m, next // a tick with nothing new allocates nothing
	case detailMsg:
		changed, cmd := m.detail.Receive(msg)
		m.dirty = m.dirty || changed
		return m, cmd
	case replayDoneMsg:
		return m, m.replay.Done()
	case trendMsg:
		m.dirty = true
		return m, m.main.ReceiveTrends(msg)
	case tea.KeyMsg:
		m.dirty = true
		return m, m.handleKey(msg)
	case tea.MouseMsg:
		m.dirty = true
		return m, m.routeMouse(msg)
	}
	return m, nil
}

// handleKey takes the keys that apply on every screen, unless the active
// one takes them all, and routes the others to it.
func (m *Model) handleKey(msg tea.KeyMsg) tea.Cmd {
	if msg.Type == tea.KeyCtrlC {
		return tea.Quit
	}
	if !m.active.Modal() && msg.Type == tea.KeyRunes && !msg.Paste && len(msg.Runes) > 1 && !isJumpTyped(msg) {
		return m.eachKey(msg)
	}
	if !m.active.Modal() {
		if cmd, ok := m.globalKey(msg); ok {
			return cmd
		}
	}
	return m.route(msg)
}

// eachKey handles keys typed faster than the terminal was read (a held
// `j` or `]`, arriving as one message of several runes) one by one, as if
// read apart: each is a key press of its own, and one that opens a prompt
// hands it the rest.
func (m *Model) eachKey(msg tea.KeyMsg) tea.Cmd {
	var cmds []tea.Cmd
	for _, r := range msg.Runes {
		one := msg
		one.Runes = []rune{r}
		cmds = append(cmds, m.handleKey(one))
	}
	return tea.Batch(cmds...)
}

// route sends msg to the active screen and shows the screen it answers.
func (m *Model) route(msg tea.Msg) tea.Cmd {
	next, cmd := m.active.Update(msg)
	if next != m.active {
		m.active = next
		m.keys.setReplay(m.replaying())
	}
	return cmd
}

// globalKey handles quit, help, the targets, freeze, zoom and the
// replay's keys.
func (m *Model) globalKey(msg tea.KeyMsg) (tea.Cmd, bool) {
	k := m.keys
	switch {
	case key.Matches(msg, k.Quit):
		return tea.Quit, true
	case key.Matches(msg, k.Help):
		m.active = m.help.Open(m.active)
		return nil, true
	case key.Matches(msg, k.Targets):
		m.toggleTargets()
		return nil, true
	case key.Matches(msg, k.Jump), isJumpTyped(msg):
		var cmd tea.Cmd
		m.active, cmd = m.jump.Open(m.active)
		if len(msg.Runes) > 1 { // typed faster than read: the rest is the name
			rest := msg
			rest.Runes = msg.Runes[1:]
			return tea.Batch(cmd, m.route(rest)), true
		}
		return cmd, true
	case key.Matches(msg, k.Mouse):
		m.mouse = !m.mouse
		if m.mouse {
			return tea.EnableMouseCellMotion, true
		}
		return tea.DisableMouse, true
	case key.Matches(msg, k.Freeze):
		m.frozen = !m.frozen
		if !m.frozen {
			m.setSnapshot(m.latest)
			return m.detail.Reload(), true
		}
		m.header = m.header.SetSnapshot(m.snap, m.latest, m.frozen)
		return nil, true
	case key.Matches(msg, k.ZoomIn), key.Matches(msg, k.ZoomOut), key.Matches(msg, k.ZoomReset):
		m.zoom(msg)
		return m.detail.Reload(), true
	}
	if m.replaying() {
		return m.replay.Key(msg, k, m.latest.Replay)
	}
	return nil, false
}

// toggleTargets opens the targets screen over the active one, or closes
// it.
func (m *Model) toggleTargets() {
	if m.active == m.targets {
		m.active = m.targets.under
	} else {
		m.active = m.targets.Open(m.active)
	}
}

// zoom changes the time range.
func (m *Model) zoom(msg tea.KeyMsg) {
	switch {
	case key.Matches(msg, m.keys.ZoomReset):
		m.rng = m.opts.Range
	case key.Matches(msg, m.keys.ZoomIn):
		for i := len(ranges) - 1; i >= 0; i-- {
			if ranges[i] < m.rng {
				m.rng = ranges[i]
				break
			}
		}
	case key.Matches(msg, m.keys.ZoomOut):
		for _, r := range ranges {
			if r > m.rng {
				m.rng = r
				break
			}
		}
	}
	m.header = m.header.SetRange(m.rng)
	m.main.Refresh()
}

// layout sizes the status bar and the screens for the terminal.
func (m *Model) layout() {
	w, h := m.width, m.height
	m.keys.setReplay(m.replaying())
	m.header = m.header.SetSize(w, headerLines)
	body := max(0, h-headerLines-1)
	for _, s := range []screen{m.main, m.detail, m.help, m.targets, m.jump} {
		s.SetSize(w, body)
	}
}

// View renders the frame: the cached one unless something changed.
func (m *Model) View() string {
	if !m.sized {
		return ""
	}
	if !m.dirty && m.frame != "" {
		return m.frame
	}
	m.frame = m.render()
	m.dirty = false
	m.renders++
	return m.frame
}

func (m *Model) render() string {
	w, h := m.width, m.height
	if w < MinWidth || h < MinHeight {
		return tooSmall(w, h)
	}
	var b strings.Builder
	b.Grow((w + 16) * h)
	b.WriteString(m.header.View())
	b.WriteByte('\n')
	b.WriteString(m.active.View())
	b.WriteByte('\n')
	b.WriteString(m.active.Footer(w))
	return b.String()
}

// tooSmall is the whole frame when the terminal is below the minimum.
func tooSmall(w, h int) string {
	msg := []string{
		"terminal too small: " + strconv.Itoa(w) + "x" + strconv.Itoa(h),
		"need " + strconv.Itoa(MinWidth) + "x" + strconv.Itoa(MinHeight),
	}
	lines := make([]string, max(h, 1))
	top := max(0, (h-len(msg))/2)
	for i, s := range msg {
		if top+i < len(lines) {
			pad := max(0, (w-width(s))/2)
			lines[top+i] = cut(strings.Repeat(" ", pad)+s, max(w, 1))
		}
	}
	return strings.Join(lines, "\n")
}
