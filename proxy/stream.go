package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/codexrelay/codexrelay/proxy/bridge"
	"github.com/codexrelay/codexrelay/proxy/payload"
	"github.com/codexrelay/codexrelay/proxy/sse"
)

// maxHeld bounds how many leading bookkeeping events are held back while waiting for the
// first event that tells whether the stream will succeed.
const maxHeld = 8

// peekStream reads the leading events that carry no output (response.created,
// response.in_progress, comments) and the first event after them. The held events are copies;
// comments past maxHeld are dropped rather than held (they carry nothing), so that a stream of
// keep-alives alone still waits for a real event.
func peekStream(rd *sse.Reader) (held []sse.Event, first sse.Event, err error) {
	for {
		ev, err := rd.Next()
		if err != nil {
			return held, ev, err
		}
		bookkeeping := ev.Name == "response.created" || ev.Name == "response.in_progress"
		if len(ev.Data) == 0 && len(held) >= maxHeld {
			continue
		}
		if len(held) < maxHeld && (bookkeeping || len(ev.Data) == 0) {
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
// further event is already waiting. If the upstream breaks off (or goes silent past the stream
// idle timeout) before a terminal event, the client gets a well-formed response.failed with
// code server_error (which the Codex CLI retries) rather than a silently truncated stream.
// A failure event from the upstream is relayed redacted.
func (x *exchange) relayStream(rd *sse.Reader, held []sse.Event, first sse.Event) {
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
	ev := first
	var err error
	for err == nil {
		raw := ev.Raw
		if isFailureEvent(ev.Name) {
			raw = redact(raw, x.cred.Token)
			if _, msg, _ := parseUpstreamError(redact(ev.Data, x.cred.Token)); msg != "" {
				x.t.Error = truncate(msg, 200)
			}
		}
		if !write(raw) {
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
		why := x.brokeOff(err, "response.completed")
		x.t.Outcome, x.t.Error = outcomeInterrupted, why
		if terminal == "" {
			write(failedEvent(events, responseID, "server_error", why))
			rc.Flush()
		}
	}
}

// brokeOff says why an upstream stream that was being relayed ended before its terminal
// event: a timeout, a broken connection (redacted), or an end without the terminal event.
func (x *exchange) brokeOff(err error, terminal string) string {
	if x.call != nil {
		err = x.call.explain(err)
	}
	switch {
	case isTimeout(err):
		return err.Error()
	case errors.Is(err, io.EOF) || errors.Is(err, sse.ErrTruncated):
		return "upstream stream ended before " + terminal
	}
	return "upstream stream broke: " + redactString(err.Error(), x.cred.Token)
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

// collectFinal reads an upstream Responses stream to its terminal event and returns a copy of
// it. An error means the stream ended or broke before one.
func collectFinal(rd *sse.Reader, first sse.Event) (sse.Event, error) {
	ev := first
	var err error
	for !isTerminalEvent(ev.Name) {
		if ev, err = rd.Next(); err != nil {
			return sse.Event{}, err
		}
	}
	return sse.Event{Name: ev.Name, Data: bytes.Clone(ev.Data)}, nil
}

// answerFinal answers a non-streamed client request with the terminal event of an upstream
// stream (ChatGPT accounts always stream): the final response object, translated for a Chat
// client, or the failure in the OpenAI error shape.
func (x *exchange) answerFinal(wr wire, final sse.Event, cred Credential) {
	if final.Name == "response.failed" || final.Name == "error" {
		code, msg, resetsAt := parseUpstreamError(redact(final.Data, cred.Token))
		status := http.StatusBadRequest
		switch classify(code) {
		case errQuota:
			status = http.StatusTooManyRequests
		case errTransient:
			status = http.StatusBadGateway
		}
		if msg == "" {
			msg = "the upstream failed the response"
		}
		x.reject(&apiError{Status: status, Type: "upstream_error", Code: code, Message: msg, ResetsAt: resetsAt}, outcomeFailed)
		return
	}
	obj, perr := payload.Parse(final.Data)
	var resp []byte
	if perr == nil {
		resp, _ = obj.Get("response")
	}
	if resp == nil {
		x.reject(&apiError{Status: http.StatusBadGateway, Type: "server_error", Code: "server_error",
			Message: "upstream " + final.Name + " event carried no response object"}, outcomeInterrupted)
		return
	}
	if wr == wireChatOverResponses {
		out, err := bridge.ResponseToChatCompletion(resp, x.req.model)
		if err != nil {
			x.reject(&apiError{Status: http.StatusBadGateway, Type: "server_error", Code: "server_error", Message: "could not translate the upstream answer: " + err.Error()}, outcomeFailed)
			return
		}
		resp = out
	}
	x.writeJSONBody(resp)
}

// writeJSONBody answers 200 with a JSON body.
func (x *exchange) writeJSONBody(b []byte) {
	h := x.w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	x.w.WriteHeader(http.StatusOK)
	n, _ := x.w.Write(b)
	x.t.Bytes, x.t.Status, x.t.Outcome = int64(n), http.StatusOK, outcomeCompleted
}
