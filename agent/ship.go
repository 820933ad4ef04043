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
// of those that have hot-parameter rules. The list is made again only when
// a resource or a hot-parameter rule came: it is called by the shipper
// alone, under its lock, which may sort the list it gets in place.
func (a *Agent) series() []wsstream.Series {
	n, hotp := a.guard.ResourceCount(), a.hot.Load()
	if l := &a.listed; l.series != nil && l.count == n && l.hot == hotp {
		return l.series
	}
	res := a.guard.Resources()
	out := make([]wsstream.Series, len(res))
	var hot map[string]*hotvalues.Tracker
	if hotp != nil {
		hot = *hotp
	}
	for i, r := range res {
		if t := hot[r.Name()]; t != nil {
			out[i] = hotSeries{r, t}
			continue
		}
		out[i] = r
	}
	// Resources may have come since the count was read: the count kept is
	// at most the list's, so the list is made again at the next call.
	a.listed = listedSeries{count: min(n, len(out)), hot: hotp, series: out}
	return out
}

// listedSeries is the series the shipper was given last, with what they
// were made from.
type listedSeries struct {
	count  int // the guard's resources
	hot    *map[string]*hotvalues.Tracker
	series []wsstream.Series
}

// hotSeries is a resource with hot values (wsstream.HotSeries).
type hotSeries struct {
	*core.Resource
	*hotvalues.Tracker
}
