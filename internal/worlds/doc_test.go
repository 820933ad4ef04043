package worlds_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/sentinel-top/sentinel-top/internal/worlds"
)

// A downstream down for a minute answers every call in it with a failure.
func ExampleDown() {
	w := worlds.Down(60_000, 120_000, 0)
	r := rand.New(rand.NewPCG(1, 2))
	rt, failed := w(90_000, r)
	fmt.Println(rt, failed)
	_, failed = w(130_000, r)
	fmt.Println(failed)
	// Output:
	// 2000 true
	// false
}
