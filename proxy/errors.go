package proxy

import (
	"encoding/json"
	"net/http"
	"strconv"
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
	w.WriteHeader(e.Status)
	w.Write(append(b, '\n'))
}
