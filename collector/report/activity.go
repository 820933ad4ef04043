package report

import (
	"cmp"
	"slices"

	"github.com/sentinel-top/sentinel-top/collector"
)

// A report with no findings says what happened instead, per resource:
// its breakers' trips and probes, the time they spent OPEN and HALF_OPEN,
// and its blocks by what blocked them (collector.ResourceActivity), so
// that "No findings" never stands alone. The text and Markdown reports
// carry it; the JSON report does not, as findings-v1 (revision 3) has no
// field for it (its resourcesSeen gives each resource's pass and block
// totals).

// maxAccounts bounds the resources a report accounts for one by one: the
// busiest first (trips, then time OPEN, then blocks); the rest are counted.
const maxAccounts = 20

// account is one resource's part of the summary: its totals, and what
// happened to its breakers when the report was given it (act nil: not).
type account struct {
	seen *ResourceSeen
	act  *collector.ResourceActivity
}

// quiet reports whether nothing happened to the resource's breakers and
// nothing was blocked.
func (a account) quiet() bool {
	return a.seen.Block == 0 && (a.act == nil || a.act.Trips == 0 && a.act.Reopens == 0 && a.act.OpenMs == 0 && a.act.HalfOpenMs == 0)
}

// accounts are the resources to account for, busiest first, at most
// maxAccounts of those to which something happened; quiet counts the
// others with nothing to tell, more those left out for room.
func (r *Report) accounts() (list []account, quiet, more int) {
	acts := map[[2]string]*collector.ResourceActivity{}
	for i := range r.Activity {
		a := &r.Activity[i]
		acts[[2]string{a.App, a.Resource}] = a
	}
	for i := range r.ResourcesSeen {
		s := &r.ResourcesSeen[i]
		a := account{seen: s, act: acts[[2]string{s.App, s.Resource}]}
		if a.quiet() {
			quiet++
			continue
		}
		list = append(list, a)
	}
	busy := func(a account) (trips, open int64) {
		if a.act != nil {
			return a.act.Trips, a.act.OpenMs
		}
		return 0, 0
	}
	slices.SortStableFunc(list, func(x, y account) int {
		tx, ox := busy(x)
		ty, oy := busy(y)
		return cmp.Or(cmp.Compare(ty, tx), cmp.Compare(oy, ox), cmp.Compare(y.seen.Block, x.seen.Block))
	})
	if len(list) > maxAccounts {
		more = len(list) - maxAccounts
		list = list[:maxAccounts]
	}
	return list, quiet, more
}

// accountParts are what a resource's account says, labelled.
func accountParts(a account) []part {
	var parts []part
	add := func(label string, value ...seg) { parts = append(parts, part{label: label, value: value}) }
	s, x := a.seen, a.act
	inferred := ""
	if s.States == "inferred" {
		inferred = " (inferred from counts)"
	}
	switch {
	case x == nil:
		add("Trips", prose("not told to this report"))
	case s.States == "unknown":
		add("Trips", prose("not known: the source cannot report breaker states"))
	case x.Trips == 0 && x.Reopens == 0 && x.Closes == 0:
		add("Trips", prose("none%s", inferred))
	default:
		add("Trips", prose("%d (CLOSED to OPEN); probes: %d closed, %d reopened%s", x.Trips, x.Closes, x.Reopens, inferred))
	}
	if x != nil && s.States != "unknown" {
		about := ""
		if x.TimesPartial {
			about = "; transitions arrived out of order, so about"
		}
		add("Time OPEN", prose("%s, summed over instances%s%s", fmtDur(x.OpenMs), about, inferred))
		add("Time HALF_OPEN", prose("%s", fmtDur(x.HalfOpenMs)))
	}
	offered := s.Pass + s.Block
	blocked := prose("%d of %d entries", s.Block, offered)
	if offered > 0 && s.Block > 0 {
		blocked = prose("%d of %d entries (%.1f %%)", s.Block, offered, 100*float64(s.Block)/float64(offered))
	}
	value := []seg{blocked}
	if x != nil && s.Block > 0 {
		value = append(value, prose(": %d by breakers, %d by flow or hot-parameter rules", x.BreakerBlock, x.FlowBlock))
		if rest := x.Block - x.BreakerBlock - x.FlowBlock; rest > 0 {
			value = append(value, prose(", %d by rules not known", rest))
		}
	}
	add("Blocked", value...)
	return parts
}

// accountHead is the line that opens the summary, after "No findings".
func (r *Report) accountHead(quiet int) string {
	n := len(r.ResourcesSeen)
	switch {
	case n == 0 && r.Resources == 0:
		return "No resource was seen."
	case n == 0:
		return "No account of the resources was given to this report."
	case quiet == n && r.Activity == nil:
		return prose("No entry of the %d %s was blocked.", n, plural(n, "resource", "resources")).text
	case quiet == n:
		return prose("No breaker of the %d %s tripped, and no entry was blocked.", n, plural(n, "resource", "resources")).text
	}
	return "What happened, per resource:"
}

// accountTail is the line that closes the summary ("" for none).
func accountTail(quiet, more, listed int) string {
	switch {
	case more > 0 && quiet > 0:
		return prose("%d more %s with trips or blocks not listed; %d other %s: no trip, no block.",
			more, plural(more, "resource", "resources"), quiet, plural(quiet, "resource", "resources")).text
	case more > 0:
		return prose("%d more %s with trips or blocks not listed.", more, plural(more, "resource", "resources")).text
	case quiet > 0 && listed > 0:
		return prose("%d other %s: no trip, no block.", quiet, plural(quiet, "resource", "resources")).text
	}
	return ""
}
