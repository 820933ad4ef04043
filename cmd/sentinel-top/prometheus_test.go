package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestPrometheusScrapesServe runs a real Prometheus server against
// `sentinel-top serve` on loopback and checks, with PromQL over its HTTP
// API, the breaker states and rates of a live demo fleet. It is skipped
// when no prometheus binary is installed, unless
// SENTINEL_TOP_REQUIRE_PROMETHEUS is set (CI installs it).
func TestPrometheusScrapesServe(t *testing.T) {
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("SENTINEL_TOP_REQUIRE_PROMETHEUS") != "" {
			t.Fatal("prometheus is not installed (apt-get install prometheus)")
		}
		t.Skip("prometheus is not installed (apt-get install prometheus); skipping the Prometheus integration test")
	}
	serveAddr, promAddr := freePort(t), freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan int, 1)
	go func() {
		served <- run(ctx, []string{"serve", "--demo", "sawtooth-db-slow", "--speed", "20", "--listen", serveAddr}, nil, io.Discard, io.Discard)
	}()
	defer func() { cancel(); <-served }()

	dir := t.TempDir()
	cfg := fmt.Sprintf("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: sentinel-top\n    static_configs:\n      - targets: [%q]\n", serveAddr)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	prom := exec.CommandContext(ctx, bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+promAddr, "--log.level=warn")
	prom.Stdout, prom.Stderr = io.Discard, io.Discard
	if err := prom.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { prom.Process.Kill(); prom.Wait() }()

	query := func(q string) (float64, bool) {
		resp, err := http.Get("http://" + promAddr + "/api/v1/query?query=" + url.QueryEscape(q))
		if err != nil {
			return 0, false
		}
		defer resp.Body.Close()
		var r struct {
			Status string `json:"status"`
			Data   struct {
				Result []struct {
					Value [2]any `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		if json.NewDecoder(resp.Body).Decode(&r) != nil || r.Status != "success" || len(r.Data.Result) == 0 {
			return 0, false
		}
		s, _ := r.Data.Result[0].Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		return v, err == nil
	}
	checks := []struct{ name, q string }{
		{"a breaker is OPEN", `max_over_time(sum(sentinel_top_breaker_state{state="OPEN",resource="GET:http://member-service/api/user/info"})[2m:1s])`},
		{"requests pass", `sum(rate(sentinel_top_resource_pass_total{app="order"}[15s]))`},
		{"requests are blocked", `sum(rate(sentinel_top_resource_block_total{app="order"}[15s]))`},
		{"half-open probes fail", `sum(sentinel_top_breaker_transitions_total{from="HALF_OPEN",to="OPEN"})`},
		{"the sawtooth is found", `max_over_time(sum(sentinel_top_findings{kind="sawtooth"})[2m:1s])`},
		{"every instance up", `sentinel_top_instances`},
	}
	deadline := time.Now().Add(90 * time.Second)
	for _, c := range checks {
		for {
			if v, ok := query(c.q); ok && v > 0 {
				t.Logf("%s: %s = %g", c.name, c.q, v)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %s never became positive", c.name, c.q)
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
}
