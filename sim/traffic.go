package sim

import (
	"math"
	"time"
)

// Traffic is an arrival rate that may change with time: calls arrive as a
// Poisson process whose rate, read every quarter of a second at most, is
// Rate(at) calls per second (at is the time since the scenario's start, or
// within the loop when the scenario loops).
type Traffic interface {
	Rate(at time.Duration) float64
}

// Constant is a steady rate, in calls per second.
type Constant float64

// Rate returns the constant rate.
func (c Constant) Rate(time.Duration) float64 { return float64(c) }

// Diurnal swings around Mean like a day's traffic compressed into Period:
// Mean * (1 + Swing * sin(2π (at + Phase) / Period)). Swing is a fraction
// (0.5: from half to one and a half times the mean).
type Diurnal struct {
	Mean   float64
	Swing  float64
	Period time.Duration
	Phase  time.Duration
}

// Rate returns the rate at at.
func (d Diurnal) Rate(at time.Duration) float64 {
	if d.Period <= 0 {
		return d.Mean
	}
	x := 2 * math.Pi * float64(at+d.Phase) / float64(d.Period)
	return max(d.Mean*(1+d.Swing*math.Sin(x)), 0)
}

// Bursts is Base traffic with Peak for Length every Every, the first burst
// starting at Offset.
type Bursts struct {
	Base, Peak    float64
	Every, Length time.Duration
	Offset        time.Duration
}

// Rate returns Peak inside a burst, Base outside.
func (b Bursts) Rate(at time.Duration) float64 {
	if b.Every <= 0 || at < b.Offset {
		return b.Base
	}
	if (at-b.Offset)%b.Every < b.Length {
		return b.Peak
	}
	return b.Base
}

// Step is a rate that holds from At until the next step.
type Step struct {
	At  time.Duration
	QPS float64
}

// Steps is a piecewise-constant rate: each step's QPS from its At on, in
// order; 0 before the first.
type Steps []Step

// Rate returns the QPS of the last step at or before at.
func (s Steps) Rate(at time.Duration) float64 {
	r := 0.0
	for _, st := range s {
		if st.At > at {
			break
		}
		r = st.QPS
	}
	return r
}

// Sum adds rates.
type Sum []Traffic

// Rate returns the sum of the rates.
func (s Sum) Rate(at time.Duration) float64 {
	r := 0.0
	for _, t := range s {
		r += t.Rate(at)
	}
	return r
}
