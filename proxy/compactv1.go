package proxy

import (
	"errors"
	"net/http"
	"slices"

	"github.com/codexrelay/codexrelay/proxy/payload"
)

// Compaction v1: POST /v1/responses/compact, which SDKs and older clients still call (Codex
// 0.171 never does: testdata/codex-0.171/compact-*). A Responses body, answered whole with
// {"id","object":"response.compaction","created_at","output","usage"}, whose output is the new
// history: the user messages kept and the compaction item. A Responses API key gets it as it
// came, on its own v1 route (compactWire). The ChatGPT backend compacts only the v2 way
// (chatgpt.com answered v1 404 in August: codex-lb PR #1705), so a ChatGPT account gets the
// body as a v2 compaction, the trigger after its input, and the answer is put in v1's shape
// (compactOverV2). A Chat Completions account summarizes, and the relay seals the summary
// (compactOverChat, relaycompact.go).

// compactionTrigger ends the input of a v2 compaction request.
var compactionTrigger = []byte(`{"type":"compaction_trigger"}`)

// compactOverV2Body is the v2 compaction request of a v1 body: its input (a string is a user
// message) with what the account cannot read left out and the trigger after it, streamed and
// unstored.
func compactOverV2Body(x *exchange, tr *accountTry) (builtBody, error) {
	raw, _ := x.req.obj.Get("input")
	if k := payload.KindOf(raw); k != payload.KindString && k != payload.KindArray {
		return builtBody{}, errors.New("a compaction needs an input: a string or an array of items")
	}
	items := compactInput(x)
	if in, ok := x.inputFor(tr.m, func() [][]byte { return items }, false); ok {
		items, _ = inputItems(in.Value)
	}
	ov := append(x.modelOverride(tr.tg), payload.Override{Key: "input", Value: joinItems(items, [][]byte{compactionTrigger})})
	return x.built(x.build(x.body.whole(), "", append(ov, backendRules(tr.m)...)))
}

// answerWholeAsCompact answers a v1 compaction from the v2 answer's final response: the user
// messages of the request's input, then the compaction item the account made.
func (x *exchange) answerWholeAsCompact(a *answer) {
	resp, ok := x.finalResponse(a)
	if !ok {
		return
	}
	o, err := payload.Parse(resp)
	if err != nil {
		x.reject(&apiError{Status: http.StatusBadGateway, Type: "server_error", Code: "server_error",
			Message: "the upstream's compaction is not a response object"}, OutcomeError)
		return
	}
	output := x.keptUserMessages(compactInput(x))
	raw, _ := o.Get("output")
	out, _ := inputItems(raw)
	made := false
	for _, it := range out {
		if compactionValue(it) != nil {
			output, made = append(output, it), true
		}
	}
	if !made {
		x.reject(&apiError{Status: http.StatusBadGateway, Type: "server_error", Code: "server_error",
			Message: "the upstream answered the compaction without a compaction item"}, OutcomeError)
		return
	}
	ov := []payload.Override{{Key: "object", Value: []byte(`"response.compaction"`)}, {Key: "output", Value: joinItems(output)}}
	v1 := &payload.Object{}
	for _, k := range []string{"id", "created_at", "usage"} {
		if v, ok := o.Get(k); ok {
			ov = append(ov, payload.Override{Key: k, Value: v})
		}
	}
	// id, object, created_at, output, usage: in the API's order.
	slices.SortStableFunc(ov, func(a, b payload.Override) int { return v1Order[a.Key] - v1Order[b.Key] })
	x.writeJSONBody(payload.Build(nil, v1, ov))
}

var v1Order = map[string]int{"id": 0, "object": 1, "created_at": 2, "output": 3, "usage": 4}

// isUserMessage reports whether an input item is a message of the user's (the short form
// {"role":"user",...} included).
func isUserMessage(item []byte) bool {
	o, err := payload.Parse(item)
	if err != nil {
		return false
	}
	typ, _ := stringMember(o, "type")
	role, _ := stringMember(o, "role")
	return (typ == "message" || typ == "") && role == "user"
}
