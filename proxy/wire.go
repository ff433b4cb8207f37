package proxy

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/codexrelay/codexrelay/proxy/bridge"
	"github.com/codexrelay/codexrelay/proxy/payload"
	"github.com/codexrelay/codexrelay/proxy/sse"
)

// A wire is how a request travels to one kind of account and back. The relay joins any client
// to any account: Responses clients (Codex) and Chat Completions clients (most SDK users) on
// one side, Responses accounts (ChatGPT, the OpenAI API) and Chat-only accounts (llama.cpp,
// vLLM) on the other. Adding a way to talk to an account is adding a wire, not a case in each
// phase.
type wire struct {
	name string
	// chat says that the account speaks Chat Completions: requests go to /chat/completions,
	// and a 200 stream may carry an error object where its first chunk should be.
	chat bool
	// body builds the upstream body for account m (through the request's serialization cache).
	body func(x *exchange, m *member) ([]byte, error)
	// send sends the body to m and returns the answer's head (sendHTTP, sendSocket). It
	// returns errNoSocket when the wire cannot reach m at all (the same account is then tried
	// by the wire wireFor picks next).
	send func(w *wire, x *exchange, m *member, cred Credential, body []byte, tmo Timeouts) (sent, error)
	// recover, when set, says whether an answer that broke before its first event (code "",
	// err the break) or failed in it (code) is the wire's own matter, mended by sending again
	// to the same account (a new upstream socket), and why. Nil: never.
	recover func(x *exchange, code string, err error) (why string, ok bool)
	// stream relays an upstream stream to a streaming client: the held events, the first real
	// one, then the rest as it comes.
	stream func(x *exchange, a *answer)
	// plain answers from an answer the upstream sent whole (the client did not stream).
	plain func(x *exchange, a *answer)
	// whole answers a client that did not stream from the terminal event of an upstream stream
	// (ChatGPT accounts always stream).
	whole func(x *exchange, a *answer)
}

// The four wires.
var (
	// Responses client, Responses account: the body goes as it is, with what routing changes.
	responsesWire = &wire{name: "responses", body: responsesBody, send: sendHTTP,
		stream: (*exchange).relayStream, plain: (*exchange).relayPlain, whole: (*exchange).answerWhole}
	// Chat client, Chat account: the body goes as it is.
	chatWire = &wire{name: "chat", chat: true, body: chatBody, send: sendHTTP,
		stream: (*exchange).relayChat, plain: (*exchange).relayPlain}
	// Chat client, Responses account: translated both ways.
	chatOverResponses = &wire{name: "chat over responses", body: chatOverResponsesBody, send: sendHTTP,
		stream: (*exchange).relayChatFromResponses, plain: (*exchange).plainChatFromResponses, whole: (*exchange).answerWholeAsChat}
	// Responses client, Chat account: translated both ways.
	responsesOverChat = &wire{name: "responses over chat", chat: true, body: responsesOverChatBody, send: sendHTTP,
		stream: (*exchange).relayResponsesFromChat, plain: (*exchange).plainResponsesFromChat}
	// A WebSocket turn, Responses account over WebSocket: the frame is built when it is sent,
	// as it depends on the upstream socket (socketwire.go); the events relay as a stream.
	responsesOverSocket = &wire{name: "responses over websocket", body: func(*exchange, *member) ([]byte, error) { return nil, nil },
		send: sendSocket, recover: renewSocket, stream: (*exchange).relayStream}
)

// wireFor is the wire between the request's client and account m.
func (x *exchange) wireFor(m *member) *wire {
	chatAccount := m.Kind == KindOpenAI && m.API == APIChat
	switch {
	case x.req.route == routeChat && chatAccount:
		return chatWire
	case x.req.route == routeChat:
		return chatOverResponses
	case chatAccount:
		return responsesOverChat
	case x.turn != nil && x.s.speaksSocket(m):
		return responsesOverSocket
	}
	return responsesWire
}

// renew asks the wire's recover, if it has one.
func (w *wire) renew(x *exchange, code string, err error) (string, bool) {
	if w.recover == nil {
		return "", false
	}
	return w.recover(x, code, err)
}

// path is where the wire's requests go, under the account's base URL.
func (w *wire) path() string {
	if w.chat {
		return "/chat/completions"
	}
	return "/responses"
}

// firstFails reports whether the first real event of a 200 stream says the request failed.
func (w *wire) firstFails(ev sse.Event) bool {
	return isFailureEvent(ev.Name) || (w.chat && isChatError(ev.Data))
}

// The body builders. Each adds what routing changes (overrides), which is part of the
// serialization cache's variant key, so that two accounts of the same kind share one body.

func responsesBody(x *exchange, m *member) ([]byte, error) {
	classic := x.classicFor(m)
	ov := append(x.modelOverride(), x.toolOverrides(m, classic)...)
	if in, ok := x.inputFor(m, x.inputItemsOf, classic); ok {
		ov = append(ov, in)
	}
	if tier, ok := x.tierFor(m); ok {
		ov = append(ov, tier)
	}
	obj := x.replayObj()
	if meta, ok := x.metadataFor(m, obj, false); ok {
		ov = append(ov, meta)
	}
	return x.upstreamBody(obj, "input", append(ov, backendRules(m)...)), nil
}

func chatBody(x *exchange, m *member) ([]byte, error) {
	ov := x.modelOverride()
	if tier, ok := x.tierFor(m); ok {
		ov = append(ov, tier)
	}
	return x.upstreamBody(x.req.obj, "", ov), nil
}

func chatOverResponsesBody(x *exchange, m *member) ([]byte, error) {
	t := x.translate(bridge.ChatToResponsesRequest)
	if t.err != nil {
		return nil, t.err
	}
	ov := x.modelOverride()
	if tier, ok := x.tierFor(m); ok {
		ov = append(ov, tier)
	}
	return x.upstreamBody(t.obj, "", append(ov, backendRules(m)...)), nil
}

func responsesOverChatBody(x *exchange, m *member) ([]byte, error) {
	if x.turn != nil && x.turn.keepPrev {
		return nil, fmt.Errorf("a Chat Completions account cannot continue response %q, which only the upstream that stored it knows", x.turn.prev)
	}
	t := x.translate(bridge.ResponsesToChatRequest)
	if t.err != nil {
		return nil, t.err
	}
	// store and the Codex backend's rules do not apply to a Chat account; the translation
	// leaves service_tier out (not every Chat upstream takes it).
	x.t.ServiceTierOmitted = x.req.tier != ""
	return x.upstreamBody(t.obj, "", x.modelOverride()), nil
}

// backendRules are what the account's backend requires of a Responses body: the Codex backend
// (ChatGPT accounts) only takes streamed, unstored requests.
func backendRules(m *member) []payload.Override {
	if m.Kind != KindChatGPT {
		return nil
	}
	return chatGPTRules
}

var chatGPTRules = []payload.Override{{Key: "store", Value: []byte("false")}, {Key: "stream", Value: []byte("true")}}

// toolOverrides are the overrides of a Responses body's tools for m: the classic form's (a
// Lite request to an account that takes no Lite body), else the target's tools filter.
func (x *exchange) toolOverrides(m *member, classic bool) []payload.Override {
	if classic {
		return x.classicOverrides(m)
	}
	if x.tools != nil {
		x.noteDroppedTools()
		return []payload.Override{*x.tools}
	}
	return nil
}

// modelOverride names the target model when it is not the one the client asked for (an
// alias).
func (x *exchange) modelOverride() []payload.Override {
	if x.target == x.req.model {
		return nil
	}
	return []payload.Override{{Key: "model", Value: payload.AppendString(nil, x.target)}}
}

// noteDroppedTools records in the trace the tool types the target's filter removed.
func (x *exchange) noteDroppedTools() {
	for _, d := range x.toolsDropped {
		if !slices.Contains(x.t.DroppedTools, d) {
			x.t.DroppedTools = append(x.t.DroppedTools, d)
		}
	}
}

// upstreamBody is the body for o with ov applied: the client's bytes as they arrived when
// routing changes nothing in them, else a build through the request's serialization cache.
func (x *exchange) upstreamBody(o *payload.Object, inputKey string, ov []payload.Override) []byte {
	if b, ok := payload.Unchanged(o, ov); ok {
		x.unchanged++
		return b
	}
	return x.cache.Body(o, inputKey, ov)
}

// translated is a request body in the other protocol, made once per request.
type translated struct {
	obj     *payload.Object
	dropped []string
	err     error
}

// translate returns the client body in the account's protocol, translated once per request
// (a request's client protocol is fixed, so there is only ever one direction).
func (x *exchange) translate(to func([]byte) ([]byte, []string, error)) *translated {
	if x.trans != nil {
		return x.trans
	}
	t := &translated{}
	var out []byte
	src := x.replayBody()
	if x.lite() {
		// A Chat account takes no Lite body: the classic form is translated.
		src = x.classicBody()
	}
	out, t.dropped, t.err = to(src)
	if t.err == nil {
		var perr error
		if t.obj, perr = payload.Parse(out); perr != nil {
			t.err = fmt.Errorf("translation produced an invalid body: %v", perr)
		}
	}
	x.t.DroppedTools = append(x.t.DroppedTools, t.dropped...)
	x.trans = t
	return t
}

// replayObj is the request as one whole Responses body: the client's, or for a WebSocket
// turn the conversation replayed (built on first need).
func (x *exchange) replayObj() *payload.Object {
	if x.turn == nil {
		return x.req.obj
	}
	o, _ := x.turn.full()
	return o
}

// replayBody is the bytes of replayObj.
func (x *exchange) replayBody() []byte {
	if x.turn == nil {
		return x.body
	}
	_, b := x.turn.full()
	return b
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
