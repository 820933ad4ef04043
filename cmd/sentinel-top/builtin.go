package main

import (
	"io"
	"slices"

	"github.com/sentinel-top/sentinel-top/fixtures"
)

// builtinFixture opens a fixture embedded in the binary.
func builtinFixture(name string) (io.ReadCloser, bool, error) {
	if !slices.Contains(fixtures.Names(), name) {
		return nil, false, nil
	}
	rc, err := fixtures.Open(name)
	return rc, true, err
}

func builtinFixtureNames() []string { return fixtures.Names() }
