package ui

import (
	"strings"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
)

// keyMap is every key binding of the dashboard. It generates the footer's
// hints (ShortHelp) and the help screen (FullHelp). Each screen offers a
// copy with the bindings it does not use disabled, so its footer does not
// show them; the replay's are enabled only while a replay can be steered.
type keyMap struct {
	Quit, Help, Filter, ClearFilter   key.Binding
	Up, Down, Top, Bottom, PgUp, PgDn key.Binding
	Open, Back, Tab, Alerts, Targets  key.Binding
	Freeze                            key.Binding
	ZoomIn, ZoomOut, ZoomReset        key.Binding
	Pause, Slower, Faster, SeekBack   key.Binding
	SeekFwd                           key.Binding

	// Sorting: s cycles the sort column, r reverses it, F6 or S opens
	// the sort picker (htop's F6: a list of the columns, the current one
	// marked).
	Sort, Reverse, SortPick key.Binding

	// the column chooser (htop's F2)
	Columns key.Binding

	// Habits from htop and k9s: F1 is help and F10 quits (on Help and
	// Quit above), : jumps to an app, resource or instance, m turns the
	// mouse on and off.
	Jump, Mouse key.Binding
}

var _ help.KeyMap = (*keyMap)(nil)

func newKeyMap() *keyMap {
	b := func(keys []string, k, desc string) key.Binding {
		return key.NewBinding(key.WithKeys(keys...), key.WithHelp(k, desc))
	}
	return &keyMap{
		Quit:        b([]string{"q", "ctrl+c", "f10"}, "q", "quit"),
		Help:        b([]string{"?", "f1"}, "?", "help"),
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
		Targets:     b([]string{"t"}, "t", "targets"),
		Freeze:      b([]string{" "}, "space", "freeze"),
		ZoomIn:      b([]string{"+"}, "+", "shorter range"),
		ZoomOut:     b([]string{"-"}, "-", "longer range"),
		ZoomReset:   b([]string{"="}, "=", "default range"),
		Pause:       b([]string{"p"}, "p", "pause replay"),
		Slower:      b([]string{"<"}, "<", "slower"),
		Faster:      b([]string{">"}, ">", "faster"),
		SeekBack:    b([]string{"["}, "[", "back 10s"),
		SeekFwd:     b([]string{"]"}, "]", "forward 10s"),

		// Sorting.
		Sort:     b([]string{"s"}, "s", "sort column"),
		Reverse:  b([]string{"r"}, "r", "reverse sort"),
		SortPick: b([]string{"f6", "S"}, "F6/S", "sort by…"),

		// the column chooser
		Columns: b([]string{"f2", "c"}, "F2/c", "columns"),

		// habits: the jump prompt and the mouse's switch.
		Jump:  b([]string{":"}, ":", "jump to a name"),
		Mouse: b([]string{"m"}, "m", "mouse on/off"),
	}
}

// setTargets enables the targets' binding when there are targets to list.
func (k *keyMap) setTargets(on bool) { k.Targets.SetEnabled(on) }

// setReplay enables the replay's bindings or not.
func (k *keyMap) setReplay(on bool) {
	for _, b := range []*key.Binding{&k.Pause, &k.Slower, &k.Faster, &k.SeekBack, &k.SeekFwd} {
		b.SetEnabled(on)
	}
}

// forMain is the main screen's keymap: no way back, and clearing the
// filter only when there is one.
func (k *keyMap) forMain(filtered bool) *keyMap {
	c := *k
	c.Back.SetEnabled(false)
	c.ClearFilter.SetEnabled(filtered)
	return &c
}

// forDetail is the detail screen's keymap: no filter, sort or drill down.
func (k *keyMap) forDetail() *keyMap {
	c := *k
	for _, b := range []*key.Binding{&c.Filter, &c.ClearFilter, &c.Open, &c.Sort, &c.Reverse, &c.SortPick, &c.Columns} {
		b.SetEnabled(false)
	}
	return &c
}

// forTargets is the targets screen's: moves, back, and the keys that
// apply everywhere.
func (k *keyMap) forTargets() *keyMap {
	c := *k
	for _, b := range []*key.Binding{&c.Filter, &c.ClearFilter, &c.Open, &c.Sort, &c.Reverse, &c.SortPick, &c.Tab, &c.Alerts, &c.Columns} {
		b.SetEnabled(false)
	}
	return &c
}

// forHelp is the help screen's: every screen's bindings, the replay's only
// when replaying.
func (k *keyMap) forHelp(replay bool) *keyMap {
	c := *k
	c.setReplay(replay)
	return &c
}

// helpKeys is a keymap whose hints are one keymap's and groups another's:
// the help screen lists every binding while its footer keeps the hints of
// the screen under it.
type helpKeys struct{ hints, groups help.KeyMap }

// ShortHelp is the hints' keymap's.
func (k helpKeys) ShortHelp() []key.Binding { return k.hints.ShortHelp() }

// FullHelp is the groups' keymap's.
func (k helpKeys) FullHelp() [][]key.Binding { return k.groups.FullHelp() }

// ShortHelp is the footer: the keys that matter most on this screen.
func (k *keyMap) ShortHelp() []key.Binding {
	return []key.Binding{
		k.Help, k.Quit, k.Open, k.Back, k.Targets, k.Filter, k.ClearFilter, k.Tab,
		k.Freeze, k.Sort, k.ZoomIn, k.ZoomOut, k.Pause, k.Slower, k.Faster,
		k.SeekBack, k.SeekFwd,
	}
}

// FullHelp is the help screen, one column per group.
func (k *keyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.Up, k.Down, k.Top, k.Bottom, k.PgUp, k.PgDn},
		{k.Open, k.Back, k.Tab, k.Alerts, k.Targets, k.Filter, k.ClearFilter, k.Jump, k.Mouse, k.Help, k.Quit},
		{k.Freeze, k.ZoomIn, k.ZoomOut, k.ZoomReset, k.Sort, k.Reverse, k.SortPick, k.Columns},
		{k.Pause, k.Slower, k.Faster, k.SeekBack, k.SeekFwd},
	}
}

// keyNames names every key of a binding as the help screen and the README
// list them ("q/ctrl+c/F10"): the footer's hints keep the binding's short
// label, the help names them all.
func keyNames(b key.Binding) string { return strings.Join(keyList(b), "/") }

// keyList names every key of a binding, arrows first ("↑", "k").
func keyList(b key.Binding) []string {
	ks := b.Keys()
	names := make([]string, 0, len(ks))
	for _, arrows := range []bool{true, false} {
		for _, k := range ks {
			if isArrow(k) == arrows {
				names = append(names, keyName(k))
			}
		}
	}
	return names
}

func isArrow(k string) bool { return k == "up" || k == "down" || k == "left" || k == "right" }

// keyName is how a key reads: arrows as glyphs, function keys upper case.
func keyName(k string) string {
	switch k {
	case "up":
		return "↑"
	case "down":
		return "↓"
	case "left":
		return "←"
	case "right":
		return "→"
	case " ":
		return "space"
	case "pgdown":
		return "pgdn"
	}
	if len(k) >= 2 && k[0] == 'f' && k[1] >= '1' && k[1] <= '9' {
		return "F" + k[1:]
	}
	return k
}

// helpGroupName is the title of the keymap's i-th group in the help screen
// and the README.
func helpGroupName(i int) string {
	names := [...]string{"MOVE", "VIEWS", "DATA", "REPLAY"}
	if i < len(names) {
		return names[i]
	}
	return "MORE"
}
