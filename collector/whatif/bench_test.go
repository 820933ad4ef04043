package whatif

import (
	"testing"
)

// BenchmarkReplay replays ten minutes of one instance's traffic at 40
// calls a second (24,000 calls, a brownout of 140 s in them) once through
// core's breaker (the what-if's replay of one rule on one reading) and
// once through sentinel-golang v1.0.4's own slot chain, the same calls.
func BenchmarkReplay(b *testing.B) {
	rule := slowRule(300)
	tr, _ := record(b, "a", rule, brownout, 40, 600_000, 500, 1)
	p, err := prepare(tr, &rule)
	if err != nil {
		b.Fatal(err)
	}
	calls := float64(len(p.calls))
	b.Run("core", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p.arrived[sensitive] = nil // the order worked out again, as a plan's first replay does
			if _, err := p.replay(rule, sensitive); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/calls, "ns/call")
	})
	b.Run("sentinel-golang", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sentinelReplay(b, p, rule, sensitive)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/calls, "ns/call")
	})
}

// BenchmarkCompare is a plan's whole check for three such instances: each
// trace prepared, replayed with the current and the proposed rule on both
// readings, and gated.
func BenchmarkCompare(b *testing.B) {
	rule := slowRule(300)
	var cases []Case
	for i := range 3 {
		tr, _ := record(b, "i", rule, brownout, 40, 600_000, 500, uint64(i))
		prop := rule
		prop.RetryTimeoutMs = 30_000
		cases = append(cases, Case{Trace: tr, Current: rule, Proposed: prop})
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compare(cases); err != nil {
			b.Fatal(err)
		}
	}
}
