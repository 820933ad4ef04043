// Package core holds Sentinel's semantics in Go, with no I/O: an injectable
// clock, the sliding window (LeapArray) and its metric bucket, circuit
// breakers (slow-request ratio, error ratio, error count; CLOSED, OPEN and
// HALF_OPEN with probes), flow control (reject, warm-up, throttling),
// hot-parameter flow control (limits per parameter value), the rule types
// with sentinel-golang-compatible JSON, and a small Entry/Exit guard that ties
// them together.
//
// Both sides of sentinel-top use it: the agent decides with it inside an
// instrumented service, and the collector aggregates with its windows.
//
// The decisions follow sentinel-golang v1.0.4 exactly unless a rule asks for
// Java Sentinel 1.8 behaviour; docs/SEMANTICS.md lists every difference and
// the conformance tests drive both implementations with the same virtual time.
//
// Every component that reads time takes a Clock, so replay, simulation and
// tests run at any speed and repeat exactly.
package core
