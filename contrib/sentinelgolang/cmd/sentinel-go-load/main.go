// Command sentinel-go-load is a sentinel-golang v1.0.4 service with its
// own Prometheus exporter enabled, and nothing of sentinel-top in it: it
// drives traffic through api.Entry on a few resources, each guarded by an
// error-ratio breaker, fails the first resource's calls for a while so
// that its breaker trips, probes and closes, and, once the traffic ends
// and a scrape or two has passed, prints what it did as one JSON object:
// the passes and blocks of each resource and every breaker transition, as
// sentinel-golang's own listener heard them. sentinel-top's tests compare
// that with what `sentinel-top report --prometheus` reads back from a
// Prometheus server that scraped it.
//
//	sentinel-go-load -metrics 127.0.0.1:9101 -duration 10s -fail-from 2s -fail-for 3s
//
// sentinel-golang v1.0.4's exporter labels its metrics with the host, the
// pid and an app, the app name it knew when its package was initialised:
// before any configuration, so always "unknown_go_service".
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/alibaba/sentinel-golang/api"
	"github.com/alibaba/sentinel-golang/core/circuitbreaker"
	"github.com/alibaba/sentinel-golang/core/config"
)

// Result is what the program prints.
type Result struct {
	Pid         int                `json:"pid"`
	Pass        map[string]int64   `json:"pass"`
	Block       map[string]int64   `json:"block"`
	Transitions []TransitionRecord `json:"transitions"`
}

// TransitionRecord is one breaker transition as the listener heard it.
type TransitionRecord struct {
	Resource string `json:"resource"`
	From     string `json:"from"`
	To       string `json:"to"`
	AtMs     int64  `json:"atMs"`
}

type listener struct {
	mu  sync.Mutex
	out []TransitionRecord
}

func (l *listener) add(res string, from, to circuitbreaker.State) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.out = append(l.out, TransitionRecord{Resource: res, From: from.String(), To: to.String(), AtMs: time.Now().UnixMilli()})
}

func (l *listener) OnTransformToClosed(prev circuitbreaker.State, r circuitbreaker.Rule) {
	l.add(r.Resource, prev, circuitbreaker.Closed)
}

func (l *listener) OnTransformToOpen(prev circuitbreaker.State, r circuitbreaker.Rule, _ interface{}) {
	l.add(r.Resource, prev, circuitbreaker.Open)
}

func (l *listener) OnTransformToHalfOpen(prev circuitbreaker.State, r circuitbreaker.Rule) {
	l.add(r.Resource, prev, circuitbreaker.HalfOpen)
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "sentinel-go-load:", err)
		os.Exit(1)
	}
}

func run() error {
	addr := flag.String("metrics", "127.0.0.1:9101", "where the exporter serves /metrics")
	resources := flag.String("resources", "inventory:check,payment:charge", "resources, comma-separated; the first one fails for a while")
	rate := flag.Int("rate", 40, "calls a second to each resource")
	dur := flag.Duration("duration", 10*time.Second, "how long the traffic runs")
	failFrom := flag.Duration("fail-from", 2*time.Second, "when the first resource's calls begin to fail")
	failFor := flag.Duration("fail-for", 3*time.Second, "how long they fail")
	linger := flag.Duration("linger", 3*time.Second, "how long to serve /metrics after the traffic, before printing and exiting")
	logDir := flag.String("log-dir", os.TempDir(), "sentinel-golang's log directory")
	flag.Parse()

	conf := config.NewDefaultConfig()
	conf.Sentinel.Exporter.Metric.HttpAddr = *addr
	conf.Sentinel.Exporter.Metric.HttpPath = "/metrics"
	conf.Sentinel.Log.Dir = *logDir
	conf.Sentinel.Log.Metric.FlushIntervalSec = 0 // no metric log files
	conf.Sentinel.Stat.System.CollectIntervalMs = 0
	if err := api.InitWithConfig(conf); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	names := strings.Split(*resources, ",")
	var rules []*circuitbreaker.Rule
	for _, r := range names {
		rules = append(rules, &circuitbreaker.Rule{Resource: r, Strategy: circuitbreaker.ErrorRatio, Threshold: 0.5,
			MinRequestAmount: 5, StatIntervalMs: 1000, RetryTimeoutMs: 1000})
	}
	l := &listener{}
	circuitbreaker.RegisterStateChangeListeners(l)
	if _, err := circuitbreaker.LoadRules(rules); err != nil {
		return fmt.Errorf("rules: %w", err)
	}
	res := Result{Pid: os.Getpid(), Pass: map[string]int64{}, Block: map[string]int64{}}
	start := time.Now()
	tick := time.NewTicker(time.Second / time.Duration(max(*rate, 1)))
	defer tick.Stop()
	down := errors.New("downstream unavailable")
	for now := range tick.C {
		since := now.Sub(start)
		if since >= *dur {
			break
		}
		failing := since >= *failFrom && since < *failFrom+*failFor
		for i, r := range names {
			e, blocked := api.Entry(r)
			if blocked != nil {
				res.Block[r]++
				continue
			}
			res.Pass[r]++
			if i == 0 && failing {
				api.TraceError(e, down)
			}
			e.Exit()
		}
	}
	time.Sleep(*linger)
	l.mu.Lock()
	res.Transitions = l.out
	l.mu.Unlock()
	return json.NewEncoder(os.Stdout).Encode(res)
}
