package tray

import (
	"context"
	"net"
	"sync"
	"time"
)

// The window API's port is loopback, but any local user can connect to it. A connection counts
// only once a request on it carried the tray's token (proven): the window process's. Another
// user's connections never prove themselves, and cannot keep the window process out:
//   - a request without the token is answered 401 and its connection closed (no refused
//     keep-alive stays open);
//   - a connection that has sent nothing is closed after windowAPIHeaderWait;
//   - at most windowAPIMaxConns unproven connections are open at once: one more closes the
//     oldest of them, so that a new connection (the window process's) is always let in;
//   - at most windowAPIMaxConns proven connections are kept (a window process needs a handful),
//     and a keep-alive connection idle for windowAPIIdle is closed.
var (
	windowAPIMaxConns   = 32
	windowAPIIdle       = 30 * time.Second
	windowAPIHeaderWait = 2 * time.Second
)

// cappedListener keeps the unproven connections it accepted, oldest first, to close the oldest
// when there are too many, and counts the proven ones.
type cappedListener struct {
	net.Listener
	max int

	mu       sync.Mutex
	unproven []*slotConn
	proven   int
}

func capListener(ln net.Listener, max int) *cappedListener {
	return &cappedListener{Listener: ln, max: max}
}

func (l *cappedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	sc := &slotConn{Conn: c, l: l}
	var oldest *slotConn
	l.mu.Lock()
	if len(l.unproven) >= l.max {
		oldest = l.unproven[0]
	}
	l.unproven = append(l.unproven, sc)
	l.mu.Unlock()
	if oldest != nil {
		oldest.Close()
	}
	return sc, nil
}

// slotConn is one accepted connection; it leaves the listener's counts once, when closed.
type slotConn struct {
	net.Conn
	l      *cappedListener
	proven bool // under l.mu
	closed bool // under l.mu
}

// prove counts c as the window process's (a request on it carried the token); false when
// there are windowAPIMaxConns of those already, and c is to be closed.
func (c *slotConn) prove() bool {
	l := c.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.proven || c.closed {
		return c.proven
	}
	if l.proven >= l.max {
		return false
	}
	l.drop(c)
	c.proven = true
	l.proven++
	return true
}

func (c *slotConn) Close() error {
	err := c.Conn.Close()
	l := c.l
	l.mu.Lock()
	if !c.closed {
		c.closed = true
		if c.proven {
			l.proven--
		} else {
			l.drop(c)
		}
	}
	l.mu.Unlock()
	return err
}

// drop takes c out of the unproven connections (under l.mu).
func (l *cappedListener) drop(c *slotConn) {
	for i, u := range l.unproven {
		if u == c {
			l.unproven = append(l.unproven[:i], l.unproven[i+1:]...)
			return
		}
	}
}

// connKey holds a request's connection in its context (http.Server.ConnContext).
type connKey struct{}

func withConn(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// proveConn counts the connection of a request that carried the token as the window process's;
// false when it is one too many.
func proveConn(ctx context.Context) bool {
	if c, ok := ctx.Value(connKey{}).(*slotConn); ok {
		return c.prove()
	}
	return true
}
