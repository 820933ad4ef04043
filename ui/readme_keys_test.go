package ui

import (
	"flag"
	"os"
	"strings"
	"testing"
)

// The README's key table is the keymap's: every binding of every group
// (the replay's too), every key of each, and what the mouse does. A key
// added to keyMap's FullHelp without its line in the README fails here;
//
//	go test ./ui -run TestReadmeListsEveryKey -update
//
// rewrites the table between its markers.

const (
	readmePath       = "../README.md"
	readmeKeysBegin  = "<!-- keys: generated from ui/keys.go, checked by ui.TestReadmeListsEveryKey -->\n"
	readmeKeysFinish = "<!-- /keys -->\n"
)

// readmeKeys renders the README's table of keys from a keymap.
func readmeKeys(k *keyMap) string {
	var b strings.Builder
	b.WriteString("| | keys | what they do |\n|---|---|---|\n")
	for i, g := range k.FullHelp() {
		for j, kb := range g {
			group := ""
			if j == 0 {
				group = strings.ToLower(helpGroupName(i))
				if group == "replay" {
					group = "replay (while replaying)"
				}
			}
			var keys []string
			for _, key := range keyList(kb) {
				keys = append(keys, "`"+strings.ReplaceAll(key, "|", `\|`)+"`")
			}
			b.WriteString("| " + group + " | " + strings.Join(keys, " ") + " | " + kb.Help().Desc + " |\n")
		}
	}
	b.WriteString("\nThe mouse, " + mouseSwitch + ":\n\n")
	for _, l := range mouseHelp() {
		b.WriteString("- " + strings.TrimSpace(l[0]) + ": " + l[1] + "\n")
	}
	return b.String()
}

func TestReadmeListsEveryKey(t *testing.T) {
	raw, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	from := strings.Index(readme, readmeKeysBegin)
	to := strings.Index(readme, readmeKeysFinish)
	if from < 0 || to < from {
		t.Fatalf("README.md has no key table between %q and %q", readmeKeysBegin, readmeKeysFinish)
	}
	from += len(readmeKeysBegin)
	want := readmeKeys(newKeyMap())
	if got := readme[from:to]; got != want {
		if f := flag.Lookup("update"); f != nil && f.Value.String() == "true" {
			if err := os.WriteFile(readmePath, []byte(readme[:from]+want+readme[to:]), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("README.md's key table differs from the keymap (go test ./ui -run TestReadmeListsEveryKey -update rewrites it):\n got:\n%s\nwant:\n%s", got, want)
	}
	// and the table names every key the help screen names.
	m := newTestModel(goldenSource(), 200, 50)
	press(m, "?")
	help := screenText(m)
	for _, g := range m.keys.FullHelp() {
		for _, b := range g {
			if !b.Enabled() {
				continue
			}
			if !strings.Contains(help, keyNames(b)+" ") {
				t.Errorf("the help screen lacks %s", keyNames(b))
			}
			for _, key := range b.Keys() {
				if !strings.Contains(want, "`"+keyName(key)+"`") {
					t.Errorf("the README lacks the key %s (%s)", keyName(key), b.Help().Desc)
				}
			}
		}
	}
}
