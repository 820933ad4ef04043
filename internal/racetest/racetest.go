package racetest

// Cases is how many of n cases a property test plays: all of them, or a
// fifth (at least one) under the race detector.
func Cases(n int) int { return Share(n, 5) }

// Share is n, or one k-th of it (at least one) under the race detector:
// for tests whose cases cost more under it than Cases allows.
func Share(n, k int) int {
	if Enabled && n > 0 {
		return max(1, n/k)
	}
	return n
}

// Played reports whether case i of a list (fixtures, steps of a replay) is
// played: every one, or every k-th (the first included) under the race
// detector, for tests of one goroutine's deterministic work, which it
// slows 5 to 20 times and where it finds nothing; .ci/run plays all of
// them without it.
func Played(i, k int) bool { return !Enabled || k <= 1 || i%k == 0 }
