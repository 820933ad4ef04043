package collector

import (
	"errors"
	"fmt"
	"testing"
)

// A reject log keeps the first Max rejects in order and counts the rest,
// from many goroutines at once; what it returns is a copy.
func TestRejectLog(t *testing.T) {
	for _, c := range []struct {
		max, add, kept int
	}{
		{0, 5, 5},
		{0, DefaultRejectLog + 7, DefaultRejectLog},
		{3, 10, 3},
		{3, 3, 3},
	} {
		var l RejectLog
		l.Max = c.max
		for i := range c.add {
			l.Add(fmt.Sprintf("target-%d", i), errors.New("bad"))
		}
		kept, more := l.Rejects()
		if len(kept) != c.kept || more != c.add-c.kept {
			t.Errorf("max %d, %d added: kept %d and %d more, want %d and %d", c.max, c.add, len(kept), more, c.kept, c.add-c.kept)
			continue
		}
		for i, r := range kept {
			if r.Place != fmt.Sprintf("target-%d", i) || r.Err == nil {
				t.Errorf("max %d: reject %d is %+v, want target-%d", c.max, i, r, i)
			}
		}
		if len(kept) > 0 {
			kept[0].Place = "changed"
			if again, _ := l.Rejects(); again[0].Place != "target-0" {
				t.Errorf("the log's reject changed through the slice returned")
			}
		}
	}
	var l RejectLog
	done := make(chan struct{})
	for g := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 50 {
				l.Add(fmt.Sprintf("g%d-%d", g, i), errors.New("bad"))
			}
		}()
	}
	for range 4 {
		<-done
	}
	if kept, more := l.Rejects(); len(kept)+more != 200 || len(kept) != DefaultRejectLog {
		t.Errorf("200 rejects from 4 goroutines: kept %d and %d more", len(kept), more)
	}
}
