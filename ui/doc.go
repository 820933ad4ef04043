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
//   - targets (t): every dialed target, down ones first, with its state and
//     for how long, why it is down in words (refused, DNS, TLS, an HTTP
//     status, a missing token, a plain HTTP server), its reconnects and how
//     long since its last message;
//   - help (?): every key binding, generated from the keymap, and the glyphs.
//
// Every state has a glyph and a word (● CLOSED, ◐ HALF, ✖ OPEN), so the
// dashboard reads the same without colour (NO_COLOR, Options.NoColor).
// Every name from the network (apps, resources, instances, targets,
// versions) is sanitized before it reaches the terminal: escape sequences,
// control and format characters and bidi overrides are shown as \xNN or
// \uNNNN, and long names are elided in the middle.
//
// The four screens implement one small interface, screen (screen.go):
// Update(msg) (screen, tea.Cmd), View, SetSize, Keys (the help.KeyMap the
// screen offers, which writes its footer's hints), Footer and Modal. The
// Model draws the status bar, takes the keys that apply everywhere (quit,
// help, freeze, zoom, replay) and routes the others to the active screen,
// which answers with the screen to show next: mainScreen (mainscreen.go),
// detailScreen (detailscreen.go, which also fetches the Detail),
// targetsScreen (targets.go) and helpScreen (help.go), the last two over
// the screen they were opened from. They share
// the styles, the keymap and the view the model keeps through common.
//
// Within the screens, panels are concrete types shaped alike: Update(msg)
// (T, tea.Cmd), SetSize(w, h) and View(). Every list (the table's rows,
// the alerts, the timeline's instances, the detail's findings, and the
// transitions, a list kept at its newest) moves with one cursor
// (cursor.go): position, count, page, the window in sight, clamped when
// the list shrinks; a list that follows an item by identity across
// snapshots finds it and selects it. The detail screen scrolls its lines
// in the same window. Styles are built
// in one place (styles.go) for one colour profile; keys in one keymap
// (keys.go) that also writes the footer and the help screen.
//
// The replay keys (replay.go) call the ReplayControl only from commands,
// never from Update: Update queues the calls and one command at a time
// makes them, so they reach the replay in the order of the keys.
package ui
