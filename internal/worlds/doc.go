// Package worlds is the ground truth of incidents, for tests that run
// breakers on simulated calls: a World says what a call arriving at a
// time met downstream. Worlds are pure functions of the time and the
// random source they are given, so a test that hands each call a source
// of its own (seeded by its instance and time) runs the same world twice
// with two rules and meets the same downstream both times.
package worlds
