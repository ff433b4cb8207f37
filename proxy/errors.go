package proxy

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
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

// errClass is what an upstream error code means for the account.
type errClass int

const (
	errClient    errClass = iota // the request's own problem (a prompt too long, say): relayed
	errQuota                     // a quota or rate limit: the account cools down, the next one serves
	errTransient                 // an overload or server error: retried, then the next account
)

// classify is the one table of upstream error codes, used for error answers and for failure
// events alike.
//
// Quota: the account cannot serve until its limit resets: it rests (for the Retry-After or the
// reset the upstream names, else defaultCooldown) and the request moves on.
//   - rate_limit_exceeded, usage_limit_reached, insufficient_quota, quota_exceeded,
//     usage_not_included: the backend's limits and plan.
//   - slow_down: a rate limit under another name (the backend asks the client to back off);
//     another account is not slowed by it.
//   - credit_balance_exhausted: the account's credits (pay-as-you-go beyond the plan) are spent.
//   - organization_spend_limit_exceeded, project_spend_limit_exceeded,
//     organization_usage_limit_exceeded: an API key's organization or project reached the
//     spending limit its owner set; another key, of another organization, can serve.
//   - workspace_*: a limit of the ChatGPT workspace (a Team or Enterprise plan's pooled limit):
//     every account of that workspace rests with it (restWorkspace).
//
// Transient: an overload or server error, and flex_unavailable (the flex tier has no capacity
// now: the same account is tried once more, then the next; a ChatGPT account is never sent
// flex: tier.go).
func classify(code string) errClass {
	switch code {
	case "rate_limit_exceeded", "usage_limit_reached", "insufficient_quota", "quota_exceeded", "usage_not_included",
		"slow_down", "credit_balance_exhausted", "organization_spend_limit_exceeded", "project_spend_limit_exceeded",
		"organization_usage_limit_exceeded":
		return errQuota
	case "", "server_error", "server_is_overloaded", "overloaded", "internal_error", "service_unavailable", "flex_unavailable":
		return errTransient
	}
	if workspaceLimit(code) {
		return errQuota
	}
	return errClient
}

// workspaceLimit reports whether code is a limit of the whole ChatGPT workspace.
func workspaceLimit(code string) bool { return strings.HasPrefix(code, "workspace_") }

// upstreamError is the error object of an upstream answer or event, in its several shapes:
// {"error":{...}}, {"response":{"error":{...}}} and a bare {"code","message"}.
type upstreamError struct {
	Code            any    `json:"code"`
	Type            string `json:"type"`
	Message         string `json:"message"`
	ResetsAt        int64  `json:"resets_at"`
	ResetsInSeconds int64  `json:"resets_in_seconds"`
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

func parseUpstreamError(body []byte) (code, msg string, resetsAt int64) {
	var v struct {
		Error    json.RawMessage `json:"error"`
		Response struct {
			Error *upstreamError `json:"error"`
		} `json:"response"`
		upstreamError
	}
	if json.Unmarshal(body, &v) != nil {
		return "", strings.TrimSpace(string(body[:min(len(body), 200)])), 0
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
	resetsAt = e.ResetsAt
	if resetsAt == 0 && e.ResetsInSeconds > 0 {
		resetsAt = time.Now().Unix() + e.ResetsInSeconds
	}
	if ra := max(e.RetryAfter, e.RetryAfterSeconds); resetsAt == 0 && ra > 0 {
		resetsAt = time.Now().Add(time.Duration(ra * float64(time.Second))).Unix()
		if resetsAt <= time.Now().Unix() {
			resetsAt++ // under a second: rest until the next second, not the default
		}
	}
	return e.code(), e.Message, resetsAt
}
