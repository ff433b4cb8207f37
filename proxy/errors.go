package proxy

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/codexrelay/codexrelay/proxy/pool"
)

// apiError is an error answered to the client in the OpenAI error shape:
// {"error":{"message":...,"type":...,"code":...,"param":...}}.
type apiError struct {
	Status  int    `json:"-"`
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    string `json:"code,omitempty"`
	Param   string `json:"param,omitempty"`
	// ResetsAt is the unix time (seconds) when an exhausted quota resets; the Codex CLI
	// shows it as "try again at ..." for code usage_limit_reached.
	ResetsAt int64 `json:"resets_at,omitempty"`
	// RetryAfter, when positive, is sent as the Retry-After header (seconds).
	RetryAfter int `json:"-"`
	// Header holds more headers of the answer (the pool's rate limits on its 429: ratelimits.go).
	Header http.Header `json:"-"`
}

func (e *apiError) Error() string { return e.Message }

func errInvalid(code, param, msg string) *apiError {
	return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: code, Param: param, Message: msg}
}

// writeError answers err in the OpenAI error shape.
func writeError(w http.ResponseWriter, e *apiError) {
	b, _ := json.Marshal(struct {
		Error *apiError `json:"error"`
	}{e})
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)+1))
	if e.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	for k, v := range e.Header {
		h[k] = v
	}
	w.WriteHeader(e.Status)
	w.Write(append(b, '\n'))
}

// unavailable is the one answer to a request no account can take now (the pool's Dry, for the
// accounts that would serve it): 429 usage_limit_reached with the earliest reset when one
// rests (as the Codex CLI expects), else 503, or no account at all. what names a backend
// call's feature ("Web search"), whose accounts are the ChatGPT ones; "" is a model request.
func (s *Server) unavailable(d pool.Dry, what string) *apiError {
	now := s.now()
	switch {
	case d.Serving == 0 && what != "":
		return &apiError{Status: http.StatusNotImplemented, Type: "invalid_request_error", Code: "no_chatgpt_account",
			Message: what + " goes to a ChatGPT account, and Codex Relay has none: add one with `codexrelay accounts add --kind chatgpt`"}
	case d.Serving == 0:
		return &apiError{Status: 503, Type: "server_error", Code: "no_accounts",
			Message: "Codex Relay has no upstream account yet: add one with `codexrelay accounts add --name NAME --kind openai --base-url URL` (the API key on stdin), sign in with `codexrelay accounts add --kind chatgpt`, or import the Codex CLI login with `codexrelay accounts import-codex`."}
	case !d.Back.IsZero():
		e := &apiError{Status: http.StatusTooManyRequests, Type: "usage_limit_reached", Code: "usage_limit_reached",
			ResetsAt: d.Back.Unix(), Message: "no upstream account can take this request now; " + strings.Join(d.States, "; "),
			Header: s.dryHeaders()}
		e.RetryAfter = max(int(d.Back.Sub(now).Seconds()+0.999), 1)
		if what != "" {
			e.Message = what + " goes to a ChatGPT account, and every one is resting until " + d.Back.Local().Format("15:04")
			e.RetryAfter = max(int(d.Back.Sub(now).Seconds())+1, 0)
		}
		return e
	case what != "":
		return &apiError{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "no_account_available",
			Message: what + " goes to a ChatGPT account, and none can serve now (signed out or disabled): see `codexrelay accounts list`"}
	}
	return &apiError{Status: 503, Type: "server_error", Code: "no_usable_account",
		Message: "no upstream account can take this request now; " + strings.Join(d.States, "; ") +
			". Enable an account or sign in again (`codexrelay accounts list`)."}
}
