package source

import (
	"bufio"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
)

// DefaultStreamPath is where agents serve the stream.
const DefaultStreamPath = "/sentinel/stream"

// MaxTargets bounds how many targets one collector dials.
const MaxTargets = 10000

// Target is one stream to dial.
type Target struct {
	// Name is the target as the user wrote it.
	Name string
	// URL is the websocket URL dialed.
	URL string
}

// ParseTargets parses a --targets value: a comma-separated list of
// HOST:PORT, ws:// or wss:// URLs, and @FILE references (one target per
// line, # comments, blank lines ignored). HOST:PORT means
// ws://HOST:PORT/sentinel/stream; a URL without a path gets that path.
// Duplicates are removed, keeping the first.
func ParseTargets(spec string) ([]Target, error) {
	var out []Target
	seen := map[string]bool{}
	var add func(item, where string, depth int) error
	add = func(item, where string, depth int) error {
		item = strings.TrimSpace(item)
		if item == "" {
			return nil
		}
		if file, ok := strings.CutPrefix(item, "@"); ok {
			if depth > 0 {
				return fmt.Errorf("%s: @%s: target files cannot include other files", where, file)
			}
			return addFile(file, func(line, place string) error { return add(line, place, depth+1) })
		}
		t, err := parseTarget(item)
		if err != nil {
			return fmt.Errorf("%s%w", where, err)
		}
		if !seen[t.URL] {
			seen[t.URL] = true
			out = append(out, t)
			if len(out) > MaxTargets {
				return fmt.Errorf("more than %d targets", MaxTargets)
			}
		}
		return nil
	}
	for _, item := range strings.Split(spec, ",") {
		if err := add(item, "", 0); err != nil {
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no targets in %q", spec)
	}
	return out, nil
}

func addFile(path string, add func(line, place string) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("targets file: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 4096), 64<<10)
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		for _, item := range strings.FieldsFunc(line, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
			if err := add(item, fmt.Sprintf("%s:%d: ", path, n)); err != nil {
				return err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("targets file %s: %w", path, err)
	}
	return nil
}

func parseTarget(s string) (Target, error) {
	if strings.ContainsAny(s, " \t\r\n") || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return Target{}, fmt.Errorf("target %q: contains spaces or control characters", s)
	}
	if strings.Contains(s, "://") {
		u, err := url.Parse(s)
		if err != nil {
			return Target{}, fmt.Errorf("target %q: %w", s, err)
		}
		switch u.Scheme {
		case "ws", "wss":
		case "http":
			u.Scheme = "ws"
		case "https":
			u.Scheme = "wss"
		case JavaScheme: // Java Sentinel's command API, polled (javatransport.go)
			return parseJavaTarget(s, u)
		default:
			return Target{}, fmt.Errorf("target %q: scheme %q is not ws or wss", s, u.Scheme)
		}
		if u.Host == "" {
			return Target{}, fmt.Errorf("target %q: no host", s)
		}
		if u.Path == "" || u.Path == "/" {
			u.Path = DefaultStreamPath
		}
		if u.User != nil {
			return Target{}, fmt.Errorf("target %q: put credentials in --token, not in the URL", s)
		}
		return Target{Name: s, URL: u.String()}, nil
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return Target{}, fmt.Errorf("target %q: want HOST:PORT, ws://... or wss://...: %w", s, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	if p, err := net.LookupPort("tcp", port); err != nil || p <= 0 || p > 65535 {
		return Target{}, fmt.Errorf("target %q: bad port %q", s, port)
	}
	return Target{Name: s, URL: "ws://" + net.JoinHostPort(host, port) + DefaultStreamPath}, nil
}
