package bench

import (
	"fmt"
	"io"
	"time"
)

// progressWriter tells, on standard error, what a bench run is doing while
// it runs: at 10,000 targets minutes pass before the results are printed
// (starting the agents, connecting, letting the collector catch up,
// counting every call at the end), and on a machine too small for the run
// that is where it shows: targets that do not all come up, a collector
// that does not catch up.
type progressWriter struct {
	w     io.Writer
	began time.Time
	last  time.Time // of the latest line of a wait
}

func newProgressWriter(w io.Writer) *progressWriter {
	now := time.Now()
	return &progressWriter{w: w, began: now, last: now}
}

// say writes one line, with the seconds since the run began.
func (p *progressWriter) say(format string, args ...any) {
	p.last = time.Now()
	fmt.Fprintf(p.w, "bench: %6.1f s  %s\n", p.last.Sub(p.began).Seconds(), fmt.Sprintf(format, args...))
}

// waiting writes a wait's state, at most every progressEvery.
func (p *progressWriter) waiting(format string, args ...any) {
	if time.Since(p.last) >= progressEvery {
		p.say(format, args...)
	}
}

const progressEvery = 5 * time.Second
