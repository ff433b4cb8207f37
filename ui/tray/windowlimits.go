package tray

import (
	"net"
	"sync"
	"time"
)

// The window API's port is loopback, but any local user can connect to it: the connections it
// keeps are bounded in number and in idle time (a window process needs a handful; another
// user's thousand idle connections must not stay open).
var (
	// windowAPIMaxConns bounds the connections open at once; one past it is closed at once.
	windowAPIMaxConns = 32
	// windowAPIIdle closes a keep-alive connection idle for longer.
	windowAPIIdle = 30 * time.Second
)

// cappedListener accepts at most max connections at a time; one past it is closed as soon as
// it is accepted (rather than left waiting in the backlog).
type cappedListener struct {
	net.Listener
	slots chan struct{}
}

func capListener(ln net.Listener, max int) net.Listener {
	return &cappedListener{Listener: ln, slots: make(chan struct{}, max)}
}

func (l *cappedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
			return &slotConn{Conn: c, release: func() { <-l.slots }}, nil
		default:
			c.Close()
		}
	}
}

// slotConn gives its slot back once, when closed.
type slotConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *slotConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
