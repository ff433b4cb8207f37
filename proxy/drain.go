package proxy

import (
	"io"
	"time"
)

// An answer the relay read up to its terminal event (the client wanted it whole) stops short
// of the body's end: the terminating chunk, maybe a last keep-alive, are still on the wire, and
// an HTTP/1.1 connection closed before EOF is not reused: every such request opened a new one
// (a new TLS handshake each). drain reads what little is left before the body is closed,
// bounded in bytes and time, so that the connection goes back to the pool.

const (
	drainBytes = 64 << 10
	drainWait  = time.Second
)

// drain reads a's body to its end, at most drainBytes and drainWait: an upstream that keeps
// sending after its terminal event loses its connection, as before.
func (a *answer) drain() {
	if !a.whole || a.resp == nil || a.resp.Body == nil {
		return
	}
	a.call.arm(drainWait, errStreamIdleTimeout)
	io.CopyN(io.Discard, a.resp.Body, drainBytes)
}
