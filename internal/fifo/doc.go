// Package fifo makes named pipes where the system has them, so that tests
// of reading from a stream that cannot rewind build everywhere and are
// skipped where there is none.
package fifo
