package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/codexrelay/codexrelay/proxy/payload"
	"github.com/codexrelay/codexrelay/proxy/sse"
)

// maxHeld bounds how many leading bookkeeping events are held back while waiting for the
// first event that tells whether the stream will succeed.
const maxHeld = 8

// peekStream reads the leading events that carry no output (response.created,
// response.in_progress, comments) and the first event after them. The held events are copies.
func peekStream(rd *sse.Reader) (held []sse.Event, first sse.Event, err error) {
	for {
		ev, err := rd.Next()
		if err != nil {
			return held, ev, err
		}
		if len(held) < maxHeld && (ev.Name == "response.created" || ev.Name == "response.in_progress" || len(ev.Data) == 0) {
			held = append(held, sse.Event{Raw: bytes.Clone(ev.Raw), Name: ev.Name, Data: bytes.Clone(ev.Data)})
			continue
		}
		return held, ev, nil
	}
}

func isFailureEvent(name string) bool { return name == "response.failed" || name == "error" }

func isTerminalEvent(name string) bool {
	switch name {
	case "response.completed", "response.failed", "response.incomplete", "error":
		return true
	}
	return false
}

// relayStream sends the upstream's events to the client byte for byte, flushing as soon as no
// further event is already waiting. If the upstream breaks off before a terminal event, the
// client gets a well-formed response.failed with code server_error (which the Codex CLI
// retries) rather than a silently truncated stream.
func (x *exchange) relayStream(upHeader http.Header, rd *sse.Reader, held []sse.Event, first sse.Event, ferr error) {
	x.startSSE(upHeader)
	rc := http.NewResponseController(x.w)

	var events int64
	terminal := ""
	responseID := ""
	write := x.writeRaw
	for _, ev := range held {
		if responseID == "" && ev.Name == "response.created" {
			responseID = responseIDOf(ev.Data)
		}
		if !write(ev.Raw) {
			x.clientGone()
			return
		}
		events++
	}
	ev, err := first, ferr
	for err == nil {
		if !write(ev.Raw) {
			x.clientGone()
			return
		}
		events++
		if isTerminalEvent(ev.Name) {
			terminal = ev.Name
		}
		// Flush once nothing more is waiting: each event leaves as soon as it arrived.
		if rd.Buffered() == 0 && rc.Flush() != nil {
			x.clientGone()
			return
		}
		ev, err = rd.Next()
	}
	rc.Flush()
	switch {
	case errors.Is(err, io.EOF) && terminal != "":
		x.t.Outcome = outcomeCompleted
		if terminal != "response.completed" && terminal != "response.incomplete" {
			x.t.Outcome = outcomeFailed
		}
	case x.r.Context().Err() != nil:
		x.clientGone()
	default:
		why := "upstream stream ended before response.completed"
		if !errors.Is(err, io.EOF) && !errors.Is(err, sse.ErrTruncated) {
			why = "upstream stream broke: " + err.Error()
		}
		x.t.Outcome, x.t.Error = outcomeInterrupted, why
		if terminal == "" {
			write(failedEvent(events, responseID, "server_error", why))
			rc.Flush()
		}
	}
}

func (x *exchange) clientGone() {
	x.t.Outcome = outcomeCanceled
	if x.t.Status == 0 {
		x.t.Status = 499
	}
}

// failedEvent builds a response.failed event in the shape the Codex CLI and the SDKs read.
func failedEvent(seq int64, responseID, code, message string) []byte {
	if responseID == "" {
		responseID = "resp_relay_failed"
	}
	data, _ := json.Marshal(map[string]any{
		"type":            "response.failed",
		"sequence_number": seq,
		"response": map[string]any{
			"id": responseID, "object": "response", "status": "failed", "output": []any{},
			"error": map[string]string{"code": code, "message": message},
		},
	})
	return sse.AppendEvent(nil, "response.failed", data)
}

// responseIDOf reads the response id of a response.created event's data.
func responseIDOf(data []byte) string {
	var v struct {
		Response struct {
			ID string `json:"id"`
		} `json:"response"`
	}
	json.Unmarshal(data, &v)
	return v.Response.ID
}

// assemble answers a non-streamed client request from an upstream stream (ChatGPT accounts
// always stream): the final response object of response.completed, or the error of
// response.failed in the OpenAI error shape.
func (x *exchange) assemble(rd *sse.Reader, first sse.Event, ferr error) {
	resp, ok := x.finalResponse(rd, first, ferr)
	if !ok {
		return
	}
	x.writeJSONBody(resp)
}

// writeJSONBody answers 200 with a JSON body.
func (x *exchange) writeJSONBody(b []byte) {
	h := x.w.Header()
	h.Set("Content-Type", "application/json")
	x.w.WriteHeader(http.StatusOK)
	n, _ := x.w.Write(b)
	x.t.Bytes, x.t.Status, x.t.Outcome = int64(n), http.StatusOK, outcomeCompleted
}

// finalResponse reads an upstream Responses stream to its end and returns the final response
// object. On failure it has answered the client already and returns false.
func (x *exchange) finalResponse(rd *sse.Reader, first sse.Event, ferr error) ([]byte, bool) {
	ev, err := first, ferr
	for err == nil {
		if isTerminalEvent(ev.Name) {
			break
		}
		ev, err = rd.Next()
	}
	if err != nil {
		if x.r.Context().Err() != nil {
			x.clientGone()
			return nil, false
		}
		why := "upstream stream ended before response.completed"
		if !errors.Is(err, io.EOF) && !errors.Is(err, sse.ErrTruncated) {
			why = "upstream stream broke: " + err.Error()
		}
		x.reject(&apiError{Status: http.StatusBadGateway, Type: "server_error", Code: "server_error", Message: why}, outcomeInterrupted)
		return nil, false
	}
	if ev.Name == "response.failed" || ev.Name == "error" {
		code, msg, resetsAt := parseUpstreamError(ev.Data)
		status := http.StatusBadRequest
		switch code {
		case "rate_limit_exceeded", "usage_limit_reached", "insufficient_quota":
			status = http.StatusTooManyRequests
		case "", "server_error", "server_is_overloaded":
			status = http.StatusBadGateway
		}
		if msg == "" {
			msg = "the upstream failed the response"
		}
		x.reject(&apiError{Status: status, Type: "upstream_error", Code: code, Message: msg, ResetsAt: resetsAt}, outcomeFailed)
		return nil, false
	}
	obj, perr := payload.Parse(ev.Data)
	var resp []byte
	if perr == nil {
		resp, _ = obj.Get("response")
	}
	if resp == nil {
		x.reject(&apiError{Status: http.StatusBadGateway, Type: "server_error", Code: "server_error",
			Message: "upstream " + ev.Name + " event carried no response object"}, outcomeInterrupted)
		return nil, false
	}
	return resp, true
}
