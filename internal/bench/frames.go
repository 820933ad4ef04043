package bench

import (
	"bytes"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"time"

	"github.com/sentinel-top/sentinel-top/agent"
)

// wireCount counts what the agents write to their stream connections, read
// from the websocket frames on the agents' side: every data message, the
// buckets messages among them, and the items of those. It also counts how
// those connections failed on the agents' side: a write that timed out (the
// collector did not read for the agent's WriteTimeout), a read that timed
// out (no pong for the agent's PongTimeout or three ping intervals), and
// any other error of a read or write.
type wireCount struct {
	messages, buckets, items atomic.Int64

	writeTimeouts, readTimeouts, connErrors atomic.Int64
	// firstPongTimeouts are the read timeouts within a ping interval of
	// the upgrade: no answer to the first ping (the agent's PongTimeout).
	firstPongTimeouts atomic.Int64
}

// failed counts err, the error of a read or write on an agent's connection.
func (w *wireCount) failed(err error, write bool) {
	var ne net.Error
	switch {
	case err == nil:
	case errors.As(err, &ne) && ne.Timeout() && write:
		w.writeTimeouts.Add(1)
	case errors.As(err, &ne) && ne.Timeout():
		w.readTimeouts.Add(1)
	case errors.Is(err, net.ErrClosed):
		// closed by the agent itself: counted by its cause, if it was one
	default:
		w.connErrors.Add(1)
	}
}

func (w *wireCount) load() (messages, buckets, items int64) {
	return w.messages.Load(), w.buckets.Load(), w.items.Load()
}

// countingListener hands out connections whose writes are counted.
type countingListener struct {
	net.Listener
	count *wireCount
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, scan: frameScanner{count: l.count}}, nil
}

// countingConn scans what is written through it. The websocket library
// writes from one goroutine at a time (the upgrade response, then frames
// under its write lock). Its writes reach the socket unchanged, one
// write(2) each; only a message over the 32 KB write buffer, which the
// library would hand to writev, goes out as two writes.
//
// A connection whose first response is not the upgrade (101) is a plain
// HTTP one, such as a scrape of the agent's metrics page: nothing of it
// is counted.
type countingConn struct {
	net.Conn
	scan       frameScanner
	upgraded   atomic.Bool  // the upgrade response has been written
	upgradedAt atomic.Int64 // when, Unix ns
	decided    bool         // the first response's status line was seen (Write's alone)
	plain      atomic.Bool  // it was not the upgrade
}

// upgradeStatus opens the upgrade response.
var upgradeStatus = []byte("HTTP/1.1 101 ")

func (c *countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if !c.decided && n > 0 {
		c.decided = true
		c.plain.Store(!bytes.HasPrefix(p[:n], upgradeStatus))
	}
	if c.plain.Load() {
		return n, err
	}
	c.scan.feed(p[:n])
	if c.scan.httpDone == 4 && !c.upgraded.Load() {
		c.upgradedAt.Store(time.Now().UnixNano())
		c.upgraded.Store(true)
	}
	c.scan.count.failed(err, true)
	return n, err
}

// Read counts the connection's read errors once it is a websocket: before
// that, net/http ends its own background read with a timeout when the
// connection is hijacked for the upgrade.
func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil && !errors.Is(err, io.EOF) && c.upgraded.Load() && !c.plain.Load() {
		c.scan.count.failed(err, false)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() && time.Now().UnixNano()-c.upgradedAt.Load() < int64(agent.DefaultPingInterval) {
			c.scan.count.firstPongTimeouts.Add(1)
		}
	}
	return n, err
}

// bucketsPrefix opens every buckets message (wire.AppendBuckets); each of
// its items opens with itemStart. Those bytes cannot occur inside a JSON
// string, where a quote is always escaped, so counting them counts items.
const (
	bucketsPrefix = `{"v":1,"kind":"buckets"`
	itemStart     = `{"resource":`
)

var itemStartBytes = []byte(itemStart)

// frameScanner follows the server side of a websocket connection as it is
// written, in pieces of any size: the HTTP upgrade response, then frames
// (RFC 6455 5.2), counting complete data messages into count.
type frameScanner struct {
	count    *wireCount
	httpDone int // bytes of "\r\n\r\n" matched; 4 once the response is over
	// The frame being read.
	hdr     [14]byte
	hdrLen  int
	payload bool   // the header is complete
	left    uint64 // payload bytes still to come
	control bool
	fin     bool
	// The data message being read.
	pos     int  // payload bytes seen
	buckets bool // its first bytes are bucketsPrefix, so far
	items   int64
	tail    [len(itemStart) - 1]byte // its last bytes, for an itemStart split between writes
	tailLen int
}

func (s *frameScanner) feed(p []byte) {
	for s.httpDone < 4 && len(p) > 0 {
		switch {
		case p[0] == "\r\n\r\n"[s.httpDone]:
			s.httpDone++
		case p[0] == '\r':
			s.httpDone = 1
		default:
			s.httpDone = 0
		}
		p = p[1:]
	}
	for len(p) > 0 {
		if !s.payload {
			s.hdr[s.hdrLen] = p[0]
			s.hdrLen++
			p = p[1:]
			if s.hdrLen < 2 || s.hdrLen < s.headerLen() {
				continue
			}
			s.startFrame()
			if s.left > 0 {
				continue
			}
		} else {
			n := int(min(uint64(len(p)), s.left))
			if !s.control {
				s.scan(p[:n])
			}
			p, s.left = p[n:], s.left-uint64(n)
			if s.left > 0 {
				continue
			}
		}
		s.endFrame()
	}
}

// headerLen is the length of the frame header, once its first 2 bytes are in.
func (s *frameScanner) headerLen() int {
	n := 2
	switch s.hdr[1] & 0x7f {
	case 126:
		n += 2
	case 127:
		n += 8
	}
	if s.hdr[1]&0x80 != 0 { // masked: from a client, not here, but cheap to skip
		n += 4
	}
	return n
}

func (s *frameScanner) startFrame() {
	s.payload = true
	s.fin = s.hdr[0]&0x80 != 0
	opcode := s.hdr[0] & 0x0f
	s.control = opcode >= 8
	switch l := s.hdr[1] & 0x7f; l {
	case 126:
		s.left = uint64(s.hdr[2])<<8 | uint64(s.hdr[3])
	case 127:
		s.left = 0
		for _, b := range s.hdr[2:10] {
			s.left = s.left<<8 | uint64(b)
		}
	default:
		s.left = uint64(l)
	}
	if !s.control && opcode != 0 { // a new message; 0 continues one
		s.pos, s.buckets, s.items, s.tailLen = 0, true, 0, 0
	}
}

func (s *frameScanner) endFrame() {
	s.payload, s.hdrLen = false, 0
	if s.control || !s.fin {
		return
	}
	s.count.messages.Add(1)
	if s.buckets && s.pos >= len(bucketsPrefix) {
		s.count.buckets.Add(1)
		s.count.items.Add(s.items)
	}
}

// scan reads a piece of a data message's payload.
func (s *frameScanner) scan(q []byte) {
	if s.buckets && s.pos < len(bucketsPrefix) {
		k := min(len(q), len(bucketsPrefix)-s.pos)
		s.buckets = string(q[:k]) == bucketsPrefix[s.pos:s.pos+k]
	}
	s.pos += len(q)
	if !s.buckets {
		return
	}
	// An itemStart that began in an earlier piece: the tail is shorter
	// than itemStart, so a match starting in it ends in q.
	var j [2*len(itemStart) - 2]byte
	n := copy(j[:], s.tail[:s.tailLen])
	n += copy(j[n:], q)
	for i := 0; i < s.tailLen && i+len(itemStart) <= n; i++ {
		if string(j[i:i+len(itemStart)]) == itemStart {
			s.items++
		}
	}
	s.items += int64(bytes.Count(q, itemStartBytes))
	if len(q) >= len(s.tail) {
		s.tailLen = copy(s.tail[:], q[len(q)-len(s.tail):])
	} else {
		s.tailLen = copy(s.tail[:], j[max(0, n-len(s.tail)):n])
	}
}
