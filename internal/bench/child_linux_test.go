package bench

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
)

// quietReader reads an agents' process's pipe as the file would be read:
// every line, written in pieces of any size, then the end; a reader that
// is not a pipe the runtime's poller watches is read as it is.
func TestQuietReaderReadsThePipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	q := quietReader(r)
	if _, ok := q.(*rawPipe); !ok {
		t.Fatalf("a pipe read through %T", q)
	}
	var want strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&want, `{"kind":"transition","agent":%d}`+"\n", i)
	}
	go func() {
		b := []byte(want.String())
		for len(b) > 0 {
			n := min(len(b), 1+len(b)%4093)
			w.Write(b[:n])
			b = b[n:]
		}
		w.Close()
	}()
	var got strings.Builder
	sc := bufio.NewScanner(q)
	for sc.Scan() {
		got.WriteString(sc.Text() + "\n")
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() {
		t.Fatalf("read %d bytes of %d, or not the same", got.Len(), want.Len())
	}
	if n, err := q.Read(make([]byte, 8)); n != 0 || err != io.EOF {
		t.Fatalf("after the end: %d, %v", n, err)
	}
	s := strings.NewReader("x")
	if q := quietReader(s); q != io.Reader(s) {
		t.Fatalf("a %T read through %T", s, q)
	}
}
