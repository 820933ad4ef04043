// Package hostiletest holds hostile peers for tests: servers on loopback
// that misbehave as an attacker's would, shared by the packages whose
// defences they try.
package hostiletest
