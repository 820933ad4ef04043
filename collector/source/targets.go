package source

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// DefaultStreamPath is where agents serve the stream.
const DefaultStreamPath = "/sentinel/stream"

// MaxTargets bounds how many targets one collector dials.
const MaxTargets = 10000

// MaxTokenBytes bounds a target's bearer token (a token file larger is
// refused).
const MaxTokenBytes = 4096

// Target is one stream to dial.
type Target struct {
	// Name is the target as the user wrote it, without its token.
	Name string
	// URL is the websocket URL dialed.
	URL string
	// token is the bearer token sent to this target alone ("": the
	// default, DialOptions.Token), from its --targets file line. It is
	// never printed: String and GoString show the Name.
	token string
}

// String is the target's name: a Target printed shows no token.
func (t Target) String() string { return t.Name }

// GoString is String, for %#v.
func (t Target) GoString() string { return strconv.Quote(t.Name) }

// HasToken reports whether the target has a token of its own.
func (t Target) HasToken() bool { return t.token != "" }

// ParseTargets parses a --targets value: a comma-separated list of
// HOST:PORT, ws:// or wss:// URLs, and @FILE references (targets
// separated by commas or spaces, # comments, blank lines ignored).
// HOST:PORT means ws://HOST:PORT/sentinel/stream; a URL without a path
// gets that path. Duplicates are removed, keeping the first.
//
// A file's line may give its targets a bearer token of their own:
// token=TOKEN, or token-file=PATH (the token is the file's content,
// surrounding spaces and newlines left out; a relative PATH is from the
// targets file's folder). Those targets are sent that token and no other;
// the others get DialOptions.Token. A token is never taken from the
// command line, where process listings show it.
func ParseTargets(spec string) ([]Target, error) {
	var out []Target
	seen := map[string]int{}
	var add func(item, where, token string, depth int) error
	add = func(item, where, token string, depth int) error {
		item = strings.TrimSpace(item)
		if item == "" {
			return nil
		}
		if file, ok := strings.CutPrefix(item, "@"); ok {
			if depth > 0 {
				return fmt.Errorf("%s: @%s: target files cannot include other files", where, file)
			}
			return addFile(file, func(line, place, token string) error { return add(line, place, token, depth+1) })
		}
		if isTokenItem(item) {
			return fmt.Errorf("%sa target's token goes on its line of a --targets @FILE (token=... or token-file=...), not on the command line", where)
		}
		t, err := parseTarget(item)
		if err != nil {
			return fmt.Errorf("%s%w", where, err)
		}
		if token != "" && isJavaTarget(t) {
			return fmt.Errorf("%starget %q: the Java command API takes no token", where, t.Name)
		}
		t.token = token
		if i, ok := seen[t.URL]; ok {
			if out[i].token != token {
				return fmt.Errorf("%starget %q: listed again with another token", where, t.Name)
			}
			return nil
		}
		seen[t.URL] = len(out)
		out = append(out, t)
		if len(out) > MaxTargets {
			return fmt.Errorf("more than %d targets", MaxTargets)
		}
		return nil
	}
	for _, item := range strings.Split(spec, ",") {
		if err := add(item, "", "", 0); err != nil {
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no targets in %q", spec)
	}
	return out, nil
}

// isTokenItem reports whether a --targets item gives a token.
func isTokenItem(item string) bool {
	return strings.HasPrefix(item, "token=") || strings.HasPrefix(item, "token-file=")
}

// addFile adds the targets of a targets file, each with its line's token
// ("": none).
func addFile(path string, add func(item, place, token string) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("targets file: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 4096), 64<<10)
	for n := 1; sc.Scan(); n++ {
		place := fmt.Sprintf("%s:%d: ", path, n)
		line, _, _ := strings.Cut(sc.Text(), "#")
		var items []string
		token, tokens := "", 0
		for _, item := range strings.FieldsFunc(line, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
			if !isTokenItem(item) {
				items = append(items, item)
				continue
			}
			if tokens++; tokens > 1 {
				return fmt.Errorf("%smore than one token on the line", place)
			}
			if token, err = lineToken(path, item); err != nil {
				return fmt.Errorf("%s%w", place, err)
			}
		}
		if tokens > 0 && len(items) == 0 {
			return fmt.Errorf("%sa token with no target on its line", place)
		}
		for _, item := range items {
			if err := add(item, place, token); err != nil {
				return err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("targets file %s: %w", path, err)
	}
	return nil
}

// lineToken is the token a targets file's token= or token-file= item
// gives. Its errors never quote the token.
func lineToken(file, item string) (string, error) {
	token, ok := strings.CutPrefix(item, "token=")
	if !ok {
		path, _ := strings.CutPrefix(item, "token-file=")
		if path == "" {
			return "", errors.New("token-file= names no file")
		}
		if !filepath.IsAbs(path) {
			path = filepath.Join(filepath.Dir(file), path)
		}
		f, err := os.Open(path)
		if err != nil {
			return "", fmt.Errorf("token file: %w", err)
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, MaxTokenBytes+2))
		if err != nil {
			return "", fmt.Errorf("token file %s: %w", path, err)
		}
		token = strings.TrimSpace(string(b))
		if len(b) > MaxTokenBytes+1 {
			return "", fmt.Errorf("token file %s: over %d bytes", path, MaxTokenBytes)
		}
		item = "token file " + path
	} else {
		item = "token="
	}
	switch {
	case token == "":
		return "", fmt.Errorf("%s: empty token", item)
	case len(token) > MaxTokenBytes:
		return "", fmt.Errorf("%s: over %d bytes", item, MaxTokenBytes)
	case strings.ContainsFunc(token, func(r rune) bool { return r <= ' ' || r > '~' }):
		return "", fmt.Errorf("%s: the token holds other characters than visible ASCII", item)
	}
	return token, nil
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
			return Target{}, fmt.Errorf("target %q: put credentials in a --targets file line (token= or token-file=) or --token, not in the URL", s)
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
