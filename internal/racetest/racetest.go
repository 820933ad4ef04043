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
