package ui

import (
	"strings"
	"testing"

	"github.com/muesli/termenv"

	"github.com/sentinel-top/sentinel-top/collector/triage"
)

// TestAlertNamesKeepLastPart: on a narrow terminal the alerts panel
// shortens a finding's app before its resource, and keeps the resource's
// last part whole, as the table keeps a name's last parts.
func TestAlertNamesKeepLastPart(t *testing.T) {
	fs := []triage.Finding{
		{Severity: triage.Critical, Kind: "tripping", App: "gateway", Resource: "priceService:queryPrice", Summary: "opened 3 times"},
		{Severity: triage.Warning, Kind: "tripping", App: "gateway", Resource: "riskService:riskCheck", Summary: "opened twice"},
		{Severity: triage.Warning, Kind: "slow", App: "order-delivery", Resource: "queryOrder", Summary: "slow"},
		{Severity: triage.Info, Kind: "slow", App: "member-service", Resource: "GET:http://member-service/api/user/info", Summary: "slow"},
	}
	lasts := []string{":queryPrice", ":riskCheck", "/queryOrder", "/info"}
	for _, w := range []int{60, 80} {
		p := newAlertsPanel(newStyles(termenv.Ascii), newKeyMap()).SetFindings(fs, nil).SetSize(w, len(fs)+1)
		view := p.View()
		for i, f := range fs {
			var line string
			for _, l := range strings.Split(view, "\n") {
				if strings.Contains(l, f.Summary) && strings.Contains(l, string(f.Kind)) && (line == "" || strings.Contains(l, lasts[i])) {
					line = l
				}
			}
			if !strings.Contains(line, lasts[i]) {
				t.Errorf("width %d: %s/%s: last part %q not whole in %q\n%s", w, f.App, f.Resource, lasts[i], line, view)
			}
			if width(line) > w {
				t.Errorf("width %d: line %q is %d cells", w, line, width(line))
			}
		}
		for _, bad := range []string{"pric…rice", "risk…heck", "gat…ay/"} {
			if strings.Contains(view, bad) {
				t.Errorf("width %d: mangled %q in\n%s", w, bad, view)
			}
		}
	}
	// at any width the app/resource fits its cells, and the resource's last
	// part stays whole while the app can give way.
	for w := 8; w <= 40; w++ {
		for i := range fs {
			got := findingWhere(&fs[i], w)
			if width(got) > w {
				t.Errorf("findingWhere(%s/%s, %d) = %q, %d cells", fs[i].App, fs[i].Resource, w, got, width(got))
			}
			if w >= len(lasts[i])+2+appMinW+1 && !strings.Contains(got, lasts[i]) && !strings.Contains(got, strings.TrimLeft(lasts[i], ":/")) {
				t.Errorf("findingWhere(%s/%s, %d) = %q: last part lost", fs[i].App, fs[i].Resource, w, got)
			}
		}
	}
}
