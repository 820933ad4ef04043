// The detail screen: one resource's detail view, and fetching its Detail.

package ui

import (
	"strconv"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/collector/triage"
)

// detailMsg carries a Detail fetched by a command.
type detailMsg struct {
	app, res string
	d        *collector.Detail
}

// detailScreen shows one app x resource in a detailView. Its Detail is
// fetched from the source in commands, one at a time: on opening, then
// for each new snapshot shown and each change of the time range. Esc goes
// back to the main screen, a to its alerts.
type detailScreen struct {
	*common
	view detailView
	main *mainScreen // where esc and a go back to

	open   bool   // shown, or under the help
	busy   bool   // a Detail is being fetched
	wanted bool   // fetch again when it arrives
	seq    uint64 // the snapshot the shown Detail was fetched for
	// refetched is set when the Detail shown was fetched again at once
	// because its grid moved, so that it is not done twice in a row.
	refetched bool
	// goInst is the instance to select when the data arrives (a jump to
	// it), "" when none.
	goInst string
}

var _ screen = (*detailScreen)(nil)

func newDetailScreen(c *common) *detailScreen {
	return &detailScreen{common: c, view: newDetailView(c.st, c.keys, c.loc)}
}

// Open starts showing app x res, on the finding f when it is not nil, and
// returns the command fetching it.
func (d *detailScreen) Open(app, res string, f *triage.Finding) tea.Cmd {
	d.open, d.goInst = true, ""
	d.view = d.view.Open(app, res, f)
	return d.fetch()
}

// Reload fetches the Detail again if the screen is open: the time range
// changed, or the view was unfrozen.
func (d *detailScreen) Reload() tea.Cmd {
	if !d.open {
		return nil
	}
	return d.fetch()
}

// Refresh fetches the Detail again if the screen is open and the snapshot
// shown is newer than the one it was fetched for.
func (d *detailScreen) Refresh() tea.Cmd {
	if !d.open || d.frozen || d.snap.Seq == d.seq {
		return nil
	}
	return d.fetch()
}

// Receive shows a fetched Detail if it is still wanted; changed says
// whether the view changed.
func (d *detailScreen) Receive(msg detailMsg) (changed bool, cmd tea.Cmd) {
	d.busy = false
	if d.open && d.view.Is(msg.app, msg.res) {
		d.view = d.view.SetRow(snapshotRow(d.snap, msg.app, msg.res)).SetPlans(snapshotPlans(d.snap, msg.app, msg.res)).
			SetInputStep(inputStepMs(d.snap)).SetDetail(msg.d)
		if d.goInst != "" && msg.d != nil {
			d.view, d.goInst = d.view.selectInstance(d.goInst), ""
		}
		changed = true
		// the instances' names moved the timeline's grid: fetch for it.
		if msg.d != nil && d.view.FetchFrom(msg.d.To) != msg.d.From && !d.refetched {
			d.refetched, d.wanted = true, true
		} else {
			d.refetched = false
		}
	}
	if d.wanted {
		cmd = d.fetch()
	}
	return changed, cmd
}

// fetch returns a command that fetches the open resource's Detail over
// the time range ending at the shown snapshot, or nil when one is being
// fetched (it is fetched again when that one arrives).
func (d *detailScreen) fetch() tea.Cmd {
	if d.busy {
		d.wanted = true
		return nil
	}
	d.busy, d.wanted = true, false
	d.seq = d.snap.Seq
	d.view = d.view.SetRange(d.rng)
	src, app, res := d.src, d.view.app, d.view.res
	to := d.snap.At
	from := d.view.FetchFrom(to)
	return func() tea.Msg {
		return detailMsg{app: app, res: res, d: src.Detail(app, res, from, to)}
	}
}

// Update goes back on esc and a; the view has the other keys and the
// mouse wheel.
func (d *detailScreen) Update(msg tea.Msg) (screen, tea.Cmd) {
	if km, ok := msg.(tea.KeyMsg); ok {
		switch {
		case key.Matches(km, d.keys.Back):
			d.open = false
			return d.main, nil
		case key.Matches(km, d.keys.Alerts):
			d.open = false
			d.main.setFocus(focusAlerts)
			return d.main, nil
		}
	}
	d.view, _ = d.view.Update(msg)
	return d, nil
}

// SetSize sets the view's area.
func (d *detailScreen) SetSize(w, h int) { d.view = d.view.SetSize(w, h) }

// View renders the lines of the view in sight.
func (d *detailScreen) View() string { return d.view.View() }

// Keys are the detail screen's bindings.
func (d *detailScreen) Keys() help.KeyMap { return d.keys.forDetail() }

// Modal is false: the model's keys apply.
func (d *detailScreen) Modal() bool { return false }

// Footer is the key hints with the lines in sight when they do not all fit.
func (d *detailScreen) Footer(w int) string {
	var right string
	first, total := d.view.ScrollInfo()
	if h := d.view.height; total > h {
		right = d.st.dim.on(" " + strconv.Itoa(first+1) + "-" + strconv.Itoa(min(total, first+h)) + "/" + strconv.Itoa(total))
	}
	return d.footer(d.Keys(), "", right, w)
}

// snapshotRow is app x res's row in s.
func snapshotRow(s *collector.Snapshot, app, res string) (collector.ResourceRow, bool) {
	for i := range s.Rows {
		if s.Rows[i].App == app && s.Rows[i].Resource == res {
			return s.Rows[i], true
		}
	}
	return collector.ResourceRow{}, false
}

// inputStepMs is the resolution of the snapshot's input when it is
// coarser than per-second counts (its CoarseInput warning: the Prometheus
// source's step), else 0.
func inputStepMs(snap *collector.Snapshot) int64 {
	if snap == nil {
		return 0
	}
	for _, w := range snap.Warnings {
		switch c := w.(type) {
		case collector.CoarseInput:
			return c.StepMs
		case *collector.CoarseInput:
			if c != nil {
				return c.StepMs
			}
		}
	}
	return 0
}
