package racetest

import "testing"

func TestCases(t *testing.T) {
	for _, c := range []struct{ n, race, plain int }{{40, 8, 40}, {5000, 1000, 5000}, {4, 1, 4}, {1, 1, 1}, {0, 0, 0}} {
		want := c.plain
		if Enabled {
			want = c.race
		}
		if got := Cases(c.n); got != want {
			t.Errorf("Cases(%d) = %d, want %d (race %v)", c.n, got, want, Enabled)
		}
		// A tenth of twice as many is a fifth: Cases's share under -race.
		want = 2 * c.n
		if Enabled {
			want = c.race
		}
		if got := Share(2*c.n, 10); got != want {
			t.Errorf("Share(%d, 10) = %d, want %d (race %v)", 2*c.n, got, want, Enabled)
		}
	}
}
