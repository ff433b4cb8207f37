package proxy

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// Upstream calls: a request posted to an account, in flight, and the deadlines that bound it
// (the headers, the first event, the silence between reads); what is said of a call that broke
// holds no secret.

// send posts body to the account. The returned call carries the request's deadlines: the
// header timeout now (10 minutes for a non-streamed request, whose headers come with the whole
// answer), then whatever the caller arms; end releases it.
// extra holds the client's headers that go with it (upstreamHeaders).
func (s *Server) send(ctx context.Context, m *member, cred Credential, path string, newBody func() io.ReadCloser, size int, stream bool, extra http.Header, headerTimeout time.Duration) (*http.Response, *call, error) {
	c := newCall(ctx)
	if !stream {
		headerTimeout = nonStreamHeaderTimeout
	}
	c.arm(headerTimeout, errHeaderTimeout)
	accept := "application/json"
	if stream {
		accept = "text/event-stream"
	}
	req, err := s.upstreamRequest(c.ctx, m, cred, http.MethodPost, m.BaseURL+path, accept)
	if err != nil {
		c.end()
		return nil, nil, err
	}
	req.Body, req.ContentLength = newBody(), int64(size)
	req.GetBody = func() (io.ReadCloser, error) { return newBody(), nil }
	req.Header.Set("Content-Type", "application/json")
	for k, v := range extra {
		req.Header[k] = v
	}
	if m.Kind == KindChatGPT {
		req.Header.Set("OpenAI-Beta", "responses=experimental")
	}
	// The transport itself, not an http.Client: the relay follows no redirects and keeps no
	// cookies, and the client's copies of the request and its headers cost on every request.
	resp, err := s.opt.Transport.RoundTrip(req)
	if err != nil {
		err = c.explain(err)
		c.end()
		return nil, nil, err
	}
	c.timer.Stop() // the caller arms what comes next
	return resp, c, nil
}

// describeTransportError says why an upstream could not be reached or broke off, in words
// that hold no secret (the error may quote what the upstream sent).
func describeTransportError(err error, secrets ...string) string {
	switch {
	case isTimeout(err):
		return err.Error()
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	msg := err.Error()
	// url.Error repeats the method and URL; the URL never holds a secret, but keep it short.
	if i := strings.LastIndex(msg, ": "); i >= 0 && strings.HasPrefix(msg, "Post ") {
		msg = msg[i+2:]
	}
	return "upstream unreachable: " + redactString(msg, secrets...)
}

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

// Read reads the body and moves the idle deadline.
func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.c.touch()
	}
	return n, err
}

// touch says that bytes came: once the call is live it moves the idle deadline, at most once a
// second (moving a timer costs more than reading the clock): the silence allowed is between
// idle and idle plus a second.
func (c *call) touch() {
	if c.idle > 0 {
		if now := time.Now(); now.Sub(c.moved) >= time.Second {
			c.moved = now
			c.timer.Reset(c.idle)
		}
	}
}
