// The screens behind one interface, and what they share with the model.

package ui

import (
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/help"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/sentinel-top/sentinel-top/collector"
)

// screen fills the frame between the status bar and the footer: the main
// screen (mainScreen), the detail screen (detailScreen) or the help
// (helpScreen). The model sends the active screen every key it does not
// take itself and the messages meant for what is shown; Update returns the
// screen to show next: itself, or the one a key opens or goes back to.
type screen interface {
	Update(msg tea.Msg) (screen, tea.Cmd)
	View() string
	// SetSize sets the screen's area in cells.
	SetSize(w, h int)
	// Keys are the bindings the screen offers; its footer shows their
	// ShortHelp.
	Keys() help.KeyMap
	// Footer renders the footer line in w cells: the key hints, with what
	// the screen adds on either side.
	Footer(w int) string
	// Modal reports whether the screen takes every key itself (a filter
	// being typed, the help being read): the model's own keys (quit, help,
	// freeze, zoom, replay) then do not apply; ctrl+c still quits.
	Modal() bool
}

// common is what the model shares with its screens: the styles, the
// keymap, the time zone, the source, and the view the model keeps (the
// snapshot shown, the time range, whether the view is frozen and whether
// the replay's keys apply).
type common struct {
	st    *Styles
	keys  *keyMap
	loc   *time.Location
	src   Source
	hints help.Model // renders key bindings, in the footer and the help

	snap       *collector.Snapshot // shown
	rng        time.Duration
	frozen     bool
	replayKeys bool
}

func newCommon(src Source, st *Styles, loc *time.Location, rng time.Duration) *common {
	h := help.New()
	h.Styles = help.Styles{
		Ellipsis:       st.helpSep,
		ShortKey:       st.helpKey,
		ShortDesc:      st.helpDesc,
		ShortSeparator: st.helpSep,
		FullKey:        st.helpKey,
		FullDesc:       st.helpDesc,
		FullSeparator:  st.helpSep,
	}
	h.ShortSeparator = " · "
	return &common{st: st, keys: newKeyMap(), loc: loc, src: src, hints: h, rng: rng}
}

// footer lays out a footer line in w cells: left, the hints of keys in the
// room left, right.
func (c *common) footer(keys help.KeyMap, left, right string, w int) string {
	h := c.hints
	h.Width = max(0, w-width(left)-width(right))
	hints := h.ShortHelpView(keys.ShortHelp())
	return fitLine(left+hints+strings.Repeat(" ", max(0, h.Width-width(hints)))+right, w)
}
