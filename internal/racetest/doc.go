// Package racetest tells tests whether they run under the race detector,
// and scales their sizes for it.
//
// The race detector slows and bloats everything it watches (5 to 20 times
// on this project's property tests), and finds nothing in a test that runs
// in one goroutine. Tests of time and memory claims skip under it
// ([Enabled]); property tests that check logic play a fifth of their cases
// under it ([Cases]) and all of them in CI's run without it (.ci/run).
package racetest
