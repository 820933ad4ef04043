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

func TestPlayed(t *testing.T) {
	played := 0
	for i := range 23 {
		if Played(i, 5) {
			played++
		} else if !Enabled || i%5 == 0 {
			t.Errorf("case %d of 23 not played (race %v)", i, Enabled)
		}
	}
	want := 23
	if Enabled {
		want = 5 // 0, 5, 10, 15, 20
	}
	if played != want || !Played(0, 5) || !Played(7, 1) {
		t.Errorf("%d of 23 played, want %d (race %v)", played, want, Enabled)
	}
}
