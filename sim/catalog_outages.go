package sim

import (
	"time"

	"github.com/sentinel-top/sentinel-top/core"
)

// Real outages caught by sound rules: hundreds of requests per statistic
// window, a healthy p99 well under maxAllowedRtMs and retry timeouts of
// their own per instance. They must give no low-confidence-trip and no
// rule-advice: the breakers did their job, and advice drawn from the
// incident would blind them to it.

const (
	ledgerRes  = "POST:http://ledger-service/api/entries"
	accountRes = "db:account.select"
)

// soundFleet is four instances of app calling res on downstream at about
// mean req/s each, with the breaker rule(retry), retry being 30 s plus 2.5 s
// per instance so that the fleet does not probe a recovering downstream at
// once.
func soundFleet(app, res, downstream string, mean float64, timeout time.Duration, rule func(retry uint32) core.BreakerRule) []*Instance {
	return fleetOf(app, 4, func(i int, in *Instance) {
		in.Calls = []Call{{
			Resource: res, Downstream: downstream, Timeout: timeout,
			Traffic: Diurnal{Mean: mean, Swing: 0.2, Period: 4 * mn, Phase: time.Duration(i) * mn},
		}}
		in.Rules = always([]core.BreakerRule{rule(30000 + uint32(i)*2500)}, nil)
	})
}

// OutageErrorRamp: the ledger service fails more and more, from its usual
// 0.2 % of calls to all of them within 10 s, for 40 s.
func OutageErrorRamp() *Scenario {
	return &Scenario{
		Name:  "outage-error-ramp",
		Title: "an error rate ramping to 100 %, caught by a sound error-ratio breaker",
		Description: "Four billing instances call the ledger service at about 80 req/s each with an error-ratio breaker " +
			"(0.5, minRequestAmount 20, a 10 s window of 10 buckets) and retry timeouts of 30 to 37.5 s, one per " +
			"instance. From 1:00 a bad deploy makes the ledger fail more and more calls, from its usual 0.2 % to " +
			"all of them by 1:10, until 1:40, and it is back by 1:45. Each breaker opens on hundreds of failures in " +
			"its window, 9 to 10 s into the ramp; the first probes, 30 to 37.5 s later, meet either the outage's " +
			"last seconds and reopen or the recovered ledger and close, and every breaker is closed by 2:15. " +
			"Nothing here needs a rule change.",
		Duration: 4 * mn,
		Seed:     10,
		Downstreams: []*Downstream{{
			Name:      "ledger-service",
			Latency:   LogNormal{Median: 25 * ms, P99: 90 * ms},
			ErrorRate: 0.002,
			Faults:    []Fault{{From: 60 * sec, To: 100 * sec, Onset: 10 * sec, ErrorRate: 1, Recovery: 5 * sec}},
		}},
		Instances: soundFleet("billing", ledgerRes, "ledger-service", 80, 2*sec, func(retry uint32) core.BreakerRule {
			return errRule(ledgerRes, 0.5, 20, 10000, 10, retry)
		}),
		Expect: []Expect{},
	}
}

// OutageDBSlow: the account database answers in 2 s for 40 s.
func OutageDBSlow() *Scenario {
	return &Scenario{
		Name:  "outage-db-slow",
		Title: "a database slow at 2 s for 40 s, caught by a sound slow-ratio breaker",
		Description: "Four account instances query their database at about 60 req/s each with a slow-ratio breaker " +
			"(0.5 over 500 ms, minRequestAmount 20, a 10 s window of 10 buckets; healthy queries take 12 ms, 50 ms at " +
			"p99) and retry timeouts of 30 to 37.5 s, one per instance. From 1:00 to 1:40 a lock held by a migration " +
			"makes every query take 2 s: each breaker opens on hundreds of slow queries in its window, 6 s in; the " +
			"first probes, 30 to 37.5 s later, meet either the slow database and reopen or the recovered one and " +
			"close, and every breaker is closed by 2:15. Nothing here needs a rule change.",
		Duration: 4 * mn,
		Seed:     11,
		Downstreams: []*Downstream{{
			Name:    "account-db",
			Latency: LogNormal{Median: 12 * ms, P99: 50 * ms},
			Faults:  []Fault{{From: 60 * sec, To: 100 * sec, Latency: Uniform{1900 * ms, 2100 * ms}}},
		}},
		Instances: soundFleet("account", accountRes, "account-db", 60, 3*sec, func(retry uint32) core.BreakerRule {
			return slowRule(accountRes, 500, 0.5, 20, 10000, 10, retry)
		}),
		Expect: []Expect{},
	}
}
