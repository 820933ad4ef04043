package racetest_test

import (
	"fmt"

	"github.com/sentinel-top/sentinel-top/internal/racetest"
)

// A property test of 40 seeds plays 8 of them under -race, all 40 without.
func ExampleCases() {
	played := racetest.Cases(40)
	if racetest.Enabled {
		fmt.Println(played == 8)
	} else {
		fmt.Println(played == 40)
	}
	// Output: true
}
