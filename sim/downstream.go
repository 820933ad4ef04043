package sim

import (
	"errors"
	"math"
	"math/rand/v2"
	"time"
)

// Dist is a distribution of response times.
type Dist interface {
	Sample(r *rand.Rand) time.Duration
}

// Fixed always takes the same time.
type Fixed time.Duration

// Sample returns the fixed duration.
func (f Fixed) Sample(*rand.Rand) time.Duration { return time.Duration(f) }

// Uniform is uniform over [Min, Max].
type Uniform struct{ Min, Max time.Duration }

// Sample returns a uniform duration.
func (u Uniform) Sample(r *rand.Rand) time.Duration {
	if u.Max <= u.Min {
		return u.Min
	}
	return u.Min + time.Duration(r.Int64N(int64(u.Max-u.Min)+1))
}

// LogNormal is the usual shape of a healthy service's response times,
// given by its median and its 99th percentile.
type LogNormal struct{ Median, P99 time.Duration }

// z99 is the standard normal's 99th percentile.
const z99 = 2.3263

// Sample returns a log-normal duration.
func (l LogNormal) Sample(r *rand.Rand) time.Duration {
	sigma := 0.0
	if l.P99 > l.Median && l.Median > 0 {
		sigma = math.Log(float64(l.P99)/float64(l.Median)) / z99
	}
	return time.Duration(float64(l.Median) * math.Exp(sigma*r.NormFloat64()))
}

// Downstream is a service the fleet calls, with its faults. Every instance
// calling it shares its state (in-flight calls, for Overload); connection
// pools and jitter are per calling instance.
type Downstream struct {
	Name string
	// Latency is the healthy response time. Default: Fixed(20 ms).
	Latency Dist
	// ErrorRate is the healthy share of calls that fail.
	ErrorRate float64
	// Pool, when set, models the caller's connection pool: a call that
	// finds no idle warm connection opens one and pays a handshake.
	Pool *Pool
	// Faults change what the downstream answers during their windows.
	Faults []Fault
	// Jitter, when set, adds short random episodes of network trouble.
	Jitter *Jitter
	// Overload, when set, makes calls slow and failing while the fleet
	// calls faster than the downstream can answer.
	Overload *Overload
}

// Pool is a caller's connection pool: cold connections and TLS handshakes.
type Pool struct {
	// Handshake is what opening a connection adds to a call.
	Handshake Dist
	// IdleTimeout closes a connection unused for that long. Default: 60 s.
	IdleTimeout time.Duration
}

// Fault is a window of trouble: between From and To, a Share of calls (all
// when 0) take Latency instead of the healthy response time (when set) and
// fail with probability ErrorRate. The share ramps up linearly over Onset
// from From, and back down to zero over Recovery after To: a recovery
// curve.
type Fault struct {
	From, To  time.Duration
	Onset     time.Duration
	Recovery  time.Duration
	Share     float64
	Latency   Dist
	ErrorRate float64
	// Instances limits the fault to these callers; empty: every caller.
	Instances []string
}

// share is the share of calls the fault affects at t.
func (f *Fault) share(t time.Duration) float64 {
	full := f.Share
	if full <= 0 {
		full = 1
	}
	switch {
	case t < f.From:
		return 0
	case t < f.From+f.Onset:
		return full * float64(t-f.From) / float64(f.Onset)
	case t < f.To:
		return full
	case t < f.To+f.Recovery:
		return full * (1 - float64(t-f.To)/float64(f.Recovery))
	}
	return 0
}

func (f *Fault) hits(instance string) bool {
	if len(f.Instances) == 0 {
		return true
	}
	for _, n := range f.Instances {
		if n == instance {
			return true
		}
	}
	return false
}

// Jitter is network trouble on the callers' side (a noisy neighbour pulling
// images, say): episodes of Length start at random, on average Every apart,
// independently on each calling instance; during an episode a Share of calls
// take Latency. Only between From and To (To 0: to the end).
type Jitter struct {
	Every     time.Duration
	Length    Dist
	Share     float64
	Latency   Dist
	From, To  time.Duration
	Instances []string
}

// Overload is a downstream's capacity: a call that starts when the whole
// fleet has started more than QPS calls within the last second takes
// Latency and fails with probability ErrorRate (a database whose connection
// pool is exhausted, say). It ends when the load drops.
type Overload struct {
	QPS       float64
	Latency   Dist
	ErrorRate float64
}

func (d *Downstream) validate() error {
	if d.ErrorRate < 0 || d.ErrorRate > 1 {
		return errors.New("error rate outside [0, 1]")
	}
	for i := range d.Faults {
		f := &d.Faults[i]
		if f.To < f.From || f.Share < 0 || f.Share > 1 || f.ErrorRate < 0 || f.ErrorRate > 1 || f.Onset < 0 || f.Recovery < 0 {
			return errors.New("a fault has a bad window, share or error rate")
		}
	}
	if j := d.Jitter; j != nil && (j.Every <= 0 || j.Length == nil || j.Latency == nil || j.Share < 0 || j.Share > 1) {
		return errors.New("jitter needs Every, Length, Latency and a share within [0, 1]")
	}
	if p := d.Pool; p != nil && p.Handshake == nil {
		return errors.New("pool without a handshake")
	}
	if o := d.Overload; o != nil && (o.QPS <= 0 || o.Latency == nil || o.ErrorRate < 0 || o.ErrorRate > 1) {
		return errors.New("overload needs a QPS, a latency and an error rate within [0, 1]")
	}
	return nil
}

// loadSlots split the last second of call starts, for Overload.
const (
	loadSlots  = 10
	loadSlotNs = int64(time.Second) / loadSlots
)

// downstream is a Downstream's shared state during a run.
type downstream struct {
	spec *Downstream
	// Call starts by slot of 100 ms, over the last second: slot[i] counts
	// those of the slot numbered at[i].
	slot [loadSlots]int
	at   [loadSlots]int64
}

// started counts a call starting at t (ns) and returns how many started
// within the second up to t, this one included.
func (d *downstream) started(t int64) int {
	n := t / loadSlotNs
	i := int(n % loadSlots)
	if d.at[i] != n {
		d.at[i], d.slot[i] = n, 0
	}
	d.slot[i]++
	total := 0
	for j := range d.slot {
		if n-d.at[j] < loadSlots {
			total += d.slot[j]
		}
	}
	return total
}

// conn is one pooled connection.
type conn struct {
	freeAt int64 // ns: busy until
}

// pool is one instance's connections to one downstream.
type pool struct {
	conns []conn
}

// acquire returns a connection idle at at (warm) or opens one (cold).
func (p *pool) acquire(at, idle int64) (i int, cold bool) {
	// Close what idled out, then take the connection free the longest.
	live := p.conns[:0]
	for _, c := range p.conns {
		if c.freeAt > at || at-c.freeAt <= idle {
			live = append(live, c)
		}
	}
	p.conns = live
	best := -1
	for i, c := range p.conns {
		if c.freeAt <= at && (best < 0 || c.freeAt < p.conns[best].freeAt) {
			best = i
		}
	}
	if best >= 0 {
		return best, false
	}
	p.conns = append(p.conns, conn{})
	return len(p.conns) - 1, true
}

// episodes generates one instance's jitter episodes, lazily and in order.
type episodes struct {
	rng        *rand.Rand
	start, end int64 // ns: the current or next episode
	started    bool
}

// in reports whether t falls in an episode. t must not decrease.
func (e *episodes) in(j *Jitter, t int64) bool {
	for !e.started || t >= e.end {
		gap := int64(e.rng.ExpFloat64() * float64(j.Every))
		from := e.end
		if !e.started {
			from = 0
			e.started = true
		}
		e.start = from + gap
		e.end = e.start + max(int64(j.Length.Sample(e.rng)), 1)
	}
	return t >= e.start
}
