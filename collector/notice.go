package collector

import (
	"cmp"
	"slices"

	"github.com/sentinel-top/sentinel-top/collector/feed"
)

// NoticeKind names what a Notice is about.
type NoticeKind uint8

// The notice kinds.
const (
	// NoticeNameCollision: one process wrote lines of one second under one
	// resource name, because Java Sentinel writes "|" as "_" ("a|b" and
	// "a_b" are both "a_b"). The lines were summed, as Sentinel's dashboard
	// does; the name's counts are those of the resources together.
	NoticeNameCollision NoticeKind = iota + 1
	// NoticeInstanceConflict: two dialed targets announced one instance
	// name (Resource): they are two instances, kept apart. The one of
	// Target, announced after Holder's, is shown as Instance (NAME@TARGET);
	// Holder's keeps the name. One of them may be impersonating the other.
	NoticeInstanceConflict
	// NoticeReplayLate: a replay fed Count messages after later ones, the
	// first of time At: what it holds to feed them in the order of their
	// time was full (source.ReplayOptions.MaxReorderBytes).
	NoticeReplayLate
	// NoticeBeforeHello: Count lines of a replay's input, of Instances
	// instances, came before the hello naming their instance and were fed
	// without it (as an instance of no app): past the instances whose
	// hello a replay keeps (source.ReplayOptions.MaxEarlyHellos). At is the first's time.
	NoticeBeforeHello
)

// Notice is a typed warning about the input, one of Snapshot.Warnings
// (WarningText words it). A notice is kept once per kind, instance and
// resource; what repeats adds to Count.
type Notice struct {
	Kind               NoticeKind
	Instance, Resource string
	// At is when it first happened (the sender's clock, Unix ms); Count
	// how many times (for a name collision, the seconds summed).
	At    int64
	Count int64
	// Target and Holder are, for an instance conflict, the target whose
	// instance is Instance and the one that announced the name first.
	Target, Holder string
	// Instances counts, for lines before a hello, their instances.
	Instances int64
}

// maxNotices bounds the notices kept; further ones are dropped.
const maxNotices = 1000

type noticeKey struct {
	kind               NoticeKind
	instance, resource string
}

// Notice records a notice. The notices of an input outlive a replay
// seeking back (they describe the input, like its rejected lines).
func (c *Collector) Notice(n Notice) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.notice(n)
}

// notice is Notice with c.mu held.
func (c *Collector) notice(n Notice) {
	k := noticeKey{n.Kind, n.Instance, n.Resource}
	if old := c.notices[k]; old != nil {
		old.At, old.Count = min(old.At, n.At), old.Count+n.Count
		return
	}
	if len(c.notices) >= maxNotices {
		return
	}
	if c.notices == nil {
		c.notices = map[noticeKey]*Notice{}
	}
	c.notices[k] = &n
}

// ReplayOrdered keeps what a replay could not feed in its place as
// notices (NoticeReplayLate, NoticeBeforeHello), replacing the totals it
// told before: a replay seeking back meets the same again.
func (c *Collector) ReplayOrdered(o feed.ReplayOrder) {
	c.mu.Lock()
	defer c.mu.Unlock()
	set := func(n Notice) {
		k := noticeKey{n.Kind, n.Instance, n.Resource}
		if old := c.notices[k]; old != nil {
			*old = n
			return
		}
		c.notice(n)
	}
	if o.Late > 0 {
		set(Notice{Kind: NoticeReplayLate, At: o.LateAt, Count: o.Late})
	}
	if o.Unnamed > 0 {
		set(Notice{Kind: NoticeBeforeHello, At: o.UnnamedAt, Count: o.Unnamed, Instances: o.UnnamedInstances})
	}
}

// sortedNotices lists the notices by instance, resource and kind. c.mu is
// held.
func (c *Collector) sortedNotices() []Notice {
	out := make([]Notice, 0, len(c.notices))
	for _, n := range c.notices {
		out = append(out, *n)
	}
	slices.SortFunc(out, func(a, b Notice) int {
		return cmp.Or(cmp.Compare(a.Instance, b.Instance), cmp.Compare(a.Resource, b.Resource), cmp.Compare(a.Kind, b.Kind))
	})
	return out
}
