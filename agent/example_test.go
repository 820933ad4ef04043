package agent_test

import (
	"errors"
	"fmt"
	"log"
	"net/http"

	"github.com/sentinel-top/sentinel-top/agent"
	"github.com/sentinel-top/sentinel-top/core"
)

// Instrumenting an HTTP handler: guard the downstream call, serve the stream,
// and let sentinel-top watch it with `sentinel-top --targets 127.0.0.1:8720`.
func Example() {
	a, err := agent.New(agent.Options{App: "order", Instance: "order-1"})
	if err != nil {
		log.Fatal(err)
	}
	defer a.Close()
	err = a.LoadRules([]core.BreakerRule{{
		Resource: "member-service", Strategy: core.SlowRequestRatio, MaxAllowedRtMs: 200,
		Threshold: 0.5, MinRequestAmount: 20, StatIntervalMs: 10000, RetryTimeoutMs: 30000,
	}}, nil)
	if err != nil {
		log.Fatal(err)
	}
	go a.ListenAndServe("127.0.0.1:0") // agent.DefaultAddr in production

	http.HandleFunc("/order", func(w http.ResponseWriter, r *http.Request) {
		e, err := a.Entry("member-service")
		if errors.Is(err, core.ErrBlocked) {
			http.Error(w, "member service unavailable, try later", http.StatusServiceUnavailable)
			return
		}
		err = callMemberService(r)
		e.Exit(err)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	fmt.Println(a.Instance())
	// Output: order-1
}

func callMemberService(*http.Request) error { return nil }

// A hot-parameter rule limits each customer separately; the entry names
// the customer, and the stream's buckets list the customers with the most
// entries (the "hot" values of wire v1).
func ExampleAgent_Entry_withParameter() {
	a, err := agent.New(agent.Options{App: "order", Instance: "order-2"})
	if err != nil {
		log.Fatal(err)
	}
	defer a.Close()
	err = a.LoadRules(nil, nil, core.HotParamRule{
		Resource: "query-order", MetricType: core.HotParamQPS, ParamIndex: 0,
		Threshold: 2, DurationInSec: 1, SpecificItems: map[string]int64{"vip-123": 1000},
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, customer := range []string{"c-1", "c-1", "c-1", "vip-123", "vip-123", "vip-123"} {
		e, err := a.Entry("query-order", customer)
		if errors.Is(err, core.ErrHotParam) {
			fmt.Println(customer, "throttled")
			continue
		}
		e.Exit(nil)
	}
	// Output: c-1 throttled
}
