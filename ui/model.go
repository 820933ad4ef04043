package ui

import (
	"strconv"
	"strings"
	"time"

	textcursor "github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/sentinel-top/sentinel-top/collector"
)

// The smallest terminal the dashboard draws in.
const (
	MinWidth  = 60
	MinHeight = 15
)

// screen is what fills the body.
type screen uint8

const (
	screenMain screen = iota
	screenDetail
)

// focusPanel is the main screen's panel that has the keyboard.
type focusPanel uint8

const (
	focusTable focusPanel = iota
	focusAlerts
)

// ranges are the steps of +/- (the configured range is the = one).
var ranges = []time.Duration{
	30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute,
	15 * time.Minute, 30 * time.Minute, time.Hour, 3 * time.Hour, 6 * time.Hour,
}

type (
	// tickMsg asks for the latest snapshot.
	tickMsg struct{}
	// detailMsg carries a Detail fetched by a command.
	detailMsg struct {
		app, res string
		d        *collector.Detail
	}
)

// Model is the dashboard, a tea.Model. It reads the latest snapshot on a
// tick and renders it, at most once per tick: a frame is rendered only when
// its data, its size or the user changed something, and kept otherwise.
type Model struct {
	src  Source
	opts Options
	st   *Styles
	keys *keyMap

	width, height int
	sized         bool

	snap, latest *collector.Snapshot
	frozen       bool

	screen    screen
	showHelp  bool
	focus     focusPanel
	filtering bool
	filter    textinput.Model
	sort      sortKey
	reverse   bool
	rng       time.Duration

	header statusBar
	table  resourceTable
	alerts alertsPanel
	detail detailView
	help   helpView

	replay replaySteer

	detailBusy   bool   // a Detail is being fetched
	detailWanted bool   // fetch again when it arrives
	detailSeq    uint64 // the snapshot the shown Detail was fetched for

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
	st := newStyles(opts.termProfile())
	keys := newKeyMap()
	ti := textinput.New()
	ti.Prompt = "/"
	ti.Placeholder = "app or resource"
	ti.CharLimit = 128
	ti.PromptStyle = st.r.NewStyle().Bold(true)
	ti.TextStyle = st.r.NewStyle()
	ti.PlaceholderStyle = st.r.NewStyle().Faint(true)
	ti.Cursor.Style = st.r.NewStyle().Reverse(true)
	ti.Cursor.TextStyle = st.r.NewStyle()
	ti.Cursor.SetMode(textcursor.CursorStatic) // a blinking cursor would wake the program twice a second
	m := &Model{
		src:    src,
		opts:   opts,
		st:     st,
		keys:   keys,
		filter: ti,
		rng:    opts.Range,
		header: newStatusBar(st, opts.Location),
		table:  newResourceTable(st, keys),
		alerts: newAlertsPanel(st, keys),
		detail: newDetailView(st, keys, opts.Location),
		help:   newHelpView(st, keys),
		dirty:  true,
		replay: replaySteer{ctrl: opts.Replay},
	}
	m.header = m.header.SetRange(m.rng)
	s := src.Snapshot()
	if s == nil {
		s = &collector.Snapshot{}
	}
	m.latest = s
	m.setSnapshot(s)
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
	m.table = m.table.SetRows(s.Rows).SetEmptyText(emptyText(s))
	m.alerts = m.alerts.SetFindings(s.Findings)
	m.header = m.header.SetSnapshot(s, m.latest, m.frozen)
	m.help = m.help.SetReplay(m.replaying())
	m.layout()
	m.dirty = true
}

// emptyText says why a snapshot has no rows.
func emptyText(s *collector.Snapshot) string {
	switch {
	case s.Messages == 0 && s.Mode == collector.ModeReplay:
		return "nothing replayed yet"
	case s.Messages == 0:
		return "waiting for the targets' first messages"
	case s.Instances == 0:
		return "no instance is reporting: all said bye or went quiet"
	}
	return "no resource reported recently"
}

// Update handles a message.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height, m.sized = msg.Width, msg.Height, true
		m.layout()
		m.dirty = true
		return m, nil
	case tickMsg:
		m.ticks++
		cmds := []tea.Cmd{m.tick()}
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
		if m.screen == screenDetail && !m.frozen && m.snap.Seq != m.detailSeq {
			cmds = append(cmds, m.fetchDetail())
		}
		return m, tea.Batch(cmds...)
	case detailMsg:
		m.detailBusy = false
		if m.screen == screenDetail && m.detail.Is(msg.app, msg.res) {
			m.detail = m.detail.SetDetail(msg.d)
			m.dirty = true
		}
		if m.detailWanted {
			return m, m.fetchDetail()
		}
		return m, nil
	case tea.KeyMsg:
		m.dirty = true
		return m, m.handleKey(msg)
	case replayDoneMsg:
		return m, m.replay.Done()
	case tea.MouseMsg:
		m.dirty = true
		switch {
		case m.screen == screenDetail:
			m.detail, _ = m.detail.Update(msg)
		case m.focus == focusTable:
			m.table, _ = m.table.Update(msg)
		}
		return m, nil
	}
	return m, nil
}

// fetchDetail returns a command that fetches the open resource's Detail
// over the time range ending at the shown snapshot.
func (m *Model) fetchDetail() tea.Cmd {
	if m.detailBusy {
		m.detailWanted = true
		return nil
	}
	m.detailBusy, m.detailWanted = true, false
	m.detailSeq = m.snap.Seq
	src, app, res := m.src, m.detail.app, m.detail.res
	to := m.snap.At
	from := to - m.rng.Milliseconds()
	return func() tea.Msg {
		return detailMsg{app: app, res: res, d: src.Detail(app, res, from, to)}
	}
}

func (m *Model) handleKey(msg tea.KeyMsg) tea.Cmd {
	k := m.keys
	if msg.Type == tea.KeyCtrlC {
		return tea.Quit
	}
	if m.filtering {
		switch msg.Type {
		case tea.KeyEsc:
			m.filtering = false
			m.filter.Blur()
			m.filter.SetValue("")
			m.applyFilter()
			return nil
		case tea.KeyEnter:
			m.filtering = false
			m.filter.Blur()
			return nil
		}
		var cmd tea.Cmd
		m.filter, cmd = m.filter.Update(msg)
		m.applyFilter()
		return cmd
	}
	if m.showHelp {
		switch {
		case key.Matches(msg, k.Quit):
			return tea.Quit
		case key.Matches(msg, k.Help), msg.Type == tea.KeyEsc, msg.Type == tea.KeyBackspace:
			m.showHelp = false
		}
		return nil
	}
	switch {
	case key.Matches(msg, k.Quit):
		return tea.Quit
	case key.Matches(msg, k.Help):
		m.showHelp = true
		return nil
	case key.Matches(msg, k.Freeze):
		m.frozen = !m.frozen
		if !m.frozen {
			m.setSnapshot(m.latest)
			if m.screen == screenDetail {
				return m.fetchDetail()
			}
		}
		m.header = m.header.SetSnapshot(m.snap, m.latest, m.frozen)
		return nil
	case key.Matches(msg, k.ZoomIn), key.Matches(msg, k.ZoomOut), key.Matches(msg, k.ZoomReset):
		m.zoom(msg)
		if m.screen == screenDetail {
			return m.fetchDetail()
		}
		return nil
	}
	if m.replaying() {
		if cmd, ok := m.replay.Key(msg, k, m.latest.Replay); ok {
			return cmd
		}
	}
	if m.screen == screenDetail {
		switch {
		case key.Matches(msg, k.Back):
			m.screen = screenMain
			m.layout()
			return nil
		case key.Matches(msg, k.Alerts):
			m.screen = screenMain
			m.setFocus(focusAlerts)
			m.layout()
			return nil
		}
		m.detail, _ = m.detail.Update(msg)
		return nil
	}
	switch {
	case key.Matches(msg, k.Filter):
		m.filtering = true
		m.layout()
		return m.filter.Focus()
	case msg.Type == tea.KeyEsc:
		if m.filter.Value() != "" {
			m.filter.SetValue("")
			m.applyFilter()
		} else if m.focus == focusAlerts {
			m.setFocus(focusTable)
		}
		return nil
	case key.Matches(msg, k.Tab):
		if m.focus == focusTable {
			m.setFocus(focusAlerts)
		} else {
			m.setFocus(focusTable)
		}
		return nil
	case key.Matches(msg, k.Alerts):
		m.setFocus(focusAlerts)
		return nil
	case key.Matches(msg, k.Sort):
		m.sort = (m.sort + 1) % numSortKeys
		m.table = m.table.SetSort(m.sort, m.reverse)
		return nil
	case key.Matches(msg, k.Reverse):
		m.reverse = !m.reverse
		m.table = m.table.SetSort(m.sort, m.reverse)
		return nil
	case key.Matches(msg, k.Open):
		return m.openSelected()
	}
	if m.focus == focusAlerts {
		m.alerts, _ = m.alerts.Update(msg)
	} else {
		m.table, _ = m.table.Update(msg)
	}
	return nil
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
}

func (m *Model) applyFilter() {
	m.table = m.table.SetFilter(strings.TrimSpace(m.filter.Value()))
}

func (m *Model) setFocus(f focusPanel) {
	m.focus = f
	m.table = m.table.Focus(f == focusTable)
	m.alerts = m.alerts.Focus(f == focusAlerts)
}

// openSelected opens the detail screen of the selected row or finding.
func (m *Model) openSelected() tea.Cmd {
	var app, res string
	if m.focus == focusAlerts {
		f, ok := m.alerts.Selected()
		if !ok {
			return nil
		}
		app, res = f.App, f.Resource
	} else {
		r, ok := m.table.Selected()
		if !ok {
			return nil
		}
		app, res = r.App, r.Resource
	}
	m.screen = screenDetail
	m.detail = m.detail.Open(app, res)
	m.layout()
	return m.fetchDetail()
}

// layout sizes the panels for the terminal and the screen.
func (m *Model) layout() {
	w, h := m.width, m.height
	m.keys.forScreen(m.screen, m.filter.Value() != "", m.replaying())
	m.header = m.header.SetSize(w, headerLines)
	body := max(0, h-headerLines-1)
	// the alerts take up to a third of the body; the table the rest.
	ah := 1
	if n := len(m.snap.Findings); n > 0 {
		ah = min(n+1, max(2, body/3))
	}
	m.table = m.table.SetSize(w, max(1, body-ah))
	m.alerts = m.alerts.SetSize(w, ah)
	m.detail = m.detail.SetSize(w, body)
	m.help = m.help.SetSize(w, body)
	m.filter.Width = max(8, w/2)
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
	switch {
	case m.showHelp:
		b.WriteString(m.help.View())
	case m.screen == screenDetail:
		b.WriteString(m.detail.View())
	default:
		b.WriteString(m.table.View())
		b.WriteByte('\n')
		b.WriteString(m.alerts.View())
	}
	b.WriteByte('\n')
	b.WriteString(m.footer())
	return b.String()
}

// footer renders the filter line while typing, else the key hints with
// the filter and the position on the right.
func (m *Model) footer() string {
	st, w := m.st, m.width
	if m.filtering {
		right := st.dim.on("  enter keeps · esc clears  " + strconv.Itoa(m.table.Len()) + "/" + strconv.Itoa(len(m.snap.Rows)))
		return fitLine(m.filter.View()+right, w)
	}
	var left, right string
	if f := m.filter.Value(); f != "" && m.screen == screenMain && !m.showHelp {
		left = st.key.on("/"+sanitize(f)) + " "
	}
	switch {
	case m.showHelp:
	case m.screen == screenDetail:
		first, total := m.detail.ScrollInfo()
		if total > m.detail.height {
			right = st.dim.on(" " + strconv.Itoa(first+1) + "-" + strconv.Itoa(min(total, first+m.detail.height)) + "/" + strconv.Itoa(total))
		}
	default:
		if n := m.table.Len(); n > 0 {
			right = st.dim.on(" " + strconv.Itoa(m.table.Cursor()+1) + "/" + strconv.Itoa(n))
		}
	}
	hintW := max(0, w-width(left)-width(right))
	hints := m.help.Short(hintW)
	mid := hintW - width(hints)
	return fitLine(left+hints+strings.Repeat(" ", max(0, mid))+right, w)
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
