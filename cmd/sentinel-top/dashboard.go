package main

import (
	"context"
	"fmt"
	"io"
)

func dashboard(ctx context.Context, in *inputFlags, noColor bool, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "sentinel-top: the dashboard is not available in this build; use sentinel-top report")
	return exitRuntime
}
