// The mouse (--mouse, or m): a click selects, a click on the selection
// opens it, the wheel moves through the list under the pointer.

package ui

import tea "github.com/charmbracelet/bubbletea"

// isClick reports whether msg is the left button going down.
func isClick(msg tea.MouseMsg) bool {
	return msg.Action == tea.MouseActionPress && msg.Button == tea.MouseButtonLeft
}

// routeMouse sends a mouse event to the active screen, its row counted from
// the screen's top. A click on the header's first line, which counts the
// targets, opens or closes the targets screen; the footer takes nothing.
func (m *Model) routeMouse(msg tea.MouseMsg) tea.Cmd {
	if m.width < MinWidth || m.height < MinHeight {
		return nil
	}
	body := m.height - headerLines - 1
	switch {
	case msg.Y < 0 || msg.Y >= headerLines+body:
		return nil
	case msg.Y < headerLines:
		if msg.Y == 0 && isClick(msg) && len(m.snap.Targets) > 0 && !m.active.Modal() {
			m.toggleTargets()
		}
		return nil
	}
	msg.Y -= headerLines
	return m.route(msg)
}

// mouse handles a mouse event on the main screen, y counted from its top:
// the table's header and rows, then the alerts' title and findings. A
// click focuses the panel and selects the row or finding under it, or
// opens it when it was selected already; the wheel moves the cursor of the
// panel under the pointer without taking the keyboard from the other.
func (s *mainScreen) mouse(msg tea.MouseMsg) (screen, tea.Cmd) {
	if s.filtering && isClick(msg) { // a click keeps the filter typed, as enter does
		s.filtering = false
		s.filter.Blur()
	}
	inAlerts := msg.Y >= s.table.height
	switch {
	case tea.MouseEvent(msg).IsWheel() && inAlerts:
		s.alerts, _ = s.alerts.Update(msg)
	case tea.MouseEvent(msg).IsWheel():
		s.table, _ = s.table.Update(msg)
	case !isClick(msg):
	case inAlerts:
		i, ok := s.alerts.at(msg.Y - s.table.height)
		if ok && s.focus == focusAlerts && i == s.alerts.cur.Pos() {
			return s.open()
		}
		s.setFocus(focusAlerts)
		if ok {
			s.alerts.cur = s.alerts.cur.Select(i)
		}
	default:
		i, ok := s.table.at(msg.Y)
		if ok && s.focus == focusTable && i == s.table.Cursor() {
			return s.open()
		}
		s.setFocus(focusTable)
		if ok {
			s.table = s.table.pick(i)
		}
	}
	return s, nil
}

// at is the row shown at line y of the table (0 is its header).
func (t resourceTable) at(y int) (int, bool) {
	i := t.cur.Offset() + y - 1
	return i, y >= 1 && y < t.height && i < len(t.view)
}

// at is the finding shown at line y of the panel (0 is its title).
func (a alertsPanel) at(y int) (int, bool) {
	i := a.cur.Offset() + y - 1
	return i, y >= 1 && y < a.height && i < len(a.shown)
}

// mouse selects the target clicked; the wheel moves the selection.
func (t *targetsScreen) mouse(msg tea.MouseMsg) {
	if tea.MouseEvent(msg).IsWheel() {
		t.cur, _ = t.cur.Update(msg, t.keys)
		return
	}
	if !isClick(msg) || len(t.order) == 0 {
		return
	}
	// the title and the header come first.
	if row := msg.Y - 2; row >= 0 && row < t.listHeight() {
		if i := t.cur.Offset() + row; i < len(t.order) {
			t.cur = t.cur.Select(i)
		}
	}
}
