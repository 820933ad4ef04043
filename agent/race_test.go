//go:build race

package agent

// raceEnabled: the race detector slows every atomic operation, so timing
// claims are checked only without it (.ci/run's tests without -race).
const raceEnabled = true
