//go:build !linux

package bench

// readPath is told on Linux only, where the collector's pollers are.
func readPath() string { return "" }
