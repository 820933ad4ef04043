package collector

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/agent"
	"github.com/sentinel-top/sentinel-top/collector/source"
	"github.com/sentinel-top/sentinel-top/core"
)

// A fleet whose messages all arrive late reads as the collector being off
// (its clock, or its reading), in one warning; an instance off on its own
// is still named. Real agents over loopback websockets, each with a clock
// of its own.
func TestClockSkewOfTheWholeFleetIsTheCollectors(t *testing.T) {
	base := time.UnixMilli(t0ms)
	cclock := core.NewVirtualClock(base.Add(3 * time.Second)) // the collector's: 3 s ahead
	c := New(Options{Clock: cclock, Mode: ModeLive})
	type skewAgent struct {
		a     *agent.Agent
		clock *core.VirtualClock
	}
	var agents []skewAgent
	var targets []source.Target
	for i, off := range []time.Duration{0, 0, 0, 0, 8 * time.Second} {
		clock := core.NewVirtualClock(base.Add(off))
		name := fmt.Sprintf("gw-%d", i)
		if off != 0 {
			name = "gw-odd"
		}
		fa := startFleetAgent(t, clock, name)
		fa.a.Ship() // the first ship begins the stream at the clock's now
		agents = append(agents, skewAgent{fa.a, clock})
		targets = append(targets, source.Target{Name: fa.addr, URL: "ws://" + fa.addr + agent.StreamPath})
	}
	ctx, cancel := context.WithCancel(context.Background())
	dialed := make(chan struct{})
	go func() { dial(ctx, c, targets, source.DialOptions{Seed: 1}); close(dialed) }()
	t.Cleanup(func() { cancel(); <-dialed })
	eventually(t, "every target up", func() error {
		up := 0
		for _, st := range c.Publish().Targets {
			if st.State == TargetUp {
				up++
			}
		}
		if up != len(targets) {
			return fmt.Errorf("%d of %d up", up, len(targets))
		}
		return nil
	})
	// periods ships n periods of calls; each period's buckets are read
	// before the next period begins, so each arrives when the collector's
	// clock says.
	shipped := 0
	periods := func(n int) {
		for range n {
			cclock.Advance(500 * time.Millisecond) // first: each message arrives in this period
			for _, sa := range agents {
				e, err := sa.a.Entry("db")
				if err != nil {
					t.Fatal(err)
				}
				e.Exit(nil)
				sa.clock.Advance(500 * time.Millisecond)
				sa.a.Ship()
			}
			shipped++
			eventually(t, "the period read", func() error {
				for _, st := range c.Publish().Targets {
					if st.Items < int64(shipped) {
						return fmt.Errorf("%s: %d items read of %d", st.Name, st.Items, shipped)
					}
				}
				return nil
			})
		}
	}
	warnings := func() []string {
		var out []string
		for _, w := range warningTexts(c.Publish().Warnings) {
			if strings.Contains(w, "clock") || strings.Contains(w, "timestamps") {
				out = append(out, w)
			}
		}
		return out
	}

	periods(4)
	want := []string{
		"the collector reads late or its clock is ahead: messages of 4 of 5 instances arrive 3.0-3.0 s after their timestamps (median 3.0 s)",
		"clock of gw-odd is 5.0 s ahead of the collector's",
	}
	if got := warnings(); !slices.Equal(got, want) {
		t.Fatalf("the collector 3 s ahead of four of five: warnings\n%q\nwant\n%q", got, want)
	}

	// The collector's clock put right: the fleet is in line, the odd one
	// is 8 s ahead of it. The least offset of the last buckets counts, so
	// one period shows it.
	cclock.Set(agents[0].clock.Now())
	periods(1)
	want = []string{"clock of gw-odd is 8.0 s ahead of the collector's"}
	if got := warnings(); !slices.Equal(got, want) {
		t.Fatalf("the collector in line: warnings\n%q\nwant\n%q", got, want)
	}
}

// clockWarnings: the collector is taken as off when at least three
// instances, and three quarters of those measured, are off the same way.
func TestClockWarningsNameTheCollectorOnlyWhenMostAgree(t *testing.T) {
	off := func(ms ...int64) []skewed {
		var s []skewed
		for i, m := range ms {
			s = append(s, skewed{fmt.Sprintf("i%d", i), m})
		}
		return s
	}
	for _, tc := range []struct {
		name     string
		skews    []skewed
		measured int
		fleet    string // the fleet warning, "" for none
		each     int    // warnings naming an instance
	}{
		{"none", nil, 10, "", 0},
		{"two of two behind", off(3000, 3000), 2, "", 2},
		{"three of four behind", off(2000, 3000, 4000), 4, "the collector reads late or its clock is ahead: messages of 3 of 4 instances arrive 2.0-4.0 s after their timestamps (median 3.0 s)", 0},
		{"three of five behind", off(2000, 3000, 4000), 5, "", 3},
		{"four of four ahead", off(-2000, -2500, -2600, -9000), 4, "the collector's clock is behind: messages of 4 of 4 instances arrive 2.0-9.0 s before their timestamps (median 2.6 s)", 0},
		{"behind, and one ahead", off(2000, 2000, 2000, -5000), 4, "the collector reads late or its clock is ahead: messages of 3 of 4 instances arrive 2.0-2.0 s after their timestamps (median 2.0 s)", 1},
		{"spread both ways", off(2000, -2000, 3000, -3000), 8, "", 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := warningTexts(clockWarnings(tc.skews, tc.measured))
			each := 0
			for _, w := range got {
				if strings.HasPrefix(w, "clock of ") {
					each++
				}
			}
			want := tc.each
			if tc.fleet != "" {
				want++
			}
			hasFleet := len(got) > 0 && strings.HasPrefix(got[0], "the collector")
			if len(got) != want || each != tc.each || hasFleet != (tc.fleet != "") || hasFleet && got[0] != tc.fleet {
				t.Fatalf("warnings %q: want fleet %q and %d naming an instance", got, tc.fleet, tc.each)
			}
		})
	}
}
