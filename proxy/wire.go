package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/codexrelay/codexrelay/proxy/bridge"
	"github.com/codexrelay/codexrelay/proxy/payload"
	"github.com/codexrelay/codexrelay/proxy/pool"
	"github.com/codexrelay/codexrelay/proxy/sse"
)

// A wire is how a request travels to one kind of account and back. The relay joins any client
// to any account: Responses clients (Codex) and Chat Completions clients (most SDK users) on
// one side, Responses accounts (ChatGPT, the OpenAI API) and Chat-only accounts (llama.cpp,
// vLLM) on the other. Adding a way to talk to an account is adding a wire, not a case in each
// phase.
type wire struct {
	name string
	// path is where the wire's requests go under the account's base URL, when it is not the
	// protocol's own (/responses, /chat/completions).
	path string
	// document says that the request is a backend call: it goes to its own path as it came,
	// with the client's headers that go with any call, and its answer is one document.
	document bool
	// chat says that the account speaks Chat Completions: requests go to /chat/completions,
	// and a 200 stream may carry an error object where its first chunk should be.
	chat bool
	// body builds the upstream body of a try (through the request's serialization cache).
	body func(x *exchange, tr *accountTry) (builtBody, error)
	// send sends the try's body to its account and returns the answer's head (sendHTTP,
	// sendSocket). It returns errNoSocket when the wire cannot reach the account at all (the
	// same account is then tried by the wire wireFor picks next).
	send func(x *exchange, tr *accountTry, tmo Timeouts) (sent, error)
	// recover, when set, says whether an answer that broke before its first event (j nil, err
	// the break) or failed in it (j the judgment) is the wire's own matter, mended by sending
	// again to the same account (a new upstream socket), and why. Nil: never.
	recover func(x *exchange, j *pool.Judgment, err error) (why string, ok bool)
	// stream relays an upstream stream to a streaming client: the held events, the first real
	// one, then the rest as it comes.
	stream func(x *exchange, a *answer)
	// plain answers from an answer the upstream sent whole (the client did not stream).
	plain func(x *exchange, a *answer)
	// whole answers a client that did not stream from the terminal event of an upstream stream
	// (ChatGPT accounts always stream).
	whole func(x *exchange, a *answer)
}

// The five wires.
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
	// Compaction v1 (POST /responses/compact), Responses account: the body goes as it is to the
	// account's own v1 route, and its answer comes back whole.
	compactWire = &wire{name: "compact", path: "/responses/compact", body: responsesBody, send: sendHTTP, plain: (*exchange).relayPlain}
	// Compaction v1, ChatGPT account, which compacts only the v2 way: a Responses request whose
	// input ends with the compaction trigger, its answer put in v1's shape (compaction.go).
	compactOverV2 = &wire{name: "compact over v2", body: compactOverV2Body, send: sendHTTP, whole: (*exchange).answerWholeAsCompact}
	// A compaction (v2, or v1), Chat account: the account summarizes, the relay seals the
	// summary into the compaction item (relaycompact.go).
	compactOverChat = &wire{name: "compact over chat", chat: true, body: compactOverChatBody, send: sendHTTP,
		plain: (*exchange).answerChatCompaction, stream: (*exchange).streamedChatCompaction}
	// A backend call (web search, image generation), ChatGPT account: its body goes as it came,
	// its answer is one document (backend.go).
	documentWire        = &wire{name: "document", document: true, body: documentBody, send: sendHTTP, plain: (*exchange).relayDocument}
	responsesOverSocket = &wire{name: "responses over websocket", body: func(*exchange, *accountTry) (builtBody, error) { return builtBody{}, nil },
		send: sendSocket, recover: renewSocket, stream: (*exchange).relayStream}
)

// wireFor is the wire between the request's client and account m (each try chooses once).
func (x *exchange) wireFor(m *member) *wire {
	chatAccount := isChatAccount(m)
	switch {
	case x.req.route == routeDocument:
		return documentWire
	case x.req.route == routeCompact && chatAccount:
		return compactOverChat
	case x.req.route == routeCompact && m.Kind == KindChatGPT:
		return compactOverV2
	case x.req.route == routeCompact:
		return compactWire
	case x.req.route == routeChat && chatAccount:
		return chatWire
	case x.req.route == routeChat:
		return chatOverResponses
	case chatAccount && compactionTriggered(x.body.items()):
		return compactOverChat
	case chatAccount:
		return responsesOverChat
	case x.via.turn != nil && x.s.speaksSocket(m):
		return responsesOverSocket
	}
	return responsesWire
}

// renew asks the wire's recover, if it has one.
func (w *wire) renew(x *exchange, j *pool.Judgment, err error) (string, bool) {
	if w.recover == nil {
		return "", false
	}
	return w.recover(x, j, err)
}

// to is where the wire's requests go, under the account's base URL.
func (w *wire) to(x *exchange) string {
	switch {
	case w.document:
		return x.req.path
	case w.path != "":
		return w.path
	case w.chat:
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

func responsesBody(x *exchange, tr *accountTry) (builtBody, error) {
	classic := x.classicFor(tr)
	ov := append(x.modelOverride(tr.tg), x.toolOverrides(tr, classic)...)
	if in, ok := x.inputFor(tr.m, x.body.items, classic); ok {
		ov = append(ov, in)
	}
	if tier, ok := x.tierFor(tr.m); ok {
		ov = append(ov, tier)
	}
	whole := x.body.whole()
	if meta, ok := x.metadataFor(tr, whole.obj, false); ok {
		ov = append(ov, meta)
	}
	return x.built(x.build(whole, "input", append(ov, backendRules(tr.m)...)))
}

func chatBody(x *exchange, tr *accountTry) (builtBody, error) {
	ov := x.modelOverride(tr.tg)
	if tier, ok := x.tierFor(tr.m); ok {
		ov = append(ov, tier)
	}
	return x.built(x.build(x.body.whole(), "", ov))
}

func chatOverResponsesBody(x *exchange, tr *accountTry) (builtBody, error) {
	t := x.translate(bridge.ChatToResponsesRequest)
	if t.err != nil {
		return builtBody{}, t.err
	}
	ov := x.modelOverride(tr.tg)
	if tier, ok := x.tierFor(tr.m); ok {
		ov = append(ov, tier)
	}
	return x.built(x.build(wholeBody{obj: t.obj}, "", append(ov, backendRules(tr.m)...)))
}

func responsesOverChatBody(x *exchange, tr *accountTry) (builtBody, error) {
	if prev := x.body.follows(); prev != "" {
		// Neither the relay nor a Chat account holds it: serving the new items alone would
		// answer without the earlier turns (served.go).
		return builtBody{}, errPreviousNotFound(prev)
	}
	t := x.translate(bridge.ResponsesToChatRequest)
	if t.err != nil {
		return builtBody{}, t.err
	}
	// store and the Codex backend's rules do not apply to a Chat account; the translation
	// leaves service_tier out (not every Chat upstream takes it).
	x.t.ServiceTierOmitted = x.req.tier != ""
	return x.built(x.build(wholeBody{obj: t.obj}, "", x.modelOverride(tr.tg)))
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

// toolOverrides are the overrides of a Responses body's tools for a try: the classic form's (a
// Lite request to an account that takes no Lite body), else the target's tools filter.
func (x *exchange) toolOverrides(tr *accountTry, classic bool) []payload.Override {
	if classic {
		return x.classicOverrides(tr)
	}
	if tg := tr.tg; tg.tools != nil {
		x.noteDroppedTools(tg)
		return []payload.Override{*tg.tools}
	}
	return nil
}

// modelOverride names the target model when it is not the one the client asked for (an
// alias).
func (x *exchange) modelOverride(tg *target) []payload.Override {
	if tg.model == x.req.model {
		return nil
	}
	return []payload.Override{{Key: "model", Value: payload.AppendString(nil, tg.model)}}
}

// noteDroppedTools records in the trace the tool types the target's filter removed.
func (x *exchange) noteDroppedTools(tg *target) {
	for _, d := range tg.dropped {
		if !slices.Contains(x.t.DroppedTools, d) {
			x.t.DroppedTools = append(x.t.DroppedTools, d)
		}
	}
}

// build is the upstream body for src with ov applied: src's bytes as they are (the client's as
// they arrived) when routing changes nothing in them, else a build through the request's
// serialization cache, into a pooled buffer the request holds; with the buffer either is in.
func (x *exchange) build(src wholeBody, inputKey string, ov []payload.Override) builtBody {
	if b, ok := payload.Unchanged(src.obj, ov); ok {
		x.out.unchanged++
		return builtBody{b: b, buf: src.buf}
	}
	b, held := x.out.cache.BodyIn(src.obj, inputKey, ov)
	buf, _ := held.(*sharedBuffer)
	return builtBody{b: b, buf: buf}
}

// built is a try's body once x.build made it, or the relay's 503 when building it found no room
// in the memory budget.
func (x *exchange) built(b builtBody) (builtBody, error) {
	if e := x.out.noRoom; e != nil {
		return builtBody{}, e
	}
	return b, nil
}

// translated is a request body in the other protocol, made once per request.
type translated struct {
	obj     *payload.Object
	dropped []string
	err     error
	size    int64 // the translated body's bytes
}

// translate returns the client body in the account's protocol, translated once per request
// (a request's client protocol is fixed, so there is only ever one direction), or once for all
// the requests that share a replay. The translation is counted against the memory budget: twice
// the source while it is made (what the bridge decodes), then what it made.
func (x *exchange) translate(to func([]byte) ([]byte, []string, error)) *translated {
	if x.out.trans != nil {
		return x.out.trans
	}
	make := func() *translated {
		t := &translated{}
		var out []byte
		src := x.body.whole().raw
		if x.lite() {
			// A Chat account takes no Lite body: the classic form is translated.
			src = x.classicBody()
		}
		if x.req.route == routeResponses && bytes.Contains(src, compactionType) {
			src = x.withCompactionsExpanded(src)
		}
		out, t.dropped, t.err = to(src)
		if t.err == nil {
			var perr error
			if t.obj, perr = payload.Parse(out); perr != nil {
				t.err = fmt.Errorf("translation produced an invalid body: %v", perr)
			}
		}
		t.size = int64(len(out))
		return t
	}
	var t *translated
	if sb, ok := x.body.(*servedBody); ok && sb.shared != nil {
		t = sb.shared.translation(x, make)
	} else {
		t = x.translateHeld(make)
	}
	x.t.DroppedTools = append(x.t.DroppedTools, t.dropped...)
	x.out.trans = t
	return t
}

// dropTranslation lets go of the request's own translation once its answer is relayed: no
// other account will be sent it, and the transport holds the bytes it still sends.
func (x *exchange) dropTranslation() {
	t := x.out.trans
	if t == nil {
		return
	}
	x.out.trans = nil
	if sb, ok := x.body.(*servedBody); ok && sb.shared != nil {
		return // the shared replay's: held until its last request ends
	}
	x.letGo(t.size)
}

// translateHeld makes a request's own translation within the memory budget: twice the source
// is held while it is made, then what it made, until the request ends.
func (x *exchange) translateHeld(make func() *translated) *translated {
	took, e := x.holdUpTo(2 * int64(len(x.body.whole().raw)))
	if e != nil {
		return &translated{err: e}
	}
	t := make()
	x.letGo(took - min(t.size, took))
	t.size = min(t.size, took) // what dropTranslation gives back
	return t
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
