package racetest

// Cases is how many of n cases a property test plays: all of them, or a
// fifth (at least one) under the race detector.
func Cases(n int) int {
	if Enabled && n > 0 {
		return max(1, n/5)
	}
	return n
}
