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
	"unsafe"

	"github.com/klauspost/compress/zstd"
)

// Request bodies: read once (with a size limit, gzip or zstd, and a stall watch), validated
// while they arrive, pooled, and shared with the upstream requests that send them.

// DefaultMaxBody is the default limit of a request body, after decompression.
const DefaultMaxBody = 64 << 20

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
func readBody(w http.ResponseWriter, r *http.Request, lim bodyLimits, sw *stallWatch, feed func([]byte) error) ([]byte, *apiError) {
	limit := lim.size
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || !(mt == "application/json" || strings.HasSuffix(mt, "+json")) {
			return nil, &apiError{Status: http.StatusUnsupportedMediaType, Type: "invalid_request_error",
				Code: "unsupported_media_type", Message: fmt.Sprintf("Content-Type %q is not supported: send application/json", truncate(ct, 64))}
		}
	}
	if r.ContentLength > limit {
		return nil, errTooLarge(limit)
	}
	sw.begin(w, lim)
	defer sw.stop()
	var src io.Reader = http.MaxBytesReader(nil, r.Body, limit)
	enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding")))
	switch enc {
	case "", "identity":
		enc = ""
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(src)
		if err != nil {
			return nil, bodyError(err, limit, "gzip")
		}
		defer zr.Close()
		src = zr
	case "zstd":
		zr, err := zstd.NewReader(src, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxMemory(uint64(limit)+1), zstd.WithDecoderMaxWindow(uint64(min(limit, 1<<29))))
		if err != nil {
			return nil, bodyError(err, limit, "zstd")
		}
		defer zr.Close()
		src = zr
	default:
		return nil, &apiError{Status: http.StatusUnsupportedMediaType, Type: "invalid_request_error",
			Code: "unsupported_encoding", Message: fmt.Sprintf("Content-Encoding %q is not supported: use gzip, zstd or none", truncate(enc, 32))}
	}
	size := 32 << 10
	if r.ContentLength > 0 && enc == "" {
		size = int(r.ContentLength) + 1 // +1: a body longer than announced still shows
	}
	buf := getBodyBuffer(size)
	n := 0
	for {
		if n == len(buf) {
			buf = append(buf, 0)[:n] // grow
			buf = buf[:cap(buf)]
		}
		m, err := src.Read(buf[n:])
		if m > 0 {
			sw.progress()
		}
		n += m
		if int64(n) > limit {
			putBodyBuffer(buf)
			return nil, errTooLarge(limit)
		}
		if err == io.EOF {
			return buf[:n], nil
		}
		if feed != nil && m > 0 {
			// An invalid body is still read to its end: the client gets its answer on a
			// connection it can keep, and the parser remembers the error.
			feed(buf[:n])
		}
		if err != nil {
			putBodyBuffer(buf)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				// Close the connection after the answer: the server would otherwise wait
				// for the rest of the body before answering.
				w.Header().Set("Connection", "close")
				return nil, &apiError{Status: http.StatusRequestTimeout, Type: "invalid_request_error", Code: "request_timeout",
					Message: fmt.Sprintf("the request body stalled: no byte for %s, or not all of it within %s", lim.idle, lim.total)}
			}
			return nil, bodyError(err, limit, enc)
		}
	}
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
}

func (sw *stallWatch) begin(w http.ResponseWriter, lim bodyLimits) {
	sw.w, sw.lim, sw.start = w, lim, time.Now()
	sw.last.Store(sw.start.UnixNano())
	sw.timer = time.AfterFunc(lim.idle, sw.check)
}

func (sw *stallWatch) progress() { sw.last.Store(time.Now().UnixNano()) }

func (sw *stallWatch) check() {
	now := time.Now()
	idle := now.Sub(time.Unix(0, sw.last.Load()))
	left := min(sw.lim.idle-idle, sw.lim.total-now.Sub(sw.start))
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
// request ends; only our own code holds it (upstream bodies are built into new buffers).
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

// share makes the pooled buffer b one the request holds until it ends, and the upstream
// requests sending it until their transports let go of it.
func (x *exchange) share(b []byte) {
	sb := &sharedBuffer{b: b}
	sb.refs.Store(1)
	if x.bufs == nil {
		x.bufs = make(map[*byte]*sharedBuffer, 2)
	}
	x.bufs[unsafe.SliceData(b)] = sb
}

// allocBody hands the serialization cache a pooled buffer for an upstream body: fresh
// megabyte allocations cost their zeroing and page faults on every request.
func (x *exchange) allocBody(n int) []byte {
	b := getBodyBuffer(n)
	x.share(b)
	return b
}

// newBody returns a function making readers of body for upstream requests. A body built into
// a pooled buffer is held until the transport closes the reader.
func (x *exchange) newBody(body []byte) func() io.ReadCloser {
	sb := x.bufs[unsafe.SliceData(body)]
	return func() io.ReadCloser {
		if sb == nil {
			return io.NopCloser(bytes.NewReader(body))
		}
		sb.refs.Add(1)
		return &bodyReader{r: bytes.NewReader(body), sb: sb}
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

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
