package source

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// frame encodes one frame as a server sends it: unmasked.
func frame(fin bool, op int, payload []byte) []byte {
	b0 := byte(op)
	if fin {
		b0 |= 0x80
	}
	out := []byte{b0}
	switch n := len(payload); {
	case n < 126:
		out = append(out, byte(n))
	case n < 1<<16:
		out = append(out, 126)
		out = binary.BigEndian.AppendUint16(out, uint16(n))
	default:
		out = append(out, 127)
		out = binary.BigEndian.AppendUint64(out, uint64(n))
	}
	return append(out, payload...)
}

// frameLog records what a frameReader hands on, one line each.
type frameLog struct{ got []string }

func (l *frameLog) message(kind int, data []byte) error {
	l.got = append(l.got, fmt.Sprintf("message %d %d %x", kind, len(data), data[:min(len(data), 16)]))
	return nil
}

func (l *frameLog) control(op int, data []byte) error {
	l.got = append(l.got, fmt.Sprintf("control %d %q", op, data))
	if op == opClose {
		return closeError(data)
	}
	return nil
}

// aStream is every kind of frame a server may send: whole messages of the
// three length encodings, a fragmented one with control frames between its
// fragments, and a close at the end.
func aStream() ([]byte, []string) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 70000/16) // 64-bit length
	mid := bytes.Repeat([]byte{'m'}, 300)                     // 16-bit length
	var s []byte
	s = append(s, frame(true, opText, []byte(`{"v":1}`))...)
	s = append(s, frame(true, opBinary, mid)...)
	s = append(s, frame(false, opText, []byte("frag-1,"))...)
	s = append(s, frame(true, opPing, []byte("p1"))...)
	s = append(s, frame(false, opContinuation, mid)...)
	s = append(s, frame(true, opPong, nil)...)
	s = append(s, frame(true, opContinuation, []byte(",end"))...)
	s = append(s, frame(true, opText, big)...)
	s = append(s, frame(true, opText, nil)...)
	s = append(s, frame(true, opClose, []byte{0x03, 0xe8})...)
	joined := append(append([]byte("frag-1,"), mid...), ",end"...)
	var want frameLog
	want.message(opText, []byte(`{"v":1}`))
	want.message(opBinary, mid)
	want.control(opPing, []byte("p1"))
	want.control(opPong, nil)
	want.message(opText, joined)
	want.message(opText, big)
	want.message(opText, nil)
	want.control(opClose, []byte{0x03, 0xe8})
	return s, want.got
}

// feedChunks gives r the stream in chunks, carrying what feed leaves as a
// reader of the socket does, and returns what it handed on and the error it
// ended with.
func feedChunks(r *frameReader, stream []byte, cuts []int) ([]string, error) {
	var log frameLog
	var pend []byte
	prev := 0
	for _, cut := range append(cuts, len(stream)) {
		data := append(pend, stream[prev:cut]...)
		prev = cut
		used, err := r.feed(data, &log)
		if err != nil {
			return log.got, err
		}
		pend = slices.Clone(data[used:])
	}
	if len(pend) > 0 {
		return log.got, fmt.Errorf("%d bytes left over", len(pend))
	}
	return log.got, nil
}

func TestFrameReaderWhateverTheCuts(t *testing.T) {
	stream, want := aStream()
	check := func(cuts []int) {
		t.Helper()
		r := &frameReader{max: 1 << 20}
		got, err := feedChunks(r, stream, cuts)
		if err == nil || err.Error() != "closed by the peer" {
			t.Fatalf("cuts %v: ended with %v, want the close", cuts, err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("cuts %v:\n got %q\nwant %q", cuts, got, want)
		}
		if r.msg != nil {
			t.Fatalf("cuts %v: a fragmented message still held", cuts)
		}
	}
	check(nil)
	for cut := 1; cut < 400; cut++ { // every cut through the first frames
		check([]int{cut})
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		var cuts []int
		for at := 0; ; {
			at += 1 + rng.IntN(5000)
			if at >= len(stream) {
				break
			}
			cuts = append(cuts, at)
		}
		check(cuts)
	}
	// Byte by byte, up to the large frame.
	var cuts []int
	for i := 1; i < 500; i++ {
		cuts = append(cuts, i)
	}
	check(cuts)
}

func TestFrameReaderNeedsTheFrameWhole(t *testing.T) {
	f := frame(true, opText, bytes.Repeat([]byte{'x'}, 70000))
	r := &frameReader{max: 1 << 20}
	used, err := r.feed(f[:100], &frameLog{})
	if used != 0 || err != nil || r.need != len(f) {
		t.Fatalf("used %d, err %v, need %d; want 0, nil, %d", used, err, r.need, len(f))
	}
	if used, _ := r.feed(f[:1], &frameLog{}); used != 0 || r.need != 0 {
		t.Fatalf("one byte: need %d, want 0 (the header is not read yet)", r.need)
	}
}

func TestFrameReaderRefusesWhatNoServerSends(t *testing.T) {
	masked := frame(true, opText, []byte("hi"))
	masked[1] |= 0x80
	masked = slices.Insert(masked, 2, 1, 2, 3, 4)
	rsv := frame(true, opText, []byte("hi"))
	rsv[0] |= 0x40
	huge := []byte{0x81, 127, 0x80, 0, 0, 0, 0, 0, 0, 0}
	cases := []struct {
		name   string
		stream []byte
		want   error
	}{
		{"masked", masked, errProtocol},
		{"reserved bits", rsv, errProtocol},
		{"unknown opcode", frame(true, 3, nil), errProtocol},
		{"continuation first", frame(true, opContinuation, []byte("x")), errProtocol},
		{"text inside a fragmented message", append(frame(false, opText, []byte("a")), frame(true, opText, []byte("b"))...), errProtocol},
		{"fragmented ping", frame(false, opPing, nil), errProtocol},
		{"long ping", frame(true, opPing, make([]byte, 126)), errProtocol},
		{"over the limit", frame(true, opText, make([]byte, 1001)), errReadLimit},
		{"fragments over the limit", append(frame(false, opText, make([]byte, 600)), frame(true, opContinuation, make([]byte, 401))...), errReadLimit},
		{"a 2^63-byte frame", huge, errReadLimit},
	}
	for _, c := range cases {
		r := &frameReader{max: 1000}
		var log frameLog
		_, err := r.feed(c.stream, &log)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
		if len(log.got) != 0 {
			t.Errorf("%s: handed on %q", c.name, log.got)
		}
		r.release()
	}
	// A message exactly at the limit, in fragments, is whole.
	r := &frameReader{max: 1000}
	var log frameLog
	if _, err := r.feed(append(frame(false, opText, make([]byte, 600)), frame(true, opContinuation, make([]byte, 400))...), &log); err != nil || len(log.got) != 1 {
		t.Fatalf("1000 bytes in two fragments at max 1000: %v %q", err, log.got)
	}
}

func TestCloseErrorSaysWhy(t *testing.T) {
	for _, c := range []struct {
		data []byte
		want string
	}{
		{nil, "closed by the peer"},
		{[]byte{0x03, 0xe9}, "closed by the peer"},
		{append([]byte{0x03, 0xf3}, "overloaded"...), "1011"},
	} {
		if got := closeError(c.data).Error(); !strings.Contains(got, c.want) {
			t.Errorf("%x: %q, want %q in it", c.data, got, c.want)
		}
	}
}

// TestHandshakeConnStopsAtTheHeaders: what a target sends right after its
// upgrade response, in the same read, is kept for the stream's reader, not
// taken into the HTTP reader's buffer, whatever the line endings.
func TestHandshakeConnStopsAtTheHeaders(t *testing.T) {
	for _, eol := range []string{"\r\n", "\n"} {
		resp := strings.ReplaceAll("HTTP/1.1 101 Switching Protocols\nUpgrade: websocket\nConnection: Upgrade\n\n", "\n", eol)
		after := frame(true, opText, []byte(`{"v":1,"kind":"hello"}`))
		for _, proxied := range []bool{false, true} {
			var sent []byte
			if proxied {
				sent = []byte("HTTP/1.1 200 Connection established" + eol + eol)
			}
			sent = append(append(sent, resp...), after...)
			client, server := net.Pipe()
			go func() { server.Write(sent); server.Close() }()
			hc := &handshakeConn{Conn: client, left: handshakeLimit, headers: true}
			br := bufio.NewReader(hc)
			if proxied {
				if r, err := http.ReadResponse(br, nil); err != nil || r.StatusCode != 200 {
					t.Fatalf("proxy's answer: %v", err)
				}
			}
			r, err := http.ReadResponse(br, nil)
			if err != nil || r.StatusCode != 101 {
				t.Fatalf("eol %q: %v", eol, err)
			}
			hc.lift()
			if br.Buffered() != 0 {
				t.Fatalf("eol %q proxied %v: the HTTP reader took %d bytes past the response", eol, proxied, br.Buffered())
			}
			if rest := hc.rest(); !bytes.HasPrefix(after, rest) {
				t.Fatalf("eol %q proxied %v: rest %q is not what followed the response", eol, proxied, rest)
			}
			// Read after lift hands out what it holds first.
			if got, _ := io.ReadAll(hc); !bytes.Equal(got, after) {
				t.Fatalf("eol %q proxied %v: after the response %q, want %q", eol, proxied, got, after)
			}
			client.Close()
		}
	}
}

// FuzzFrameReader: whatever bytes a peer sends, cut wherever the reads
// fall, the reader hands on the same messages and ends with the same error
// as when it is given them at once, and holds no more than its limit.
func FuzzFrameReader(f *testing.F) {
	stream, _ := aStream()
	f.Add(stream[:400], uint16(7))
	f.Add(append(frame(false, opText, []byte("ab")), frame(true, opContinuation, []byte("cd"))...), uint16(3))
	f.Add([]byte{0x81, 126, 0x01, 0x00}, uint16(1))
	f.Fuzz(func(t *testing.T, data []byte, step uint16) {
		whole := &frameReader{max: 4096}
		wantLog, wantErr := feedChunks(whole, data, nil)
		var cuts []int
		for at := int(step%997) + 1; at < len(data); at += int(step%997) + 1 {
			cuts = append(cuts, at)
		}
		cut := &frameReader{max: 4096}
		gotLog, gotErr := feedChunks(cut, data, cuts)
		if !slices.Equal(gotLog, wantLog) || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Fatalf("cut every %d:\n got %q, %v\nwant %q, %v", step%997+1, gotLog, gotErr, wantLog, wantErr)
		}
		for _, r := range []*frameReader{whole, cut} {
			if r.msg != nil && len(*r.msg) > r.max {
				t.Fatalf("holds %d bytes, over its %d", len(*r.msg), r.max)
			}
			r.release()
		}
	})
}
