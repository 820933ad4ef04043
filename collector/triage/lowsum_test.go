package triage

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/sentinel-top/sentinel-top/collector/fleet"
)

// The low-confidence sum kept sorted as trips settle and wait names the
// instances, and reads the series (in any order), that sorting every one
// of them afresh does: trips settling on instances new and known, pending trips on
// instances settled or not, taken again, and instances of the same name
// (a restart) in any order.
func TestLowSumKeptSortedIsSortedAfresh(t *testing.T) {
	const res = "GET:/x"
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 50 {
		var insts []*instState
		for i := range 2 + rng.IntN(60) {
			in := &instState{id: &fleet.Instance{Name: "i-" + strconv.Itoa(rng.IntN(40))}, seq: i, series: map[string]*series{}}
			if rng.IntN(8) > 0 { // some have no series of the resource
				in.series[res] = &series{inst: in, resource: res}
			}
			insts = append(insts, in)
		}
		var l lowConf
		var breakers []*breaker
		for _, in := range insts {
			breakers = append(breakers, &breaker{s: &series{inst: in, resource: res}})
		}
		for step := range 300 {
			b := breakers[rng.IntN(len(breakers))]
			switch rng.IntN(3) {
			case 0: // a trip waits for its probe
				if l.find(b) < 0 {
					l.pending = append(l.pending, lowTrip{b: b, at: int64(step)})
					l.gen++
				}
			case 1: // settles
				if p, ok := l.take(b); ok {
					l.settle(p)
				}
			default: // dropped
				l.take(b)
			}
			if rng.IntN(4) > 0 {
				continue
			}
			m := l.sum(res)
			wantNames, wantSeries := sumAfresh(&l, res)
			// The series in any order: their QPS's median is all that is read.
			bySeries := func(a, b *series) int { return compareInsts(a.inst, b.inst) }
			gotSeries := slices.SortedFunc(slices.Values(m.series), bySeries)
			if !slices.Equal(m.names, wantNames) || !slices.Equal(gotSeries, slices.SortedFunc(slices.Values(wantSeries), bySeries)) {
				t.Fatalf("round %d step %d: names %v series %d, sorted afresh %v series %d", round, step, m.names, len(m.series), wantNames, len(wantSeries))
			}
		}
	}
}

// sumAfresh is the names and series of the settled and pending trips'
// instances, sorted together.
func sumAfresh(l *lowConf, res string) ([]string, []*series) {
	var insts []*instState
	for in := range l.insts {
		insts = append(insts, in)
	}
	for i := range l.pending {
		insts = append(insts, l.pending[i].b.s.inst)
	}
	insts = sortInsts(insts)
	var ss []*series
	for _, in := range insts {
		if s := in.series[res]; s != nil {
			ss = append(ss, s)
		}
	}
	return names(insts), ss
}
