package wsstream

import (
	"net"
	"sync"
	"sync/atomic"
)

// conns counts a server's open connections, over every listener it serves:
// what holds a descriptor of the process, streams and plain requests alike.
type conns struct {
	max     int64
	open    atomic.Int64
	refused atomic.Int64
}

// cappedListener accepts at most conns.max open connections: one over it is
// closed as soon as it is accepted (and counted), rather than queued, so a
// peer that opens thousands of connections cannot take the process's
// descriptors.
type cappedListener struct {
	net.Listener
	c *conns
}

// Accept returns the next connection within the cap; those over it are
// closed on the way.
func (l cappedListener) Accept() (net.Conn, error) {
	for {
		conn, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.c.open.Add(1) > l.c.max {
			l.c.open.Add(-1)
			l.c.refused.Add(1)
			_ = conn.Close()
			continue
		}
		return &cappedConn{Conn: conn, c: l.c}, nil
	}
}

// cappedConn gives its place back when it is first closed (by the HTTP
// server, or by the websocket connection that took it over).
type cappedConn struct {
	net.Conn
	c    *conns
	once sync.Once
}

func (c *cappedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.c.open.Add(-1) })
	return err
}
