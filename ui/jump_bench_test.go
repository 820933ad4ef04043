package ui

import (
	"strconv"
	"testing"

	"github.com/sentinel-top/sentinel-top/collector"
)

// jumpFleet is a large fleet's snapshot: 100 apps of 500 resources, and
// 10,000 instances with 20 breakers each.
func jumpFleet() *collector.Snapshot {
	s := testSnapshot()
	s.Rows = nil
	for a := 0; a < 100; a++ {
		for r := 0; r < 500; r++ {
			s.Rows = append(s.Rows, collector.ResourceRow{App: "app-" + strconv.Itoa(a), Resource: "GET:/res/" + strconv.Itoa(r)})
		}
	}
	for i := 0; i < 10_000; i++ {
		for r := 0; r < 20; r++ {
			s.Breakers = append(s.Breakers, collector.BreakerState{App: "app-" + strconv.Itoa(i%100),
				Resource: "GET:/res/" + strconv.Itoa(r), Instance: "inst-" + strconv.Itoa(i)})
		}
	}
	return s
}

// BenchmarkJumpOpen is : on a large fleet: its 60,100 candidates taken
// from the snapshot and sorted.
func BenchmarkJumpOpen(b *testing.B) {
	m := newTestModel(newStaticSource(jumpFleet()), 120, 40)
	j := newJumpScreen(m.common)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		j.Open(m.main)
	}
}

// BenchmarkJumpKeystroke is a key typed in the prompt on a large fleet:
// the candidates matched again and the frame drawn.
func BenchmarkJumpKeystroke(b *testing.B) {
	m := newTestModel(newStaticSource(jumpFleet()), 120, 40)
	press(m, ":inst-9")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		press(m, "9<backspace>")
		_ = m.View()
	}
}
