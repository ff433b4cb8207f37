package proxy

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/codexrelay/codexrelay/proxy/payload"
)

// Request bodies: read once (with a size limit, gzip or zstd, and a stall watch), validated
// while they arrive, pooled, and shared with the upstream requests that send them; what the
// upstream bodies are built from (requestBody) and the buffers they are built into
// (upstreamBodies).

// DefaultMaxBody is the default limit of a request body, after decompression.
const DefaultMaxBody = 64 << 20

// A body's buffer starts at its declared size up to firstBodyBuffer (a Codex request is about
// 1 MB) and doubles as more arrives; the memory budget counts the buffer the body fills, never
// the declared size.
const firstBodyBuffer = 4 << 20

// bodyLimits bound a request body: its decoded size, the longest stall between two reads
// and the whole time it may take.
type bodyLimits struct {
	size        int64
	idle, total time.Duration
}

// readBody reads the whole request body once: it checks the content type, undoes a gzip or
// zstd Content-Encoding and enforces the size limit on both the wire bytes and the decoded
// bytes (so a small compressed bomb cannot expand past it). A body that stalls (no byte for
// lim.idle) or trickles past lim.total is cut with 408. feed, when not nil, sees the (decoded)
// body received so far after each read, so that it can be validated while the rest arrives.
//
// hold counts the buffer the body fills against the relay's memory budget (memory.go) as it
// grows with what arrives; an error from it is the answer (503 relay_busy, the connection then
// closed), and while it waits the body is not watched for stalls.
func readBody(w http.ResponseWriter, r *http.Request, lim bodyLimits, sw *stallWatch, feed func([]byte) error, hold func(int64) *apiError) ([]byte, *apiError) {
	limit := lim.size
	if e := checkContentType(r); e != nil {
		return nil, e
	}
	if r.ContentLength > limit {
		return nil, errTooLarge(limit)
	}
	sw.begin(w, lim)
	defer sw.stop()
	src, enc, done, e := decodedBody(r, limit)
	if e != nil {
		return nil, e
	}
	defer done()
	f := &bodyFill{w: w, sw: sw, hold: hold, first: 32 << 10}
	if r.ContentLength > 0 && enc == "" {
		f.declared = r.ContentLength
		f.first = int(min(r.ContentLength+1, firstBodyBuffer)) // +1: a body longer than announced still shows
	}
	f.buf = getBodyBuffer(f.first)
	return f.read(src, lim, enc, feed)
}

// checkContentType refuses (415) a body whose Content-Type is not JSON; one with none is taken
// as JSON.
func checkContentType(r *http.Request) *apiError {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || !(mt == "application/json" || strings.HasSuffix(mt, "+json")) {
		return &apiError{Status: http.StatusUnsupportedMediaType, Type: "invalid_request_error",
			Code: "unsupported_media_type", Message: fmt.Sprintf("Content-Type %q is not supported: send application/json", truncate(ct, 64))}
	}
	return nil
}

// decodedBody is the request body limited to limit wire bytes, with its Content-Encoding undone:
// enc is the encoding ("" for none or identity; an unknown one is refused with 415) and done
// closes its decoder once the body is read. A gzip header is read here, under the stall watch.
func decodedBody(r *http.Request, limit int64) (src io.Reader, enc string, done func(), e *apiError) {
	src = http.MaxBytesReader(nil, r.Body, limit)
	enc = strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding")))
	switch enc {
	case "", "identity":
		return src, "", func() {}, nil
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(src)
		if err != nil {
			return nil, "", nil, bodyError(err, limit, "gzip")
		}
		return zr, enc, func() { zr.Close() }, nil
	case "zstd":
		zr, err := zstd.NewReader(src, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxMemory(uint64(limit)+1), zstd.WithDecoderMaxWindow(uint64(min(limit, 1<<29))))
		if err != nil {
			return nil, "", nil, bodyError(err, limit, "zstd")
		}
		return zr, enc, zr.Close, nil
	}
	return nil, "", nil, &apiError{Status: http.StatusUnsupportedMediaType, Type: "invalid_request_error",
		Code: "unsupported_encoding", Message: fmt.Sprintf("Content-Encoding %q is not supported: use gzip, zstd or none", truncate(enc, 32))}
}

// bodyFill is a request body being read into its buffer: the first use bytes of buf are
// counted against the memory budget (by hold), the first n hold the body read so far. first is
// the buffer's first size, declared the size the request announced for a body read as it came
// (no Content-Encoding; 0: none announced).
type bodyFill struct {
	w        http.ResponseWriter
	sw       *stallWatch
	hold     func(int64) *apiError
	buf      []byte
	use, n   int
	first    int
	declared int64
}

// read reads the body from src (encoded as enc) to its end, to at most lim.size bytes, handing
// feed (when not nil) what arrived so far after each read that brought bytes. On an error the
// buffer goes back to the pool.
func (f *bodyFill) read(src io.Reader, lim bodyLimits, enc string, feed func([]byte) error) ([]byte, *apiError) {
	for {
		if f.n == f.use {
			if e := f.grow(); e != nil {
				return nil, e
			}
		}
		m, err := src.Read(f.buf[f.n:f.use])
		if m > 0 {
			f.sw.progress()
		}
		f.n += m
		if int64(f.n) > lim.size {
			putBodyBuffer(f.buf)
			return nil, errTooLarge(lim.size)
		}
		if err == io.EOF {
			return f.buf[:f.n], nil
		}
		if feed != nil && m > 0 {
			// An invalid body is still read to its end: the client gets its answer on a
			// connection it can keep, and the parser remembers the error.
			feed(f.buf[:f.n])
		}
		if err != nil {
			putBodyBuffer(f.buf)
			return nil, f.readError(err, lim, enc)
		}
	}
}

// grow makes room for more of the body (the buffer is full): the first size, then doubling, to
// the declared size at most: what the budget counts is what the body takes (at most twice what
// arrived), and a 60 MiB body is copied four times, not the twenty times append's quarter steps
// would. The stall watch pauses while hold waits; an error from hold is the answer, the buffer
// back in the pool and the connection closed after it.
func (f *bodyFill) grow() *apiError {
	next := f.first
	if f.use > 0 {
		next = 2 * f.use
		if f.declared > 0 && int64(f.use) <= f.declared {
			next = int(min(int64(next), f.declared+1))
		}
	}
	f.sw.pause()
	e := f.hold(int64(next - f.use))
	f.sw.progress()
	if e != nil {
		putBodyBuffer(f.buf)
		f.w.Header().Set("Connection", "close") // the rest of the body is not read
		return e
	}
	if next > len(f.buf) {
		grown := make([]byte, next)
		copy(grown, f.buf[:f.n])
		f.buf = grown // the old one is left to the collector: the parser may still view it
	}
	f.use = next
	return nil
}

// readError is the answer to a read of the body that failed with err: 408 when the stall
// watch cut it, else what bodyError makes of err.
func (f *bodyFill) readError(err error, lim bodyLimits, enc string) *apiError {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		// Close the connection after the answer: the server would otherwise wait for the
		// rest of the body before answering.
		f.w.Header().Set("Connection", "close")
		return &apiError{Status: http.StatusRequestTimeout, Type: "invalid_request_error", Code: "request_timeout",
			Message: fmt.Sprintf("the request body stalled: no byte for %s, or not all of it within %s", lim.idle, lim.total)}
	}
	return bodyError(err, lim.size, enc)
}

// stallWatch cuts a request body that stalls (no byte for lim.idle) or trickles past
// lim.total. It costs a timer per request, not a deadline update per read: only when the timer
// finds the body stalled does it set the connection's read deadline to now, which ends the
// pending read with os.ErrDeadlineExceeded.
type stallWatch struct {
	w     http.ResponseWriter
	lim   bodyLimits
	start time.Time
	last  atomic.Int64 // unix nanoseconds of the last read that brought bytes
	timer *time.Timer

	mu          sync.Mutex
	done, fired bool
	// paused: the request waits for room in the memory budget (memory.go); that wait is the
	// relay's, not a stall of the client's, and counts in neither limit (waited: the
	// nanoseconds of the waits that ended, pausedAt: when the one under way began).
	paused           atomic.Bool
	waited, pausedAt atomic.Int64
}

func (sw *stallWatch) begin(w http.ResponseWriter, lim bodyLimits) {
	sw.w, sw.lim, sw.start = w, lim, time.Now()
	sw.last.Store(sw.start.UnixNano())
	sw.timer = time.AfterFunc(lim.idle, sw.check)
}

// progress notes that bytes arrived, or that a pause ended.
func (sw *stallWatch) progress() {
	now := time.Now().UnixNano()
	if sw.paused.Swap(false) {
		sw.waited.Add(now - sw.pausedAt.Load())
	}
	sw.last.Store(now)
}

// pause stops counting time against the body until the next progress.
func (sw *stallWatch) pause() {
	sw.pausedAt.Store(time.Now().UnixNano())
	sw.paused.Store(true)
}

func (sw *stallWatch) check() {
	now := time.Now()
	if sw.paused.Load() {
		sw.last.Store(now.UnixNano())
	}
	idle := now.Sub(time.Unix(0, sw.last.Load()))
	spent := now.Sub(sw.start) - time.Duration(sw.waited.Load())
	if sw.paused.Load() {
		spent -= time.Duration(now.UnixNano() - sw.pausedAt.Load())
	}
	left := min(sw.lim.idle-idle, sw.lim.total-spent)
	sw.mu.Lock()
	defer sw.mu.Unlock()
	switch {
	case sw.done:
	case left > 0:
		sw.timer.Reset(left)
	default:
		sw.fired = true
		http.NewResponseController(sw.w).SetReadDeadline(now)
	}
}

// stop ends the watch once the body is read (or failed). A deadline it set is cleared: the
// server's read of the connection while the answer streams must not hit it.
func (sw *stallWatch) stop() {
	sw.timer.Stop()
	sw.mu.Lock()
	defer sw.mu.Unlock()
	sw.done = true
	if sw.fired {
		http.NewResponseController(sw.w).SetReadDeadline(time.Time{})
	}
}

func errTooLarge(limit int64) *apiError {
	return &apiError{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error", Code: "request_too_large",
		Message: fmt.Sprintf("request body is larger than the relay's limit of %d MiB", limit>>20)}
}

func bodyError(err error, limit int64, enc string) *apiError {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) || errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded) {
		return errTooLarge(limit)
	}
	what := "request body"
	if enc != "" {
		what = enc + " request body"
	}
	msg := fmt.Sprintf("could not read the %s: %v", what, err)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		msg = "the request body is truncated or its compression is corrupt"
	}
	return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "invalid_body", Message: msg}
}

// Request bodies are pooled: a Codex request is ~1 MB, and a fresh buffer per request costs
// its zeroing and a share of garbage collection. A buffer goes back to the pool when its
// request and the upstream requests sending it let go of it (sharedBuffer).
var bodyPool sync.Pool

const maxPooledBody = 8 << 20

func getBodyBuffer(size int) []byte {
	if p, ok := bodyPool.Get().(*[]byte); ok && cap(*p) >= size {
		return (*p)[:cap(*p)]
	} else if ok {
		bodyPool.Put(p)
	}
	return make([]byte, size)
}

func putBodyBuffer(b []byte) {
	if cap(b) == 0 || cap(b) > maxPooledBody {
		return
	}
	b = b[:0]
	bodyPool.Put(&b)
}

// requestBody is the client's request as the upstream bodies are built from it, whatever the
// client came by: an HTTP body (clientBody) or a WebSocket turn (socketTurn, socket.go), which
// replays the conversation it follows. The body builders (wire.go) ask it, never the transport.
type requestBody interface {
	// whole is the request as one body: the client's as it arrived, or a turn's conversation
	// replayed (built on first need).
	whole() wholeBody
	// items are the input items of a Responses request's whole body, split once.
	items() [][]byte
	// firstItem is the first input item, or nil; a request whose input's first bytes do not
	// hold mark may answer nil without splitting it out (a look, not a scan).
	firstItem(mark []byte) []byte
	// meta is a turn's client_metadata, where a WebSocket client sends each turn's headers
	// (turn.go); nil for an HTTP request, whose headers are its own.
	meta() map[string]string
	// follows is the id of the stored response the request continues that only the upstream
	// that stored it knows ("": none, or one the relay can replay).
	follows() string
}

// wholeBody is a request as one body: parsed, its bytes, and the pooled buffer they are in
// (nil: memory of their own).
type wholeBody struct {
	obj *payload.Object
	raw []byte
	buf *sharedBuffer
}

// clientBody is an HTTP request's body: the client's bytes as they arrived, in a pooled buffer
// the request holds, and parsed.
type clientBody struct {
	obj   *payload.Object
	raw   []byte
	buf   *sharedBuffer
	split [][]byte // the input items, split on first need
}

func (b *clientBody) whole() wholeBody { return wholeBody{b.obj, b.raw, b.buf} }

func (b *clientBody) items() [][]byte {
	if b.split == nil {
		if raw, ok := b.obj.Get("input"); ok {
			b.split, _ = inputItems(raw)
		}
		if b.split == nil {
			b.split = [][]byte{}
		}
	}
	return b.split
}

func (b *clientBody) firstItem(mark []byte) []byte {
	in, ok := b.obj.Get("input")
	if !ok || payload.KindOf(in) != payload.KindArray || !bytes.Contains(in[:min(len(in), 64)], mark) {
		return nil
	}
	first, _ := payload.First(in)
	return first
}

func (b *clientBody) meta() map[string]string { return nil }

func (b *clientBody) follows() string {
	prev, _ := stringMember(b.obj, "previous_response_id")
	return prev
}

// upstreamBodies are the bodies a request built for the accounts it tried (through its
// serialization cache, so that attempts with the same variant share one), and the pooled
// buffers it holds until it ends: the client's body and the bodies built into them. Fresh
// megabyte allocations would cost their zeroing and page faults on every request.
type upstreamBodies struct {
	cache *payload.Cache
	held  []*sharedBuffer
	store [2]*sharedBuffer // backs held: a request holds one or two
	// unchanged counts upstream bodies sent exactly as the client's (no serialization).
	unchanged int
	// trans is the client's body in the account's protocol, made on first need (wire.go).
	trans *translated
	// lite is the request's Responses Lite form, worked out once (lite.go).
	lite liteRequest
	// ends are what the request lets go of when it ends besides its buffers (a shared replay).
	ends []func()
	// noRoom is why a body built through the cache found no room in the memory budget.
	noRoom *apiError
}

// onEnd runs f when the request ends.
func (u *upstreamBodies) onEnd(f func()) { u.ends = append(u.ends, f) }

// startCache makes the request's serialization cache, which builds into pooled buffers counted
// against the memory budget by hold (x.hold): a build that found no room notes it in noRoom,
// and the try is answered 503 (exchange.built).
func (u *upstreamBodies) startCache(hold func(int64) *apiError) {
	u.cache = payload.NewCache()
	u.cache.Alloc = func(n int) ([]byte, any) {
		if e := hold(int64(n)); e != nil && u.noRoom == nil {
			u.noRoom = e
		}
		return u.alloc(n)
	}
}

// hold makes the pooled buffer b one the request holds until it ends, and the upstream
// requests sending it until their transports let go of it.
func (u *upstreamBodies) hold(b []byte) *sharedBuffer {
	sb := &sharedBuffer{b: b}
	sb.refs.Store(1)
	if u.held == nil {
		u.held = u.store[:0]
	}
	u.held = append(u.held, sb)
	return sb
}

// alloc hands the serialization cache a pooled buffer for an upstream body, and the buffer's
// holder as its handle: the body built into it goes upstream with it (builtBody).
func (u *upstreamBodies) alloc(n int) ([]byte, any) {
	b := getBodyBuffer(n)
	return b, u.hold(b)
}

// release lets go of every buffer the request holds (it ended).
func (u *upstreamBodies) release() {
	for _, sb := range u.held {
		sb.release()
	}
	for _, f := range u.ends {
		f()
	}
	u.ends = nil
}

// builtBody is an upstream body and the pooled buffer it is in (nil: memory of its own).
type builtBody struct {
	b   []byte
	buf *sharedBuffer
}

// reader returns a function making readers of the body for an upstream request. A body in a
// pooled buffer holds it until the transport closes the reader.
func (body builtBody) reader() func() io.ReadCloser {
	return func() io.ReadCloser {
		if body.buf == nil {
			return io.NopCloser(bytes.NewReader(body.b))
		}
		body.buf.refs.Add(1)
		return &bodyReader{r: bytes.NewReader(body.b), sb: body.buf}
	}
}

// sharedBuffer is a pooled upstream body that several holders share: the request's exchange
// and each upstream request sending it (an HTTP transport may still be writing a body after
// the answer arrived). It goes back to the pool when the last holder lets go.
type sharedBuffer struct {
	b    []byte
	refs atomic.Int32
}

func (s *sharedBuffer) release() {
	if s.refs.Add(-1) == 0 {
		putBodyBuffer(s.b)
	}
}

// bodyReader is an upstream request body over a shared buffer; the transport closes it. The
// HTTP/2 transport may close a body from another goroutine while a Read is copying from it
// (when it aborts a stream), so both take the lock: the buffer cannot go back to the pool, and
// be refilled by another request, in the middle of a copy.
type bodyReader struct {
	mu     sync.Mutex
	r      *bytes.Reader
	sb     *sharedBuffer
	closed bool
}

func (r *bodyReader) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return 0, errBodyClosed
	}
	return r.r.Read(p)
}

func (r *bodyReader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.closed {
		r.closed = true
		r.sb.release()
	}
	return nil
}

var errBodyClosed = errors.New("request body read after close")
