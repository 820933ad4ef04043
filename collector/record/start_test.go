package record

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/sentinel-top/sentinel-top/core/wire"
)

// TestStart: Start creates the recording as Create does, with the meta
// its first line, and closes the file when the meta cannot be written.
func TestStart(t *testing.T) {
	meta := &wire.Meta{Header: wire.Header{Ts: 1764460800000}, Title: "recorded 2025-11-30T00:00:00Z", RecordedBy: "sentinel-top 0.4.0"}
	bad := &wire.Meta{Header: wire.Header{Ts: 1764460800000}, Extra: map[string]json.RawMessage{"title": json.RawMessage(`"twice"`)}}
	const old = "an older recording\n"
	for _, tc := range []struct {
		name      string
		file      string
		existing  bool // the path holds old before Start
		overwrite bool
		meta      *wire.Meta
		want      error // errors.Is; nil for a recording
	}{
		{name: "new", file: "rec.ndjson", meta: meta},
		{name: "new, gzip", file: "rec.ndjson.gz", meta: meta},
		{name: "overwritten", file: "rec.ndjson", existing: true, overwrite: true, meta: meta},
		{name: "existing", file: "rec.ndjson", existing: true, meta: meta, want: ErrExists},
		{name: "no directory", file: "gone/rec.ndjson", meta: meta, want: fs.ErrNotExist},
		{name: "no meta", file: "rec.ndjson", meta: nil, want: wire.ErrEncode},
		{name: "a meta that cannot be written", file: "rec.ndjson.gz", meta: bad, want: wire.ErrEncode},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tc.file)
			if tc.existing {
				if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			w, err := Start(path, tc.overwrite, tc.meta)
			if tc.want != nil {
				if w != nil || !errors.Is(err, tc.want) {
					t.Fatalf("Start: %v, %v; want %v", w, err, tc.want)
				}
				if open, ok := openFile(path); ok && open {
					t.Errorf("%s still open after %v", path, err)
				}
				if b, _ := os.ReadFile(path); tc.existing && string(b) != old {
					t.Errorf("the existing file now holds %q", b)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Write(&wire.Bye{Header: wire.Header{Ts: 1764460801000, Instance: "gateway-3"}}); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			r, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			var kinds []wire.Kind
			for m, err := range r.All() {
				if err != nil {
					t.Fatal(err)
				}
				kinds = append(kinds, m.Kind())
			}
			if got := r.Meta(); got == nil || got.Title != meta.Title || got.RecordedBy != meta.RecordedBy || got.Ts != meta.Ts {
				t.Errorf("meta %+v, want %+v", got, meta)
			}
			if len(kinds) != 2 || kinds[0] != wire.KindMeta || kinds[1] != wire.KindBye {
				t.Errorf("read back %v, want the meta, then the bye", kinds)
			}
		})
	}
}

// openFile says whether this process holds a file open at path, when the
// system tells (/proc/self/fd).
func openFile(path string) (open, ok bool) {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return false, false
	}
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && target == path {
			return true, true
		}
	}
	return false, true
}
