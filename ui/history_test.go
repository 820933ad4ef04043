package ui

import (
	"strings"
	"testing"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/core"
)

// TestTimelineDrawsNoStateWhereNoneIsKnown: an instance that left while
// OPEN is drawn OPEN up to its last message and nothing after it, never
// in its last state; a restart is listed as the step it is.
func TestTimelineDrawsNoStateWhereNoneIsKnown(t *testing.T) {
	src := newStaticSource(provenanceSnapshot())
	d := provenanceDetail()
	d.Instances = d.Instances[:1]
	in := &d.Instances[0]
	in.Gone, in.KnownTo = true, t0-20_000
	in.Transitions = append(in.Transitions, collector.Transition{AtMs: t0 - 25_000, From: core.Open, To: core.Closed, Restart: true},
		collector.Transition{AtMs: t0 - 24_000, From: core.Closed, To: core.Open})
	src.details["shop\x00inferred"] = d
	m := newTestModel(src, 120, 40)
	press(m, "/inferred<enter><enter>")
	screen := screenText(m)
	var band string
	for _, l := range strings.Split(screen, "\n") {
		if strings.Contains(l, "go-1") && strings.Contains(l, "gone") {
			band = l
		}
	}
	if !strings.Contains(band, "█"+bandNone) || strings.HasSuffix(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(band), "gone")), "█") {
		t.Errorf("a departed instance is drawn in its last state: %q", band)
	}
	if !strings.Contains(screen, "the process restarted") {
		t.Errorf("no restart listed:\n%s", screen)
	}
}
