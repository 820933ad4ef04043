// Package racetest tells tests whether they run under the race detector,
// and scales their sizes for it.
//
// The race detector slows and bloats everything it watches (5 to 20 times
// on this project's property tests and fixture replays), and finds nothing
// in a test that runs in one goroutine. Tests of time and memory claims
// skip under it ([Enabled]); property tests that check logic play a fifth
// of their cases under it ([Cases]), or fewer ([Share]), and tests that
// replay every fixture or every moment of one play every k-th ([Played]).
// CI's run without the detector (.ci/run) plays all of them: every test
// that skips or shrinks here is named in its list, which fails on a name
// that is no test.
package racetest
