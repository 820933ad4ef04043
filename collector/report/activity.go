package report

import (
	"cmp"
	"slices"
	"strings"

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

// quiet reports whether nothing happened to the resource's breakers, as
// far as is known, and nothing was blocked.
func (a account) quiet() bool {
	return a.seen.Block == 0 && (a.act == nil || a.act.Trips == 0 && a.act.Reopens == 0 && a.act.OpenMs == 0 && a.act.HalfOpenMs == 0)
}

// quietCounts counts the quiet resources (nothing blocked, no trip known)
// by what is known of their breakers: no trip seen (known), none inferred
// from counts (inferred), or whether one tripped not known (unknown: the
// source cannot report breaker states, or no account of them was given).
type quietCounts struct{ known, inferred, unknown int }

func (q quietCounts) total() int { return q.known + q.inferred + q.unknown }

// add counts a quiet account.
func (q *quietCounts) add(a account) {
	switch {
	case a.act == nil || a.seen.States == "unknown":
		q.unknown++
	case a.seen.States == "inferred":
		q.inferred++
	default:
		q.known++
	}
}

// tripsPhrase says what is known of the trips of the quiet resources q
// counts, n of them in all: "no trip", "no trip (inferred from counts)",
// "trips not known", or the counts of each.
func (q quietCounts) tripsPhrase() string {
	n := q.total()
	switch n {
	case q.known:
		return "no trip"
	case q.inferred:
		return "no trip (inferred from counts)"
	case q.unknown:
		return "trips not known (breaker states unknown)"
	}
	var parts []string
	if q.known > 0 {
		parts = append(parts, prose("%d with no trip", q.known).text)
	}
	if q.inferred > 0 {
		parts = append(parts, prose("%d with no trip inferred from counts", q.inferred).text)
	}
	if q.unknown > 0 {
		parts = append(parts, prose("%d with trips not known (breaker states unknown)", q.unknown).text)
	}
	return strings.Join(parts, ", ")
}

// accounts are the resources to account for, busiest first, at most
// maxAccounts of those to which something happened; quiet counts the
// others with nothing to tell, more those left out for room.
func (r *Report) accounts() (list []account, quiet quietCounts, more int) {
	acts := map[[2]string]*collector.ResourceActivity{}
	for i := range r.Activity {
		a := &r.Activity[i]
		acts[[2]string{a.App, a.Resource}] = a
	}
	for i := range r.ResourcesSeen {
		s := &r.ResourcesSeen[i]
		a := account{seen: s, act: acts[[2]string{s.App, s.Resource}]}
		if a.quiet() {
			quiet.add(a)
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
	switch rest := int64(0); {
	case x == nil || s.Block == 0:
	case s.States == "unknown":
		// What breakers blocked is not known: no count of theirs is 0.
		rest = x.Block - x.BreakerBlock - x.FlowBlock
		var by []string
		if x.BreakerBlock > 0 {
			by = append(by, prose("%d by breakers", x.BreakerBlock).text)
		}
		if x.FlowBlock > 0 {
			by = append(by, prose("%d by flow or hot-parameter rules", x.FlowBlock).text)
		}
		if rest > 0 {
			by = append(by, prose("%d by what is not known (the source cannot report breaker states)", rest).text)
		}
		if len(by) > 0 {
			value = append(value, prose(": %s", strings.Join(by, ", ")))
		}
	default:
		value = append(value, prose(": %d by breakers%s, %d by flow or hot-parameter rules", x.BreakerBlock, inferred, x.FlowBlock))
		if rest = x.Block - x.BreakerBlock - x.FlowBlock; rest > 0 && s.States == "inferred" {
			// Where breakers and flow rules both guard it, blocks no
			// inferred trip explains may be either's.
			value = append(value, prose(", %d by rules or breaker states not known", rest))
		} else if rest > 0 {
			value = append(value, prose(", %d by rules not known", rest))
		}
	}
	add("Blocked", value...)
	return parts
}

// accountHead is the line that opens the summary, after "No findings".
func (r *Report) accountHead(quiet quietCounts) string {
	n := len(r.ResourcesSeen)
	res := plural(n, "resource", "resources")
	switch {
	case n == 0 && r.Resources == 0:
		return "No resource was seen."
	case n == 0:
		return "No account of the resources was given to this report."
	case quiet.total() != n:
	case r.Activity == nil:
		return prose("No entry of the %d %s was blocked.", n, res).text
	case quiet.known == n:
		return prose("No breaker of the %d %s tripped, and no entry was blocked.", n, res).text
	case quiet.inferred == n:
		return prose("No breaker of the %d %s tripped (inferred from counts), and no entry was blocked.", n, res).text
	default:
		return prose("No entry of the %d %s was blocked; breakers: %s.", n, res, quiet.tripsPhrase()).text
	}
	return "What happened, per resource:"
}

// accountTail is the line that closes the summary ("" for none).
func accountTail(quiet quietCounts, more, listed int) string {
	q := quiet.total()
	switch {
	case more > 0 && q > 0:
		return prose("%d more %s with trips or blocks not listed; %d other %s: %s, no block.",
			more, plural(more, "resource", "resources"), q, plural(q, "resource", "resources"), quiet.tripsPhrase()).text
	case more > 0:
		return prose("%d more %s with trips or blocks not listed.", more, plural(more, "resource", "resources")).text
	case q > 0 && listed > 0:
		return prose("%d other %s: %s, no block.", q, plural(q, "resource", "resources"), quiet.tripsPhrase()).text
	}
	return ""
}
