// Package ui is sentinel-top's terminal dashboard, a bubbletea program: htop
// for circuit breakers.
//
// It reads data only through a Source (a *collector.Collector in the
// binary): the latest Snapshot on every tick, and Details, fetched in
// commands: one resource's while the detail screen is open, and those of
// the rows in sight for the TREND column while the main screen is (at most
// once per second of data). Rendering is pure:
// View never does I/O and renders a new frame only when the snapshot, the
// terminal size or the user changed something, so an idle dashboard costs a
// tick and nothing else.
//
// Screens:
//
//   - main: a status bar (targets up and down, naming those down, or the
//     replayed file; REC; LIVE, REPLAY ×speed, PAUSED, FROZEN; clock; time
//     range), the resource table (rates, ratios and p99, "–" where nothing
//     completed and "avg 35ms" where the source has average RTs only;
//     breakers per state "✖3 ◐1 ●4", "?2" for instances whose source
//     cannot tell their state and "✖1~" for states inferred from counts;
//     pass/s over the time range), sorted worst first (a breaker OPEN or
//     HALF_OPEN is at least a warning) or by any column but TREND (s, r,
//     and the sort picker on F6 or S), its rows held still while their
//     values only wobble (tablesort.go: a row moves when its mark or its
//     sorted value really changes),
//     the alerts panel (findings by severity, "✓ plan" on those whose rule
//     has a plan found safe on the input's traffic) and the key hints;
//   - detail (enter on a resource; on an alert, opened on its finding):
//     per-instance timeline bands
//     with the transitions of the selected instance (those inferred from
//     counts marked "inferred, ±1 s", or "within 15s", the step of a
//     Prometheus input; an instance whose source cannot
//     tell states says so in place of its band), charts of pass and
//     block per second, of the slow or error ratio against the rule's
//     threshold and of p99 against maxAllowedRtMs (or why p99 is
//     unknown), each instance's rules with
//     drift marked, the resource's findings with evidence and advice, and
//     its rule plans (the snapshot's): the change beside the current
//     values, the what-if replay of both rules side by side, or "no safe
//     change found" and why;
//   - targets (t): every dialed target, down ones first, with its state and
//     for how long, why it is down in words (refused, DNS, TLS, an HTTP
//     status, a missing token, a plain HTTP server), its reconnects and how
//     long since its last message (the collector's LastMessageAt);
//   - help (? or F1): every key binding with every key, generated from the
//     keymap (the README's table of keys is checked against it), what the
//     mouse does, and the glyphs;
//   - jump (:, jump.go): a prompt over the screen it was opened from that
//     completes the apps, resources and instances of the snapshot shown
//     and goes to the table's row, or to an instance's detail (its worst
//     breaker's resource) or its target.
//
// The mouse (Options.Mouse, --mouse, or m at run time; cell motion, so
// off by default to leave the terminal's text selection alone, mouse.go):
// a click selects a row, an alert or a target and focuses its panel, a
// click on the selected one opens it, the wheel moves through the list
// under the pointer or scrolls the detail and the help, and a click on
// the status bar's first line opens the targets. F10 quits, as q does.
//
// Time is drawn on grids anchored to absolute time (grid.go): cell k of a
// step covers [k*step, (k+1)*step), so the past keeps its shape as time
// goes on. A band's cell shows the worst state the breaker held in it, and
// nothing (·) where its state is not known: before the instance's first
// data or a first transition that contradicts the state the range starts
// in (InstanceDetail.KnownFrom), after it left (KnownTo), where no process
// ran (Absent), its data is known never to have arrived (Unreceived), or an
// inferred CLOSED went a timeWindow without a call (Silent),
// by the rule every view draws with (triage.Timeline.Cells); the
// findings' evidence reuses the timeline's bands. No data is never drawn
// as 0: "–" in the table, blank in the TREND, gaps in the charts. Unknown
// is not CLOSED: where the source cannot tell breaker states (Java
// Sentinel's transport, metric logs: collector.ProvenanceUnknown) every
// view says "? unknown", and states inferred from per-second counts are
// shown marked "~".
//
// Every state has a glyph and a word (● CLOSED, ◐ HALF, ✖ OPEN, ? unknown),
// so the dashboard reads the same without colour (NO_COLOR, Options.NoColor).
// Every name from the network (apps, resources, instances, targets,
// versions) is sanitized before it reaches the terminal: escape sequences,
// control and format characters and bidi overrides are shown as \xNN or
// \uNNNN, and long names are elided in the middle (a URL keeps its host
// and its path's tail).
//
// The four screens implement one small interface, screen (screen.go):
// Update(msg) (screen, tea.Cmd), View, SetSize, Keys (the help.KeyMap the
// screen offers, which writes its footer's hints), Footer and Modal. The
// Model draws the status bar, takes the keys that apply everywhere (quit,
// help, targets, freeze, zoom, replay) and routes the others to the active screen,
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
