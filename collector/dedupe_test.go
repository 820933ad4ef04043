package collector

import "testing"

func TestDedupeRing(t *testing.T) {
	var d dedupe
	for _, idx := range []int64{10, 11, 12} {
		if dup, old := d.mark(idx); dup || old {
			t.Fatalf("first sight of %d: dup=%v old=%v", idx, dup, old)
		}
	}
	if dup, _ := d.mark(11); !dup {
		t.Fatal("11 again not a duplicate")
	}
	if dup, _ := d.mark(12 + dedupeSpan - 1); dup {
		t.Fatal("a new index reported as duplicate")
	}
	if _, old := d.mark(11); !old {
		t.Fatal("an index a whole span behind was not refused")
	}
	if dup, _ := d.mark(13 + dedupeSpan); dup {
		t.Fatal("slot reused after moving on must be clear")
	}
}
