package ui

import (
	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
)

// keyMap is every key binding of the dashboard. It generates the footer's
// hints (ShortHelp) and the help screen (FullHelp); bindings that do not
// apply to the current screen are disabled, so neither shows them.
type keyMap struct {
	Quit, Help, Filter, ClearFilter   key.Binding
	Up, Down, Top, Bottom, PgUp, PgDn key.Binding
	Open, Back, Tab, Alerts           key.Binding
	Freeze                            key.Binding
	ZoomIn, ZoomOut, ZoomReset        key.Binding
	Sort, Reverse                     key.Binding
	Pause, Slower, Faster, SeekBack   key.Binding
	SeekFwd                           key.Binding
}

var _ help.KeyMap = (*keyMap)(nil)

func newKeyMap() *keyMap {
	b := func(keys []string, k, desc string) key.Binding {
		return key.NewBinding(key.WithKeys(keys...), key.WithHelp(k, desc))
	}
	return &keyMap{
		Quit:        b([]string{"q", "ctrl+c"}, "q", "quit"),
		Help:        b([]string{"?"}, "?", "help"),
		Filter:      b([]string{"/"}, "/", "filter"),
		ClearFilter: b([]string{"esc"}, "esc", "clear filter"),
		Up:          b([]string{"k", "up"}, "↑/k", "up"),
		Down:        b([]string{"j", "down"}, "↓/j", "down"),
		Top:         b([]string{"g", "home"}, "g", "top"),
		Bottom:      b([]string{"G", "end"}, "G", "bottom"),
		PgUp:        b([]string{"pgup", "ctrl+b"}, "pgup", "page up"),
		PgDn:        b([]string{"pgdown", "ctrl+f"}, "pgdn", "page down"),
		Open:        b([]string{"enter"}, "enter", "detail"),
		Back:        b([]string{"esc", "backspace"}, "esc", "back"),
		Tab:         b([]string{"tab", "shift+tab"}, "tab", "panel"),
		Alerts:      b([]string{"a"}, "a", "alerts"),
		Freeze:      b([]string{" "}, "space", "freeze"),
		ZoomIn:      b([]string{"+"}, "+", "shorter range"),
		ZoomOut:     b([]string{"-"}, "-", "longer range"),
		ZoomReset:   b([]string{"="}, "=", "default range"),
		Sort:        b([]string{"s"}, "s", "sort column"),
		Reverse:     b([]string{"r"}, "r", "reverse sort"),
		Pause:       b([]string{"p"}, "p", "pause replay"),
		Slower:      b([]string{"<"}, "<", "slower"),
		Faster:      b([]string{">"}, ">", "faster"),
		SeekBack:    b([]string{"["}, "[", "back 10s"),
		SeekFwd:     b([]string{"]"}, "]", "forward 10s"),
	}
}

// forScreen enables the bindings that apply to a screen.
func (k *keyMap) forScreen(s screen, filtered, replay bool) {
	main := s == screenMain
	k.Filter.SetEnabled(main)
	k.ClearFilter.SetEnabled(main && filtered)
	k.Open.SetEnabled(main)
	k.Back.SetEnabled(!main)
	k.Alerts.SetEnabled(true)
	k.Sort.SetEnabled(main)
	k.Reverse.SetEnabled(main)
	for _, b := range []*key.Binding{&k.Pause, &k.Slower, &k.Faster, &k.SeekBack, &k.SeekFwd} {
		b.SetEnabled(replay)
	}
}

// forHelp is a copy with every binding enabled, but the replay's when not
// replaying: the help screen lists the keys of every screen.
func (k *keyMap) forHelp(replay bool) *keyMap {
	c := *k
	for _, b := range []*key.Binding{&c.Filter, &c.ClearFilter, &c.Open, &c.Back, &c.Alerts, &c.Sort, &c.Reverse} {
		b.SetEnabled(true)
	}
	for _, b := range []*key.Binding{&c.Pause, &c.Slower, &c.Faster, &c.SeekBack, &c.SeekFwd} {
		b.SetEnabled(replay)
	}
	return &c
}

// ShortHelp is the footer: the keys that matter most on this screen.
func (k *keyMap) ShortHelp() []key.Binding {
	return []key.Binding{
		k.Help, k.Quit, k.Open, k.Back, k.Filter, k.ClearFilter, k.Tab,
		k.Freeze, k.Sort, k.ZoomIn, k.ZoomOut, k.Pause, k.Slower, k.Faster,
		k.SeekBack, k.SeekFwd,
	}
}

// FullHelp is the help screen, one column per group.
func (k *keyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.Up, k.Down, k.Top, k.Bottom, k.PgUp, k.PgDn},
		{k.Open, k.Back, k.Tab, k.Alerts, k.Filter, k.ClearFilter, k.Help, k.Quit},
		{k.Freeze, k.ZoomIn, k.ZoomOut, k.ZoomReset, k.Sort, k.Reverse},
		{k.Pause, k.Slower, k.Faster, k.SeekBack, k.SeekFwd},
	}
}
