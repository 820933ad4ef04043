package english

import "testing"

func TestPlural(t *testing.T) {
	for n, want := range map[int]string{0: "processes", 1: "process", 2: "processes", -1: "processes"} {
		if got := Plural(n, "process", "processes"); got != want {
			t.Errorf("Plural(%d) = %q, want %q", n, got, want)
		}
	}
	if got := Plural(int64(1), "line", "lines"); got != "line" {
		t.Errorf("Plural(int64(1)) = %q", got)
	}
}
