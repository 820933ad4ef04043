package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/internal/promapi"
)

// The alert rules and the Grafana dashboard shipped in deploy/, as the
// tests find them from this package's directory.
var (
	alertRulesFile = filepath.Join("..", "..", "deploy", "prometheus", "sentinel-top.rules.yml")
	alertTestsFile = filepath.Join("..", "..", "deploy", "prometheus", "sentinel-top.rules_test.yml")
	runbookFile    = filepath.Join("..", "..", "deploy", "prometheus", "RUNBOOK.md")
	dashboardFile  = filepath.Join("..", "..", "deploy", "grafana", "sentinel-top.json")
)

// lookPrometheusTool finds one of the Prometheus package's binaries:
// without it the test is skipped, unless SENTINEL_TOP_REQUIRE_PROMETHEUS
// is set (CI installs it), when it fails.
func lookPrometheusTool(t *testing.T, name string) string {
	t.Helper()
	bin, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("SENTINEL_TOP_REQUIRE_PROMETHEUS") != "" {
			t.Fatalf("%s is not installed (apt-get install prometheus)", name)
		}
		t.Skipf("%s is not installed (apt-get install prometheus); skipping", name)
	}
	return bin
}

// TestAlertRulesPromtool: promtool accepts the alert rules and their unit
// tests pass (CI runs the same two commands in .ci/run, saying so when
// promtool is missing).
func TestAlertRulesPromtool(t *testing.T) {
	promtool := lookPrometheusTool(t, "promtool")
	for _, args := range [][]string{{"check", "rules", alertRulesFile}, {"test", "rules", alertTestsFile}} {
		out, err := exec.Command(promtool, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// TestEveryAlertHasARunbookAndATest: each alert's runbook_url points at a
// section of RUNBOOK.md named after it, each section is an alert's, and
// the promtool unit tests make each alert fire at least once.
func TestEveryAlertHasARunbookAndATest(t *testing.T) {
	rules := readText(t, alertRulesFile)
	alerts := regexp.MustCompile(`(?m)^\s+- alert: (\w+)\n((?:\s{8,}.*\n|\s*\n)*)`).FindAllStringSubmatch(rules, -1)
	if len(alerts) < 10 {
		t.Fatalf("%d alerts found in %s", len(alerts), alertRulesFile)
	}
	sections := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^## (\w+)$`).FindAllStringSubmatch(readText(t, runbookFile), -1) {
		sections[m[1]] = true
	}
	tests := readText(t, alertTestsFile)
	urlRE := regexp.MustCompile(`runbook_url: "https://github\.com/sentinel-top/sentinel-top/blob/main/deploy/prometheus/RUNBOOK\.md#(\w+)"`)
	for _, a := range alerts {
		name, body := a[1], a[2]
		u := urlRE.FindStringSubmatch(body)
		switch {
		case u == nil:
			t.Errorf("%s: no runbook_url into RUNBOOK.md", name)
		case u[1] != strings.ToLower(name):
			t.Errorf("%s: runbook_url anchor #%s, want #%s", name, u[1], strings.ToLower(name))
		}
		if !sections[name] {
			t.Errorf("%s: no section \"## %s\" in RUNBOOK.md", name, name)
		}
		delete(sections, name)
		fires := regexp.MustCompile(`alertname: ` + name + `\n\s+exp_alerts:\n\s+- exp_labels`)
		if !fires.MatchString(tests) {
			t.Errorf("%s: no unit test in which it fires", name)
		}
	}
	for s := range sections {
		t.Errorf("RUNBOOK.md: section %s is no alert's", s)
	}
}

func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// promRules are the rules a Prometheus server loaded, as /api/v1/rules
// gives them.
type promRules struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Name           string    `json:"name"`
			Query          string    `json:"query"`
			Type           string    `json:"type"`
			Health         string    `json:"health"`
			LastError      string    `json:"lastError"`
			LastEvaluation time.Time `json:"lastEvaluation"`
		} `json:"rules"`
	} `json:"groups"`
}

// demoAlerts says, for the alerts of deploy/prometheus, which ones the
// demo of promScenario (a sawtooth against a slow database) must make
// active (pending or firing) and on which series, and which ones must stay
// silent. The others (agents dropping messages, data unreceived) depend
// on how loaded the machine is, and are only logged.
func demoAlerts(demo demoWant) (fire map[string]map[string]float64, labels map[string][]string, silent []string) {
	var tripped []string
	for _, ar := range demo.trippedResources {
		tripped = append(tripped, "app="+ar[0]+",resource="+ar[1])
	}
	fire = map[string]map[string]float64{
		// Not closed for 5 minutes: pending while the outage lasts (its
		// for: is tested by promtool), on the faulty downstream's breakers.
		"SentinelTopBreakerNotClosed": each(demo.opened, 1),
		// About nine failed probes an instance: more than 6 trips an hour,
		// and none of them closed.
		"SentinelTopBreakerTrips":         each(tripped, 1),
		"SentinelTopBreakerProbesFailing": each(tripped, 1),
		// The sawtooth is critical while it lasts.
		"SentinelTopCriticalFinding": {"kind=sawtooth": 1},
	}
	labels = map[string][]string{
		"SentinelTopBreakerNotClosed":     {"app", "instance", "resource"},
		"SentinelTopBreakerTrips":         {"app", "resource"},
		"SentinelTopBreakerProbesFailing": {"app", "resource"},
		"SentinelTopCriticalFinding":      {"kind"},
	}
	silent = []string{"SentinelTopBreakerStatesUnknown", "SentinelTopRuleDrift", "SentinelTopCollectorDown",
		"SentinelTopTargetsDown", "SentinelTopMemoryRefused", "SentinelTopMemoryNearBudget",
		"SentinelTopMessagesRejected", "SentinelTopLimitOverflow"}
	return fire, labels, silent
}

// checkAlertRules checks, on a Prometheus server that loaded
// deploy/prometheus's rules and scraped the demo (job "demo") since
// began, that every rule evaluates without error, and that the demo made
// active exactly the alerts it should, on the series it should, and none
// of those it should not.
func checkAlertRules(t *testing.T, api promapi.Client, demo demoWant) {
	t.Helper()
	var rules promRules
	if err := api.Get("/api/v1/rules", nil, &rules); err != nil {
		t.Fatalf("/api/v1/rules: %v", err)
	}
	var names []string
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			names = append(names, r.Name)
			if r.Health != "ok" || r.LastError != "" || r.LastEvaluation.IsZero() {
				t.Errorf("rule %s (group %s): health %q, last error %q, last evaluated %v\n%s",
					r.Name, g.Name, r.Health, r.LastError, r.LastEvaluation, r.Query)
			}
		}
	}
	fire, labels, silent := demoAlerts(demo)
	for name := range fire {
		if !slices.Contains(names, name) {
			t.Errorf("Prometheus has no rule %s: %v", name, names)
		}
	}
	for _, name := range silent {
		if !slices.Contains(names, name) {
			t.Errorf("Prometheus has no rule %s: %v", name, names)
		}
	}
	active := func(name string, by ...string) (map[string]float64, error) {
		samples, err := queryVector(api, fmt.Sprintf(`count by (%s) (count_over_time(ALERTS{alertname=%q,job="demo"}[15m]))`, strings.Join(by, ", "), name))
		if err != nil {
			return nil, err
		}
		out := map[string]float64{}
		for _, s := range samples {
			out[s.key(by...)] = 1
		}
		return out, nil
	}
	for name, want := range fire {
		got, err := active(name, labels[name]...)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if fmtSamples(got) != fmtSamples(want) {
			t.Errorf("%s active on %s, want %s", name, fmtSamples(got), fmtSamples(want))
		} else {
			t.Logf("%s active on %s", name, fmtSamples(got))
		}
	}
	for _, name := range silent {
		got, err := active(name, "alertname")
		if err != nil {
			t.Errorf("%s: %v", name, err)
		} else if len(got) > 0 {
			t.Errorf("%s was active on the demo: a false alarm", name)
		}
	}
	others, err := queryVector(api, `count by (alertname, alertstate) (count_over_time(ALERTS{job="demo"}[15m]))`)
	if err != nil {
		t.Errorf("ALERTS: %v", err)
	}
	for _, s := range others {
		if _, ok := fire[s.Labels["alertname"]]; !ok {
			t.Logf("also active on the demo: %s (%s)", s.Labels["alertname"], s.Labels["alertstate"])
		}
	}
}

func queryVector(api promapi.Client, q string) ([]promSample, error) {
	samples, err := api.Vector(q)
	out := make([]promSample, 0, len(samples))
	for _, x := range samples {
		out = append(out, promSample(x))
	}
	return out, err
}

// grafanaDashboard is what the test reads of a dashboard's JSON model.
type grafanaDashboard struct {
	Panels      []grafanaPanel `json:"panels"`
	Annotations struct {
		List []struct {
			Name string `json:"name"`
			Expr string `json:"expr"`
		} `json:"list"`
	} `json:"annotations"`
	Templating struct {
		List []struct {
			Name     string `json:"name"`
			Type     string `json:"type"`
			AllValue string `json:"allValue"`
			Query    any    `json:"query"` // a string, or {"query": ...}
		} `json:"list"`
	} `json:"templating"`
}

type grafanaPanel struct {
	Title   string `json:"title"`
	Type    string `json:"type"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
	Panels []grafanaPanel `json:"panels"` // a collapsed row's
}

// dashboardQuery is one query of the dashboard: a panel's target or an
// annotation.
type dashboardQuery struct{ where, expr string }

func dashboardQueries(d *grafanaDashboard) []dashboardQuery {
	var out []dashboardQuery
	var walk func([]grafanaPanel)
	walk = func(ps []grafanaPanel) {
		for _, p := range ps {
			for _, tg := range p.Targets {
				out = append(out, dashboardQuery{fmt.Sprintf("panel %q, query %s", p.Title, tg.RefID), tg.Expr})
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, a := range d.Annotations.List {
		if a.Expr != "" {
			out = append(out, dashboardQuery{fmt.Sprintf("annotation %q", a.Name), a.Expr})
		}
	}
	return out
}

// labelValuesRE is a Grafana query variable's label_values(selector, label).
var labelValuesRE = regexp.MustCompile(`^label_values\((.*),\s*(\w+)\)$`)

// grafanaRegexValue is what Grafana puts in place of a variable used in a
// regex matcher (=~) for one chosen value: the value, regex-escaped, in a
// PromQL string.
func grafanaRegexValue(v string) string {
	return strings.ReplaceAll(regexp.QuoteMeta(v), `\`, `\\`)
}

// checkDashboard runs every query of the Grafana dashboard (its panels'
// and its annotations') against a Prometheus server that has scraped the
// demo and the replay at 1 s since began, as Grafana would over that
// time: the query variables resolved through the server, every variable
// at All and then the job variable at each of its values; $__interval the
// step, $__rate_interval as Grafana computes it for a 1 s scrape interval.
// Every query must parse and return data.
func checkDashboard(t *testing.T, api promapi.Client, began time.Time) {
	t.Helper()
	var d grafanaDashboard
	if err := json.Unmarshal([]byte(readText(t, dashboardFile)), &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	queries := dashboardQueries(&d)
	if len(queries) < 15 {
		t.Fatalf("%s: %d queries", dashboardFile, len(queries))
	}
	// The query variables, in order: each may use those before it.
	type variable struct{ name, allValue, selector, label string }
	var vars []variable
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(string)
		if m, ok := v.Query.(map[string]any); ok {
			q, _ = m["query"].(string)
		}
		m := labelValuesRE.FindStringSubmatch(q)
		if m == nil || v.AllValue != ".*" {
			t.Fatalf("variable %s: query %q, all value %q: want label_values(selector, label) and .*", v.Name, q, v.AllValue)
		}
		vars = append(vars, variable{v.Name, v.AllValue, m[1], m[2]})
	}
	const scrape, step = time.Second, time.Second
	rateInterval := max(step+scrape, 4*scrape) // Grafana's $__rate_interval
	end := time.Now()
	substitute := func(expr string, values map[string]string) (string, error) {
		expr = strings.ReplaceAll(expr, "$__rate_interval", fmt.Sprintf("%ds", int(rateInterval.Seconds())))
		expr = strings.ReplaceAll(expr, "$__interval", fmt.Sprintf("%ds", int(step.Seconds())))
		for _, v := range vars {
			expr = strings.ReplaceAll(expr, "${"+v.name+"}", values[v.name])
			expr = strings.ReplaceAll(expr, "$"+v.name, values[v.name])
		}
		if strings.Contains(expr, "$") {
			return "", fmt.Errorf("a variable left in %s", expr)
		}
		return expr, nil
	}
	// Each variable resolves to values, with those before it at All.
	all := map[string]string{}
	var jobs []string
	for _, v := range vars {
		sel, err := substitute(v.selector, all)
		if err != nil {
			t.Fatalf("variable %s: %v", v.name, err)
		}
		var values []string
		if err := api.Get("/api/v1/label/"+v.label+"/values", url.Values{"match[]": {sel}, "start": {promapi.Unix(began)}, "end": {promapi.Unix(end)}}, &values); err != nil {
			t.Fatalf("variable %s: label_values(%s, %s): %v", v.name, sel, v.label, err)
		}
		if len(values) == 0 {
			t.Errorf("variable %s: label_values(%s, %s) has no values", v.name, sel, v.label)
		}
		t.Logf("variable %s: %q", v.name, values)
		if v.name == "job" {
			jobs = values
		}
		all[v.name] = v.allValue
	}
	if !slices.Contains(jobs, "demo") || !slices.Contains(jobs, "replay") {
		t.Errorf("job values %q: want demo and replay", jobs)
	}
	choices := []map[string]string{all}
	for _, j := range jobs {
		c := map[string]string{}
		for k, v := range all {
			c[k] = v
		}
		c["job"] = grafanaRegexValue(j)
		choices = append(choices, c)
	}
	for _, values := range choices {
		for _, q := range queries {
			expr, err := substitute(q.expr, values)
			if err != nil {
				t.Errorf("%s: %v", q.where, err)
				continue
			}
			got, err := api.Range(expr, began, end, step)
			switch {
			case err != nil:
				t.Errorf("%s (job %s): %v\n%s", q.where, values["job"], err, expr)
			case len(got) == 0:
				t.Errorf("%s (job %s): no data\n%s", q.where, values["job"], expr)
			}
		}
	}
	t.Logf("%d dashboard queries returned data, with every variable at All and with job at each of %q", len(queries), jobs)
}
