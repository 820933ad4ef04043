package metriclog

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Source is one process's metric log: a day's file and its rotations.
type Source struct {
	// Paths are the files, in any order (ConvertFiles sorts them).
	Paths []string
	// App and Instance name the process; empty: see Group.
	App, Instance string
}

// Group sorts metric log files into the processes that wrote them, one
// Source each, in the order first named: files of one directory with the
// same app and pid in their names (APP-metrics.log[.pidPID].DATE[.N]) are
// one process's rotations; anything else is another process, even under
// the same name in another directory (two hosts' logs copied side by side)
// or without a pid beside one with a pid. Never merging two processes is
// the point: their seconds would collide and their counts mix.
//
// A spec is a path, or PATH@INSTANCE to name the instance of the process
// whose file it is (an '@' followed by a path separator is part of the
// path, as is the whole spec when a file by that name exists). Otherwise an
// instance is named by Identify (app, or app-pidPID); when two processes
// would get one name, each takes its directory's name after an '@'
// (price-service@host-a), or its whole directory when those are alike too.
func Group(specs []string) ([]Source, error) {
	type group struct {
		src   Source
		dir   string
		named bool
	}
	var groups []*group
	byKey := map[string]*group{}
	seen := map[string]bool{}
	for _, spec := range specs {
		path, name := SplitSpec(spec)
		clean := filepath.Clean(path)
		if seen[clean] {
			continue // the same file twice would double every count
		}
		seen[clean] = true
		dir := filepath.Dir(clean)
		key := "file\x00" + clean
		if app, pid, _, ok := ParseFileName(clean); ok {
			key = fmt.Sprintf("log\x00%s\x00%s\x00%d", dir, app, pid)
		}
		g := byKey[key]
		if g == nil {
			g = &group{dir: dir}
			g.src.App, g.src.Instance = Identify(clean)
			byKey[key] = g
			groups = append(groups, g)
		}
		g.src.Paths = append(g.src.Paths, path)
		if name != "" {
			if g.named && g.src.Instance != name {
				return nil, fmt.Errorf("%s: named %q, but another file of the same process is named %q", spec, name, g.src.Instance)
			}
			g.src.Instance, g.named = name, true
		}
	}
	// Processes that would share a name take their directory's.
	for _, whole := range []bool{false, true} {
		count := map[string]int{}
		for _, g := range groups {
			count[g.src.Instance]++
		}
		for _, g := range groups {
			if count[g.src.Instance] > 1 && !g.named {
				base, _, _ := strings.Cut(g.src.Instance, "@")
				where := filepath.Base(g.dir)
				if whole {
					where = g.dir
				}
				g.src.Instance = base + "@" + where
			}
		}
	}
	out := make([]Source, len(groups))
	names := map[string]string{}
	for i, g := range groups {
		if first, ok := names[g.src.Instance]; ok {
			return nil, fmt.Errorf("%s and %s are different processes with one instance name %q: name them apart with @NAME",
				first, g.src.Paths[0], g.src.Instance)
		}
		names[g.src.Instance] = g.src.Paths[0]
		out[i] = g.src
	}
	return out, nil
}

// SplitSpec splits a Group spec, PATH@INSTANCE or PATH, into the path and
// the instance name ("" when none).
func SplitSpec(spec string) (path, name string) {
	i := strings.LastIndexByte(spec, '@')
	if i < 0 || strings.ContainsAny(spec[i+1:], `/\`) {
		return spec, ""
	}
	if _, err := os.Stat(spec); err == nil {
		return spec, ""
	}
	return spec[:i], strings.TrimSpace(spec[i+1:])
}

// IndexOf reports whether name is the index Java Sentinel writes beside a
// metric log (APP-metrics.log...DATE.idx, binary), and returns the log's
// name.
func IndexOf(name string) (log string, ok bool) {
	log, ok = strings.CutSuffix(name, ".idx")
	if !ok {
		return "", false
	}
	_, _, _, ok = ParseFileName(log)
	return log, ok
}
