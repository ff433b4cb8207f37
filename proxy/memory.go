package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"golang.org/x/sync/semaphore"
)

// The relay's memory across requests. What a request holds whole (its body, read before it can
// be sent; an upstream's answer read before it can be relayed) is counted against one budget of
// the whole relay (Options.MemoryBudget): a request that would pass it waits, in turn, while
// others finish, and gets a clear 503 with a Retry-After if that takes longer than memoryWait.
// So sixteen 60 MiB image edits at once are held a few at a time, not all together. A backend
// call's answer (an image: megabytes of base64) is not held at all: it is relayed as it comes
// (relayDocument). WebSocket frames have a budget of their own (Options.SocketReadBudget).

// DefaultMemoryBudget is the default of Options.MemoryBudget.
const DefaultMemoryBudget = 256 << 20

// memoryWait is how long a request waits for room in the budget before it is answered 503.
const memoryWait = 30 * time.Second

// memBudget is the relay's budget of bytes held by requests at once.
type memBudget struct {
	sem  *semaphore.Weighted
	size int64
	wait time.Duration // memoryWait
}

func newMemBudget(size int64) *memBudget {
	if size <= 0 {
		size = DefaultMemoryBudget
	}
	return &memBudget{sem: semaphore.NewWeighted(size), size: size, wait: memoryWait}
}

// errRelayBusy says that the relay held as much as its budget allows for longer than
// memoryWait.
var errRelayBusy = errors.New("the relay's memory budget is spent")

// hold counts n more bytes against the budget for x (at most the whole budget: a request is
// never refused for its size alone), waiting at most memoryWait; they are given back when x
// ends. An error is the client's answer.
func (x *exchange) hold(n int64) *apiError {
	b := x.s.mem
	n = min(n, b.size-x.memHeld)
	if n <= 0 {
		return nil
	}
	if !b.sem.TryAcquire(n) {
		ctx, cancel := context.WithTimeout(x.r.Context(), b.wait)
		err := b.sem.Acquire(ctx, n)
		cancel()
		if err != nil {
			if x.r.Context().Err() != nil {
				return &apiError{Status: 499, Type: "invalid_request_error", Code: "client_closed", Message: "the client went away"}
			}
			return x.relayBusy()
		}
	}
	x.memHeld += n
	return nil
}

// relayBusy is the answer to a request that found no room in the budget within the wait.
func (x *exchange) relayBusy() *apiError {
	b := x.s.mem
	return &apiError{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "relay_busy", RetryAfter: 5,
		Message: fmt.Sprintf("Codex Relay holds as much of other requests as its memory budget allows (%d MiB) and had no room for this one within %s: try again in a few seconds",
			b.size>>20, b.wait)}
}

// releaseMemory gives back what x held (it ended).
func (x *exchange) releaseMemory() {
	if x.memHeld > 0 {
		x.s.mem.sem.Release(x.memHeld)
		x.memHeld = 0
	}
}

// readWhole reads r to its end, at most limit bytes (an error past it), counting what it
// holds against the budget as it grows (expect: the size announced, -1 when none).
func (x *exchange) readWhole(r io.Reader, expect, limit int64) ([]byte, error) {
	size := int64(32 << 10)
	if expect >= 0 {
		size = min(expect+1, limit+1)
	}
	if e := x.hold(size); e != nil {
		return nil, errRelayBusy
	}
	buf := make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			grown := append(buf, 0)[:len(buf)]
			if e := x.hold(int64(cap(grown) - cap(buf))); e != nil {
				return nil, errRelayBusy
			}
			buf = grown
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return nil, fmt.Errorf("the answer is larger than %d MiB", limit>>20)
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// maskWriter writes what it is given with every occurrence of secret masked (redact's mask),
// for an answer relayed as it comes: the last bytes of a write that may begin the secret wait
// for the next write, or for Close.
type maskWriter struct {
	w            io.Writer
	secret, mask []byte
	pend         []byte
	n            int64 // bytes written to w
}

func (m *maskWriter) out(p []byte) error {
	n, err := m.w.Write(p)
	m.n += int64(n)
	return err
}

func newMaskWriter(w io.Writer, secret string) *maskWriter {
	return &maskWriter{w: w, secret: []byte(secret), mask: []byte(mask(secret))}
}

func (m *maskWriter) Write(p []byte) (int, error) {
	if len(m.secret) < 8 { // as redact: too short to tell from the text around it
		return len(p), m.out(p)
	}
	m.pend = append(m.pend, p...)
	for {
		i := bytes.Index(m.pend, m.secret)
		if i < 0 {
			break
		}
		if err := m.out(m.pend[:i]); err != nil {
			return 0, err
		}
		if err := m.out(m.mask); err != nil {
			return 0, err
		}
		m.pend = m.pend[i+len(m.secret):]
	}
	if keep := len(m.secret) - 1; len(m.pend) > keep {
		if err := m.out(m.pend[:len(m.pend)-keep]); err != nil {
			return 0, err
		}
		m.pend = append(m.pend[:0], m.pend[len(m.pend)-keep:]...)
	}
	return len(p), nil
}

// Close writes what was kept back.
func (m *maskWriter) Close() error {
	err := m.out(m.pend)
	m.pend = nil
	return err
}
