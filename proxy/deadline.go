package proxy

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"time"
)

// Timeouts bound how long the relay waits for an upstream. Before the first byte reached the
// client a timeout is one more failure that moves the request to the next account; once the
// stream is relayed, StreamIdle ends it with a well-formed response.failed.
type Timeouts struct {
	// Header is the wait for response headers of a streamed request (default 60 s). A
	// non-streamed upstream request may take up to 10 minutes: it answers once it is done.
	Header time.Duration
	// FirstEvent is the wait, from the headers, for the first event that carries output (the
	// bookkeeping events response.created and response.in_progress, and comments, do not
	// count) (default 30 s).
	FirstEvent time.Duration
	// StreamIdle is the longest silence between upstream reads once the answer is being
	// relayed (default 300 s, the Codex CLI's own stream idle timeout).
	StreamIdle time.Duration
}

// Default timeouts.
const (
	DefaultHeaderTimeout     = 60 * time.Second
	DefaultFirstEventTimeout = 30 * time.Second
	DefaultStreamIdleTimeout = 300 * time.Second
	// nonStreamHeaderTimeout bounds a non-streamed upstream request, whose headers come with
	// the whole answer.
	nonStreamHeaderTimeout = 10 * time.Minute
)

func (t Timeouts) withDefaults() Timeouts {
	if t.Header <= 0 {
		t.Header = DefaultHeaderTimeout
	}
	if t.FirstEvent <= 0 {
		t.FirstEvent = DefaultFirstEventTimeout
	}
	if t.StreamIdle <= 0 {
		t.StreamIdle = DefaultStreamIdleTimeout
	}
	return t
}

// SetTimeouts changes the upstream timeouts for requests that start from now on (zero fields
// take the defaults).
func (s *Server) SetTimeouts(t Timeouts) {
	t = t.withDefaults()
	s.timeouts.Store(&t)
}

// Timeouts returns the upstream timeouts in force.
func (s *Server) Timeouts() Timeouts { return *s.timeouts.Load() }

// The causes a call's context is cancelled with when a deadline passes.
var (
	errHeaderTimeout     = errors.New("no response headers from the upstream within the timeout")
	errFirstEventTimeout = errors.New("no event from the upstream within the first-event timeout after its headers")
	errStreamIdleTimeout = errors.New("the upstream stream went silent for longer than the stream idle timeout")
)

func isTimeout(err error) bool {
	return errors.Is(err, errHeaderTimeout) || errors.Is(err, errFirstEventTimeout) || errors.Is(err, errStreamIdleTimeout)
}

// call is one upstream request in flight. Its context is cancelled when the deadline armed
// last passes, with that deadline's error as the cause; reads of the answer's body extend an
// idle deadline (once the call is live).
type call struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	timer  *time.Timer
	cause  atomic.Pointer[error]
	idle   time.Duration // > 0 once live: each read extends the deadline by it
	moved  time.Time     // when a read last moved the idle deadline
}

func newCall(parent context.Context) *call {
	c := &call{}
	c.ctx, c.cancel = context.WithCancelCause(parent)
	c.timer = time.AfterFunc(time.Hour, func() {
		if p := c.cause.Load(); p != nil {
			c.cancel(*p)
		}
	})
	c.timer.Stop()
	return c
}

// arm sets the deadline to d from now, cancelling with cause when it passes.
func (c *call) arm(d time.Duration, cause error) {
	c.cause.Store(&cause)
	c.timer.Reset(d)
}

// live switches to the idle deadline: from now on every read that brings bytes extends it.
func (c *call) live(idle time.Duration) {
	c.idle, c.moved = idle, time.Now()
	c.arm(idle, errStreamIdleTimeout)
}

// body wraps an answer's body so that its reads extend the idle deadline.
func (c *call) body(rc io.ReadCloser) io.ReadCloser { return &watchedBody{rc, c} }

// explain returns the deadline that cut the call, if one did, else err.
func (c *call) explain(err error) error {
	if cause := context.Cause(c.ctx); cause != nil && isTimeout(cause) {
		return cause
	}
	return err
}

// end releases the call.
func (c *call) end() {
	c.timer.Stop()
	c.cancel(nil)
}

type watchedBody struct {
	io.ReadCloser
	c *call
}

// Read reads the body and moves the idle deadline, at most once a second (moving a timer costs
// more than reading the clock): the silence allowed is between idle and idle plus a second.
func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if c := b.c; n > 0 && c.idle > 0 {
		if now := time.Now(); now.Sub(c.moved) >= time.Second {
			c.moved = now
			c.timer.Reset(c.idle)
		}
	}
	return n, err
}
