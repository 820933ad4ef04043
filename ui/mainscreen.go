// The main screen: the resource table above the alerts panel.

package ui

import (
	"strconv"
	"strings"

	textcursor "github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/sentinel-top/sentinel-top/collector"
)

// focusPanel is the main screen's panel that has the keyboard.
type focusPanel uint8

const (
	focusTable focusPanel = iota
	focusAlerts
)

// mainScreen is the resource table above the alerts panel, one of them
// with the keyboard (tab), with the filter typed after / and the sort.
// Enter opens the detail screen of the selected row or finding.
type mainScreen struct {
	*common
	trends trends
	table  resourceTable
	alerts alertsPanel
	focus  focusPanel
	detail *detailScreen // what enter opens

	filter    textinput.Model
	filtering bool
	columns   columnChooser
	choosing  bool // the column chooser is open
	sort      sortKey
	reverse   bool
	picker    sortPicker // F6 or S: the sort columns to choose from

	width, height int
}

var _ screen = (*mainScreen)(nil)

// newPromptInput is a one-line text input of the house's style: the
// filter's and the jump's.
func newPromptInput(st *Styles, prompt, placeholder string) textinput.Model {
	ti := textinput.New()
	ti.Prompt = prompt
	ti.Placeholder = placeholder
	ti.CharLimit = 128
	ti.PromptStyle = st.r.NewStyle().Bold(true)
	ti.TextStyle = st.r.NewStyle()
	ti.PlaceholderStyle = st.r.NewStyle().Faint(true)
	ti.Cursor.Style = st.r.NewStyle().Reverse(true)
	ti.Cursor.TextStyle = st.r.NewStyle()
	ti.Cursor.SetMode(textcursor.CursorStatic) // a blinking cursor would wake the program twice a second
	return ti
}

func newMainScreen(c *common) *mainScreen {
	st := c.st
	ti := newPromptInput(st, "/", "app or resource")
	s := &mainScreen{
		common:  c,
		trends:  newTrends(),
		alerts:  newAlertsPanel(st, c.keys),
		filter:  ti,
		columns: newColumnChooser(st, c.keys),
		picker:  newSortPicker(st, c.keys),
	}
	s.table = newResourceTable(st, c.keys, &s.trends)
	return s
}

// Show shows a snapshot's rows and findings.
func (s *mainScreen) Show(snap *collector.Snapshot) {
	s.table = s.table.SetRows(snap).SetEmptyText(emptyText(snap))
	s.alerts = s.alerts.SetFindings(snap.Findings, snap.Plans)
	s.SetSize(s.width, s.height) // the alerts' share follows their number
}

// Refresh follows a change of the time range.
func (s *mainScreen) Refresh() { s.table = s.table.SetTrend(s.rng, s.snap.At) }

// FetchTrends returns the command fetching the TREND of the rows in sight,
// nil when there is nothing new to fetch.
func (s *mainScreen) FetchTrends() tea.Cmd {
	g, ok := s.table.TrendGrid()
	if !ok {
		return nil
	}
	s.trends.inSight = s.table.AppendInSight(s.trends.inSight[:0])
	return s.trends.fetch(s.src, s.trends.inSight, g, s.snap.At)
}

// ReceiveTrends shows the TREND fetched, and fetches again if wanted.
func (s *mainScreen) ReceiveTrends(msg trendMsg) tea.Cmd {
	again := s.trends.receive(msg)
	s.Refresh()
	if again {
		return s.FetchTrends()
	}
	return nil
}

// emptyText says why a snapshot has no rows.
func emptyText(s *collector.Snapshot) string {
	switch {
	case s.Messages == 0 && s.Mode == collector.ModeReplay:
		return "nothing replayed yet"
	case s.Messages == 0 && len(s.Targets) > 0:
		return waitingText(s.Targets)
	case s.Messages == 0:
		return "waiting for the first messages"
	case s.Instances == 0:
		return "no instance is reporting: all said bye or went quiet"
	}
	return "no resource reported recently"
}

// waitingText says why no message came from the targets: none is up, and
// the first one down's error, or the first messages are awaited.
func waitingText(ts []*collector.TargetStatus) string {
	up, down, _ := targetCounts(ts)
	if up > 0 || down == 0 {
		return "waiting for the targets' first messages (t lists the targets)"
	}
	for i := range ts {
		if ts[i].State == collector.TargetDown {
			return "no target is up, " + strconv.Itoa(down) + " down: " + sanitize(ts[i].Name) + ": " +
				sanitize(targetWhy(ts[i])) + " (t lists the targets)"
		}
	}
	return ""
}

// SetSize gives the alerts up to a third of the screen and the table the
// rest.
func (s *mainScreen) SetSize(w, h int) {
	s.width, s.height = w, h
	ah := 1
	if n := s.alerts.Len(); n > 0 {
		ah = min(n+1, max(2, h/3))
	}
	s.table = s.table.SetSize(w, max(1, h-ah)).SetTrend(s.rng, s.snap.At)
	s.alerts = s.alerts.SetSize(w, ah)
	s.columns = s.columns.SetHeight(h)
	s.filter.Width = max(8, w/2)
}

// Update handles the keys of the filter, the panels and the sort, and the
// mouse (mouse.go).
func (s *mainScreen) Update(msg tea.Msg) (screen, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.KeyMsg:
		if s.filtering {
			return s, s.typeFilter(msg)
		}
		if s.choosing {
			return s, s.chooseColumns(msg)
		}
		if s.picker.open {
			return s, s.pick(msg)
		}
		return s.key(msg)
	case tea.MouseMsg:
		return s.mouse(msg)
	}
	return s, nil
}

func (s *mainScreen) key(msg tea.KeyMsg) (screen, tea.Cmd) {
	k := s.keys
	switch {
	case key.Matches(msg, k.Filter):
		s.filtering = true
		return s, s.filter.Focus()
	case msg.Type == tea.KeyEsc:
		if s.filter.Value() != "" {
			s.filter.SetValue("")
			s.applyFilter()
		} else if s.focus == focusAlerts {
			s.setFocus(focusTable)
		}
	case key.Matches(msg, k.Tab):
		if s.focus == focusTable {
			s.setFocus(focusAlerts)
		} else {
			s.setFocus(focusTable)
		}
	case key.Matches(msg, k.Alerts):
		s.setFocus(focusAlerts)
	case key.Matches(msg, k.Sort):
		s.sort = (s.sort + 1) % numSortKeys
		s.table = s.table.SetSort(s.sort, s.reverse)
	case key.Matches(msg, k.Reverse):
		s.reverse = !s.reverse
		s.table = s.table.SetSort(s.sort, s.reverse)
	case key.Matches(msg, k.SortPick):
		s.picker = s.picker.Open(s.sort)
	case key.Matches(msg, k.Open):
		return s.open()
	case key.Matches(msg, k.Columns):
		s.choosing = true
	case s.focus == focusAlerts:
		s.alerts, _ = s.alerts.Update(msg)
	default:
		s.table, _ = s.table.Update(msg)
	}
	return s, nil
}

// chooseColumns hands a key to the column chooser; q still quits.
func (s *mainScreen) chooseColumns(msg tea.KeyMsg) tea.Cmd {
	if key.Matches(msg, s.keys.Quit) {
		return tea.Quit
	}
	var done bool
	s.columns, s.table, done = s.columns.Update(msg, s.table)
	s.choosing = !done
	s.Refresh() // the TREND's width may have changed
	return nil
}

// pick handles a key while the sort picker is open: enter sorts by the
// column chosen (the direction kept: r reverses).
func (s *mainScreen) pick(msg tea.KeyMsg) tea.Cmd {
	var k sortKey
	var chosen bool
	var cmd tea.Cmd
	if s.picker, k, chosen, cmd = s.picker.Update(msg); chosen {
		s.sort = k
		s.table = s.table.SetSort(s.sort, s.reverse)
	}
	return cmd
}

// typeFilter edits the filter: enter keeps it, esc clears it.
func (s *mainScreen) typeFilter(msg tea.KeyMsg) tea.Cmd {
	switch msg.Type {
	case tea.KeyEsc:
		s.filtering = false
		s.filter.Blur()
		s.filter.SetValue("")
		s.applyFilter()
		return nil
	case tea.KeyEnter:
		s.filtering = false
		s.filter.Blur()
		return nil
	}
	var cmd tea.Cmd
	s.filter, cmd = s.filter.Update(msg)
	s.applyFilter()
	return cmd
}

// applyFilter filters the table and the alerts, which get the room the
// findings kept need.
func (s *mainScreen) applyFilter() {
	f := strings.TrimSpace(s.filter.Value())
	s.table = s.table.SetFilter(f)
	s.alerts = s.alerts.SetFilter(f)
	s.SetSize(s.width, s.height)
}

func (s *mainScreen) setFocus(f focusPanel) {
	s.focus = f
	s.table = s.table.Focus(f == focusTable)
	s.alerts = s.alerts.Focus(f == focusAlerts)
}

// open opens the detail screen of the selected row, or of the selected
// finding's resource on that finding.
func (s *mainScreen) open() (screen, tea.Cmd) {
	if s.focus == focusAlerts {
		f, ok := s.alerts.Selected()
		if !ok {
			return s, nil
		}
		return s.detail, s.detail.Open(f.App, f.Resource, &f)
	}
	r, ok := s.table.Selected()
	if !ok {
		return s, nil
	}
	return s.detail, s.detail.Open(r.App, r.Resource, nil)
}

// View renders the table above the alerts, and the column chooser or the
// sort picker over them when one is open.
func (s *mainScreen) View() string {
	v := s.table.View() + "\n" + s.alerts.View()
	if s.choosing {
		v = s.columns.Overlay(v, s.table, s.width)
	}
	if s.picker.open {
		v = overlay(v, s.picker.Lines(s.sort, s.reverse, s.height-1), 1)
	}
	return v
}

// Keys are the main screen's bindings.
func (s *mainScreen) Keys() help.KeyMap { return s.keys.forMain(s.filter.Value() != "") }

// Modal is true while a filter is typed, the column chooser or the sort
// picker is open.
func (s *mainScreen) Modal() bool { return s.filtering || s.choosing || s.picker.open }

// Footer is the filter line while it is typed, else the key hints with the
// filter and the selected row's position.
func (s *mainScreen) Footer(w int) string {
	st := s.st
	if s.choosing {
		return fitLine(st.key.on("space")+" show/hide · "+st.key.on("↑/↓")+" move · "+st.key.on("esc")+" close", w)
	}
	if s.filtering {
		right := st.dim.on("  enter keeps · esc clears  " + strconv.Itoa(s.table.Len()) + "/" + strconv.Itoa(len(s.snap.Rows)))
		return fitLine(s.filter.View()+right, w)
	}
	if s.picker.open {
		now := "  now by " + s.sort.String()
		if s.reverse {
			now += ", reversed"
		}
		return fitLine(st.key.on("↑/↓")+" choose · "+st.key.on("enter")+" sort by it · "+st.key.on("esc")+" close"+
			st.dim.on(now), w)
	}
	var left, right string
	if f := s.filter.Value(); f != "" {
		left = st.key.on("/"+sanitize(f)) + " "
	}
	// where the keyboard is: the table's rows or the alerts.
	switch n := s.alerts.Len(); {
	case s.focus == focusAlerts && n > 0:
		right = st.dim.on(" alerts " + strconv.Itoa(s.alerts.cur.Pos()+1) + "/" + strconv.Itoa(n))
	case s.focus == focusAlerts:
		right = st.dim.on(" alerts")
	case s.table.Len() > 0:
		right = st.dim.on(" rows " + strconv.Itoa(s.table.Cursor()+1) + "/" + strconv.Itoa(s.table.Len()))
	}
	return s.footer(s.Keys(), left, right, w)
}
