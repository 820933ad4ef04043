package record_test

import (
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/sentinel-top/sentinel-top/collector/record"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// A recording is created once: a second Create of the same path is
// refused unless it is told to overwrite.
func ExampleCreate() {
	dir, err := os.MkdirTemp("", "record-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "incident.ndjson.gz") // .gz: compressed

	w, err := record.Create(path, false)
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range []wire.Message{
		&wire.Meta{Header: wire.Header{Ts: 1764460800000}, Title: "an incident"},
		&wire.Hello{Header: wire.Header{Ts: 1764460800000, Instance: "gateway-3"}, BucketMs: 500},
	} {
		if err := w.Write(m); err != nil {
			log.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		log.Fatal(err)
	}

	_, err = record.Create(path, false)
	fmt.Println(errors.Is(err, record.ErrExists))
	// Output: true
}

// A recording is read back message by message, each with its file:line; a
// bad line is reported and reading goes on.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "record-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "incident.ndjson")
	err = os.WriteFile(path, []byte(`{"v":1,"kind":"meta","ts":1764460800000,"title":"an incident"}
{"v":1,"kind":"hello","ts":1764460800000,"instance":"gateway-3","bucketMs":500}
{"v":1,"kind":"bye","ts":1764460800000}
`), 0o644)
	if err != nil {
		log.Fatal(err)
	}

	r, err := record.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	for msg, err := range r.All() {
		if err != nil {
			fmt.Println("line", r.Pos().Line, "rejected:", errors.Unwrap(err))
			continue
		}
		fmt.Println("line", r.Pos().Line, msg.Kind())
	}
	fmt.Println("title:", r.Meta().Title)
	// Output:
	// line 1 meta
	// line 2 hello
	// line 3 rejected: wire: bye instance: missing
	// title: an incident
}

// A recording begins with its meta line: Start creates the file and
// writes it.
func ExampleStart() {
	dir, err := os.MkdirTemp("", "record-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "incident.ndjson")

	w, err := record.Start(path, false, &wire.Meta{Header: wire.Header{Ts: 1764460800000},
		Title: "recorded 2025-11-30T00:00:00Z", RecordedBy: "sentinel-top 0.4.0"})
	if err != nil {
		log.Fatal(err)
	}
	if err := w.Write(&wire.Bye{Header: wire.Header{Ts: 1764460860000, Instance: "gateway-3"}}); err != nil {
		log.Fatal(err)
	}
	if err := w.Close(); err != nil {
		log.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(string(b))
	// Output:
	// {"v":1,"kind":"meta","ts":1764460800000,"title":"recorded 2025-11-30T00:00:00Z","recordedBy":"sentinel-top 0.4.0"}
	// {"v":1,"kind":"bye","ts":1764460860000,"instance":"gateway-3"}
}
