package english

// Plural is one when n is 1, many otherwise: Plural(n, "process", "processes").
func Plural[N ~int | ~int64](n N, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
