// The resource table's cells that say what is not known: the breakers per
// state with the unknown and inferred ones marked, and "–" for figures
// nothing measured.

package ui

import (
	"math"
	"strconv"
	"strings"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/core"
)

// breakerMarks are what the BREAKERS column shows besides the counts:
// which states of each row were inferred from counts (a bit per state),
// whether any row has instances of unknown state, and the widest word a
// row without a breaker says instead of counts (see ruleWord). Each takes
// room in every row, so that the column lines up: a slot "?2" after the
// states, a "~" after each count.
type breakerMarks struct {
	inferred map[rowKey]uint8
	unknown  bool
	word     int
}

// The words of the BREAKERS column for a row without a breaker rule, and
// of the detail screen for a resource or instance without one.
const (
	// rulesUnknown: no breaker rule was seen, and the rules of some
	// instance were never read (a metric log carries none; a Java
	// Sentinel target whose /getRules failed): not known to be none.
	rulesUnknown = "rules unknown"
	// noRule: every instance's rules were read, and none guards it.
	noRule = "no rule"
)

// ruleWord is what guards a resource that no breaker does: "flow",
// "param" (hot-parameter rules), "flow+param", else rulesUnknown when
// some instance's rules were never read, else noRule.
func ruleWord(flow, param, unknown bool) string {
	switch {
	case flow && param:
		return "flow+param"
	case flow:
		return "flow"
	case param:
		return "param"
	case unknown:
		return rulesUnknown
	}
	return noRule
}

// rowRuleWord is ruleWord of a table row.
func rowRuleWord(r *collector.ResourceRow) string {
	return ruleWord(r.HasFlow, r.HasParam, r.RulesUnknown)
}

// newBreakerMarks notes the inferred states of a snapshot's breakers.
func newBreakerMarks(states []collector.BreakerState) breakerMarks {
	var m breakerMarks
	for i := range states {
		b := &states[i]
		if b.Provenance != collector.ProvenanceInferred || b.State < core.Closed || b.State > core.Open {
			continue
		}
		if m.inferred == nil {
			m.inferred = map[rowKey]uint8{}
		}
		m.inferred[rowKey{b.App, b.Resource}] |= 1 << b.State
	}
	return m
}

// note notes what a row shows that takes room.
func (m *breakerMarks) note(r *collector.ResourceRow) {
	switch {
	case r.Instances == 0:
	case r.HasBreaker:
		m.unknown = m.unknown || r.Breakers.Unknown > 0
	default:
		m.word = max(m.word, width(rowRuleWord(r)))
	}
}

// sameLayout reports whether m and o take the same room.
func (m breakerMarks) sameLayout(o breakerMarks) bool {
	return m.unknown == o.unknown && m.word == o.word && (len(m.inferred) > 0) == (len(o.inferred) > 0)
}

// slots is the width of a state's count, and of the unknown count (0
// when no row has one).
func (t resourceTable) slots() (state, unknown int) {
	state = 1 + t.digits
	if len(t.marks.inferred) > 0 {
		state++
	}
	if t.marks.unknown {
		unknown = 1 + t.digits
	}
	return state, unknown
}

// breakersWidth is the room the counts take.
func (t resourceTable) breakersWidth() int {
	state, unknown := t.slots()
	w := 3*state + 2
	if unknown > 0 {
		w += 1 + unknown
	}
	return max(w, t.marks.word)
}

// breakers renders the instance counts per state, "✖3 ◐1 ●4", with a
// blank slot for a zero count so the columns line up; instances whose
// source cannot tell their state count as "?2", never as CLOSED, and a
// count with states inferred from counts is marked "✖1~".
func (t resourceTable) breakers(b *strings.Builder, r *collector.ResourceRow, w int, p func(paint) paint) {
	switch {
	case r.Instances == 0:
		padRight(b, "gone", w) // every instance left: no state to count
		return
	case !r.HasBreaker:
		padRight(b, rowRuleWord(r), w)
		return
	}
	slot, unknown := t.slots()
	inferred := t.marks.inferred[rowKey{r.App, r.Resource}]
	used := 0
	write := func(g string, count int, pt paint, mark bool, slot int) {
		if used > 0 {
			b.WriteByte(' ')
			used++
		}
		used += slot
		if count == 0 {
			b.WriteString(strings.Repeat(" ", slot))
			return
		}
		s := g + strconv.Itoa(count)
		if mark {
			s += markInferred
		}
		p(pt).write(b, s)
		b.WriteString(strings.Repeat(" ", slot-width(s)))
	}
	st := t.st
	write(glyphOpen, r.Breakers.Open, st.open, inferred&(1<<core.Open) != 0, slot)
	write(glyphHalf, r.Breakers.HalfOpen, st.half, inferred&(1<<core.HalfOpen) != 0, slot)
	write(glyphClosed, r.Breakers.Closed, st.closed, inferred&(1<<core.Closed) != 0, slot)
	if unknown > 0 {
		write(glyphUnknown, r.Breakers.Unknown, st.dim, false, unknown)
	}
	b.WriteString(strings.Repeat(" ", max(0, w-used)))
}

// noData is what a cell shows for a value that was not measured.
const noData = "–"

// ifCompleted is s when the row's ratios and latency were measured: some
// call completed in the rate window. With none (a breaker OPEN, or no
// traffic) they are not 0 but unknown.
func ifCompleted(r *collector.ResourceRow, s string) string {
	if r.Completed == 0 {
		return noData
	}
	return s
}

// latencyCell is the P99 column's cell: the p99, or where the source
// reports averages only (no RT histogram: Java Sentinel, metric logs) the
// average RT, said so: "avg 35ms"; "–" when nothing completed or the
// source reads no response times (Prometheus).
func latencyCell(r *collector.ResourceRow) string {
	switch {
	case r.Completed == 0, r.RTUnknown:
		return noData
	case r.HasP99:
		return fmtMs(r.P99Ms)
	}
	return "avg " + fmtMs(int64(math.Round(r.AvgRtMs)))
}

func digits(n int) int {
	d := 1
	for n >= 10 {
		n /= 10
		d++
	}
	return d
}
