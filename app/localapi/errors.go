package localapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/codexrelay/codexrelay/proxy"
)

// Error is an error answer of the local API, in the OpenAI error shape
// {"error":{"message","type","code","param"}}: what a handler returns and what the client
// reads back. It matches (errors.Is) the error its code stands for (sentinels below), so that a
// caller tells "no banked reset" or "the ledger is off" apart the same way in the process that
// serves and in the one that asked.
type Error struct {
	Status  int    `json:"-"`
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    string `json:"code,omitempty"`
	Param   string `json:"param,omitempty"`
}

func (e *Error) Error() string { return e.Message }

// Unwrap is the error e's code stands for (nil: none).
func (e *Error) Unwrap() error {
	for _, s := range sentinels {
		if s.code == e.Code {
			return s.err
		}
	}
	return nil
}

// Error types, as OpenAI names them.
const (
	typeInvalid = "invalid_request_error"
	typeServer  = "server_error"
)

var (
	// ErrUsageOff says the usage ledger is switched off in the settings.
	ErrUsageOff = errors.New("the usage ledger is off")
	// ErrUsageClosed says the usage ledger is on but not open: it opens while the relay serves.
	ErrUsageClosed = errors.New("the usage ledger is not open")
	// ErrNotTheRelay is an answer that the relay of this settings folder did not sign:
	// something else answers on its address (Signed).
	ErrNotTheRelay = errors.New("the program answering there is not this folder's Codex Relay (its answer is not signed with the folder's instance secret)")
)

// sentinels are the errors with a code of their own, both ways: a handler's error that
// matches one is answered with its status, type and code; a client's Error with that code
// matches it again.
var sentinels = []struct {
	err    error
	status int
	typ    string
	code   string
}{
	{proxy.ErrNoSuchAccount, http.StatusNotFound, typeInvalid, "account_not_found"},
	{proxy.ErrNotChatGPT, http.StatusBadRequest, typeInvalid, "not_chatgpt"},
	{proxy.ErrNoResetCredit, http.StatusConflict, typeInvalid, "no_reset_credit"},
	{proxy.ErrRedeemPending, http.StatusGatewayTimeout, typeServer, "redeem_pending"},
	{ErrUsageOff, http.StatusServiceUnavailable, typeServer, "usage_off"},
	{ErrUsageClosed, http.StatusServiceUnavailable, typeServer, "usage_closed"},
}

// errorOf is err as an answer: the sentinel's status, type and code when it matches one, else
// fallback's; the message is err's own.
func errorOf(err error, fallback Error) *Error {
	e := fallback
	e.Message = err.Error()
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			e.Status, e.Type, e.Code = s.status, s.typ, s.code
			break
		}
	}
	return &e
}

// invalid is a 400 answer about a query parameter.
func invalid(code, param, msg string) *Error {
	return &Error{Status: http.StatusBadRequest, Type: typeInvalid, Code: code, Param: param, Message: msg}
}

// writeError is the one writer of the local API's error answers.
func writeError(w http.ResponseWriter, e *Error) {
	b, _ := json.Marshal(struct {
		Error *Error `json:"error"`
	}{e})
	writeBody(w, e.Status, b)
}

// writeJSON answers v with status 200.
func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, &Error{Status: http.StatusInternalServerError, Type: typeServer, Code: "encode_failed", Message: "could not encode the answer"})
		return
	}
	writeBody(w, http.StatusOK, b)
}

func writeBody(w http.ResponseWriter, status int, b []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
