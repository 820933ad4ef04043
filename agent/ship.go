package agent

import (
	"os"

	"github.com/sentinel-top/sentinel-top/internal/wsstream"
)

func pid() int { return os.Getpid() }

// Ship sends every bucket closed since the last call and keeps it in the
// backlog. The agent calls it at each bucket boundary unless
// Options.ManualShip is set.
func (a *Agent) Ship() { a.shipper.Ship() }

// series lists the guard's resources for the shipper.
func (a *Agent) series() []wsstream.Series {
	res := a.guard.Resources()
	out := make([]wsstream.Series, len(res))
	for i, r := range res {
		out[i] = r
	}
	return out
}
