//go:build race

package ui

// raceEnabled: the race detector slows every atomic operation, so timing
// claims are checked only without it (.ci/run runs them so).
const raceEnabled = true
