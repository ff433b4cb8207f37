package proxy

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/codexrelay/codexrelay/proxy/payload"
)

// Turn headers. The Codex CLI sends, with each request of a turn, headers that the Responses
// upstreams read (the turn's metadata, beta features, the subagent, request and window ids),
// and replays the x-codex-turn-state that the upstream issued on the turn's first response.
// The relay forwards the former to every Responses account and a turn state only to the
// account that issued it: after a rotation the new account issues its own, which reaches the
// client with the answer's headers (copyRelayHeaders).

// turnHeaders go to Responses upstreams as the client sent them.
var turnHeaders = []string{"X-Codex-Turn-Metadata", "X-Codex-Beta-Features", "X-Openai-Subagent", "X-Client-Request-Id", "X-Codex-Window-Id"}

const turnStateHeader = "X-Codex-Turn-State"

// upstreamHeaders are the client's headers that go with a request to m: the session id, and
// for a Responses account the turn headers and the turn state m issued. A turn state another
// account issued (or one the relay never saw issued) is left out, and the trace says so.
func (x *exchange) upstreamHeaders(m *member) http.Header {
	h := http.Header{}
	if x.req.sessionHeader != "" {
		h.Set("session_id", x.req.sessionHeader)
	}
	x.t.TurnStateOmitted = false
	if m.Kind == KindOpenAI && m.API == APIChat {
		return h
	}
	meta := x.frameMetadata()
	for _, k := range turnHeaders {
		if v, ok := meta[strings.ToLower(k)]; ok {
			h.Set(k, v)
		} else if v := x.r.Header.Values(k); len(v) > 0 {
			h[k] = v
		}
	}
	st := x.r.Header.Get(turnStateHeader)
	if v, ok := meta[strings.ToLower(turnStateHeader)]; ok {
		st = v
	}
	if st != "" {
		if owner, ok := x.s.turnStates.owner([]byte(st)); ok && owner == m.key() {
			h.Set(turnStateHeader, st)
		} else {
			x.t.TurnStateOmitted = true
		}
	}
	return h
}

// learnTurnState records the turn state m issued in an answer's (or a handshake's) headers.
func (s *Server) learnTurnState(m *member, h http.Header) {
	if st := h.Get(turnStateHeader); st != "" {
		s.turnStates.learn(m.key(), "", []byte(st))
	}
}

// frameMetadata is, for a WebSocket turn, the frame's client_metadata (nil for an HTTP request).
func (x *exchange) frameMetadata() map[string]string {
	if x.turn == nil {
		return nil
	}
	return x.turn.meta
}

// clientMetadata reads a frame's client_metadata: over a socket the Codex CLI sends each
// turn's headers there (the handshake's x-codex-turn-metadata is the connection's first, a
// prewarm's), by lower-case header name; nil when it has none.
func clientMetadata(frame *payload.Object) map[string]string {
	raw, ok := frame.Get("client_metadata")
	if !ok {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if s, ok := v.(string); ok {
			out[strings.ToLower(k)] = s
		}
	}
	return out
}

// turnMetadata is the request's x-codex-turn-metadata: a WebSocket frame's, else the header.
func (x *exchange) turnMetadata() string {
	if v, ok := x.frameMetadata()["x-codex-turn-metadata"]; ok {
		return v
	}
	return x.r.Header.Get("X-Codex-Turn-Metadata")
}
