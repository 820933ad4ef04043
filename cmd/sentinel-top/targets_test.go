package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sentinel-top/sentinel-top/agent"
)

// TestReportOfTwoTargetsWithTheirOwnTokensAndOneName: two real agents,
// each requiring its own token, both calling themselves order-1; the
// targets file gives each its token (one by token-file=) and --token a
// third that neither takes. The report reaches both (a target sent
// another's token, or the default, would be down with a 401), keeps the
// two instances apart under a warning naming both targets, and shows no
// token anywhere.
func TestReportOfTwoTargetsWithTheirOwnTokensAndOneName(t *testing.T) {
	secrets := []string{"alpha-secret-1", "bravo-secret-2", "shared-secret-3"}
	var addrs []string
	for i := range 2 {
		a, err := agent.New(agent.Options{App: "order", Instance: "order-1", Token: secrets[i]})
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, busyAgent(t, a))
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "b.token"), []byte(secrets[1]+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "targets.txt")
	if err := os.WriteFile(file, []byte(fmt.Sprintf("%s token=%s\n%s token-file=b.token\n", addrs[0], secrets[0], addrs[1])), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd(t, "report", "--targets", "@"+file, "--token", secrets[2], "--for", "2s")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if strings.Contains(out+errOut, "target "+addrs[0]+":") || strings.Contains(out+errOut, "target "+addrs[1]+":") {
		t.Fatalf("a target is down:\nstdout %s\nstderr %s", out, errOut)
	}
	warn := fmt.Sprintf("targets %s and %s both announce instance \"order-1\"", addrs[0], addrs[1])
	if alt := fmt.Sprintf("targets %s and %s both announce instance \"order-1\"", addrs[1], addrs[0]); !strings.Contains(errOut, warn) {
		warn = alt // whichever said hello first keeps the name
	}
	if !strings.Contains(errOut, warn) || !strings.Contains(out, warn) {
		t.Fatalf("no conflict warning:\nstdout %s\nstderr %s", out, errOut)
	}
	if !strings.Contains(out, "2 instances") {
		t.Errorf("the two instances are not apart:\n%s", out)
	}
	for _, s := range secrets {
		if strings.Contains(out+errOut, s) {
			t.Errorf("the report shows a token:\nstdout %s\nstderr %s", out, errOut)
		}
	}
}
