package collector

import (
	"cmp"
	"slices"

	"github.com/sentinel-top/sentinel-top/collector/fleet"
	"github.com/sentinel-top/sentinel-top/collector/triage"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// DataGap is sender time of one instance whose buckets never reached the
// collector: the instance was out of reach (its connection down, or the
// collector's) for longer than a reconnect brings back: the backlog of a
// new stream connection (wire.BacklogMs), or, for Java Sentinel, what its
// metric logs are read back for (javaCatchUp). It is known missing, not
// idle: views must not read it as a time without traffic.
type DataGap struct {
	Instance string
	// FromMs is the start of the instance's first such gap (Unix ms, the
	// sender's clock); Ms is the time of all of them, and Gaps how many.
	FromMs, Ms int64
	Gaps       int
}

// Span is a time span [From, To), Unix ms.
type Span = fleet.Span

// maxGapInstances bounds the instances whose gaps are kept by name; the
// time of the others is summed (Snapshot.UnreceivedMs) and they are
// counted (Snapshot.UnreceivedOthers).
const maxGapInstances = 64

// maxGapOthers bounds the names of the others kept to count them once
// each; past it they are "at least" so many.
const maxGapOthers = 1024

// awaitBacklog notes, at an instance's hello (judged ch), where the
// collector's data of the process ends, so that the next buckets message,
// the first of the backlog a new connection brings, tells whether the
// backlog reaches back there (see resumeBacklog). Only a process the
// collector had data from is awaited: the same one reconnecting (its data
// ends at dataEnd), or its restart (its data begins at its first whole
// period after startedAt). A collector that starts after its agents
// misses nothing it knew of. Java Sentinel's polled targets are left out
// here (their source stamps their hellos itself): it reads their gap back
// and counts what it cannot (Unreceived). c.mu is held.
func (in *instance) awaitBacklog(ch triage.HelloChange, m *wire.Hello) {
	in.resumeFrom, in.resumeTo = 0, 0
	bm := in.bucketMs
	if in.polled || bm <= 0 {
		return
	}
	var from int64
	switch ch {
	case triage.HelloSame:
		from = in.dataEnd
	case triage.HelloRestart:
		from = m.StartedAt - floorMod(m.StartedAt, bm)
		if from < m.StartedAt {
			from += bm // its first period may hold calls before it shipped: not claimed
		}
	}
	// What wire v1 promises a new connection: the last 60 s of buckets.
	// Older than that is gone unless the backlog shows otherwise.
	to := m.Ts - floorMod(m.Ts, bm) - wire.BacklogMs
	if from > 0 && to > from {
		in.resumeFrom, in.resumeTo = from, to
	}
}

// resumeBacklog settles an awaited backlog with m, the first buckets
// message after the hello: the backlog reached back to its first period
// (the items' start; for a heartbeat, the period that closed at its ts),
// and at least 60 s; the time between the collector's data and that is
// counted as never received. The recording keeps m whole, items already
// received included, so that a replay judges the same. c.mu is held.
func (c *Collector) resumeBacklog(in *instance, m *wire.Buckets) {
	from, to := in.resumeFrom, in.resumeTo
	in.resumeFrom, in.resumeTo = 0, 0
	bm := m.BucketMs
	if bm <= 0 {
		bm = in.bucketMs
	}
	first := m.Ts - floorMod(m.Ts, bm) - bm
	for i := range m.Items {
		first = min(first, m.Items[i].Start)
	}
	c.countUnreceived(in, from, min(to, first))
}

// countUnreceived counts the instance's buckets of [from, to) (its clock)
// as never received, in its record (which triage reads). c.mu is held.
func (c *Collector) countUnreceived(in *instance, from, to int64) {
	if to <= from {
		return
	}
	in.Unreceived = fleet.AddSpan(in.Unreceived, Span{From: from, To: to})
	c.unreceivedMs = sat64(c.unreceivedMs, to-from)
	g := c.gaps[in.Name]
	if g == nil {
		if len(c.gaps) >= maxGapInstances {
			if len(c.gapsOthers) < maxGapOthers {
				if c.gapsOthers == nil {
					c.gapsOthers = map[string]struct{}{}
				}
				c.gapsOthers[in.Name] = struct{}{}
			}
			return
		}
		if c.gaps == nil {
			c.gaps = map[string]*DataGap{}
		}
		g = &DataGap{Instance: in.Name, FromMs: from}
		c.gaps[in.Name] = g
	}
	g.FromMs, g.Ms, g.Gaps = min(g.FromMs, from), sat64(g.Ms, to-from), g.Gaps+1
}

// unreceived fills the snapshot's gaps and returns its warning (false for
// none). c.mu is held.
func (c *Collector) unreceived(s *Snapshot) (UnreceivedData, bool) {
	if c.unreceivedMs == 0 {
		return UnreceivedData{}, false
	}
	s.UnreceivedMs, s.UnreceivedOthers = c.unreceivedMs, len(c.gapsOthers)
	s.Unreceived = make([]DataGap, 0, len(c.gaps))
	for _, g := range c.gaps {
		s.Unreceived = append(s.Unreceived, *g)
	}
	slices.SortFunc(s.Unreceived, func(x, y DataGap) int {
		return cmp.Or(cmp.Compare(y.Ms, x.Ms), cmp.Compare(x.Instance, y.Instance))
	})
	return UnreceivedData{Gaps: s.Unreceived, Others: s.UnreceivedOthers, OthersAtLeast: s.UnreceivedOthers >= maxGapOthers,
		TotalMs: s.UnreceivedMs}, true
}
