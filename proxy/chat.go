package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/codexrelay/codexrelay/proxy/bridge"
	"github.com/codexrelay/codexrelay/proxy/payload"
	"github.com/codexrelay/codexrelay/proxy/sse"
)

// wire says how a request travels to an account and back: any client meets any account.
type wire int

const (
	wireResponses         wire = iota // Responses client, Responses account: as it is
	wireChat                          // Chat Completions client, Chat account: as it is
	wireChatOverResponses             // Chat client, Responses account: translated both ways
	wireResponsesOverChat             // Responses client, Chat account: translated both ways
)

// chatUpstream reports whether the account speaks Chat Completions.
func (wr wire) chatUpstream() bool { return wr == wireChat || wr == wireResponsesOverChat }

func (x *exchange) wireFor(m *member) wire {
	chatAccount := m.Kind == KindOpenAI && m.API == APIChat
	switch {
	case x.req.route == routeChat && chatAccount:
		return wireChat
	case x.req.route == routeChat:
		return wireChatOverResponses
	case chatAccount:
		return wireResponsesOverChat
	}
	return wireResponses
}

// handleChat serves POST /v1/chat/completions.
func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	s.serve(w, r, routeChat)
}

// translated is a request body in the other protocol, made once per request.
type translated struct {
	obj     *payload.Object
	dropped []string
	err     error
}

// translation returns the client body in the account's protocol (nil for the same protocol).
func (x *exchange) translation(wr wire) *translated {
	if wr == wireResponses || wr == wireChat {
		return nil
	}
	if x.trans != nil {
		return x.trans
	}
	t := &translated{}
	var out []byte
	if wr == wireChatOverResponses {
		out, t.dropped, t.err = bridge.ChatToResponsesRequest(x.body)
	} else {
		out, t.dropped, t.err = bridge.ResponsesToChatRequest(x.body)
	}
	if t.err == nil {
		var perr error
		if t.obj, perr = payload.Parse(out); perr != nil {
			t.err = fmt.Errorf("translation produced an invalid body: %v", perr)
		}
	}
	for _, d := range t.dropped {
		x.t.DroppedTools = append(x.t.DroppedTools, d)
	}
	x.trans = t
	return t
}

// bodyFor builds the upstream body for m. Chat Completions payloads take the direct path of
// the serialization cache; a Responses body is cached by its input.
func (x *exchange) bodyFor(m *member) ([]byte, error) {
	wr := x.wireFor(m)
	ov := x.overrides(m)
	switch wr {
	case wireResponses:
		return x.upstreamBody(x.req.obj, "input", ov), nil
	case wireChat:
		return x.upstreamBody(x.req.obj, "", ov), nil
	}
	t := x.translation(wr)
	if t.err != nil {
		return nil, t.err
	}
	if wr == wireResponsesOverChat {
		// store and the Codex backend's rules do not apply to a Chat account.
		ov = modelOnly(ov)
	}
	return x.upstreamBody(t.obj, "", ov), nil
}

func modelOnly(ov []payload.Override) []payload.Override {
	var out []payload.Override
	for _, o := range ov {
		if o.Key == "model" {
			out = append(out, o)
		}
	}
	return out
}

// includeUsage reports whether a Chat client asked for the usage chunk.
func (x *exchange) includeUsage() bool {
	raw, ok := x.req.obj.Get("stream_options")
	if !ok {
		return false
	}
	var v struct {
		IncludeUsage bool `json:"include_usage"`
	}
	json.Unmarshal(raw, &v)
	return v.IncludeUsage
}

// relayChatFromResponses answers a Chat client from an upstream Responses stream.
func (x *exchange) relayChatFromResponses(rd *sse.Reader, held []sse.Event, first sse.Event) {
	cs := bridge.NewChatStream(x.req.model, x.includeUsage(), x.start.Unix(), "chatcmpl-"+x.t.ID)
	rc := http.NewResponseController(x.w)
	feed := func(ev sse.Event) (done bool, ok bool) {
		if len(ev.Data) == 0 {
			return false, true
		}
		chunks, done, err := cs.Event(ev.Name, ev.Data)
		for _, c := range chunks {
			if !x.writeRaw(sse.AppendEvent(nil, "", c)) {
				return true, false
			}
		}
		if err != nil {
			x.t.Outcome, x.t.Error = outcomeFailed, err.Error()
		}
		return done, true
	}
	for _, ev := range held {
		if _, ok := feed(ev); !ok {
			x.clientGone()
			return
		}
	}
	ev := first
	var err error
	done := false
	for err == nil && !done {
		var ok bool
		if done, ok = feed(ev); !ok {
			x.clientGone()
			return
		}
		if rd.Buffered() == 0 && rc.Flush() != nil {
			x.clientGone()
			return
		}
		if !done {
			ev, err = rd.Next()
		}
	}
	if !done {
		x.chatBrokeOff(rc, x.brokeOff(err, "response.completed"))
		return
	}
	x.writeRaw([]byte("data: [DONE]\n\n"))
	rc.Flush()
	if x.t.Outcome == "" {
		x.t.Outcome = outcomeCompleted
	}
}

// relayResponsesFromChat answers a Responses client from an upstream Chat chunk stream whose
// first chunk was read already.
func (x *exchange) relayResponsesFromChat(rd *sse.Reader, first sse.Event) {
	rs := bridge.NewResponsesStream(x.req.model, "resp_"+x.t.ID, x.start.Unix())
	rc := http.NewResponseController(x.w)
	emit := func(evs []bridge.Event) bool {
		for _, e := range evs {
			if !x.writeRaw(sse.AppendEvent(nil, e.Name, e.Data)) {
				return false
			}
		}
		return true
	}
	if !emit(rs.Start()) {
		x.clientGone()
		return
	}
	rc.Flush()
	ev := first
	var err error
	for ; ; ev, err = rd.Next() {
		if err != nil {
			if x.r.Context().Err() != nil {
				x.clientGone()
				return
			}
			why := x.brokeOff(err, "[DONE]")
			x.t.Outcome, x.t.Error = outcomeInterrupted, why
			emit(rs.Fail("server_error", why))
			rc.Flush()
			return
		}
		data := strings.TrimSpace(string(ev.Data))
		if data == "" {
			continue
		}
		if data == "[DONE]" {
			emit(rs.End())
			rc.Flush()
			x.t.Outcome = outcomeCompleted
			return
		}
		evs, cerr := rs.Chunk(ev.Data)
		if cerr != nil {
			x.t.Outcome, x.t.Error = outcomeFailed, cerr.Error()
			emit(rs.Fail("server_error", cerr.Error()))
			rc.Flush()
			return
		}
		if !emit(evs) {
			x.clientGone()
			return
		}
		if rd.Buffered() == 0 && rc.Flush() != nil {
			x.clientGone()
			return
		}
	}
}

// relayChat passes an upstream Chat chunk stream through, chunk by chunk: the comments held
// while waiting for the first chunk, the first chunk, and the rest as it comes.
func (x *exchange) relayChat(rd *sse.Reader, held []sse.Event, first sse.Event) {
	rc := http.NewResponseController(x.w)
	for _, ev := range held {
		if !x.writeRaw(ev.Raw) {
			x.clientGone()
			return
		}
	}
	ev := first
	var err error
	for ; ; ev, err = rd.Next() {
		if err != nil {
			x.chatBrokeOff(rc, x.brokeOff(err, "[DONE]"))
			return
		}
		raw := ev.Raw
		if isChatError(ev.Data) {
			raw = redact(raw, x.cred.Token)
		}
		if !x.writeRaw(raw) {
			x.clientGone()
			return
		}
		if rd.Buffered() == 0 && rc.Flush() != nil {
			x.clientGone()
			return
		}
		if strings.TrimSpace(string(ev.Data)) == "[DONE]" {
			x.t.Outcome = outcomeCompleted
			return
		}
	}
}

// translatePlain answers a non-streamed request from a non-streamed answer of the other protocol.
func (x *exchange) translatePlain(wr wire, body []byte) {
	var out []byte
	var err error
	if wr == wireChatOverResponses {
		out, err = bridge.ResponseToChatCompletion(body, x.req.model)
	} else {
		out, err = bridge.ChatCompletionToResponse(body, "resp_"+x.t.ID, x.start.Unix())
	}
	if err != nil {
		x.reject(&apiError{Status: http.StatusBadGateway, Type: "server_error", Code: "server_error", Message: "could not translate the upstream answer: " + err.Error()}, outcomeFailed)
		return
	}
	x.writeJSONBody(out)
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

func (x *exchange) startSSE(upHeader http.Header) {
	h := x.w.Header()
	copyRelayHeaders(h, upHeader)
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	x.w.WriteHeader(http.StatusOK)
	x.t.Status = http.StatusOK
}

func (x *exchange) writeRaw(b []byte) bool {
	n, err := x.w.Write(b)
	x.t.Bytes += int64(n)
	return err == nil
}

// chatBrokeOff ends a Chat stream whose upstream broke off with an error chunk, unless the
// client is the one that left.
func (x *exchange) chatBrokeOff(rc *http.ResponseController, why string) {
	if x.r.Context().Err() != nil {
		x.clientGone()
		return
	}
	x.t.Outcome, x.t.Error = outcomeInterrupted, why
	x.writeRaw(chatErrorChunk("server_error", why))
	rc.Flush()
}

// chatErrorChunk is the error a Chat stream ends with when the upstream broke off.
func chatErrorChunk(code, message string) []byte {
	b, _ := json.Marshal(map[string]any{"error": map[string]string{"message": message, "type": "server_error", "code": code}})
	return []byte("data: " + string(b) + "\n\n")
}
