package ui

import "github.com/sentinel-top/sentinel-top/collector"

// Source is everything the UI reads. *collector.Collector satisfies it; tests
// use snapshots they build. Every method must be safe to call from any
// goroutine and cheap enough for a tick: Snapshot returns the latest
// published snapshot, Detail computes one resource's view on demand (the UI
// calls it from a tea.Cmd, never from View).
type Source interface {
	// Snapshot returns the latest published snapshot, never nil.
	Snapshot() *collector.Snapshot
	// Detail returns one app x resource over [from, to] (Unix ms), or nil
	// when the collector knows nothing of it.
	Detail(app, resource string, from, to int64) *collector.Detail
}

// ReplayControl steers a replay: Pause, Resume, SetSpeed (a multiple of
// real time, 0 as fast as possible) and SeekBy (ms, negative moves back).
// The dashboard takes it in Options.Replay (the collector knows nothing of
// the replay feeding it) and calls it only while the snapshot says a replay
// is active. Its methods only set what the replay reads next, so a key press
// never waits on the replay. A *source.Replay (collector/source) is one.
type ReplayControl interface {
	Pause()
	Resume()
	// SetSpeed sets the replay speed: 1 is real time, 0 as fast as possible.
	SetSpeed(x float64)
	// SeekBy moves the replay position by deltaMs (negative: back).
	SeekBy(deltaMs int64)
}

var _ Source = (*collector.Collector)(nil)
