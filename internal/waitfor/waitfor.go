// Package waitfor is test support: it waits, in real time and within a
// bound, for a condition that a real connection or goroutine brings
// about, failing the test with the condition's last error.
package waitfor

import (
	"testing"
	"time"
)

// Eventually polls cond every `every` until it returns nil, for up to
// `within`; past that it fails t with what and cond's last error.
func Eventually(t testing.TB, what string, within, every time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(every)
	}
}
