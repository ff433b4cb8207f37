// Package sse reads and writes Server-Sent Events (the text/event-stream format of the WHATWG
// HTML standard) for a relay: it splits an upstream stream into events without changing a single
// byte, so that each event can be forwarded as is, and parses each event's fields so that the relay
// can look at it (for example to notice a "response.failed" first event, or a stream that ends
// without "response.completed").
package sse

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// Event is one server-sent event.
//
// Raw and Data are valid only until the next call to Next (the reader reuses its buffers), so
// callers that keep them must copy.
type Event struct {
	Raw  []byte // the event's bytes exactly as received, including its terminating blank line
	Name string // value of the last "event:" field; "" if none
	Data []byte // the "data:" field values joined with "\n" (one leading space after the colon removed, per the spec)
	ID   string // value of "id:" if present
}

var (
	// ErrTruncated is returned, together with the partial event, when the stream ends in the
	// middle of an event (bytes that are not followed by the blank line that ends an event).
	ErrTruncated = errors.New("sse: stream ended in the middle of an event")
	// ErrTooLarge is returned when an event is longer than the limit given to NewReader.
	ErrTooLarge = errors.New("sse: event too large")
)

const (
	// bufSize is the size of the bufio.Reader. Events that fit in it are returned without
	// copying (Raw points into the bufio buffer); larger ones are gathered in a scratch buffer.
	// A relay holds one reader per stream in flight (next to the HTTP transport's own read
	// buffer), so this is per-stream memory: the deltas of a Responses stream are a few hundred
	// bytes, and the rarer large events (a finished output item, the final response) cost one
	// copy.
	bufSize = 1 << 10
	// maxRetain is the largest scratch buffer kept for the next event: an occasional large
	// event (a finished output item, a "response.completed" carrying the whole output) should
	// not pin its memory for the rest of a long stream.
	maxRetain = 64 << 10
	// maxNames bounds the cache of event names (see intern).
	maxNames = 64
)

// bom is the UTF-8 byte order mark, which the spec ignores at the very start of a stream.
var bom = []byte{0xEF, 0xBB, 0xBF}

// Reader reads events from an upstream body.
//
// It keeps its own copy of nothing but the current event: every byte it has read from the
// upstream and not yet returned is in its bufio.Reader, which is what Buffered reports.
type Reader struct {
	br      *bufio.Reader
	max     int   // largest allowed event in bytes; <= 0 means no limit
	started bool  // whether the start of the stream has been checked for a BOM
	rerr    error // error from the upstream (io.EOF at its end); nothing is read after it
	err     error // sticky error, returned by every later call to Next

	raw   []byte            // scratch: the bytes of an event that spans more than one buffer fill
	data  []byte            // scratch: the data of an event with several data lines, joined
	spans []span            // the data values of the current event, as offsets into its Raw
	names map[string]string // event names seen so far, so that Name does not allocate each time
}

// span is a half-open range [start, end) of an event's Raw.
type span struct{ start, end int }

// NewReader returns a Reader that reads events from r. An event (its Raw, that is, all its lines
// and line endings) longer than maxEventBytes makes Next return ErrTooLarge; maxEventBytes <= 0
// means no limit.
func NewReader(r io.Reader, maxEventBytes int) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, bufSize), max: maxEventBytes}
}

// Buffered reports how many bytes are already read from the upstream but not yet returned, so
// that a relay can flush only when nothing more is immediately available (it is fine to flush
// after every event too).
func (r *Reader) Buffered() int { return r.br.Buffered() }

// Next returns the next event.
//
// Every byte of the stream belongs to exactly one returned event, so writing the Raw of each
// event reproduces the stream: an event is everything up to and including the first blank line.
// Comment-only blocks (": keep-alive\n\n") and blocks with no data (including a lone blank line)
// are returned too, with Data nil; an event that has a data field, even an empty one, has a
// non-nil Data. Line endings "\n", "\r\n" and "\r" are all accepted (WHATWG spec); because a "\r"
// may be the first half of a "\r\n", an event whose final line ending is a "\r" is returned only
// once the next byte (or the end of the stream) has arrived. A byte order mark at the very start
// of the stream is kept in the first event's Raw but ignored for parsing. Field names are
// case-sensitive, a line without a colon is a field name with an empty value, comments and
// unknown fields ("retry" included) are ignored, and an "id" whose value contains a NUL is
// ignored, as the spec says. ID is the event's own "id" field; it is not carried over from
// earlier events.
//
// At a clean end of stream Next returns io.EOF. If the stream ends in the middle of an event
// (bytes without the terminating blank line) it returns that partial event's Raw and the fields
// of all its lines (the last one possibly incomplete) together with ErrTruncated, so that the
// caller can decide; the same goes for any other read error, which is returned as is. An event
// larger than maxEventBytes returns ErrTooLarge and an empty Event. After an error, Next returns
// io.EOF (after ErrTruncated) or the same error again.
func (r *Reader) Next() (Event, error) {
	if r.err != nil {
		return Event{}, r.err
	}
	if cap(r.raw) > maxRetain {
		r.raw = nil
	}
	if cap(r.data) > maxRetain {
		r.data = nil
	}
	r.raw = r.raw[:0]

	// skip is where parsing starts in Raw: past a byte order mark at the start of the stream.
	skip := 0
	if !r.started {
		r.started = true
		skip = r.checkBOM()
	}

	pos := skip         // where scanning starts in the current window
	atLineStart := true // whether the line being scanned is still empty
	gathering := false  // whether the event's bytes are being gathered in r.raw
	need := 1           // how many bytes the next window must hold
	for {
		b := r.window(need)
		atEOF := r.rerr != nil
		n, found := scanEvent(b, pos, &atLineStart, atEOF)
		pos = 0

		var raw []byte
		if found && !gathering {
			// The whole event is in the bufio buffer: return it in place. The bytes stay
			// valid after Discard until the buffer is refilled by the next call to Next.
			raw = b[:n]
		} else {
			r.raw = appendDoubling(r.raw, b[:n])
			raw = r.raw
			gathering = true
		}
		r.br.Discard(n) // cannot fail: n <= Buffered()

		if r.max > 0 && len(raw) > r.max {
			r.err = ErrTooLarge
			return Event{}, ErrTooLarge
		}
		if found {
			return r.parse(raw, skip), nil
		}
		if atEOF {
			// Nothing more will come: what was gathered (if anything) is a partial event.
			r.err = r.rerr
			if len(raw) == 0 {
				return Event{}, r.err
			}
			err := r.rerr
			if err == io.EOF {
				err = ErrTruncated
			}
			return r.parse(raw, skip), err
		}
		// scanEvent consumes the whole window except a final "\r", which it leaves so that the
		// next window shows whether a "\n" follows it.
		need = 1
		if n < len(b) {
			need = 2
		}
	}
}

// appendDoubling appends b to dst, at least doubling the capacity when it must grow: append grows
// large slices by only 1.25x, which makes gathering a multi-megabyte event copy it several times.
func appendDoubling(dst, b []byte) []byte {
	if n := len(dst) + len(b); n > cap(dst) {
		grown := make([]byte, len(dst), max(n, 2*cap(dst)))
		copy(grown, dst)
		dst = grown
	}
	return append(dst, b...)
}

// checkBOM reports how many bytes of byte order mark start the stream (0 or 3). It waits for
// more than one byte only when the first one is 0xEF, which in practice means a BOM, so that a
// short first event (a lone "\n") is never held back.
func (r *Reader) checkBOM() int {
	b, err := r.br.Peek(1)
	if err == nil && b[0] == bom[0] {
		b, err = r.br.Peek(len(bom))
	}
	if err != nil {
		r.rerr = err
	}
	if bytes.Equal(b, bom) {
		return len(bom)
	}
	return 0
}

// window returns all the bytes in the bufio buffer, first reading from the upstream if fewer than
// need are buffered. Once the upstream has returned an error (recorded in r.rerr) it never reads
// again, and returns whatever is left.
func (r *Reader) window(need int) []byte {
	if r.rerr == nil {
		if _, err := r.br.Peek(need); err != nil {
			r.rerr = err
		}
	}
	b, _ := r.br.Peek(r.br.Buffered()) // never reads: the bytes are already buffered
	return b
}

// scanEvent looks in b[pos:] for the blank line that ends an event; *atLineStart tells whether
// the line that b[pos:] continues is still empty, and is updated for the next window.
//
// If it finds the blank line it returns the index just past it and true. Otherwise it returns
// how many bytes of b belong to the event so far: all of them, except a final "\r" when more data
// may come, since the "\r" might be the first half of a "\r\n" that ends the line (atEOF says that
// no more data will come).
func scanEvent(b []byte, pos int, atLineStart *bool, atEOF bool) (int, bool) {
	lf := -1
	for {
		i := nextEOL(b, pos, &lf)
		if i < 0 {
			if pos < len(b) {
				*atLineStart = false
			}
			return len(b), false
		}
		blank := *atLineStart && i == pos
		if i > pos {
			*atLineStart = false
		}
		if b[i] == '\r' && i+1 == len(b) && !atEOF {
			return i, false
		}
		next := i + 1
		if b[i] == '\r' && next < len(b) && b[next] == '\n' {
			next++
		}
		if blank {
			return next, true
		}
		*atLineStart = true
		pos = next
	}
}

// nextEOL returns the index of the first "\r" or "\n" in b[pos:] (as an index into b), or -1 if
// there is none. *lf caches the index of the first "\n" at or after a previous pos (len(b) if
// none; start with -1), so that text full of "\r" line endings is still scanned in linear time,
// while the search itself uses the fast bytes.IndexByte.
func nextEOL(b []byte, pos int, lf *int) int {
	if *lf < pos {
		if i := bytes.IndexByte(b[pos:], '\n'); i >= 0 {
			*lf = pos + i
		} else {
			*lf = len(b)
		}
	}
	if i := bytes.IndexByte(b[pos:*lf], '\r'); i >= 0 {
		return pos + i
	}
	if *lf == len(b) {
		return -1
	}
	return *lf
}

// parse returns the event whose bytes are raw, parsing its lines from raw[start:] up to the first
// blank line (which ends a complete event) or the end of raw (for a partial event, whose last
// line may have no line ending).
func (r *Reader) parse(raw []byte, start int) Event {
	ev := Event{Raw: raw}
	r.spans = r.spans[:0]
	lf := -1
	for pos := start; pos < len(raw); {
		end, next := len(raw), len(raw)
		if i := nextEOL(raw, pos, &lf); i >= 0 {
			end, next = i, i+1
			if raw[i] == '\r' && next < len(raw) && raw[next] == '\n' {
				next++
			}
		}
		if end == pos {
			break // the blank line that ends the event
		}
		r.field(&ev, raw, pos, end)
		pos = next
	}

	switch len(r.spans) {
	case 0:
		// No data field: Data stays nil.
	case 1:
		// The common case needs no copy. The capacity is capped so that an append by the caller
		// cannot overwrite the rest of Raw.
		s := r.spans[0]
		ev.Data = raw[s.start:s.end:s.end]
	default:
		d := r.data[:0]
		for k, s := range r.spans {
			if k > 0 {
				d = append(d, '\n')
			}
			d = append(d, raw[s.start:s.end]...)
		}
		r.data = d
		ev.Data = d
	}
	return ev
}

// field applies the line raw[pos:end] (without its line ending) to ev.
func (r *Reader) field(ev *Event, raw []byte, pos, end int) {
	line := raw[pos:end]
	colon := bytes.IndexByte(line, ':')
	if colon == 0 {
		return // a comment
	}
	name, vstart := line, end // a line without a colon is a field name with an empty value
	if colon > 0 {
		name = line[:colon]
		vstart = pos + colon + 1
		if vstart < end && raw[vstart] == ' ' {
			vstart++ // one space after the colon is not part of the value
		}
	}
	value := raw[vstart:end]
	switch string(name) {
	case "data":
		r.spans = append(r.spans, span{vstart, end})
	case "event":
		ev.Name = r.intern(value)
	case "id":
		if bytes.IndexByte(value, 0) < 0 {
			ev.ID = string(value)
		}
	}
}

// intern returns b as a string, reusing the string of an earlier event with the same name: a
// stream repeats a few names (mostly "response.output_text.delta"), and converting each one
// would allocate once per event.
func (r *Reader) intern(b []byte) string {
	if s, ok := r.names[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(r.names) < maxNames {
		if r.names == nil {
			r.names = make(map[string]string)
		}
		r.names[s] = s
	}
	return s
}

// AppendEvent appends a well-formed event: "event: NAME\n" (omitted when name == "") then "data: "
// lines (data split on "\n" into several data lines) and a blank line.
//
// So that what it writes always reads back as one event with these fields, "\r\n" and "\r" in
// data are line breaks too (they come back as "\n"), and "\r" and "\n" in name, which no event
// name can hold, are dropped. Empty (or nil) data gives one empty data line, which reads back as
// a non-nil empty Data.
func AppendEvent(dst []byte, name string, data []byte) []byte {
	if name != "" {
		dst = append(dst, "event: "...)
		for i := 0; i < len(name); i++ {
			if c := name[i]; c != '\r' && c != '\n' {
				dst = append(dst, c)
			}
		}
		dst = append(dst, '\n')
	}
	lf := -1
	pos := 0
	for {
		dst = append(dst, "data: "...)
		i := nextEOL(data, pos, &lf)
		if i < 0 {
			dst = append(dst, data[pos:]...)
			dst = append(dst, '\n')
			break
		}
		dst = append(dst, data[pos:i]...)
		dst = append(dst, '\n')
		pos = i + 1
		if data[i] == '\r' && pos < len(data) && data[pos] == '\n' {
			pos++
		}
	}
	return append(dst, '\n')
}
