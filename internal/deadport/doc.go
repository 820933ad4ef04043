// Package deadport gives tests a loopback address that refuses
// connections for as long as the test runs.
//
// The usual way, listening on port 0 and closing the listener, leaves a
// port the kernel may hand to the next listener: a server another test
// (or the same one) starts a moment later can take it, and the address
// that should refuse answers instead. Addr keeps the port bound, without
// listening, until the test's cleanup: a dial to it is refused (a reset,
// ECONNREFUSED) and nothing else can bind it meanwhile.
package deadport
