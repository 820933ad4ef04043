// Command orderservice is a small HTTP service instrumented with the
// sentinel-top agent, for trying sentinel-top against real processes.
//
// Its /order handler calls a simulated member service through a slow-ratio
// circuit breaker, and a flow rule caps /order itself. A built-in load
// generator keeps traffic flowing, and --fault makes the downstream misbehave:
//
//	go run ./examples/orderservice --listen 127.0.0.1:8081 --stream 127.0.0.1:8721 --fault sawtooth &
//	go run ./examples/orderservice --listen 127.0.0.1:8082 --stream 127.0.0.1:8722 --fault slow &
//	go run ./examples/orderservice --listen 127.0.0.1:8083 --stream 127.0.0.1:8723 &
//	go run ./cmd/sentinel-top --targets 127.0.0.1:8721,127.0.0.1:8722,127.0.0.1:8723
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/sentinel-top/sentinel-top/agent"
	"github.com/sentinel-top/sentinel-top/core"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stderr, nil); err != nil {
		fmt.Fprintln(os.Stderr, "orderservice:", err)
		os.Exit(1)
	}
}

// Resources guarded by the service.
const (
	resourceOrder  = "POST:/order"
	resourceMember = "GET:http://member-service/api/user/info"
)

// defaultRules are the settings of the field report this service reenacts:
// a slow-ratio breaker of 0.5 over 200 ms, 5 requests minimum, a 1 s window
// and a 10 s retry timeout; and a 200/s cap on orders.
var defaultRules = ruleFile{
	Breakers: []core.BreakerRule{{Resource: resourceMember, Strategy: core.SlowRequestRatio, MaxAllowedRtMs: 200,
		Threshold: 0.5, MinRequestAmount: 5, StatIntervalMs: 1000, StatSlidingWindowBucketCount: 2, RetryTimeoutMs: 10000}},
	Flows: []core.FlowRule{{Resource: resourceOrder, Threshold: 200}},
}

type ruleFile struct {
	Breakers []core.BreakerRule `json:"breakers"`
	Flows    []core.FlowRule    `json:"flows"`
}

// downstream simulates the member service under a fault model.
type downstream struct {
	fault   string
	started time.Time
	rng     *rand.Rand
}

// call returns how long the call takes and whether it fails.
func (d *downstream) call(now time.Time) (time.Duration, error) {
	base := time.Duration(20+d.rng.IntN(40)) * time.Millisecond
	switch d.fault {
	case "slow": // network jitter: most calls 300-400 ms though the service is fine
		if d.rng.Float64() < 0.6 {
			return time.Duration(300+d.rng.IntN(100)) * time.Millisecond, nil
		}
	case "errors":
		if d.rng.Float64() < 0.4 {
			return base, errors.New("member service: 500 internal error")
		}
	case "sawtooth": // the database is slow for 2 minutes out of every 3
		if now.Sub(d.started)%(3*time.Minute) < 2*time.Minute {
			return time.Duration(800+d.rng.IntN(700)) * time.Millisecond, nil
		}
	}
	return base, nil
}

// run is the whole program; ready, when set, receives the stream address
// once the service is up.
func run(ctx context.Context, args []string, stderr io.Writer, ready chan<- string) error {
	fs := flag.NewFlagSet("orderservice", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:8080", "HTTP address of the service")
	stream := fs.String("stream", agent.DefaultAddr, "address of the sentinel-top stream")
	app := fs.String("app", "order", "application name")
	instance := fs.String("instance", "", "instance id (default order-PORT)")
	fault := fs.String("fault", "none", "downstream fault: none, slow, errors or sawtooth")
	load := fs.Int("load", 20, "requests per second the built-in load generator sends (0: none)")
	token := fs.String("token", os.Getenv("SENTINEL_TOP_TOKEN"), "bearer token required by the stream")
	rulesPath := fs.String("rules", "", `JSON rule file {"breakers":[...],"flows":[...]} (default: built-in rules)`)
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch *fault {
	case "none", "slow", "errors", "sawtooth":
	default:
		return fmt.Errorf("--fault %q: want none, slow, errors or sawtooth", *fault)
	}
	rules := defaultRules
	if *rulesPath != "" {
		data, err := os.ReadFile(*rulesPath)
		if err != nil {
			return err
		}
		rules = ruleFile{}
		if err := json.Unmarshal(data, &rules); err != nil {
			return fmt.Errorf("%s: %w", *rulesPath, err)
		}
	}
	httpLn, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	defer httpLn.Close()
	if *instance == "" {
		*instance = *app + "-" + strconv.Itoa(httpLn.Addr().(*net.TCPAddr).Port)
	}

	a, err := agent.New(agent.Options{App: *app, Instance: *instance, Token: *token})
	if err != nil {
		return err
	}
	defer a.Close()
	if err := a.LoadRules(rules.Breakers, rules.Flows); err != nil {
		return err
	}
	streamLn, err := net.Listen("tcp", *stream)
	if err != nil {
		return err
	}
	go a.Serve(streamLn)

	ds := &downstream{fault: *fault, started: time.Now(), rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))}
	dsMu := make(chan struct{}, 1)
	mux := http.NewServeMux()
	mux.HandleFunc("/order", func(w http.ResponseWriter, r *http.Request) {
		order, err := a.Entry(resourceOrder)
		if err != nil {
			http.Error(w, "too many orders, try later", http.StatusTooManyRequests)
			return
		}
		defer order.Exit(nil)
		member, err := a.Entry(resourceMember)
		if err != nil {
			http.Error(w, "member service unavailable (circuit open), try later", http.StatusServiceUnavailable)
			return
		}
		dsMu <- struct{}{}
		took, callErr := ds.call(time.Now())
		<-dsMu
		select {
		case <-time.After(took):
		case <-r.Context().Done():
		}
		member.Exit(callErr)
		if callErr != nil {
			http.Error(w, callErr.Error(), http.StatusBadGateway)
			return
		}
		fmt.Fprintln(w, "order accepted")
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(httpLn)
	defer srv.Close()

	fmt.Fprintf(stderr, "orderservice %s: http://%s/order, stream ws://%s%s, fault %s\n",
		*instance, httpLn.Addr(), streamLn.Addr(), agent.StreamPath, *fault)
	if ready != nil {
		ready <- streamLn.Addr().String()
	}
	if *load > 0 {
		go generateLoad(ctx, "http://"+httpLn.Addr().String()+"/order", *load)
	}
	<-ctx.Done()
	return nil
}

// generateLoad posts orders at rps per second until ctx ends.
func generateLoad(ctx context.Context, url string, rps int) {
	client := &http.Client{Timeout: 5 * time.Second}
	tick := time.NewTicker(time.Second / time.Duration(rps))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			go func() {
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
				if err != nil {
					return
				}
				if resp, err := client.Do(req); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}()
		}
	}
}
