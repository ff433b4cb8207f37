package proxy

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/codexrelay/codexrelay/proxy/payload"
)

// Codex's headers. The Codex CLI sends, with each request of a turn, headers that the
// Responses upstreams read (the turn's metadata, beta features, the subagent and its parent
// thread, the session and thread ids, request and window ids, the Responses Lite marker, and
// whatever a later release adds), and replays the x-codex-turn-state that the upstream issued
// on the turn's first response (an HTTP response header, or over a WebSocket a
// response.metadata event). The relay forwards every client header to a Responses account as
// it came, by rule, not by list, except those it owns:
//
//   - the credential, its scopes and the identity (authorization, the local key,
//     chatgpt-account-id, OpenAI-Organization and -Project, originator, user agent, version:
//     upstreamRequest sets what the account needs);
//   - the transport's (hop-by-hop, framing and encoding, a WebSocket handshake's, OpenAI-Beta,
//     which names the transport): the relay reads the body whole and sends its own;
//   - a browser's and a forwarder's (cookies, origin, referer, forwarded-for);
//   - x-codex-turn-state, sent only to the account that issued it: after a rotation the new
//     account issues its own, which reaches the client with the answer (copyRelayHeaders, or
//     the stream's response.metadata);
//   - the Lite marker, sent as lite.go says;
//   - x-codex-routing-hint, which a ChatGPT account gets with the model and tier the relay
//     sends it.
//
// Over a socket, each turn's headers come in the frame's client_metadata (by lower-case
// name; a header the handshake carried is the connection's first, a prewarm's): a turn served
// over HTTP sends them as headers, a turn served over an upstream socket keeps them in the
// frame, less a foreign turn state (socketMetadata).

const (
	turnStateHeader   = "X-Codex-Turn-State"
	routingHintHeader = "X-Codex-Routing-Hint"
)

// ownedHeaders are the client headers the relay never forwards (canonical names).
var ownedHeaders = map[string]bool{
	"Authorization": true, "X-Api-Key": true, "Chatgpt-Account-Id": true, "Originator": true,
	"Openai-Organization": true, "Openai-Project": true, // scopes of the client's key, not the account's
	"User-Agent": true, "Version": true, "Openai-Beta": true,
	"Host": true, "Connection": true, "Keep-Alive": true, "Proxy-Authorization": true, "Proxy-Connection": true,
	"Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true,
	"Accept": true, "Accept-Encoding": true, "Content-Type": true, "Content-Length": true, "Content-Encoding": true,
	"Sec-Websocket-Key": true, "Sec-Websocket-Version": true, "Sec-Websocket-Extensions": true,
	"Sec-Websocket-Protocol": true, "Sec-Websocket-Accept": true,
	"Cookie": true, "Origin": true, "Referer": true,
	"Forwarded": true, "X-Forwarded-For": true, "X-Forwarded-Host": true, "X-Forwarded-Proto": true, "X-Real-Ip": true,
	turnStateHeader: true, liteHeader: true, routingHintHeader: true,
}

// forwarded reports whether the client's header k (canonical) goes to a Responses account as
// it came.
func forwarded(k string, connTokens string) bool {
	if ownedHeaders[k] || strings.HasPrefix(k, "Sec-Fetch-") || strings.HasPrefix(k, "Proxy-") {
		return false
	}
	// Headers the client's Connection header names are hop-by-hop too.
	for _, t := range strings.Split(connTokens, ",") {
		if strings.EqualFold(strings.TrimSpace(t), k) {
			return false
		}
	}
	return true
}

// upstreamHeaders are the client's headers that go with a try's request to its account m
// (socket: the handshake of an upstream socket): for a Chat Completions account the session
// id; for a Responses account every header the rule forwards (the session id as the client
// named it: session-id from Codex 0.171, session_id from older builds), the turn's metadata of
// a socket frame as headers (a turn served over HTTP), the turn state m issued, the Lite
// marker when m takes the Lite form, and for a ChatGPT account the routing hint. A turn state another account issued (or one the relay
// never saw issued) is left out, and the trace says so.
func (x *exchange) upstreamHeaders(tr *accountTry, socket bool) http.Header {
	m := tr.m
	h := http.Header{}
	if isChatAccount(m) {
		// A Chat Completions server gets the session id alone, by the name the older Codex
		// CLI gave it.
		if x.req.sessionHeader != "" {
			h.Set("session_id", x.req.sessionHeader)
		}
		return h
	}
	conn := x.r.Header.Get("Connection")
	for k, v := range x.r.Header {
		if forwarded(k, conn) {
			h[k] = v
		}
	}
	meta := x.body.meta()
	if !socket {
		for k, v := range meta {
			if name, ok := metadataHeader(k); ok {
				h.Set(name, v)
			}
		}
	}
	if st := x.turnState(); st != "" {
		if x.issuedBy(m, st) {
			h.Set(turnStateHeader, st)
		} else {
			x.t.TurnStateOmitted = true
		}
	}
	if x.liteFor(tr) && (!socket || x.r.Header.Get(liteHeader) != "") {
		h.Set(liteHeader, "true")
	}
	if m.Kind == KindChatGPT {
		h.Set(routingHintHeader, x.routingHint(tr))
	}
	return h
}

// metadataHeader is the header a frame's client_metadata key stands for, if it stands for
// one: an x- name as it is, a ws_request_header_NAME as NAME (underscores as hyphens), but
// never one the relay owns.
func metadataHeader(key string) (string, bool) {
	name := key
	if rest, ok := strings.CutPrefix(key, "ws_request_header_"); ok {
		name = strings.ReplaceAll(rest, "_", "-")
	} else if !strings.HasPrefix(key, "x-") || socketOnlyMetadata(key) {
		return "", false
	}
	name = http.CanonicalHeaderKey(name)
	return name, forwarded(name, "")
}

// socketOnlyMetadata reports whether a frame's metadata key has no header to stand for: the
// socket's own (x-codex-ws-*), and the installation id, which Codex sends over HTTP only inside
// x-codex-turn-metadata (testdata/codex-0.171/chatgpt-http).
func socketOnlyMetadata(key string) bool {
	return strings.HasPrefix(key, "x-codex-ws-") || key == "x-codex-installation-id"
}

// turnState is the turn state the client replayed: a socket frame's metadata, else the header.
func (x *exchange) turnState() string {
	if v, ok := x.body.meta()[strings.ToLower(turnStateHeader)]; ok {
		return v
	}
	return x.r.Header.Get(turnStateHeader)
}

// issuedBy reports whether the relay saw m issue turn state st.
func (x *exchange) issuedBy(m *member, st string) bool {
	owner, ok := x.s.turnStates.owner([]byte(st))
	return ok && owner == m.Key()
}

// routingHint is the x-codex-routing-hint of a try, as the Codex CLI writes it for a ChatGPT
// sign-in: the model the relay sends and, when the account is sent one, the service tier.
func (x *exchange) routingHint(tr *accountTry) string {
	hint := "model=" + tr.tg.model
	if x.req.tier != "" && servesTier(tr.m.Kind, x.req.tier) {
		hint += ";tier=" + x.req.tier
	}
	return hint
}

// learnTurnState records the turn state m issued in an answer's (or a handshake's) headers.
func (s *Server) learnTurnState(m *member, h http.Header) {
	if st := h.Get(turnStateHeader); st != "" {
		s.turnStates.learn(m.Key(), "", []byte(st))
	}
}

// learnMetadata reads a response.metadata event from m: the turn state it issues in the
// stream (a socket's; the client replays it in its frames' client_metadata), and the model it
// says it served instead of the one asked for (model_reroute), which the trace and the ledger
// record as the model served.
func (x *exchange) learnMetadata(m *member, data []byte) {
	var ev struct {
		Headers map[string]any `json:"headers"`
		Reroute *struct {
			From string `json:"from_model"`
			To   string `json:"to_model"`
		} `json:"model_reroute"`
	}
	if json.Unmarshal(data, &ev) != nil {
		return
	}
	for k, v := range ev.Headers {
		if st, ok := v.(string); ok && st != "" && strings.EqualFold(k, turnStateHeader) {
			x.s.turnStates.learn(m.Key(), "", []byte(st))
		}
	}
	if r := ev.Reroute; r != nil && r.To != "" && len(r.To) <= maxModelName && r.To != x.t.ResolvedModel {
		x.t.ReroutedFrom, x.t.ResolvedModel = x.t.ResolvedModel, r.To
	}
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
	if v, ok := x.body.meta()["x-codex-turn-metadata"]; ok {
		return v
	}
	return x.r.Header.Get("X-Codex-Turn-Metadata")
}

// metadataFor is the client_metadata override of a try's body, or false when it goes as the
// client sent it: a turn state another account issued is left out (and the trace says so);
// over a socket (socket) the Lite marker is there exactly when the account takes the Lite
// form, and over HTTP never (it travels as the header there).
func (x *exchange) metadataFor(tr *accountTry, obj *payload.Object, socket bool) (payload.Override, bool) {
	m := tr.m
	want := socket && x.liteFor(tr)
	raw, ok := obj.Get("client_metadata")
	if !ok || payload.KindOf(raw) != payload.KindObject {
		if want {
			return payload.Override{Key: "client_metadata", Value: []byte(`{"` + liteMetaKey + `":"true"}`)}, true
		}
		return payload.Override{}, false
	}
	meta, err := payload.Parse(raw)
	if err != nil {
		return payload.Override{}, false
	}
	var ov []payload.Override
	marked := false
	for _, mem := range meta.Members {
		switch strings.ToLower(mem.Key) {
		case strings.ToLower(turnStateHeader):
			if st, err := payload.DecodeString(mem.Value); err == nil && !x.issuedBy(m, st) {
				ov = append(ov, payload.Override{Key: mem.Key})
				x.t.TurnStateOmitted = true
			}
		case liteMetaKey:
			if want {
				marked = true
			} else {
				ov = append(ov, payload.Override{Key: mem.Key})
			}
		}
	}
	if want && !marked {
		ov = append(ov, payload.Override{Key: liteMetaKey, Value: []byte(`"true"`)})
	}
	if len(ov) == 0 {
		return payload.Override{}, false
	}
	return payload.Override{Key: "client_metadata", Value: payload.Build(nil, meta, ov)}, true
}
