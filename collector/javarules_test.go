package collector

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/collector/fleet"
	"github.com/sentinel-top/sentinel-top/collector/metriclog"
	"github.com/sentinel-top/sentinel-top/collector/source"
	"github.com/sentinel-top/sentinel-top/collector/triage"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/internal/racetest"
)

// Java targets: the rules they answer, and the seconds they write.

// TestJavaLateSecondsAreNotEmpty: Java writes a second's lines when its
// metric timer runs; under load that is over a second late, and a poll in
// between finds nothing new. The seconds not written yet are not read as
// seconds without traffic (the rates would read low), until they are over
// javaGrace late.
func TestJavaLateSecondsAreNotEmpty(t *testing.T) {
	clock := core.NewVirtualClock(time.UnixMilli(javaT0))
	line := func(sec int64) string { return fmt.Sprintf("%d|r|85|0|85|0|20|0|0|0", javaT0+sec*1000) }
	fake := &fakeJava{clock: clock}
	fake.add(line(-6), line(-5), line(-4), line(-3), line(-2)) // the second before now is not written yet
	c, _ := javaServe(t, clock, "app", fake)
	qps := func() float64 {
		rows := c.Publish().Rows
		if len(rows) != 1 {
			t.Fatalf("rows %+v", rows)
		}
		return rows[0].PassQPS
	}
	if got := qps(); got != 85 {
		t.Errorf("first poll: %.1f/s", got)
	}
	javaPolls(t, c, clock, 1) // the timer is late: nothing new
	if got := qps(); got != 85 {
		t.Errorf("a poll that found nothing new: %.1f/s, want 85 (a second not written is not a second without traffic)", got)
	}
	fake.add(line(-1), line(0))
	javaPolls(t, c, clock, 1)
	if got := qps(); got != 85 {
		t.Errorf("after the late seconds: %.1f/s", got)
	}
	// Nothing written for javaGrace: the seconds are still only late.
	javaPolls(t, c, clock, 2)
	if got := qps(); got != 85 {
		t.Errorf("within the grace: %.1f/s", got)
	}
	// Nothing written for longer: the second is empty.
	javaPolls(t, c, clock, 1)
	if got := qps(); got != 85*4.0/5 {
		t.Errorf("after the grace: %.1f/s, want %.1f", got, 85*4.0/5)
	}
	if w := strings.Join(warningTexts(c.Publish().Warnings), "\n"); strings.Contains(w, "clock of") {
		t.Errorf("a polled instance's data lag is not a clock skew: %q", w)
	}
}

// TestJavaLinesOfOneNameAreSummed: "x|y" and "x_y" both arrive as x_y
// lines of one second; Sentinel's dashboard adds them, and so does the
// poller, saying so once.
func TestJavaLinesOfOneNameAreSummed(t *testing.T) {
	clock := core.NewVirtualClock(time.UnixMilli(javaT0))
	fake := &fakeJava{clock: clock}
	fake.add("1764460828000|x_y|10|0|10|1|20|0|0|0", "1764460828000|x_y|5|2|4|0|40|0|0|0", "1764460828000|z|1|0|1|0|1|0|0|0",
		"1764460829000|x_y|3|0|3|0|5|0|0|0", "1764460829000|x_y|4|0|4|0|5|0|0|0")
	c, hosts := javaServe(t, clock, "app", fake)
	javaWaitFor(t, "totals", func() error {
		if got := javaTotals(c, hosts[0], "x_y"); got != "pass 22 block 2 complete 21 error 1 slow 0" {
			return fmt.Errorf("x_y: %s", got)
		}
		return nil
	})
	snap := c.Publish()
	if notices := warningsOf[Notice](snap.Warnings); len(notices) != 1 || notices[0] != (Notice{Kind: NoticeNameCollision, Instance: hosts[0], Resource: "x_y",
		At: 1764460828000, Count: 2}) {
		t.Fatalf("notices %+v", notices)
	}
	if _, _, dups := c.Counters(); dups != 0 {
		t.Errorf("%d duplicates", dups)
	}
}

// TestJavaRegexRules: a regex rule governs every resource of the app its
// pattern fully matches, on every instance that has it (whether that
// instance saw the resource or not), each listed with its pattern; a
// literal rule for a matched resource is another rule, and drift says so.
func TestJavaRegexRules(t *testing.T) {
	clock := core.NewVirtualClock(time.UnixMilli(javaT0))
	const regex = `[{"count":3.0,"grade":2,"limitApp":"default","minRequestAmount":5,"regex":true,"resource":"GET:/api/(a|b|c)","statIntervalMs":1000,"timeWindow":4}]`
	const flow = `[{"controlBehavior":0,"count":20.0,"grade":1,"limitApp":"default","regex":true,"resource":"GET:/api/.*","strategy":0}]`
	a := &fakeJava{clock: clock, degrade: regex, flow: flow}
	b := &fakeJava{clock: clock, degrade: regex, flow: flow}
	lit := &fakeJava{clock: clock, degrade: strings.Replace(strings.Replace(regex, `"regex":true`, `"regex":false`, 1), "(a|b|c)", "a", 1), flow: flow}
	for i, f := range []*fakeJava{a, b, lit} {
		f.add(fmt.Sprintf("1764460828000|GET:/api/a|%d|0|5|0|10|0|0|0", 5+i), "1764460828000|other|1|0|1|0|1|0|0|0")
	}
	a.add("1764460829000|GET:/api/b|4|0|4|0|10|0|0|0")
	c, hosts := javaServe(t, clock, "gw", a, b, lit)
	javaPolls(t, c, clock, 2)
	for _, h := range hosts[:2] {
		rules := func(res string) fleet.ResourceRules {
			c.mu.Lock()
			defer c.mu.Unlock()
			if rr := c.insts[h].Rules.Of(res); rr != nil {
				return *rr
			}
			return fleet.ResourceRules{}
		}
		br, fl := rules("GET:/api/b").Breakers, rules("GET:/api/b").Flows
		other := len(rules("other").Breakers)
		pattern := len(rules("GET:/api/(a|b|c)").Breakers) + len(rules("GET:/api/.*").Flows)
		if len(br) != 1 || br[0].Resource != "GET:/api/b" || br[0].Pattern != "GET:/api/(a|b|c)" || br[0].Strategy != core.ErrorCount ||
			len(fl) != 1 || fl[0].Pattern != "GET:/api/.*" || other != 0 || pattern != 0 {
			t.Errorf("%s: breakers %+v flows %+v (other: %d, under the pattern: %d)", h, br, fl, other, pattern)
		}
	}
	d := c.Detail("gw", "GET:/api/b", javaT0-60000, javaT0+10000)
	if len(d.Instances) != 1 || d.Instances[0].Breakers[0].Pattern != "GET:/api/(a|b|c)" {
		t.Errorf("detail %+v", d.Instances)
	}
	// A resource seen later is governed from then on.
	a.add("1764460830000|GET:/api/c|4|0|4|0|10|0|0|0", "1764460830000|GET:/api/d|4|0|4|0|10|0|0|0")
	javaPolls(t, c, clock, 8)
	c.mu.Lock()
	rules := func(res string) fleet.ResourceRules {
		if rr := c.insts[hosts[1]].Rules.Of(res); rr != nil {
			return *rr
		}
		return fleet.ResourceRules{}
	}
	got := fmt.Sprint(len(rules("GET:/api/c").Breakers), len(rules("GET:/api/d").Breakers), len(rules("GET:/api/d").Flows))
	c.mu.Unlock()
	if got != "1 0 1" {
		t.Errorf("rules of GET:/api/c and /d on the instance that never saw them: %s", got)
	}
	drifts := map[string]int{}
	for _, f := range c.Findings() {
		if f.Kind == triage.KindRuleDrift {
			drifts[f.Resource] = len(f.Facts.(*triage.RuleDriftFacts).Groups)
		}
	}
	// The literal rule differs from the regex rule on /a; on /b and /c the
	// instance with the literal rule has none. No pattern is a resource.
	if fmt.Sprint(drifts) != "map[GET:/api/a:2 GET:/api/b:2 GET:/api/c:2]" {
		t.Errorf("drift %v", drifts)
	}
}

// TestJavaCutOffsBefore18: a Java Sentinel 1.6.3 service's cut-offs, as
// its rules and metric lines tell them (collector/source's
// TestJavaRulesBefore18 maps the rules): OPEN while it blocks, CLOSED at
// its first pass, no HALF_OPEN.
func TestJavaCutOffsBefore18(t *testing.T) {
	degrade, err := os.ReadFile("testdata/java/legacy-1.6.3/getRules-degrade.json")
	if err != nil {
		t.Fatal(err)
	}
	flow, err := os.ReadFile("testdata/java/legacy-1.6.3/getRules-flow.json")
	if err != nil {
		t.Fatal(err)
	}
	clock := core.NewVirtualClock(time.UnixMilli(1796083770000))
	fake := &fakeJava{clock: clock, degrade: string(degrade), flow: string(flow), version: "1.6.3"}
	log, err := os.ReadFile("testdata/java/legacy-1.6.3/price-legacy-metrics.log.2026-12-01")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(log)), "\n") {
		l, err := metriclog.ParseFat(line)
		if err != nil {
			t.Fatal(err)
		}
		fake.add(fmt.Sprintf("%d|%s|%d|%d|%d|%d|%d", l.Timestamp, l.Resource, l.Pass, l.Block, l.Success, l.Exception, l.Rt))
	}
	c, hosts := javaServe(t, clock, "legacy", fake)
	javaPolls(t, c, clock, 4)
	d := c.Detail("legacy", "queryPrice", clock.UnixMilli()-120000, clock.UnixMilli())
	if len(d.Instances) != 1 || d.Instances[0].Instance != hosts[0] || d.Instances[0].Provenance != ProvenanceInferred {
		t.Fatalf("detail %+v", d.Instances)
	}
	var steps []string
	for _, tr := range d.Instances[0].Transitions {
		steps = append(steps, short(tr.From)+">"+short(tr.To))
	}
	if s := strings.Join(steps, " "); !strings.HasPrefix(s, "C>O O>C C>O") || strings.Contains(s, "H") {
		t.Errorf("transitions %s", s)
	}
}

func short(s core.State) string {
	return map[core.State]string{core.Closed: "C", core.Open: "O", core.HalfOpen: "H"}[s]
}

// TestJavaRulesUnchangedNotParsedAgain: a 30 MB rules answer that does not
// change is parsed once however often it is polled, and across a
// reconnect; a change of one rule type parses that type alone. Each parse
// rejects the answer's one rule that does not map, so the rejects count
// the parses.
func TestJavaRulesUnchangedNotParsedAgain(t *testing.T) {
	clock := core.NewVirtualClock(time.UnixMilli(javaT0))
	// 3 MB under -race, which makes parsing 10 times slower and counts
	// the parses the same.
	degrade := "[" + strings.Repeat(" ", racetest.Share(30<<20, 10)) + `{"count":1,"grade":7,"resource":"db","timeWindow":10}]`
	fake := &fakeJava{clock: clock, degrade: degrade, flow: `[{"count":1,"grade":1,"resource":"db","controlBehavior":9}]`}
	c, _ := javaServe(t, clock, "order", fake)
	polls := func(n int) { // n more /metric polls, the last one's rules handled
		t.Helper()
		want := len(fake.requests()) + n
		for i := 0; i < n; i++ {
			javaTicking(t, clock, 1)
			clock.Advance(source.JavaMetricEvery)
			javaWaitFor(t, "poll", func() error {
				if got := len(fake.requests()); got < want-n+i+1 {
					return fmt.Errorf("%d polls", got)
				}
				return nil
			})
		}
	}
	rejected := func() int64 { _, r, _ := c.Counters(); return r }
	polls(16) // rules polled at 0, 5, 10 and 15 s
	polls(1)  // the 15 s poll's rules handled
	fake.mu.Lock()
	flowPolls := fake.flowPolls
	fake.mu.Unlock()
	if flowPolls != 4 || rejected() != 2 {
		t.Fatalf("%d rules polls, %d rejects; want 4 polls, 2 rejects (each answer parsed once)", flowPolls, rejected())
	}
	fake.mu.Lock()
	fake.flow = `[{"count":1,"grade":1,"resource":"db","controlBehavior":8}]`
	fake.mu.Unlock()
	polls(5)
	if got := rejected(); got != 3 {
		t.Fatalf("%d rejects after the flow rules changed, want 3: the flow answer alone parsed again", got)
	}
	// A reconnect sends the rules again without parsing them.
	fake.mu.Lock()
	fake.failMetric = 1
	fake.mu.Unlock()
	before := len(fake.requests())
	javaTicking(t, clock, 1)
	clock.Advance(source.JavaMetricEvery)
	javaWaitFor(t, "reconnect scheduled", func() error {
		if st := c.Publish().Targets[0]; st.Reconnects != 1 || clock.Pending() != 1 {
			return fmt.Errorf("reconnects %d, %d timers", st.Reconnects, clock.Pending())
		}
		return nil
	})
	clock.Advance(source.MinBackoff)
	javaWaitFor(t, "reconnected", func() error {
		if got := len(fake.requests()); got < before+2 {
			return fmt.Errorf("%d polls", got-before)
		}
		return nil
	})
	polls(1)
	if got := rejected(); got != 3 {
		t.Errorf("%d rejects after a reconnect, want 3: unchanged answers parsed again", got)
	}
}
