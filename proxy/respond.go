package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/codexrelay/codexrelay/proxy/bridge"
	"github.com/codexrelay/codexrelay/proxy/payload"
	"github.com/codexrelay/codexrelay/proxy/pool"
	"github.com/codexrelay/codexrelay/proxy/sse"
)

// Respond: relay the answer an attempt found to the client, in the client's protocol, event
// by event for a stream. A failure from here on cannot move on: the client gets a well-formed
// end (response.failed, an error chunk) instead of a hang or a silently cut answer.

// respond relays the answer attempt found to the client, by the try's wire.
func (x *exchange) respond(a *answer) {
	defer a.close()
	x.dropTranslation()
	w := a.tr.wire
	switch {
	case a.resp.StatusCode/100 != 2:
		x.relayError(a)
	case a.rd == nil:
		w.plain(x, a)
	case a.whole:
		w.whole(x, a)
	default:
		// A stream: the headers leave first, from this shallow frame (see attempt).
		if x.sink().start(a.resp.Header) != nil {
			x.clientGone()
			return
		}
		x.t.Status = http.StatusOK
		w.stream(x, a)
	}
}

// emit sends one event to the client's sink; false when the client is gone (noted).
func (x *exchange) emit(name string, data, raw []byte) bool {
	if x.sink().event(name, data, raw) != nil {
		x.clientGone()
		return false
	}
	return true
}

// flushIdle flushes once no further upstream event is already waiting, so that each event
// leaves as soon as it arrived; false when the client is gone (noted).
func (x *exchange) flushIdle(rd eventSource) bool {
	if rd.Buffered() == 0 && x.sink().flush() != nil {
		x.clientGone()
		return false
	}
	return true
}

// relayStream sends the upstream's events to the client as they came (byte for byte to an
// HTTP client), flushing as soon as no further event is already waiting. If the upstream
// breaks off (or goes silent past the stream idle timeout) before a terminal event, the client
// gets a well-formed response.failed with code server_error (which the Codex CLI retries)
// rather than a silently truncated stream. A failure event from the upstream is relayed
// redacted.
func (x *exchange) relayStream(a *answer) {
	rd, m, token := a.rd, a.tr.m, a.tr.cred.Token
	var events int64
	terminal := ""
	responseID := ""
	for _, ev := range a.held {
		if responseID == "" && ev.Name == "response.created" {
			responseID = responseIDOf(ev.Data)
		}
		if !x.emit(ev.Name, ev.Data, ev.Raw) {
			return
		}
		events++
	}
	ev := a.first
	var err error
	for err == nil {
		data, raw := ev.Data, ev.Raw
		if isFailureEvent(ev.Name) {
			data, raw = redact(data, token), redact(raw, token)
			if msg := pool.ParseErrorBody(data).Msg; msg != "" {
				x.t.Error = truncate(msg, 200)
			}
		}
		if !x.emit(ev.Name, data, raw) {
			return
		}
		events++
		if isTerminalEvent(ev.Name) {
			terminal = ev.Name
			x.noteUsage(ev.Data)
			x.restIfLimited(a, ev.Name, ev.Data)
		}
		x.learnEvent(m, ev.Name, ev.Data)
		if !x.flushIdle(rd) {
			return
		}
		ev, err = rd.Next()
	}
	x.sink().flush()
	switch {
	case errors.Is(err, io.EOF) && terminal != "":
		x.t.Outcome = OutcomeCompleted
		if terminal != "response.completed" && terminal != "response.incomplete" {
			x.t.Outcome = OutcomeFailed
		}
	case x.r.Context().Err() != nil:
		x.clientGone()
	default:
		why := x.brokeOff(a, err, "response.completed")
		x.t.Outcome, x.t.Error = OutcomeInterrupted, why
		if terminal == "" {
			x.sink().event("response.failed", x.failedEvent(events, responseID, "server_error", why), nil)
			x.sink().flush()
		}
	}
}

// relayChatFromResponses answers a Chat client from an upstream Responses stream.
func (x *exchange) relayChatFromResponses(a *answer) {
	rd := a.rd
	cs := bridge.NewChatStream(x.req.model, x.includeUsage(), x.times.start.Unix(), "chatcmpl-"+x.t.ID)
	feed := func(ev sse.Event) (done bool, ok bool) {
		if len(ev.Data) == 0 {
			return false, true
		}
		if isTerminalEvent(ev.Name) {
			x.noteUsage(ev.Data)
			x.restIfLimited(a, ev.Name, ev.Data)
		}
		chunks, done, err := cs.Event(ev.Name, ev.Data)
		for _, c := range chunks {
			if !x.emit("", c, nil) {
				return true, false
			}
		}
		if err != nil {
			x.t.Outcome, x.t.Error = OutcomeFailed, err.Error()
		}
		return done, true
	}
	for _, ev := range a.held {
		if _, ok := feed(ev); !ok {
			return
		}
	}
	ev := a.first
	var err error
	done := false
	for err == nil && !done {
		var ok bool
		if done, ok = feed(ev); !ok || !x.flushIdle(rd) {
			return
		}
		if !done {
			ev, err = rd.Next()
		}
	}
	if !done {
		x.chatBrokeOff(x.brokeOff(a, err, "response.completed"))
		return
	}
	x.emit("", chatDone, nil)
	x.sink().flush()
	if x.t.Outcome == "" {
		x.t.Outcome = OutcomeCompleted
	}
}

var chatDone = []byte("[DONE]")

// relayResponsesFromChat answers a Responses client from an upstream Chat chunk stream whose
// first chunk was read already.
func (x *exchange) relayResponsesFromChat(a *answer) {
	rd := a.rd
	head := x.madeResponse("", "in_progress")
	rs := bridge.NewResponsesStream(*head, x.s.now)
	emit := func(evs []bridge.Event) bool {
		for _, e := range evs {
			if !x.emit(e.Name, e.Data, nil) {
				return false
			}
		}
		return true
	}
	if !emit(rs.Start()) {
		return
	}
	x.sink().flush()
	ev := a.first
	var err error
	for ; ; ev, err = rd.Next() {
		if err != nil {
			if x.r.Context().Err() != nil {
				x.clientGone()
				return
			}
			why := x.brokeOff(a, err, "[DONE]")
			x.t.Outcome, x.t.Error = OutcomeInterrupted, why
			emit(rs.Fail("server_error", why))
			x.sink().flush()
			return
		}
		data := bytes.TrimSpace(ev.Data)
		if len(data) == 0 {
			continue
		}
		if bytes.Equal(data, chatDone) {
			emit(rs.End())
			x.sink().flush()
			x.t.Outcome = OutcomeCompleted
			x.keepServed(head.ID, rs.Output()) // completed or incomplete: either can be continued
			return
		}
		x.noteChunkUsage(ev.Data)
		evs, cerr := rs.Chunk(ev.Data)
		if cerr != nil {
			x.t.Outcome, x.t.Error = OutcomeFailed, cerr.Error()
			emit(rs.Fail("server_error", cerr.Error()))
			x.sink().flush()
			return
		}
		if !emit(evs) || !x.flushIdle(rd) {
			return
		}
	}
}

// relayChat passes an upstream Chat chunk stream through, chunk by chunk: the comments held
// while waiting for the first chunk, the first chunk, and the rest as it comes.
func (x *exchange) relayChat(a *answer) {
	rd, token := a.rd, a.tr.cred.Token
	for _, ev := range a.held {
		if !x.emit(ev.Name, ev.Data, ev.Raw) {
			return
		}
	}
	ev := a.first
	var err error
	for ; ; ev, err = rd.Next() {
		if err != nil {
			x.chatBrokeOff(x.brokeOff(a, err, "[DONE]"))
			return
		}
		data, raw := ev.Data, ev.Raw
		if isChatError(ev.Data) {
			data, raw = redact(data, token), redact(raw, token)
		}
		x.noteChunkUsage(ev.Data)
		if !x.emit(ev.Name, data, raw) || !x.flushIdle(rd) {
			return
		}
		if bytes.Equal(bytes.TrimSpace(ev.Data), chatDone) {
			x.t.Outcome = OutcomeCompleted
			return
		}
	}
}

// relayError relays an upstream's answer that is the client's own mistake (a 400, say), its
// body redacted, in whatever protocol: it is already in the OpenAI error shape.
func (x *exchange) relayError(a *answer) {
	x.writeUpstreamBody(a)
	x.t.Outcome = OutcomeFailed
}

// relayPlain answers a non-streamed request with the upstream's answer, read whole.
func (x *exchange) relayPlain(a *answer) {
	x.noteUsage(a.plain)
	if x.req.route != routeChat {
		x.learnResponse(a.tr.m, a.plain)
	}
	if x.writeUpstreamBody(a) != nil {
		x.clientGone()
		return
	}
	x.t.Outcome = OutcomeCompleted
}

// writeUpstreamBody answers with the upstream's status, type and body read whole (a.plain),
// and the upstream headers worth relaying.
func (x *exchange) writeUpstreamBody(a *answer) error {
	h := x.w.Header()
	x.relayHeaders(h, a.resp.Header)
	if ct := a.resp.Header.Get("Content-Type"); ct != "" {
		h.Set("Content-Type", ct)
	}
	h.Set("Content-Length", strconv.Itoa(len(a.plain)))
	x.w.WriteHeader(a.resp.StatusCode)
	n, err := x.w.Write(a.plain)
	x.t.Bytes, x.t.Status = int64(n), a.resp.StatusCode
	return err
}

// plainChatFromResponses answers a Chat client from a whole Responses answer.
func (x *exchange) plainChatFromResponses(a *answer) {
	x.noteUsage(a.plain)
	x.writeTranslated(bridge.ResponseToChatCompletion(a.plain, x.req.model))
}

// plainResponsesFromChat answers a Responses client from a whole Chat Completions answer.
func (x *exchange) plainResponsesFromChat(a *answer) {
	x.noteUsage(a.plain)
	head := x.madeResponse("", "completed")
	head.Model = "" // the upstream's
	resp, err := bridge.ChatCompletionToResponse(a.plain, *head)
	x.writeTranslated(resp, err)
	if err == nil && x.t.Outcome == OutcomeCompleted {
		_, output := responseItems(resp)
		x.keepServed(head.ID, output)
	}
}

// writeTranslated answers with a translated answer, or says it could not be translated.
func (x *exchange) writeTranslated(out []byte, err error) {
	if err != nil {
		x.reject(&apiError{Status: http.StatusBadGateway, Type: "server_error", Code: "server_error", Message: "could not translate the upstream answer: " + err.Error()}, OutcomeFailed)
		return
	}
	x.writeJSONBody(out)
}

// answerWhole answers a Responses client that did not stream with the terminal event of an
// upstream stream: the final response object, or the failure in the OpenAI error shape.
func (x *exchange) answerWhole(a *answer) {
	if resp, ok := x.finalResponse(a); ok {
		x.writeJSONBody(resp)
	}
}

// answerWholeAsChat is answerWhole for a Chat client: the final response, translated.
func (x *exchange) answerWholeAsChat(a *answer) {
	if resp, ok := x.finalResponse(a); ok {
		x.writeTranslated(bridge.ResponseToChatCompletion(resp, x.req.model))
	}
}

// finalResponse is the response object of the stream's terminal event. A failure event is
// answered as an error (its status from the one classification table) and reported as not ok.
func (x *exchange) finalResponse(a *answer) ([]byte, bool) {
	final := a.final
	if final.Name == "response.failed" || final.Name == "error" {
		w := pool.SaidEvent("the response failed", redact(final.Data, a.tr.cred.Token))
		j := x.s.pool.Judge(a.tr.m, w)
		msg := w.Msg
		if msg == "" {
			msg = "the upstream failed the response"
		}
		x.reject(&apiError{Status: j.ClientStatus(), Type: "upstream_error", Code: w.Code, Message: msg, ResetsAt: w.ResetsAt}, OutcomeFailed)
		return nil, false
	}
	x.noteUsage(final.Data)
	obj, perr := payload.Parse(final.Data)
	var resp []byte
	if perr == nil {
		resp, _ = obj.Get("response")
	}
	if resp == nil {
		x.reject(&apiError{Status: http.StatusBadGateway, Type: "server_error", Code: "server_error",
			Message: "upstream " + final.Name + " event carried no response object"}, OutcomeInterrupted)
		return nil, false
	}
	return resp, true
}

// writeJSONBody answers 200 with a JSON body.
func (x *exchange) writeJSONBody(b []byte) {
	h := x.w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	x.w.WriteHeader(http.StatusOK)
	n, _ := x.w.Write(b)
	x.t.Bytes, x.t.Status, x.t.Outcome = int64(n), http.StatusOK, OutcomeCompleted
}

// brokeOff says why the upstream stream of a that was being relayed ended before its terminal
// event: a timeout, a broken connection (redacted), or an end without the terminal event.
func (x *exchange) brokeOff(a *answer, err error, terminal string) string {
	err = a.call.explain(err)
	switch {
	case isTimeout(err):
		return err.Error()
	case errors.Is(err, io.EOF) || errors.Is(err, sse.ErrTruncated):
		return "upstream stream ended before " + terminal
	}
	return "upstream stream broke: " + redactString(err.Error(), a.tr.cred.Token)
}

func (x *exchange) clientGone() {
	x.t.Outcome = OutcomeCanceled
	if x.t.Status == 0 {
		x.t.Status = 499
	}
}

// chatBrokeOff ends a Chat stream whose upstream broke off with an error chunk, unless the
// client is the one that left.
func (x *exchange) chatBrokeOff(why string) {
	if x.r.Context().Err() != nil {
		x.clientGone()
		return
	}
	x.t.Outcome, x.t.Error = OutcomeInterrupted, why
	x.sink().event("", chatErrorChunk("server_error", why), nil)
	x.sink().flush()
}

// failedEvent is the data of the response.failed event the relay ends a stream with when the
// upstream did not: the response (responseID; "": one of the relay's making) whole, failed with
// code and message.
func (x *exchange) failedEvent(seq int64, responseID, code, message string) []byte {
	r := x.madeResponse(responseID, "failed")
	r.Error = &bridge.ResponseError{Code: code, Message: message}
	return bridge.ResponseEvent("response.failed", seq, r)
}

// responseIDOf reads the response id of a response.created event's data.
func responseIDOf(data []byte) string {
	o, _ := payload.Parse(data)
	id, _ := stringMember(responseObject(o), "id")
	return id
}

// responseObject is the response an event carries ({"type":...,"response":{...}}), parsed;
// nil when ev is nil or carries none. payload's string scan skips a large output at memory
// speed, so a final event costs a pass, not a decode.
func responseObject(ev *payload.Object) *payload.Object {
	if ev == nil {
		return nil
	}
	raw, ok := ev.Get("response")
	if !ok || payload.KindOf(raw) != payload.KindObject {
		return nil
	}
	r, _ := payload.Parse(raw)
	return r
}

// chatErrorChunk is the error a Chat stream ends with when the upstream broke off.
func chatErrorChunk(code, message string) []byte {
	b, _ := json.Marshal(map[string]any{"error": map[string]string{"message": message, "type": "server_error", "code": code}})
	return b
}

// isChatError reports whether a Chat stream's chunk is an error object rather than a chunk
// (some servers answer 200 and then {"error":{...}}).
func isChatError(data []byte) bool {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' || !bytes.Contains(data[:min(len(data), 24)], []byte(`"error"`)) {
		return false // a chunk starts {"id":...; only then is it worth decoding
	}
	var v struct {
		Error   json.RawMessage `json:"error"`
		Choices json.RawMessage `json:"choices"`
	}
	return json.Unmarshal(data, &v) == nil && len(v.Error) > 0 && string(v.Error) != "null" && len(v.Choices) == 0
}

// copyRelayHeaders copies the upstream headers worth passing on: request ids, Codex's own
// (its turn state), an API's x-ratelimit-*; never the serving account's Codex rate limits, which
// the pool's replace (ratelimits.go).
func copyRelayHeaders(dst, src http.Header) {
	for k, v := range src {
		lk := strings.ToLower(k)
		if (strings.HasPrefix(lk, "x-codex-") || strings.HasPrefix(lk, "openai-") ||
			strings.HasPrefix(lk, "x-ratelimit-") || lk == "x-request-id") && !rateLimitHeader(lk) {
			dst[k] = v
		}
	}
}
