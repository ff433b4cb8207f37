// Package bridge translates between the two OpenAI APIs that Codex Relay speaks: the Responses
// API (POST /v1/responses, used by the Codex CLI) and Chat Completions (POST
// /v1/chat/completions), so that a client of one can be served by an upstream account of the
// other.
//
// It is pure translation of JSON: request bodies, whole response objects, and the data of single
// stream events. It does no HTTP and no SSE framing (package proxy/sse frames the events).
//
// Whatever cannot be expressed on the other side is left out and named in a "dropped" list, so
// that the relay can log it. Names have the form "kind:what", for example "tool:custom
// apply_patch", "tool:web_search", "param:include", "item:local_shell_call",
// "content:input_audio".
package bridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
)

// ErrNothingUsable is returned (wrapped, with a message saying why) when a request has nothing
// that the other API could answer, for example a Responses input made only of reasoning items.
var ErrNothingUsable = errors.New("bridge: nothing usable in the request")

// UpstreamError is an error reported by the upstream inside a stream or a response body
// (response.failed, an "error" event, or a chunk or body carrying an "error" object). The relay
// can turn it into the client's error shape.
type UpstreamError struct {
	Code    string
	Message string
}

func (e *UpstreamError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = "upstream failed without a message"
	}
	if e.Code == "" {
		return "upstream error: " + msg
	}
	return "upstream error " + e.Code + ": " + msg
}

// upstreamError decodes an OpenAI error object ({"code","message",...}); raw may also be a bare
// string. It never fails: what cannot be read is left empty.
func upstreamError(raw json.RawMessage) *UpstreamError {
	var e struct {
		Code    looseString `json:"code"`
		Type    looseString `json:"type"`
		Message looseString `json:"message"`
	}
	if json.Unmarshal(raw, &e) != nil {
		if s, ok := asString(raw); ok {
			return &UpstreamError{Message: s}
		}
	}
	code := string(e.Code)
	if code == "" {
		code = string(e.Type)
	}
	return &UpstreamError{Code: code, Message: string(e.Message)}
}

// looseString decodes a JSON string, number or boolean as its text and null as "": upstreams
// disagree on the type of fields such as an error's "code".
type looseString string

func (s *looseString) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var v string
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		*s = looseString(v)
		return nil
	}
	if string(b) == "null" {
		*s = ""
		return nil
	}
	if len(b) > 0 && (b[0] == '{' || b[0] == '[') {
		return errors.New("bridge: expected a string")
	}
	*s = looseString(b)
	return nil
}

// asString returns the value of raw when it is a JSON string. It looks at the first byte
// before decoding, so that a large array is not scanned (json.Unmarshal validates everything
// first) only to learn that it is not a string.
func asString(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	return s, json.Unmarshal(raw, &s) == nil
}

// isNull reports whether a raw JSON value is absent or null, which both APIs treat as "not set".
func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

// dropList collects the names of what a translation left out, each once, in order.
type dropList []string

func (d *dropList) add(kind, what string) {
	name := kind + ":" + what
	for _, n := range *d {
		if n == name {
			return
		}
	}
	*d = append(*d, name)
}

// ordered is a JSON object whose members are written in the order given, so that produced
// events and items read like the ones OpenAI sends ("type" first). Members with a nil value are
// written as null.
type ordered []member

type member struct {
	key   string
	value any
}

// withRaw appends a member with a raw JSON value, unless the value is absent or null.
func (o ordered) withRaw(key string, raw json.RawMessage) ordered {
	if isNull(raw) {
		return o
	}
	return append(o, member{key, raw})
}

// withString appends a member with a string value, unless the string is empty.
func (o ordered) withString(key, s string) ordered {
	if s == "" {
		return o
	}
	return append(o, member{key, s})
}

func (o ordered) MarshalJSON() ([]byte, error) { return o.appendTo(nil) }

// appendTo appends the object to buf. Its compactJSON, ordered and []any values are written as
// they are, without the scan encoding/json gives every Marshaler's output: a response object
// written per event repeats the request's tools, which can be large.
func (o ordered) appendTo(buf []byte) ([]byte, error) {
	buf = append(buf, '{')
	for i, m := range o {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = strconv.AppendQuote(buf, m.key)
		buf = append(buf, ':')
		var err error
		if buf, err = appendValue(buf, m.value); err != nil {
			return nil, err
		}
	}
	return append(buf, '}'), nil
}

// appendValue appends the JSON of v to buf.
func appendValue(buf []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case compactJSON:
		return append(buf, v...), nil
	case ordered:
		return v.appendTo(buf)
	case []any:
		buf = append(buf, '[')
		for i, e := range v {
			if i > 0 {
				buf = append(buf, ',')
			}
			var err error
			if buf, err = appendValue(buf, e); err != nil {
				return nil, err
			}
		}
		return append(buf, ']'), nil
	}
	b, err := marshal(v)
	return append(buf, b...), err
}

// compactJSON is a JSON value known to be valid and compact (no newline can break an SSE
// event): written as it is.
type compactJSON []byte

// compacted is raw as compactJSON: validated and compacted once. ok is false when raw is not
// valid JSON.
func compacted(raw []byte) (compactJSON, bool) {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return nil, false
	}
	return buf.Bytes(), true
}

// marshal is json.Marshal without HTML escaping: prompts are full of "<" and ">", which
// json.Marshal would turn into "\u003c" and "\u003e", making bodies bigger and harder to read.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// mustJSON marshals values built by this package, which always marshal.
func mustJSON(v any) []byte {
	b, err := appendValue(nil, v)
	if err != nil {
		panic("bridge: cannot marshal: " + err.Error())
	}
	return b
}

// chatUsage is the usage object of Chat Completions.
type chatUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	TotalTokens         int64 `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

// responsesUsage is the usage object of the Responses API.
type responsesUsage struct {
	InputTokens        int64 `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int64 `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int64 `json:"total_tokens"`
}

// decodeUsage decodes a usage object into v, reporting false when raw is absent, null or not
// a usage object: a malformed usage is ignored rather than failing a whole answer.
func decodeUsage(raw json.RawMessage, v any) bool {
	return !isNull(raw) && json.Unmarshal(raw, v) == nil
}

func (u *chatUsage) toResponses() *responsesUsage {
	r := &responsesUsage{
		InputTokens:  u.PromptTokens,
		OutputTokens: u.CompletionTokens,
		TotalTokens:  u.TotalTokens,
	}
	if r.TotalTokens == 0 {
		r.TotalTokens = r.InputTokens + r.OutputTokens
	}
	r.InputTokensDetails.CachedTokens = u.PromptTokensDetails.CachedTokens
	r.OutputTokensDetails.ReasoningTokens = u.CompletionTokensDetails.ReasoningTokens
	return r
}

func (u *responsesUsage) toChat() *chatUsage {
	c := &chatUsage{
		PromptTokens:     u.InputTokens,
		CompletionTokens: u.OutputTokens,
		TotalTokens:      u.TotalTokens,
	}
	if c.TotalTokens == 0 {
		c.TotalTokens = c.PromptTokens + c.CompletionTokens
	}
	c.PromptTokensDetails.CachedTokens = u.InputTokensDetails.CachedTokens
	c.CompletionTokensDetails.ReasoningTokens = u.OutputTokensDetails.ReasoningTokens
	return c
}

// itemIDs makes the ids of the output items of a translated response from the response id, so
// that they are unique and stable: "resp_abc" gives "msg_abc_0", "fc_abc_1", and so on.
type itemIDs struct{ base string }

func newItemIDs(responseID string) itemIDs {
	return itemIDs{base: strings.TrimPrefix(responseID, "resp_")}
}

func (ids itemIDs) make(prefix string, index int) string {
	return prefix + "_" + ids.base + "_" + strconv.Itoa(index)
}

// ResponsesUsage is the Responses usage object of a Chat Completions answer's usage (the
// answer's "usage" member, or the answer itself), zeros when it has none: a Response the relay
// makes from a Chat answer always carries one.
func ResponsesUsage(answer []byte) []byte {
	var v struct {
		Usage json.RawMessage `json:"usage"`
	}
	var u chatUsage
	if json.Unmarshal(answer, &v) == nil && !decodeUsage(v.Usage, &u) {
		u = chatUsage{}
	}
	b, _ := json.Marshal(u.toResponses())
	return b
}
