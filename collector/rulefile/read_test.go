package rulefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sentinel-top/sentinel-top/internal/fifo"
)

// TestReadFileBounded: a file over the bound is refused with its size and
// the bound; one at the bound is read.
func TestReadFileBounded(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rules.json")
	data := `[{"resource":"a","count":10}]`
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	if rules, f, err := ReadFile(path, FormatAuto, int64(len(data))); err != nil || f != FormatJavaFlow || len(rules.Flows) != 1 {
		t.Fatalf("%+v %v %v", rules, f, err)
	}
	_, _, err := ReadFile(path, FormatAuto, int64(len(data)-1))
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "29 bytes, over the limit of 28 bytes") || !strings.Contains(err.Error(), path) {
		t.Errorf("%v", err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, make([]byte, DefaultMaxBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadFile(big, FormatAuto, 0); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "limit of 4194304 bytes") {
		t.Errorf("%v", err)
	}
	// A parse error names the file.
	if err := os.WriteFile(path, []byte(`{"rules":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadFile(path, FormatAuto, 0); !errors.Is(err, ErrSyntax) || !strings.HasPrefix(err.Error(), path+": ") {
		t.Errorf("%v", err)
	}
	if _, _, err := ReadFile(filepath.Join(dir, "missing.json"), FormatAuto, 0); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%v", err)
	}
}

// TestReadFileRegularOnly: a directory, a device and a named pipe are
// refused, the pipe without blocking though no one writes to it; a
// symbolic link to a rule file is followed.
func TestReadFileRegularOnly(t *testing.T) {
	dir := t.TempDir()
	paths := map[string]string{dir: "a directory"}
	if _, err := os.Stat(os.DevNull); err == nil && os.DevNull == "/dev/null" {
		paths[os.DevNull] = "a device"
	}
	pipe := filepath.Join(dir, "rules.fifo")
	if err := fifo.Make(pipe, 0o600); err == nil {
		paths[pipe] = "a named pipe"
	} else {
		t.Logf("no named pipe here: %v", err)
	}
	for path, what := range paths {
		done := make(chan error, 1)
		go func() {
			_, _, err := ReadFile(path, FormatJavaFlow, 0)
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), what) {
				t.Errorf("%s: %v, want %s", path, err, what)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: ReadFile blocked", path)
		}
	}
	link := filepath.Join(dir, "link.json")
	target, err := filepath.Abs(filepath.Join("testdata", "java-flow.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	if rules, f, err := ReadFile(link, FormatAuto, 0); err != nil || f != FormatJavaFlow || len(rules.Flows) != 4 {
		t.Errorf("through a link: %v %v", f, err)
	}
}
