package proxy

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/codexrelay/codexrelay/proxy/payload"
)

// Responses Lite. The Codex CLI (0.171) sends every model whose catalog entry says
// use_responses_lite in the Lite form: its tools travel as an input item
// {"type":"additional_tools","tools":[...]} instead of a top-level "tools", with
// reasoning.context "all_turns", and the request carries a marker: the header
// x-openai-internal-codex-responses-lite: true over HTTP, or over a WebSocket the frame's
// client_metadata key ws_request_header_x_openai_internal_codex_responses_lite: "true".
// Without the marker the ChatGPT backend ignores additional_tools (the model has no tools);
// with it, a model that is not Lite is refused.
//
// The relay reads the marker from wherever the client put it (the header, the frame's
// metadata) or, as codex-lb does, from the body itself (an additional_tools item), and gives
// it to a ChatGPT account in the form of the transport that reaches it: the header over HTTP
// (a socket turn served over HTTP included), the metadata key in a frame over a socket.
//
// An account that cannot take a Lite body gets the classic form instead: the tools of the
// additional_tools items as top-level tools, those items left out, reasoning.context left out,
// and no marker. Those accounts are the API-key and Chat Completions ones (the OpenAI API
// documents no additional_tools input item nor reasoning.context), and a ChatGPT account asked
// for a model its catalog entry says is not Lite (the backend refuses the marker there). What
// the client sent and keeps is never changed; the trace says which form went (responsesLite).

const (
	liteHeader  = "X-Openai-Internal-Codex-Responses-Lite"
	liteMetaKey = "ws_request_header_x_openai_internal_codex_responses_lite"
)

// The forms a Lite request went in (Trace.ResponsesLite).
const (
	LiteSent      = "lite"    // as the client sent it, with the marker
	LiteConverted = "classic" // its tools moved to "tools", for an account that takes no Lite body
)

var additionalToolsType = []byte(`"additional_tools"`)

// liteRequest is what a request's Lite form is made of, worked out once.
type liteRequest struct {
	checked bool
	on      bool // the client's request is in the Lite form
	// The classic form's overrides of tools and reasoning, built on first need (its input
	// leaves the additional_tools items out: inputFor).
	classic   bool
	overrides []payload.Override
}

// lite reports whether the client's request is in the Lite form: it carries the marker, or
// an additional_tools input item.
func (x *exchange) lite() bool {
	l := &x.out.lite
	if !l.checked {
		l.checked = true
		l.on = x.req.route == routeResponses && (x.liteMarked() || x.hasAdditionalTools())
	}
	return l.on
}

// liteMarked reports whether the client marked the request Lite: the header, or for a
// WebSocket turn the frame's metadata key (or, failing it, the handshake's header).
func (x *exchange) liteMarked() bool {
	if v, ok := x.body.meta()[liteMetaKey]; ok {
		return strings.EqualFold(strings.TrimSpace(v), "true")
	}
	return strings.EqualFold(strings.TrimSpace(x.r.Header.Get(liteHeader)), "true")
}

// hasAdditionalTools reports whether the request's input starts with an additional_tools
// item, where Codex puts it (its first member is its type): a look at the input's first bytes,
// not a scan of the whole body, so that a request that is not Lite costs nothing.
func (x *exchange) hasAdditionalTools() bool {
	if x.req.route != routeResponses {
		return false
	}
	first := x.body.firstItem(additionalToolsType)
	return first != nil && isAdditionalTools(first)
}

// isAdditionalTools reports whether an input item is of type additional_tools.
func isAdditionalTools(item []byte) bool {
	if !bytes.Contains(item, additionalToolsType) {
		return false
	}
	o, err := payload.Parse(item)
	if err != nil {
		return false
	}
	t, _ := stringMember(o, "type")
	return t == "additional_tools"
}

// liteFor reports whether a try's account receives the request in the Lite form, with the
// marker: a Lite request to a ChatGPT account for a model its catalog does not say is not Lite.
func (x *exchange) liteFor(tr *accountTry) bool {
	return x.lite() && tr.m.Kind == KindChatGPT && !tr.tg.notLite()
}

// classicFor reports whether a try's account receives a Lite request in the classic form.
func (x *exchange) classicFor(tr *accountTry) bool {
	return x.lite() && !x.liteFor(tr)
}

// noteLite records in the trace the form the request is built in for a try (the last try
// built is the serving one).
func (x *exchange) noteLite(tr *accountTry) {
	switch {
	case !x.lite():
		x.t.ResponsesLite = ""
	case x.liteFor(tr):
		x.t.ResponsesLite = LiteSent
	default:
		x.t.ResponsesLite = LiteConverted
	}
}

// classicForm works out the overrides of a Lite request's classic form: tools (the
// additional_tools items' after the body's own) and reasoning (without context). obj is the
// body the form is built from and items its input items.
func (x *exchange) classicForm(obj *payload.Object, items [][]byte) *liteRequest {
	l := &x.out.lite
	if l.classic {
		return l
	}
	l.classic = true
	var tools []json.RawMessage
	if raw, ok := obj.Get("tools"); ok && payload.KindOf(raw) == payload.KindArray {
		json.Unmarshal(raw, &tools)
	}
	for _, it := range items {
		if !isAdditionalTools(it) {
			continue
		}
		var v struct {
			Tools []json.RawMessage `json:"tools"`
		}
		json.Unmarshal(it, &v)
		tools = append(tools, v.Tools...)
	}
	if len(tools) > 0 {
		b, _ := json.Marshal(tools)
		l.overrides = append(l.overrides, payload.Override{Key: "tools", Value: b})
	}
	if raw, ok := obj.Get("reasoning"); ok && payload.KindOf(raw) == payload.KindObject {
		if r, err := payload.Parse(raw); err == nil {
			if _, has := r.Get("context"); has {
				l.overrides = append(l.overrides, payload.Override{Key: "reasoning", Value: payload.Build(nil, r, []payload.Override{{Key: "context"}})})
			}
		}
	}
	return l
}

// classicOverrides are, for a try, the overrides of the classic form (none when its account
// takes the Lite form). The tool types the target's catalog entry says it does not take are
// left out of the classic tools, as they would be of a body's own (filterTools).
func (x *exchange) classicOverrides(tr *accountTry) []payload.Override {
	if !x.classicFor(tr) {
		return nil
	}
	l := x.classicForm(x.body.whole().obj, x.body.items())
	ov := slices.Clone(l.overrides)
	if e := tr.tg.entry; e != nil && len(e.UnsupportedTools) > 0 {
		for i := range ov {
			if ov[i].Key == "tools" {
				ov[i].Value = filterTools(ov[i].Value, e.UnsupportedTools)
			}
		}
	}
	return ov
}

// filterTools removes from a tools array the tools of the given types.
func filterTools(raw []byte, drop []string) []byte {
	var tools []json.RawMessage
	if len(drop) == 0 || json.Unmarshal(raw, &tools) != nil {
		return raw
	}
	kept := tools[:0]
	for _, t := range tools {
		var v struct {
			Type string `json:"type"`
		}
		json.Unmarshal(t, &v)
		if !slices.Contains(drop, v.Type) {
			kept = append(kept, t)
		}
	}
	b, _ := json.Marshal(kept)
	return b
}

// classicBody is the request in the classic form, whole: what a translation to Chat
// Completions starts from.
func (x *exchange) classicBody() []byte {
	obj, items := x.body.whole().obj, x.body.items()
	ov := slices.Clone(x.classicForm(obj, items).overrides)
	kept := make([][]byte, 0, len(items))
	for _, it := range items {
		if !isAdditionalTools(it) {
			kept = append(kept, it)
		}
	}
	if _, ok := obj.Get("input"); ok {
		ov = append(ov, payload.Override{Key: "input", Value: joinItems(kept)})
	}
	return payload.Build(nil, obj, ov)
}
