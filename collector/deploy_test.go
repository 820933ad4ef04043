package collector

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDeployUsesExportedNames: the alert rules and the Grafana dashboard
// of deploy/ name only metric families this package exports, and select
// and group them only by labels those families have (or the job and
// instance labels a scrape adds). A misspelt name would match nothing: an
// alert that never fires, a panel that shows 0 through "or vector(0)".
func TestDeployUsesExportedNames(t *testing.T) {
	families := map[string]*promFamily{}
	allLabels := map[string]bool{"job": true, "instance": true}
	for _, f := range promFamilies {
		families[f.Name] = f
		for _, l := range f.Labels {
			allLabels[l] = true
		}
	}
	selector := regexp.MustCompile(`\b(sentinel_top_\w+)(\{[^}]*\})?`)
	matcher := regexp.MustCompile(`([a-zA-Z_]\w*)\s*(?:=~|!~|!=|=)\s*\\?"`)
	grouping := regexp.MustCompile(`\b(?:by|without|on|ignoring)\s*\(([^)]*)\)`)
	used := map[string]bool{}
	for _, file := range []string{
		filepath.Join("..", "deploy", "prometheus", "sentinel-top.rules.yml"),
		filepath.Join("..", "deploy", "prometheus", "sentinel-top.rules_test.yml"),
		filepath.Join("..", "deploy", "grafana", "sentinel-top.json"),
	} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		for _, m := range selector.FindAllStringSubmatch(text, -1) {
			f := families[m[1]]
			if f == nil {
				t.Errorf("%s: %s is not a metric the collector exports", file, m[1])
				continue
			}
			used[f.Name] = true
			for _, lm := range matcher.FindAllStringSubmatch(m[2], -1) {
				if l := lm[1]; l != "job" && l != "instance" && !slices.Contains(f.Labels, l) {
					t.Errorf("%s: %s has no label %s (it has %v)", file, f.Name, l, f.Labels)
				}
			}
		}
		for _, m := range grouping.FindAllStringSubmatch(text, -1) {
			for _, l := range strings.Split(m[1], ",") {
				if l = strings.TrimSpace(l); l != "" && !allLabels[l] {
					t.Errorf("%s: grouping by %s, which no exported metric has", file, l)
				}
			}
		}
	}
	if len(used) < 15 {
		t.Errorf("deploy/ uses %d of the %d families: %v", len(used), len(promFamilies), used)
	}
}
