package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxCmdLines bounds the command's own code (its files but the tests): it
// wires flags to the packages that do the work, and picks exit codes.
// Code that grows it past the bound belongs in a package with its tests
// (docs/ARCHITECTURE.md).
const maxCmdLines = 1500

func TestCommandOnlyWires(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	total, counted := 0, 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		total += bytes.Count(b, []byte("\n"))
		counted++
	}
	if counted == 0 {
		t.Fatal("no source file of the command found")
	}
	if total > maxCmdLines {
		t.Errorf("the command's %d files are %d lines, over %d: move what is not wiring into a package", counted, total, maxCmdLines)
	}
}
