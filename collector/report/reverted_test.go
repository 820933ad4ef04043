package report

import (
	"strings"
	"testing"

	"github.com/sentinel-top/sentinel-top/collector/report/spectest"
	"github.com/sentinel-top/sentinel-top/core"
)

// revertReport is the report of three gateways whose 200 QPS push one of
// them, named by a hostile process, leaves at a restart for the 1000 QPS
// limit of a stale snapshot.
func revertReport() *Report {
	e := newStoreFeeder()
	old := []core.FlowRule{{Resource: "createOrder", Threshold: 1000}}
	sale := []core.FlowRule{{Resource: "createOrder", Threshold: 200}}
	gws := []string{"gateway-1", "gateway-2", evilInstance}
	for _, in := range gws {
		e.Hello(in, "gateway", t0, t0-60000)
		e.Rules(in, t0, "v1000", nil, old)
	}
	for i, in := range gws {
		e.Rules(in, t0+40000+int64(i)*37, "v200", nil, sale)
	}
	e.Bye(evilInstance, t0+70000)
	e.Hello(evilInstance, "gateway", t0+70000, t0+70000)
	e.Rules(evilInstance, t0+70000, "v1000", nil, old)
	for _, in := range gws {
		e.Bye(in, t0+120000)
	}
	return e.report("reverted.ndjson", 14, 0)
}

// The renderers show rule-drift's reverted entries, their names and
// versions sanitized, and the JSON report carries them as the spec has
// them.
func TestRevertedRendered(t *testing.T) {
	r := revertReport()
	if len(r.Findings) != 1 {
		t.Fatalf("findings %+v", r.Findings)
	}
	m := string(render(t, md, r))
	for _, want := range []string{
		"- **Newest:** version `v200`",
		"- **Push again:** version `v200` to `evil-1\\x1b[31m\\u202eroot\\x07`",
		"- **Reverted:** `evil-1\\x1b[31m\\u202eroot\\x07` from version `v200` back to the older `v1000` at 2025-11-30 00:01:10.000 UTC, after a restart",
		"- **Group 2:** version `v1000`, first seen 2025-11-30 00:00:00.000 UTC, 1 instance:",
		"**Advice:** push the newest version again to the 1 instance not running it (never an older one) until all 3 instances report it; 1 went back after a restart",
	} {
		if !strings.Contains(m, want) {
			t.Errorf("markdown lacks %q:\n%s", want, m)
		}
	}
	txt := string(render(t, text, r))
	if want := "Reverted:               evil-1\\x1b[31m\\u202eroot\\x07 from version v200 back to the older v1000 at 2025-11-30 00:01:10.000 UTC, after a restart"; !strings.Contains(txt, want) {
		t.Errorf("text lacks %q:\n%s", want, txt)
	}
	if strings.Contains(m+txt, "\x1b") || strings.Contains(m+txt, "\u202e") {
		t.Error("a control character reached the output")
	}
	got, err := spectest.Decode(render(t, js, r))
	if err != nil {
		t.Fatal(err)
	}
	f := got.Findings[0]
	want := spectest.Revert{Instance: evilInstance, From: "v200", To: "v1000", At: t0 + 70000, Restarted: true}
	if f.Newest == nil || *f.Newest != "v200" || len(f.Reverted) != 1 || f.Reverted[0] != want || f.Groups[1].FirstSeen != t0 {
		t.Fatalf("JSON finding %+v", f)
	}
}
