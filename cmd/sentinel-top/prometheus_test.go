package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
	"github.com/sentinel-top/sentinel-top/fixtures"
	"github.com/sentinel-top/sentinel-top/internal/promapi"
	"github.com/sentinel-top/sentinel-top/sim"
)

// promScenario is what both `serve` processes of the Prometheus test play:
// live as a demo, and replayed from its recorded fixture.
const promScenario = "sawtooth-db-slow"

// TestPrometheusScrapesServe runs a real Prometheus server against two
// `sentinel-top serve` processes on loopback, a live demo fleet and a replay
// of the same scenario's fixture, and checks with PromQL over its HTTP API
// that what Prometheus stored is exactly what the input holds: for the demo,
// the instances, targets, apps, resources and breakers its scenario defines,
// which of them opened, blocked and were found; for the replay, every
// counter equal to the sums over the fixture's messages. Prometheus also
// evaluates deploy/prometheus's alert rules, which the demo must make
// active where its outage is and nowhere else (checkAlertRules), and every
// query of deploy/grafana's dashboard must return data (checkDashboard).
// It is skipped when no prometheus binary is installed, unless
// SENTINEL_TOP_REQUIRE_PROMETHEUS is set (CI installs it).
func TestPrometheusScrapesServe(t *testing.T) {
	t.Parallel()     // it waits on scrapes, as TestPrometheusSourceReadsSentinelGolang does
	prometheusBin(t) // before the expectations are worked out
	sc, ok := sim.Lookup(promScenario)
	if !ok {
		t.Fatalf("no scenario %s", promScenario)
	}
	demo := demoExpectation(t, sc)
	replay := fixtureExpectation(t, promScenario)

	demoAddr, replayAddr := freePort(t), freePort(t)
	for replayAddr == demoAddr {
		replayAddr = freePort(t)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// Prometheus first, ready before anything it scrapes starts, so that it
	// sees the demo's outage from its beginning whatever its start-up takes.
	// honor_labels keeps sentinel-top's own instance label.
	// It evaluates deploy/prometheus's alert rules every second as it
	// scrapes (checkAlertRules).
	rulesFile, err := filepath.Abs(alertRulesFile)
	if err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files:\n  - %q\nscrape_configs:\n", rulesFile)
	for _, job := range [][2]string{{"demo", demoAddr}, {"replay", replayAddr}} {
		cfg += fmt.Sprintf("  - job_name: %s\n    honor_labels: true\n    static_configs:\n      - targets: [%q]\n", job[0], job[1])
	}
	began := time.Now()
	prom := startPrometheus(t, cfg, demoAddr, replayAddr)
	promAddr, promFailed := prom.addr, prom.failed
	client := &http.Client{Timeout: 10 * time.Second}

	served := make(chan int, 2)
	go func() {
		served <- run(ctx, []string{"serve", "--demo", promScenario, "--speed", "20", "--listen", demoAddr}, nil, io.Discard, io.Discard)
	}()
	go func() {
		served <- run(ctx, []string{"serve", "--replay", promScenario, "--speed", "30", "--listen", replayAddr}, nil, io.Discard, io.Discard)
	}()
	defer func() { cancel(); <-served; <-served }()

	query := func(q string) ([]promSample, error) {
		return queryVector(promapi.Client{HTTP: client, Base: "http://" + promAddr}, q)
	}
	// byLabels runs q and gives its samples as "label=value,..." -> value,
	// keyed by the labels named (others, such as job, left out).
	byLabels := func(q string, labels ...string) (map[string]float64, error) {
		samples, err := query(q)
		if err != nil {
			return nil, err
		}
		out := map[string]float64{}
		for _, s := range samples {
			k := s.key(labels...)
			if _, dup := out[k]; dup {
				return nil, fmt.Errorf("%s: two samples for %s", q, k)
			}
			out[k] = s.Value
		}
		return out, nil
	}

	// Each check is polled until it holds; whatever it last saw is reported
	// if it never does. A check's wanted values are exact: a count that is
	// too high never matches, as one that is too low.
	deadline := time.Now().Add(90 * time.Second)
	check := func(name string, f func() (got, want string, err error)) {
		t.Helper()
		var got, want string
		var err error
		for {
			got, want, err = f()
			if err == nil && got == want {
				t.Logf("%s: %s", name, got)
				return
			}
			if msg := promFailed(); msg != "" {
				t.Fatalf("%s: %s", name, msg)
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s:\n got %s (error %v)\nwant %s", name, got, err, want)
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
	exact := func(want map[string]float64, q string, labels ...string) func() (string, string, error) {
		return func() (string, string, error) {
			got, err := byLabels(q, labels...)
			return fmtSamples(got), fmtSamples(want), err
		}
	}

	// The live demo: what its scenario defines.
	check("demo: every instance up", exact(map[string]float64{"": float64(len(demo.instances))},
		`sentinel_top_instances{job="demo"}`))
	check("demo: every target up", exact(map[string]float64{"state=connecting": 0, "state=down": 0, "state=up": float64(len(demo.instances))},
		`sentinel_top_targets{job="demo"}`, "state"))
	check("demo: every app and resource passes requests", exact(each(demo.resources, 1),
		`sentinel_top_resource_pass_total{job="demo"} > bool 0`, "app", "resource"))
	check("demo: one state per breaker", exact(each(demo.breakers, 1),
		`sum by (app, instance, resource) (sentinel_top_breaker_state{job="demo"})`, "app", "instance", "resource"))
	check("demo: three states per breaker", exact(each(demo.breakers, 3),
		`count by (app, instance, resource) (sentinel_top_breaker_state{job="demo"})`, "app", "instance", "resource"))
	check("demo: the faulty downstream's breakers open on every instance, no other", exact(each(demo.opened, 1),
		`max_over_time(sentinel_top_breaker_state{job="demo",state="OPEN"}[10m]) == 1`, "app", "instance", "resource"))
	check("demo: only the faulty downstream's calls are blocked", exact(demo.blocked,
		`sentinel_top_resource_block_total{job="demo"} > bool 0`, "app", "resource"))
	check("demo: the sawtooth is found, once", exact(map[string]float64{"": 1},
		`max_over_time(sum(sentinel_top_findings{job="demo",kind="sawtooth"})[10m:1s])`))
	// Once the downstream is back and every breaker CLOSED again: every trip
	// ended in a close, every half-open in a probe, and the findings above
	// info are those the scenario expects.
	check("demo: every breaker closed after the outage", exact(each(demo.breakers, 1),
		`sentinel_top_breaker_state{job="demo",state="CLOSED"}`, "app", "instance", "resource"))
	check("demo: transitions of a sawtooth that ended", func() (string, string, error) {
		got, err := byLabels(`sentinel_top_breaker_transitions_total{job="demo"}`, "app", "resource", "from", "to")
		if err != nil {
			return "", "", err
		}
		var keys []string
		ok := true
		for _, ar := range demo.trippedResources {
			n := func(from, to string) float64 {
				return got["app="+ar[0]+",resource="+ar[1]+",from="+from+",to="+to]
			}
			ok = ok && n("HALF_OPEN", "OPEN") >= float64(3*len(demo.instances))
			ok = ok && n("CLOSED", "OPEN") == n("HALF_OPEN", "CLOSED")
			ok = ok && n("OPEN", "HALF_OPEN") == n("HALF_OPEN", "OPEN")+n("HALF_OPEN", "CLOSED")
			for _, ft := range [][2]string{{"CLOSED", "OPEN"}, {"OPEN", "HALF_OPEN"}, {"HALF_OPEN", "OPEN"}, {"HALF_OPEN", "CLOSED"}} {
				keys = append(keys, "app="+ar[0]+",resource="+ar[1]+",from="+ft[0]+",to="+ft[1])
			}
		}
		slices.Sort(keys)
		want := strings.Join(keys, " ")
		var gotKeys []string
		for k := range got {
			gotKeys = append(gotKeys, k)
		}
		slices.Sort(gotKeys)
		gotText := strings.Join(gotKeys, " ")
		if gotText == want && !ok {
			gotText += fmt.Sprintf(" (counts do not add up, or fewer than 3 failed probes per instance: %s)", fmtSamples(got))
		}
		return gotText, want, nil
	})
	check("demo: findings above info", exact(demo.findings,
		`sentinel_top_findings{job="demo",severity!="info"} > 0`, "kind", "severity"))

	// The replay: once it has played, every counter is the fixture's sum.
	check("replay: messages", exact(map[string]float64{"": replay.messages}, `sentinel_top_messages_total{job="replay"}`))
	check("replay: live instances at the end", exact(map[string]float64{"": float64(replay.instances)}, `sentinel_top_instances{job="replay"}`))
	check("replay: every instance was live", exact(map[string]float64{"": float64(replay.everLive)},
		`max_over_time(sentinel_top_instances{job="replay"}[10m])`))
	check("replay: three states per breaker while it played", exact(each(replay.breakers, 3),
		`count by (app, instance, resource) (max_over_time(sentinel_top_breaker_state{job="replay"}[10m]))`, "app", "instance", "resource"))
	for _, c := range []struct{ metric, field string }{
		{"pass", "pass"}, {"block", "block"}, {"complete", "complete"}, {"error", "error"}, {"slow", "slow"},
	} {
		check("replay: "+c.metric, exact(replay.counts[c.field],
			`sentinel_top_resource_`+c.metric+`_total{job="replay"}`, "app", "resource"))
	}
	check("replay: transitions", exact(replay.transitions,
		`sentinel_top_breaker_transitions_total{job="replay"}`, "app", "resource", "from", "to"))
	check("replay: breaker states of the instances still there", exact(replay.states,
		`sentinel_top_breaker_state{job="replay"} == 1`, "app", "instance", "resource", "state"))
	check("replay: findings above info", exact(replay.findings,
		`sentinel_top_findings{job="replay",severity!="info"} > 0`, "kind", "severity"))

	// What deploy/ ships, over what Prometheus holds now: the alert rules
	// and the Grafana dashboard's every query.
	api := promapi.Client{HTTP: client, Base: "http://" + promAddr}
	checkAlertRules(t, api, demo)
	checkDashboard(t, api, began)
}

// promSample is one element of an instant vector.
type promSample struct {
	Labels map[string]string
	Value  float64
}

// key is "l1=v1,l2=v2" over the labels named, in their order.
func (s promSample) key(labels ...string) string {
	parts := make([]string, 0, len(labels))
	for _, l := range labels {
		parts = append(parts, l+"="+s.Labels[l])
	}
	return strings.Join(parts, ",")
}

func fmtSamples(m map[string]float64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var sb strings.Builder
	sb.WriteString("{")
	for i, k := range keys {
		if i > 0 {
			sb.WriteString(" ")
		}
		fmt.Fprintf(&sb, "%s: %g", k, m[k])
	}
	sb.WriteString("}")
	return sb.String()
}

// each maps every key to v.
func each(keys []string, v float64) map[string]float64 {
	out := map[string]float64{}
	for _, k := range keys {
		out[k] = v
	}
	return out
}

// demoWant is what a live demo of a scenario must show, from its definition.
type demoWant struct {
	instances []string
	// resources: "app=A,resource=R" of every call; breakers and opened:
	// "app=A,instance=I,resource=R" of every breaker, and of those that call
	// a downstream with a fault.
	resources, breakers, opened []string
	trippedResources            [][2]string // app, resource
	blocked                     map[string]float64
	findings                    map[string]float64 // "kind=K,severity=S" -> count, above info
}

func demoExpectation(t *testing.T, sc *sim.Scenario) demoWant {
	t.Helper()
	faulty := map[string]bool{}
	for _, d := range sc.Downstreams {
		faulty[d.Name] = len(d.Faults) > 0
	}
	w := demoWant{blocked: map[string]float64{}, findings: map[string]float64{}}
	seen := map[string]bool{}
	for _, in := range sc.Instances {
		if in.Start != 0 || in.Stop != 0 || len(in.Rules) != 1 || in.Rules[0].At != 0 {
			t.Fatalf("%s: the test expects instances running throughout with one rule set", in.Name)
		}
		w.instances = append(w.instances, in.Name)
		guarded := map[string]bool{}
		for _, r := range in.Rules[0].Breakers {
			guarded[r.Resource] = true
		}
		for _, c := range in.Calls {
			ar := "app=" + in.App + ",resource=" + c.Resource
			if !seen[ar] {
				seen[ar] = true
				w.resources = append(w.resources, ar)
				w.blocked[ar] = 0
				if faulty[c.Downstream] && guarded[c.Resource] {
					w.trippedResources = append(w.trippedResources, [2]string{in.App, c.Resource})
				}
			}
			if !guarded[c.Resource] {
				continue
			}
			b := "app=" + in.App + ",instance=" + in.Name + ",resource=" + c.Resource
			w.breakers = append(w.breakers, b)
			if faulty[c.Downstream] {
				w.opened = append(w.opened, b)
				w.blocked[ar] = 1
			}
		}
	}
	for _, e := range sc.Expect {
		if e.Severity != "info" {
			w.findings["kind="+e.Kind+",severity="+e.Severity]++
		}
	}
	if len(w.opened) == 0 || len(w.opened) == len(w.breakers) {
		t.Fatalf("the scenario should open some breakers and not others: %v of %v", w.opened, w.breakers)
	}
	return w
}

// fixtureWant is what a replay of a fixture must show once played, summed
// over its messages.
type fixtureWant struct {
	messages    float64
	instances   int                           // live at the end: did not say bye
	everLive    int                           // every instance of the fixture
	breakers    []string                      // "app=A,instance=I,resource=R" of every instance x resource with a breaker rule
	counts      map[string]map[string]float64 // field -> "app=A,resource=R" -> sum
	transitions map[string]float64            // "app=A,resource=R,from=F,to=T" -> count
	states      map[string]float64            // "app=A,instance=I,resource=R,state=S" -> 1
	findings    map[string]float64
}

func fixtureExpectation(t *testing.T, name string) fixtureWant {
	t.Helper()
	rc, err := fixtures.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	w := fixtureWant{counts: map[string]map[string]float64{}, transitions: map[string]float64{},
		states: map[string]float64{}, findings: map[string]float64{}}
	for _, f := range []string{"pass", "block", "complete", "error", "slow"} {
		w.counts[f] = map[string]float64{}
	}
	app := map[string]string{}
	bye := map[string]bool{}
	guarded := map[string]map[string]bool{}    // instance -> resources with a breaker
	last := map[string]map[string]core.State{} // instance -> resource/ruleId -> state
	resOf := map[string]string{}
	type bucketKey struct {
		inst, res string
		start     int64
	}
	seen := map[bucketKey]bool{}
	r := wire.NewReader(rc, name)
	for m, err := range r.All() {
		if err != nil {
			t.Fatal(err)
		}
		if m.Kind() == wire.KindMeta {
			continue
		}
		w.messages++
		inst := m.Head().Instance
		if _, ok := app[inst]; !ok {
			app[inst] = inst
		}
		switch m := m.(type) {
		case *wire.Hello:
			if m.App != "" {
				app[inst] = m.App
			}
		case *wire.Rules:
			guarded[inst] = map[string]bool{}
			for _, b := range m.Breakers {
				guarded[inst][b.Resource] = true
			}
		case *wire.Buckets:
			for _, it := range m.Items {
				k := bucketKey{inst, it.Resource, it.Start}
				if seen[k] {
					continue
				}
				seen[k] = true
				ar := "app=" + app[inst] + ",resource=" + it.Resource
				for f, v := range map[string]int64{"pass": it.Pass, "block": it.Block, "complete": it.Complete, "error": it.Error, "slow": it.Slow} {
					w.counts[f][ar] += float64(v)
				}
			}
		case *wire.State:
			w.transitions["app="+app[inst]+",resource="+m.Resource+",from="+m.From.String()+",to="+m.To.String()]++
			if last[inst] == nil {
				last[inst] = map[string]core.State{}
			}
			last[inst][m.Resource+"\x00"+m.RuleID] = m.To
			resOf[m.Resource+"\x00"+m.RuleID] = m.Resource
		case *wire.Bye:
			bye[inst] = true
		}
	}
	// Live instances are those that did not say bye (the fixtures' others
	// report until the end): the same rule for the instance count and the
	// breaker states below.
	for inst := range app {
		if !bye[inst] {
			w.instances++
		}
	}
	w.everLive = len(app)
	for inst, res := range guarded {
		for resource := range res {
			w.breakers = append(w.breakers, "app="+app[inst]+",instance="+inst+",resource="+resource)
		}
	}
	// A breaker's state is the worst of its rules' last states; instances
	// that said bye are gone and show none.
	for inst, res := range guarded {
		if bye[inst] {
			continue
		}
		for resource := range res {
			worst := core.Closed
			for k, st := range last[inst] {
				if resOf[k] == resource && (st == core.Open || (st == core.HalfOpen && worst == core.Closed)) {
					worst = st
				}
			}
			w.states["app="+app[inst]+",instance="+inst+",resource="+resource+",state="+worst.String()] = 1
		}
	}
	want, err := fixtures.Expected(name)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range want {
		if e.Severity != "info" {
			w.findings["kind="+e.Kind+",severity="+e.Severity]++
		}
	}
	if w.messages == 0 || len(w.transitions) == 0 || len(w.counts["pass"]) == 0 {
		t.Fatalf("%s: nothing to check: %+v", name, w)
	}
	return w
}
