package ui

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/collector/triage"
	"github.com/sentinel-top/sentinel-top/core"
)

// Names an attacker controls (a resource name is whatever a service
// passes to Entry) that would act on a terminal if printed raw.
var hostile = []string{
	"clear\x1b[2Jscreen",                  // erase display
	"osc52\x1b]52;c;cm0gLXJmIC8K\x07copy", // set the clipboard
	"title\x1b]0;pwned\x1b\\end",          // set the window title, ST-terminated
	"admin\u202egnp.exe",                  // right-to-left override
	"iso\u2066late\u2069d",                // bidi isolates
	"csi\x9b31mc1",                        // an 8-bit CSI
	"bell\x07\x08back\rret\nnl\ttab",      // control characters
	"zero\u200bwidth\ufeff",               // invisible characters
	"bad\xffutf8\xc0",                     // not UTF-8
}

// rawDanger is what must never reach the terminal from a name.
var rawDanger = []string{"\x1b[2J", "\x1b]", "\x07", "\x9b", "\u009b", "\u202e", "\u2066", "\u2069",
	"\u200b", "\ufeff", "\x08", "\r", "\xff", "\xc0"}

func findDanger(s string) (string, int) {
	for _, d := range rawDanger {
		if i := strings.Index(s, d); i >= 0 {
			return d, i
		}
	}
	return "", -1
}

// sgrOnly matches the escape sequences the UI itself emits: SGR only.
var sgrOnly = regexp.MustCompile("\x1b\\[[0-9;]*m")

func hostileSource() *staticSource {
	s := testSnapshot()
	s.Source = hostile[1]
	s.Warnings = []collector.Warning{collector.ClockSkew{Instance: hostile[2], OffsetMs: 3000}}
	s.Targets[3].Name = hostile[0]
	for i, h := range hostile {
		s.Rows = append(s.Rows, collector.ResourceRow{App: hostile[(i+3)%len(hostile)], Resource: h,
			Instances: 1, HasBreaker: true, Breakers: collector.StateCounts{Open: 1}})
	}
	s.Rows[0].App, s.Rows[0].Resource = hostile[3], hostile[1]
	s.Findings[0].App, s.Findings[0].Resource = hostile[3], hostile[1]
	s.Findings[0].Instances = hostile
	s.Findings[0].Summary = "summary " + hostile[0]
	d := testDetail()
	d.App, d.Resource = hostile[3], hostile[1]
	for i := range d.Instances {
		d.Instances[i].Instance = hostile[i]
		d.Instances[i].RulesVersion = hostile[i+4]
		for j := range d.Instances[i].Breakers {
			d.Instances[i].Breakers[j].ID = hostile[1]
		}
		for j := range d.Instances[i].Transitions {
			d.Instances[i].Transitions[j].RuleID = hostile[2]
		}
	}
	d.Findings = []triage.Finding{s.Findings[0], {Kind: triage.KindRuleDrift, Severity: triage.Warning,
		App: hostile[3], Resource: hostile[1], Facts: &triage.RuleDriftFacts{Groups: []triage.RuleGroup{{Version: hostile[0], Instances: hostile}}},
		Timelines: []triage.Timeline{{Instance: hostile[6], Start: core.Open}}}}
	plan := notSafePlan()
	plan.App, plan.Resource, plan.Instances = hostile[3], hostile[1], hostile
	s.Plans = []triage.Plan{plan}
	src := newStaticSource(s)
	src.details[d.App+"\x00"+d.Resource] = d
	return src
}

func TestHostileNamesNeverReachTheTerminal(t *testing.T) {
	for _, profile := range []ColorProfile{ColorNone, ColorANSI256} {
		for _, size := range [][2]int{{80, 24}, {120, 40}, {200, 60}} {
			src := hostileSource()
			m := newModel(src, Options{Profile: profile})
			m.noTick = true
			send(m, sizeMsg(size[0], size[1]))
			frames := map[string]string{"main": m.View()}
			press(m, "<enter>")
			frames["detail"] = m.View()
			press(m, "<tab>j")
			frames["detail findings"] = m.View()
			press(m, "<pgdown><pgdown><pgdown><pgdown><pgdown>")
			frames["detail end"] = m.View()
			if !strings.Contains(frames["detail end"], "no safe change found") {
				t.Errorf("the plan is not in sight at the detail's end at %v", size)
			}
			press(m, "<esc>a<enter>")
			frames["detail from alert"] = m.View()
			press(m, "<esc>/clear")
			frames["filter"] = m.View()
			for name, f := range frames {
				rest := sgrOnly.ReplaceAllString(f, "")
				if profile == ColorNone && rest != f {
					t.Errorf("%s at %v without colour holds escape sequences", name, size)
				}
				if d, i := findDanger(rest); i >= 0 {
					t.Errorf("%s at %v: raw %q reached the terminal in %q", name, size, d,
						rest[max(0, i-20):min(len(rest), i+20)])
				}
				if strings.ContainsRune(rest, '\x1b') {
					t.Errorf("%s at %v: an escape other than SGR: %q", name, size, rest[strings.IndexByte(rest, 0x1b):])
				}
				if !utf8.ValidString(f) {
					t.Errorf("%s at %v: the frame is not UTF-8", name, size)
				}
				checkFrame(t, f, size[0], size[1])
			}
			// the names are still recognisable, escaped.
			main := sgrOnly.ReplaceAllString(frames["main"], "")
			if !strings.Contains(main, `clear\x1`) || !strings.Contains(main, `Jscreen`) || !strings.Contains(main, `gnp.exe`) {
				t.Errorf("the escaped name is not shown:\n%s", frames["main"])
			}
		}
	}
}

func TestSanitizeCleanDoesNotAllocate(t *testing.T) {
	for _, s := range []string{"GET:/member/info", "订单查询/按用户"} {
		if n := testing.AllocsPerRun(100, func() { _ = sanitize(s) }); n != 0 {
			t.Errorf("sanitize(%q) allocates %v times", s, n)
		}
	}
}

func TestElide(t *testing.T) {
	cases := []struct {
		in   string
		w    int
		want string
	}{
		{"GET:/member/info", 20, "GET:/member/info"},
		{"GET:/member/info", 16, "GET:/member/info"},
		{"GET:/member/info", 9, "GET:…info"},
		{"GET:/member/info", 1, "…"},
		{"GET:/member/info", 0, ""},
		{"订单查询按用户", 14, "订单查询按用户"},
		{"订单查询按用户", 9, "订单…用户"}, // 4 + 1 + 4
		{"订单查询按用户", 8, "订单…户 "}, // a wide character that does not fit leaves a padded cell
		{"ab订单cd", 6, "ab…cd "},
	}
	for _, c := range cases {
		got := elide(c.in, c.w)
		if got != c.want {
			t.Errorf("elide(%q, %d) = %q, want %q", c.in, c.w, got, c.want)
		}
		if w := width(got); c.w > 0 && w != min(c.w, width(c.in)) {
			t.Errorf("elide(%q, %d) is %d cells wide", c.in, c.w, w)
		}
	}
}
