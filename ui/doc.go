// Package ui is sentinel-top's terminal dashboard, a bubbletea program: htop
// for circuit breakers.
//
// It reads data only through a Source (a *collector.Collector in the
// binary): the latest Snapshot on every tick, and a Detail of one resource,
// fetched in a command while the detail screen is open. Rendering is pure:
// View never does I/O and renders a new frame only when the snapshot, the
// terminal size or the user changed something, so an idle dashboard costs a
// tick and nothing else.
//
// Screens:
//
//   - main: a status bar (targets up/down or the replayed file; LIVE,
//     REPLAY ×speed, PAUSED, FROZEN; clock; time range), the resource table
//     (rates, ratios, p99, breakers per state "✖3 ◐1 ●4", trend), the
//     alerts panel (findings by severity) and the key hints;
//   - detail (enter on a resource or an alert): per-instance timeline bands
//     with the exact transitions of the selected instance, charts of pass and
//     block per second, of the slow or error ratio against the rule's
//     threshold and of p99 against maxAllowedRtMs, each instance's rules with
//     drift marked, and the resource's findings with evidence and advice;
//   - help (?): every key binding, generated from the keymap, and the glyphs.
//
// Every state has a glyph and a word (● CLOSED, ◐ HALF, ✖ OPEN), so the
// dashboard reads the same without colour (NO_COLOR, Options.NoColor).
// Every name from the network (apps, resources, instances, targets,
// versions) is sanitized before it reaches the terminal: escape sequences,
// control and format characters and bidi overrides are shown as \xNN or
// \uNNNN, and long names are elided in the middle.
//
// Panels are concrete types shaped alike: Update(msg) (T, tea.Cmd),
// SetSize(w, h) and View(). Styles are built in one place (styles.go) for
// one colour profile; keys in one keymap (keys.go) that also writes the
// footer and the help screen.
package ui
