package agent

import (
	"os"

	"github.com/sentinel-top/sentinel-top/core"

	"github.com/sentinel-top/sentinel-top/internal/hotvalues"
	"github.com/sentinel-top/sentinel-top/internal/wsstream"
)

func pid() int { return os.Getpid() }

// Ship sends every bucket closed since the last call and keeps it in the
// backlog. The agent calls it at each bucket boundary unless
// Options.ManualShip is set.
func (a *Agent) Ship() { a.shipper.Ship() }

// series lists the guard's resources for the shipper, with the hot values
// of those that have hot-parameter rules.
func (a *Agent) series() []wsstream.Series {
	res := a.guard.Resources()
	out := make([]wsstream.Series, len(res))
	var hot map[string]*hotvalues.Tracker
	if m := a.hot.Load(); m != nil {
		hot = *m
	}
	for i, r := range res {
		if t := hot[r.Name()]; t != nil {
			out[i] = hotSeries{r, t}
			continue
		}
		out[i] = r
	}
	return out
}

// hotSeries is a resource with hot values (wsstream.HotSeries).
type hotSeries struct {
	*core.Resource
	*hotvalues.Tracker
}
