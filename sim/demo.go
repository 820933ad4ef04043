package sim

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/sentinel-top/sentinel-top/agent"
	"github.com/sentinel-top/sentinel-top/core"
)

// demoTick is how often the demo moves its virtual clock to catch up with
// real time (times the speed).
const demoTick = 10 * time.Millisecond

// Demo is a scenario played in real time: every instance's agent serves its
// stream on its own 127.0.0.1 port and ships its buckets itself, while the
// virtual clock follows the wall clock (times the speed). Collectors dial
// its Targets as they would real services.
type Demo struct {
	s       *Scenario
	f       *fleet
	speed   float64
	began   time.Time
	lns     []net.Listener
	targets []string

	cancel  context.CancelFunc
	done    chan struct{}
	serving sync.WaitGroup
	err     error
}

// StartDemo starts playing s (DemoScenario when nil) in real time, speed
// times faster than the wall clock (1 when speed <= 0), from the wall
// clock's now. It returns once every instance that starts at once is
// serving. The demo runs until Close or until ctx is done; Duration is
// ignored, and a scenario with Loop repeats forever.
func StartDemo(ctx context.Context, s *Scenario, speed float64) (*Demo, error) {
	if s == nil {
		s = DemoScenario()
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if s.Script != nil {
		return nil, scenarioErr(s, "a scripted recording cannot be played live")
	}
	for _, in := range s.Instances {
		if len(in.Restarts) > 0 {
			return nil, scenarioErr(s, "instance %q: restarts are played in recordings only", in.Name)
		}
	}
	if speed <= 0 {
		speed = 1
	}
	start := time.Now().Truncate(time.Millisecond)
	d := &Demo{s: s, f: newFleet(s, start, false), speed: speed, done: make(chan struct{})}
	for range s.Instances {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			for _, l := range d.lns {
				l.Close()
			}
			return nil, fmt.Errorf("sim: demo: %w", err)
		}
		d.lns = append(d.lns, ln)
		d.targets = append(d.targets, "ws://"+ln.Addr().String()+agent.StreamPath)
	}
	d.f.onStart = func(in *instance) error {
		ln := d.lns[in.idx]
		d.serving.Add(1)
		go func() {
			defer d.serving.Done()
			_ = in.agent.Serve(ln) // returns when the agent closes
		}()
		return nil
	}
	if err := d.f.runUntil(0); err != nil {
		d.shutdown()
		return nil, err
	}
	ctx, d.cancel = context.WithCancel(ctx)
	d.began = time.Now()
	go d.run(ctx)
	return d, nil
}

// Targets returns the instances' stream URLs (ws://127.0.0.1:PORT/sentinel/stream),
// in the scenario's instance order.
func (d *Demo) Targets() []string { return append([]string(nil), d.targets...) }

// Scenario returns the scenario being played.
func (d *Demo) Scenario() *Scenario { return d.s }

// Now returns the demo's virtual time.
func (d *Demo) Now() time.Time { return d.f.clock.Now() }

// Clock returns the demo's virtual clock; it only moves by itself.
func (d *Demo) Clock() core.Clock { return d.f.clock }

// Done is closed once the demo has stopped, by Close or its context.
func (d *Demo) Done() <-chan struct{} { return d.done }

// Close stops the demo: every agent says bye and closes its connections,
// and every goroutine of the demo has ended when Close returns. It returns
// what stopped the simulation early, if anything did.
func (d *Demo) Close() error {
	d.cancel()
	<-d.done
	return d.err
}

func (d *Demo) run(ctx context.Context) {
	defer close(d.done)
	defer d.shutdown()
	tick := time.NewTicker(demoTick)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			target := int64(float64(time.Since(d.began)) * d.speed)
			if err := d.f.runUntil(target); err != nil {
				d.err = err
				return
			}
		}
	}
}

// shutdown closes every agent (bye, connections, shipping) and every
// listener no agent took, and waits for the servers to return.
func (d *Demo) shutdown() {
	for _, in := range d.f.insts {
		if in.up {
			in.agent.Close()
			in.up = false
			in.done = true
		} else if !in.done && in.agent == nil {
			d.lns[in.idx].Close()
		}
	}
	d.serving.Wait()
}

const (
	demoStockRes = "GET:http://inventory-service/api/stock"
)

// DemoScenario is the fleet of --demo: twelve instances of five apps where,
// within every two minutes, a healthy price service is tripped by network
// jitter, a slow database makes a breaker saw, four instances probe a
// recovering inventory service together, a rule push reaches half the
// gateways, two apps share a resource name, and a per-customer limit
// throttles a VIP customer for a minute. It loops every two minutes.
func DemoScenario() *Scenario {
	gateways := fleetOf("gateway", 4, func(i int, in *Instance) {
		in.Calls = []Call{
			{Resource: priceRes, Downstream: "price-service", Traffic: Diurnal{Mean: 10, Swing: 0.2, Period: 2 * mn, Phase: time.Duration(i) * 30 * sec}},
			{Resource: orderRes, Downstream: "order-service", Traffic: Bursts{Base: 120, Peak: 260, Every: 30 * sec, Length: 5 * sec, Offset: time.Duration(i) * 3 * sec}},
			{Resource: riskRes, Downstream: "risk-service", Traffic: Constant(30)},
		}
		breakers := []core.BreakerRule{slowRule(priceRes, 200, 0.5, 5, 1000, 2, 10000), soundSlow(riskRes, 1000)}
		in.Rules = []RuleChange{{At: 0, Breakers: breakers, Flows: []core.FlowRule{qpsRule(orderRes, 1000)}}}
		lowered := RuleChange{At: 30 * sec, Breakers: breakers, Flows: []core.FlowRule{qpsRule(orderRes, 200)}}
		if i >= 2 {
			lowered.At = 100 * sec // the push reaches these only on the second try
		}
		in.Rules = append(in.Rules, lowered)
	})
	orders := fleetOf("order", 2, func(i int, in *Instance) {
		in.Calls = []Call{{Resource: memberRes, Downstream: "member-service", Traffic: Diurnal{Mean: 50, Swing: 0.1, Period: 2 * mn, Phase: time.Duration(i) * mn}}}
		in.Rules = always([]core.BreakerRule{slowRule(memberRes, 500, 0.5, 20, 1000, 2, 10000)}, nil)
	})
	carts := fleetOf("cart", 4, func(i int, in *Instance) {
		in.Calls = []Call{{Resource: demoStockRes, Downstream: "inventory-service", Timeout: 2 * sec,
			Traffic: Diurnal{Mean: 40, Swing: 0.1, Period: 2 * mn, Phase: time.Duration(i) * 30 * sec}}}
		in.Rules = always([]core.BreakerRule{slowRule(demoStockRes, 500, 0.5, 20, 1000, 2, 10000)}, nil)
	})
	risks := fleetOf("risk", 1, func(i int, in *Instance) {
		in.Calls = []Call{{Resource: riskRes, Downstream: "risk-vendor", Traffic: Constant(120)}}
		in.Rules = always([]core.BreakerRule{soundSlow(riskRes, 800)}, nil)
	})
	// vip-throttled, smaller: 300 customers at 1 req/s, and the VIP at 250
	// req/s from 0:10 to 1:10 against the per-customer limit of 200.
	queries := fleetOf("order-query", 1, func(i int, in *Instance) {
		in.Calls = vipCalls(customers(300), 10*sec)
		in.Calls[1].Traffic = Steps{{At: 10 * sec, QPS: 250}, {At: 70 * sec, QPS: 0}}
		in.Rules = []RuleChange{{Params: []core.HotParamRule{vipRule()}}}
	})
	insts := append(append(append(append(gateways, orders...), carts...), risks...), queries...)
	return &Scenario{
		Name:  "demo",
		Title: "sentinel-top demo fleet",
		Description: "Four gateways, two order instances, four cart instances and a risk service. Every two minutes: " +
			"network jitter trips the gateways' breaker on a healthy price service; the member service's database " +
			"is slow from 0:15 to 1:25 and the order breakers saw; the inventory service hangs from 0:20 to 1:10 " +
			"and the four carts probe it together; a lowered createOrder limit reaches two gateways at 0:30 and " +
			"the other two at 1:40; gateways and the risk service both name a resource risk-check; from 0:10 to 1:10 " +
			"a VIP customer sends 250 req/s to order-query, whose per-customer limit of 200 throttles it among 300 " +
			"customers at 1 req/s.",
		Loop: 2 * mn,
		Seed: 42,
		Downstreams: []*Downstream{
			{Name: "price-service", Latency: LogNormal{Median: 22 * ms, P99: 68 * ms},
				Jitter: &Jitter{Every: 7 * sec, Length: Uniform{800 * ms, 1800 * ms}, Share: 0.6, Latency: Uniform{300 * ms, 400 * ms}}},
			{Name: "order-service", Latency: LogNormal{Median: 30 * ms, P99: 90 * ms}},
			{Name: "order-db", Latency: LogNormal{Median: 12 * ms, P99: 45 * ms}},
			{Name: "risk-service", Latency: LogNormal{Median: 45 * ms, P99: 140 * ms}},
			{Name: "risk-vendor", Latency: LogNormal{Median: 30 * ms, P99: 110 * ms}},
			{Name: "member-service", Latency: LogNormal{Median: 18 * ms, P99: 70 * ms},
				Faults: []Fault{{From: 15 * sec, To: 85 * sec, Latency: Uniform{2000 * ms, 2600 * ms}, Recovery: 2 * sec}}},
			{Name: "inventory-service", Latency: LogNormal{Median: 25 * ms, P99: 90 * ms},
				Faults: []Fault{{From: 20 * sec, To: 70 * sec, Latency: Uniform{3 * sec, 5 * sec}, Recovery: 15 * sec}}},
		},
		Instances: insts,
	}
}
