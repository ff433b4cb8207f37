package proxy

import (
	"net/http"

	"github.com/codexrelay/codexrelay/proxy/sse"
)

// An eventSink is where the respond phase writes a streamed answer, event by event, whatever
// the client came by: an HTTP client's text/event-stream (httpSink), or a WebSocket client's
// text frames, one event a frame (socketWriter). The relay loops write events, never
// transport bytes, so that no event is encoded as SSE only to be parsed back for a socket.
type eventSink interface {
	// start begins the answer: its headers (the upstream's that are worth relaying) for HTTP.
	start(upHeader http.Header) error
	// event sends one event. raw, when not nil, is the event as the upstream sent it over SSE
	// (relayed byte for byte to an HTTP client); name may be "" (a Chat chunk).
	event(name string, data, raw []byte) error
	// flush sends what was written so far (a socket sends each event as it is written).
	flush() error
}

// httpSink is an HTTP client's event stream.
type httpSink struct {
	x  *exchange
	rc *http.ResponseController
}

func (s *httpSink) start(upHeader http.Header) error {
	x := s.x
	h := x.w.Header()
	x.relayHeaders(h, upHeader)
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	x.w.WriteHeader(http.StatusOK)
	return s.flush()
}

func (s *httpSink) event(name string, data, raw []byte) error {
	if name == rateLimitsEventName {
		return nil // the serving account's figures: the client has the pool's (ratelimits.go)
	}
	if raw == nil {
		raw = sse.AppendEvent(nil, name, data)
	}
	n, err := s.x.w.Write(raw)
	s.x.t.Bytes += int64(n)
	return err
}

func (s *httpSink) flush() error {
	if s.rc == nil {
		s.rc = http.NewResponseController(s.x.w)
	}
	return s.rc.Flush()
}

// sink is the exchange's event sink: the socket's for a WebSocket turn, else its HTTP stream.
func (x *exchange) sink() eventSink {
	if x.via.events == nil {
		x.via.events = &httpSink{x: x}
	}
	return x.via.events
}

// An eventSource is where the attempt and respond phases read an upstream's streamed answer,
// event by event, whatever it came by: an HTTP body of text/event-stream (an sse.Reader), or an
// upstream WebSocket's frames (socketEvents, socketwire.go).
type eventSource interface {
	Next() (sse.Event, error)
	// Buffered is how many bytes of further events are already read (0: the next may wait).
	Buffered() int
}
