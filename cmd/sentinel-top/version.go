package main

import (
	"fmt"
	"runtime/debug"
)

// version is set at build time with -ldflags "-X main.version=..."; without
// it the module version from the build info is used.
var version = ""

// baseVersion is the release the source is heading for.
const baseVersion = "0.4.0"

func versionString() string {
	v := version
	if bi, ok := debug.ReadBuildInfo(); ok && v == "" {
		v = bi.Main.Version
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 && (v == "" || v == "(devel)") {
				v = "devel-" + s.Value[:12]
			}
		}
	}
	if v == "" || v == "(devel)" {
		v = baseVersion + "-dev" // built from source, unstamped
	}
	return fmt.Sprintf("sentinel-top %s", v)
}
