package proxy

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
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

// upstreamError is the error object of an upstream answer or event, in its several shapes:
// {"error":{...}}, {"response":{"error":{...}}} and a bare {"code","message"}.
type upstreamError struct {
	Code    any    `json:"code"`
	Type    string `json:"type"`
	Message string `json:"message"`
	// Numbers as floats: a value too large for an int64 still reads (and rests for the cap).
	ResetsAt        float64 `json:"resets_at"`
	ResetsInSeconds float64 `json:"resets_in_seconds"`
	// A Retry-After carried in the body (a stream's failure event has no headers): seconds.
	RetryAfter        float64 `json:"retry_after"`
	RetryAfterSeconds float64 `json:"retry_after_seconds"`
}

func (e *upstreamError) code() string {
	switch c := e.Code.(type) {
	case string:
		if c != "" {
			return c
		}
	case float64:
		return strconv.FormatFloat(c, 'f', -1, 64)
	}
	if e.Type == "usage_limit_reached" || e.Type == "insufficient_quota" {
		return e.Type
	}
	return ""
}

// errorBody is what an upstream's error object says: its code and message, and when its limit
// resets: at a time (resetsAt, unix seconds) or after a while (resetIn, seconds).
type errorBody struct {
	code, msg string
	resetsAt  int64
	resetIn   float64
}

// parseErrorBody reads an upstream's error object, in its several shapes.
func parseErrorBody(body []byte) errorBody {
	var v struct {
		Error    json.RawMessage `json:"error"`
		Response struct {
			Error *upstreamError `json:"error"`
		} `json:"response"`
		upstreamError
	}
	if json.Unmarshal(body, &v) != nil {
		return errorBody{msg: strings.TrimSpace(string(body[:min(len(body), 200)]))}
	}
	e := &v.upstreamError
	if len(v.Error) > 0 {
		var inner upstreamError
		if json.Unmarshal(v.Error, &inner) == nil {
			e = &inner
		} else {
			var s string
			json.Unmarshal(v.Error, &s)
			e.Message = s
		}
	} else if v.Response.Error != nil {
		e = v.Response.Error
	}
	out := errorBody{code: e.code(), msg: e.Message}
	if e.ResetsAt > 0 {
		out.resetsAt = int64(min(e.ResetsAt, 1<<53)) // far enough: restEnd caps it
	}
	if e.ResetsInSeconds > 0 {
		out.resetIn = e.ResetsInSeconds
	} else if ra := max(e.RetryAfter, e.RetryAfterSeconds); ra > 0 {
		out.resetIn = ra
	}
	return out
}
