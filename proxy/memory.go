package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// The relay's memory across requests. Every byte a request makes the relay hold is counted
// against one budget of the whole relay (request memory in budgets.go's table), as it is made: its body, as it
// arrives (never the size it declares); a conversation replayed in its input (served.go) and
// its translation for a Chat account (wire.go); the kept request a re-made compaction is sent
// from (compaction.go); an upstream's answer read whole before it can be relayed. Bytes that
// several requests need (one replay of one body, one re-making of one compaction) are made
// once and shared. A backend call's answer (an image: megabytes of base64) is not held at all:
// it is relayed as it comes (relayDocument). WebSocket frames have a budget of their own
// (Options.SocketReadBudget).
//
// No client can use the budget to stall the others: it is not first come, first served (a
// request that fits goes ahead of one that waits for more room than there is), and an eighth
// of it is kept for small requests (smallHold): a request that holds more than that may use
// only the rest. So eight clients trickling 60 MiB bodies hold what they sent, at most seven
// eighths of the budget, and a 100-byte request beside them never waits. A request that finds
// no room waits at most memoryWait, then gets 503 relay_busy with a Retry-After; a body is
// not watched for stalls while its request waits (the wait is the relay's, not the client's).

// memoryWait is how long a request waits for room in the budget before it is answered 503.
const memoryWait = 30 * time.Second

// smallHold is the most a request may hold in all and still use the budget's reserve for
// small requests.
const smallHold = 1 << 20

// memBudget is the relay's budget of bytes held by requests at once.
type memBudget struct {
	size    int64
	reserve int64 // the part of size only requests holding at most smallHold may use
	wait    time.Duration

	mu    sync.Mutex
	used  int64
	peak  int64         // the most used at once
	freed chan struct{} // closed, and replaced, when bytes are given back
}

func newMemBudget(size int64) *memBudget {
	if size <= 0 {
		size = defaultBudget(budgetRequests)
	}
	return &memBudget{size: size, reserve: size / 8, wait: memoryWait, freed: make(chan struct{})}
}

// room is the most a request may hold in all: the whole budget while it is small, else all but
// the reserve.
func (b *memBudget) room(total int64) int64 {
	if total <= smallHold {
		return b.size
	}
	return b.size - b.reserve
}

// tryAcquire takes n more bytes for a request that holds held already if there is room now.
func (b *memBudget) tryAcquire(n, held int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.takeLocked(n, held)
}

// takeLocked takes n bytes if there is room (b.mu held).
func (b *memBudget) takeLocked(n, held int64) bool {
	if b.used+n > b.room(held+n) {
		return false
	}
	b.used += n
	b.peak = max(b.peak, b.used)
	return true
}

// acquire takes n more bytes for a request that holds held already, waiting for room until ctx
// ends.
func (b *memBudget) acquire(ctx context.Context, n, held int64) error {
	for {
		b.mu.Lock()
		if b.takeLocked(n, held) {
			b.mu.Unlock()
			return nil
		}
		freed := b.freed
		b.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// release gives back n bytes, and wakes the requests waiting for room.
func (b *memBudget) release(n int64) {
	if n <= 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	close(b.freed)
	b.freed = make(chan struct{})
	b.mu.Unlock()
}

// peakUse is the most the requests held at once.
func (b *memBudget) peakUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.peak
}

// inUse is what the requests hold now.
func (b *memBudget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// errRelayBusy says that the relay held as much as its budget allows for longer than
// memoryWait.
var errRelayBusy = errors.New("the relay's memory budget is spent")

// hold counts n more bytes against the budget for x (at most what a request may hold: a
// request is never refused for its size alone), waiting at most memoryWait; they are given
// back when x ends, or by letGo. An error is the client's answer.
func (x *exchange) hold(n int64) *apiError {
	b := x.s.mem
	n = min(n, b.room(x.memHeld+n)-x.memHeld)
	if n <= 0 {
		return nil
	}
	if e := x.take(n, x.memHeld); e != nil {
		return e
	}
	x.memHeld += n
	return nil
}

// take takes n bytes of the budget for x, which holds held already (or for what x shares with
// other requests: held 0), waiting at most memoryWait for room; an error is the client's answer.
func (x *exchange) take(n, held int64) *apiError {
	b := x.s.mem
	if b.tryAcquire(n, held) { // the common case: room now, no timer
		return nil
	}
	ctx, cancel := context.WithTimeout(x.r.Context(), b.wait)
	err := b.acquire(ctx, n, held)
	cancel()
	switch {
	case err == nil:
		return nil
	case x.r.Context().Err() != nil:
		return &apiError{Status: 499, Type: "invalid_request_error", Code: "client_closed", Message: "the client went away"}
	}
	return x.relayBusy()
}

// holdUpTo is hold, reporting what it took (hold takes at most what a request may hold in all):
// the caller gives back that, not what it asked for.
func (x *exchange) holdUpTo(n int64) (int64, *apiError) {
	before := x.memHeld
	e := x.hold(n)
	return x.memHeld - before, e
}

// letGo gives back n of the bytes x holds, which it no longer needs.
func (x *exchange) letGo(n int64) {
	n = min(n, x.memHeld)
	if n <= 0 {
		return
	}
	x.s.mem.release(n)
	x.memHeld -= n
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
	x.letGo(x.memHeld)
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
