package sentinelgolang_test

import (
	"errors"
	"fmt"
	"log"

	"github.com/alibaba/sentinel-golang/api"
	"github.com/alibaba/sentinel-golang/core/circuitbreaker"

	"github.com/sentinel-top/sentinel-top/contrib/sentinelgolang"
)

// A sentinel-golang service made watchable: three lines at start-up, and
// the service goes on as before. Watch it with
// `sentinel-top --targets 127.0.0.1:8720`.
func Example() {
	// At start-up, before the first api.Entry.
	a, err := sentinelgolang.New(sentinelgolang.Options{App: "order", Instance: "order-1"})
	if err != nil {
		log.Fatal(err)
	}
	defer a.Close()
	go a.ListenAndServe("127.0.0.1:0") // sentinelgolang.DefaultAddr in production

	// Unchanged: rules and guarded calls are sentinel-golang's.
	_, err = circuitbreaker.LoadRules([]*circuitbreaker.Rule{{
		Resource: "member-service", Strategy: circuitbreaker.SlowRequestRatio, MaxAllowedRtMs: 200,
		Threshold: 0.5, MinRequestAmount: 20, StatIntervalMs: 10000, RetryTimeoutMs: 30000,
	}})
	if err != nil {
		log.Fatal(err)
	}
	e, blocked := api.Entry("member-service")
	if blocked == nil {
		if err := callMemberService(); err != nil {
			api.TraceError(e, err)
		}
		e.Exit()
	}
	fmt.Println(a.Instance())
	// Output: order-1
}

func callMemberService() error { return errors.New("member service unavailable") }
