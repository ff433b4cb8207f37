package proxy

import (
	"fmt"
	"net/http"

	"github.com/codexrelay/codexrelay/proxy/payload"
)

// clientRequest is a parsed client body: the top-level members as raw bytes plus the few
// fields the relay routes on. The large input or messages array is never decoded.
type clientRequest struct {
	route   string // "responses" or "chat"
	obj     *payload.Object
	model   string
	stream  bool
	session string // affinity key: prompt_cache_key, else the session-id header
	// sessionHeader is the client's session-id/session_id header, sent upstream as session_id.
	sessionHeader string
}

// parseClientRequest validates the fields the relay relies on. Anything else in the body is
// the upstream's business and goes through untouched. p is the parser that saw the body
// arrive (nil: parse it now).
func parseClientRequest(route string, body []byte, h http.Header, p *payload.Parser) (*clientRequest, *apiError) {
	if p == nil {
		p = new(payload.Parser)
	}
	obj, err := p.Finish(body)
	if err != nil {
		return nil, errInvalid("invalid_json", "", "the request body is not a valid JSON object: "+err.Error())
	}
	req := &clientRequest{route: route, obj: obj}
	raw, ok := obj.Get("model")
	if !ok {
		return nil, errInvalid("missing_required_parameter", "model", "'model' is required")
	}
	if payload.KindOf(raw) != payload.KindString {
		return nil, errInvalid("invalid_type", "model", "'model' must be a string, got "+payload.KindOf(raw).String())
	}
	if len(raw) > maxModelName+2 {
		return nil, errInvalid("invalid_value", "model", fmt.Sprintf("'model' is longer than %d characters", maxModelName))
	}
	if req.model, err = payload.DecodeString(raw); err != nil || req.model == "" {
		return nil, errInvalid("invalid_value", "model", "'model' must be a non-empty string")
	}
	if raw, ok := obj.Get("stream"); ok {
		switch payload.KindOf(raw) {
		case payload.KindTrue:
			req.stream = true
		case payload.KindFalse, payload.KindNull:
		default:
			return nil, errInvalid("invalid_type", "stream", "'stream' must be a boolean, got "+payload.KindOf(raw).String())
		}
	}
	bigKey := "input"
	if route == routeChat {
		bigKey = "messages"
	}
	if raw, ok := obj.Get(bigKey); ok {
		k := payload.KindOf(raw)
		if route == routeChat && k != payload.KindArray {
			return nil, errInvalid("invalid_type", bigKey, "'messages' must be an array, got "+k.String())
		}
		if k != payload.KindArray && k != payload.KindString {
			return nil, errInvalid("invalid_type", bigKey, "'input' must be a string or an array, got "+k.String())
		}
	} else if route == routeChat {
		return nil, errInvalid("missing_required_parameter", "messages", "'messages' is required")
	}
	req.sessionHeader = h.Get("Session-Id")
	if req.sessionHeader == "" {
		req.sessionHeader = h.Get("Session_id")
	}
	if raw, ok := obj.Get("prompt_cache_key"); ok && payload.KindOf(raw) == payload.KindString {
		req.session, _ = payload.DecodeString(raw)
	}
	if req.session == "" {
		req.session = req.sessionHeader
	}
	return req, nil
}

// maxModelName bounds a model name (real ones are far shorter).
const maxModelName = 256

const (
	routeResponses = "responses"
	routeChat      = "chat"
)
