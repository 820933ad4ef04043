package main

import (
	"io"
)

// builtinFixture opens a fixture embedded in the binary.
func builtinFixture(name string) (io.ReadCloser, bool, error) { return nil, false, nil }

func builtinFixtureNames() []string { return nil }
