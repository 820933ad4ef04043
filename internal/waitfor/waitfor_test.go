package waitfor

import (
	"errors"
	"testing"
	"time"
)

// A condition met on its third look ends the wait.
func TestEventuallyReturnsOnceMet(t *testing.T) {
	n := 0
	Eventually(t, "third look", time.Second, time.Millisecond, func() error {
		if n++; n < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if n != 3 {
		t.Fatalf("looked %d times", n)
	}
}
