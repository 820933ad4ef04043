package collector

import (
	"time"

	"github.com/sentinel-top/sentinel-top/collector/feed"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// What the sources tell the store besides their messages (feed.DialSink,
// feed.ReplaySink): facts, taken as values. The store calls no source.

var (
	_ feed.DialSink   = (*Collector)(nil)
	_ feed.ReplaySink = (*Collector)(nil)
)

// AddTargets takes the status records of dialed targets, shown in the
// snapshot's Targets in the order they were added: their connections
// update them, Publish reads them.
func (c *Collector) AddTargets(rs ...*feed.TargetRecord) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.targetAt == nil {
		c.targetAt = map[*feed.TargetRecord]int{}
	}
	for _, r := range rs {
		c.targetAt[r] = len(c.targets)
		c.targets = append(c.targets, r)
		c.tpub, c.tpubShared = append(c.tpub, nil), nil
		r.Watch(&c.tchanges)
	}
}

// takeTargets brings tpub and tnotes up to date with the records changed
// since the last snapshot, and with those whose running counts alone
// moved: at every snapshot, unless tallies says the snapshot may wait for
// them (Run's, live): then once TalliesEvery has passed on the
// collector's clock since they were last taken, or TalliesAfter snapshots
// were taken meanwhile. Live, each target counts a message or two a
// second, and a copy of its whole status for each was a third of what the
// snapshots of 2,000 targets allocated (docs/BENCHMARKS.md). A replay,
// whose snapshots are its steps, takes them every time. c.mu is held.
func (c *Collector) takeTargets(now int64, tallies bool) {
	c.tbuf = c.tchanges.Take(c.tbuf)
	c.publishTargets(c.tbuf)
	c.tallySnaps++
	if !tallies || c.opts.Mode != ModeLive || c.tallySnaps >= TalliesAfter || now-c.talliedAt >= TalliesEvery.Milliseconds() || now < c.talliedAt {
		c.talliedAt, c.tallySnaps = now, 0
		c.tbuf = c.tchanges.TakeTallied(c.tbuf)
		c.publishTargets(c.tbuf)
	}
}

// A live snapshot of Run shows the targets' running counts
// (TargetStatus's Messages, Bytes, Items, LastMessageAt), when nothing
// else of them changed, as they were when a snapshot last took them: at
// most TalliesEvery before on the collector's clock, or TalliesAfter
// snapshots before.
const (
	TalliesEvery = time.Second
	TalliesAfter = 10
)

// publishTargets takes the statuses of records into tpub and tnotes, and
// clears records. c.mu is held.
func (c *Collector) publishTargets(records []*feed.TargetRecord) {
	for _, r := range records {
		i, ok := c.targetAt[r]
		if !ok {
			continue
		}
		st := r.Published()
		if old := c.tpub[i]; old != nil {
			c.noteTarget(old.Note, -1)
		}
		c.noteTarget(st.Note, 1)
		c.tpub[i] = st
		c.tpubShared = nil
	}
	clear(records)
}

func (c *Collector) noteTarget(n TargetRemark, d int) {
	if n == (TargetRemark{}) {
		return
	}
	if c.tnotes == nil {
		c.tnotes = map[TargetRemark]int{}
	}
	if c.tnotes[n] += d; c.tnotes[n] == 0 {
		delete(c.tnotes, n)
	}
}

// Names is the name pool the sources' decoders share, charged to the
// budget at each Publish.
func (c *Collector) Names() *wire.NamePool { return c.names }

// HoldNames charges n bytes (or gives back -n) of the names the sources'
// decoders hold of their own (see chargeNames).
func (c *Collector) HoldNames(n int64) { c.chargeNames(n) }

// OverRate counts n messages of place dropped unread over a source's rate
// limit (ReasonMaxRate).
func (c *Collector) OverRate(place string, n int64) { c.addOverflow(ReasonMaxRate, place, n) }

// addOverflow counts n items turned away by a limit at once.
func (c *Collector) addOverflow(reason, place string, n int64) {
	if n <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	count(c.overflow, reason, place)
	c.overflow[reason].Count += n - 1
}

// Unreceived counts instance's data of [from, to) as never received: a
// reconnect of its source could not read it back. Nothing is counted for
// an instance the store does not hold.
func (c *Collector) Unreceived(instance string, from, to int64) {
	c.unreceivedOf("", instance, from, to)
}

// unreceivedOf is Unreceived for the instance owner's connection calls
// instance (see instanceOf).
func (c *Collector) unreceivedOf(owner, instance string, from, to int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if in := c.heldInstance(owner, instance); in != nil {
		c.countUnreceived(in, from, to)
	}
}

// nameCollisionOf is NameCollision for the instance owner's connection
// calls instance.
func (c *Collector) nameCollisionOf(owner, instance, resource string, at int64) {
	c.mu.Lock()
	if in := c.heldInstance(owner, instance); in != nil {
		instance = in.Name
	}
	c.mu.Unlock()
	c.NameCollision(instance, resource, at)
}

// heldInstance is the instance owner's messages naming instance reach, if
// the store holds it; it creates none. c.mu is held.
func (c *Collector) heldInstance(owner, instance string) *instance {
	in := c.insts[instance]
	if owner == "" || (in != nil && in.owner == owner && in.wire == "") {
		return in
	}
	for k := 1; k <= maxQualified; k++ {
		q := qualified(instance, owner, k)
		if x := c.insts[q]; x != nil && x.owner == owner && x.wire == instance {
			return x
		}
	}
	if in != nil && in.owner == "" {
		return in
	}
	return nil
}

// NameCollision records the notice that lines of one second of instance
// were summed under resource's name (NoticeNameCollision).
func (c *Collector) NameCollision(instance, resource string, at int64) {
	c.Notice(Notice{Kind: NoticeNameCollision, Instance: instance, Resource: resource, At: at, Count: 1})
}
