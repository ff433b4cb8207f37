package bridge

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// A Response object has 31 members (the OpenResponses schema's ResponseResource; all required
// but metadata): its state (id, status, output, usage, ...) and what it repeats of the request
// that asked for it (instructions, tools, temperature, ...). A client that validates the schema
// refuses an object with fewer, so every Response the relay writes itself (a bridged answer, an
// interrupted or failed turn) is whole: Response writes the state, Echo the rest.

// Echo is what a Response object repeats of the request that asked for it: each parameter as
// the request sent it, or, when it sent none (or one of a kind the API would have refused), the
// value the API writes for it. It is read once from the request's top-level members, without
// touching its input, and is not changed afterwards: one Echo serves every object and event of
// a response. A nil *Echo is a request that set nothing.
type Echo struct {
	values [numEchoed]compactJSON
}

// echoed is an index into echoSpec.
type echoed int

const (
	echoInstructions echoed = iota
	echoTools
	echoToolChoice
	echoTruncation
	echoParallelToolCalls
	echoText
	echoTopP
	echoPresencePenalty
	echoFrequencyPenalty
	echoTopLogprobs
	echoTemperature
	echoReasoning
	echoMaxOutputTokens
	echoMaxToolCalls
	echoStore
	echoBackground
	echoServiceTier
	echoMetadata
	echoSafetyIdentifier
	echoPromptCacheKey
	echoPreviousResponseID
	numEchoed
)

// echoSpec is, for each echoed member, its name, the JSON kinds the request may give it (s
// string, n number, i integer, b boolean, o object, a array) and the API's value when it gave
// none. background is never taken from the request: the relay runs no response in the
// background (a bridged request's background is left out and named as dropped). text and
// reasoning are rebuilt from the request's (textEcho, reasoningEcho); tools are the request's
// with the members the API writes for a function tool filled in (toolsEcho).
var echoSpec = [numEchoed]struct{ key, kinds, def string }{
	echoInstructions:       {"instructions", "s", "null"},
	echoTools:              {"tools", "a", "[]"},
	echoToolChoice:         {"tool_choice", "so", `"auto"`},
	echoTruncation:         {"truncation", "s", `"disabled"`},
	echoParallelToolCalls:  {"parallel_tool_calls", "b", "true"},
	echoText:               {"text", "o", `{"format":{"type":"text"}}`},
	echoTopP:               {"top_p", "n", "1"},
	echoPresencePenalty:    {"presence_penalty", "n", "0"},
	echoFrequencyPenalty:   {"frequency_penalty", "n", "0"},
	echoTopLogprobs:        {"top_logprobs", "i", "0"},
	echoTemperature:        {"temperature", "n", "1"},
	echoReasoning:          {"reasoning", "o", `{"effort":null,"summary":null}`},
	echoMaxOutputTokens:    {"max_output_tokens", "i", "null"},
	echoMaxToolCalls:       {"max_tool_calls", "i", "null"},
	echoStore:              {"store", "b", "true"},
	echoBackground:         {"background", "", "false"},
	echoServiceTier:        {"service_tier", "s", `"default"`},
	echoMetadata:           {"metadata", "o", "{}"},
	echoSafetyIdentifier:   {"safety_identifier", "s", "null"},
	echoPromptCacheKey:     {"prompt_cache_key", "s", "null"},
	echoPreviousResponseID: {"previous_response_id", "s", "null"},
}

// NewEcho reads the echo of a request from its top-level members: member returns a member's
// raw JSON value (valid JSON, as a parsed request's members are) and whether the request has
// it. Only the echoed members are asked for, and their values are kept, not copied: they must
// outlive the Echo.
func NewEcho(member func(key string) ([]byte, bool)) *Echo {
	e := &Echo{}
	for i, spec := range echoSpec {
		raw, ok := member(spec.key)
		if !ok || !ofKind(raw, spec.kinds) {
			continue
		}
		switch {
		case echoed(i) == echoText:
			e.values[i] = textEcho(raw)
		case echoed(i) == echoReasoning:
			e.values[i] = reasoningEcho(raw)
		case bytes.ContainsAny(raw, "\r\n"):
			// A line break would cut an SSE event: compacted once, not for each event.
			e.values[i], _ = compacted(raw)
		default:
			e.values[i] = raw // valid, as member promises; spaces are harmless
		}
		if echoed(i) == echoTools {
			e.values[i] = toolsEcho(e.values[i])
		}
	}
	return e
}

// EchoOf is the echo of a request body. A body that is not a JSON object echoes nothing.
func EchoOf(request []byte) *Echo {
	obj, err := decodeObject(request, "request")
	if err != nil {
		return &Echo{}
	}
	return NewEcho(func(key string) ([]byte, bool) {
		raw, ok := obj[key]
		return raw, ok
	})
}

// value is the echoed member i, as the request sent it or the API's default.
func (e *Echo) value(i echoed) compactJSON {
	if e != nil && e.values[i] != nil {
		return e.values[i]
	}
	return compactJSON(echoSpec[i].def)
}

// ofKind reports whether raw is a JSON value of one of kinds (see echoSpec). A number is an
// integer when it has no fraction or exponent.
func ofKind(raw []byte, kinds string) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return false
	}
	var k byte
	switch c := raw[0]; {
	case c == '"':
		k = 's'
	case c == '-' || c >= '0' && c <= '9':
		k = 'n'
		if kinds == "i" && !bytes.ContainsAny(raw, ".eE") {
			return true
		}
	case c == 't' || c == 'f':
		k = 'b'
	case c == '{':
		k = 'o'
	case c == '[':
		k = 'a'
	default:
		return false // null
	}
	return bytes.IndexByte([]byte(kinds), k) >= 0
}

// toolsEcho is the tools member a Response repeats: each tool as the request sent it, with the
// members the API writes for a function tool that the request left out appended: description
// and parameters null, and strict false. An unset strict is false because that is how the tool
// ran: the Chat translation sends no strict, and Chat's default is false (the Responses API,
// whose default is to make the schema strict when it can, reports false too when it runs a tool
// non-strict). A strict the request set, null included, is kept. tools is returned as it is
// when no tool lacks a member (Codex sets every one).
func toolsEcho(tools compactJSON) compactJSON {
	var kinds []struct {
		Type                            string
		Description, Parameters, Strict presence
	}
	if json.Unmarshal(tools, &kinds) != nil {
		return tools
	}
	lacking := false
	for _, k := range kinds {
		lacking = lacking || k.Type == "function" && !bool(k.Description && k.Parameters && k.Strict)
	}
	if !lacking {
		return tools
	}
	var each []json.RawMessage
	json.Unmarshal(tools, &each) // an array, as the first pass found
	out := append(make(compactJSON, 0, len(tools)+len(kinds)*len(`,"description":null,"parameters":null,"strict":false`)), '[')
	for i, raw := range each {
		if i > 0 {
			out = append(out, ',')
		}
		k := kinds[i]
		if k.Type != "function" {
			out = append(out, raw...)
			continue
		}
		out = appendMissing(out, raw, missing{!bool(k.Description), "description", "null"},
			missing{!bool(k.Parameters), "parameters", "null"}, missing{!bool(k.Strict), "strict", "false"})
	}
	return append(out, ']')
}

// presence records whether a member is present in a decoded object (null included), without
// keeping its value.
type presence bool

func (p *presence) UnmarshalJSON([]byte) error { *p = true; return nil }

// missing is a member appendMissing may add: when lacking, key with the raw JSON value.
type missing struct {
	lacking    bool
	key, value string
}

// appendMissing appends the JSON object obj to buf, with the lacking members added after its
// own, in the given order.
func appendMissing(buf []byte, obj []byte, add ...missing) []byte {
	obj = bytes.TrimSpace(obj)
	body := bytes.TrimSpace(obj[1 : len(obj)-1]) // obj is an object: "{...}"
	buf = append(append(buf, '{'), body...)
	sep := len(body) > 0
	for _, m := range add {
		if !m.lacking {
			continue
		}
		if sep {
			buf = append(buf, ',')
		}
		sep = true
		buf = strconv.AppendQuote(buf, m.key)
		buf = append(append(buf, ':'), m.value...)
	}
	return append(buf, '}')
}

// textEcho is the text member a Response repeats: the request's format (text by default; a
// json_schema one with the members the API writes appended when the request left them out) and
// its verbosity when it gave one.
func textEcho(raw []byte) compactJSON {
	var t struct {
		Format    json.RawMessage `json:"format"`
		Verbosity json.RawMessage `json:"verbosity"`
	}
	json.Unmarshal(raw, &t) // a text that is not an object of these echoes the defaults
	format := json.RawMessage(`{"type":"text"}`)
	if ofKind(t.Format, "o") {
		format = t.Format
		var f struct {
			Type                string
			Description, Strict presence
		}
		if json.Unmarshal(format, &f) == nil && f.Type == "json_schema" && !bool(f.Description && f.Strict) {
			// The members the API writes for a json_schema format: description null, strict
			// false (its default, and Chat's, where the translation sends none).
			format = appendMissing(nil, format, missing{!bool(f.Description), "description", "null"},
				missing{!bool(f.Strict), "strict", "false"})
		}
	}
	out := ordered{{"format", format}}
	if ofKind(t.Verbosity, "s") {
		out = append(out, member{"verbosity", t.Verbosity})
	}
	return mustJSON(out)
}

// reasoningEcho is the reasoning member a Response repeats: the request's effort and summary,
// null when it gave none.
func reasoningEcho(raw []byte) compactJSON {
	var r struct {
		Effort  json.RawMessage `json:"effort"`
		Summary json.RawMessage `json:"summary"`
	}
	json.Unmarshal(raw, &r)
	out := ordered{{"effort", nil}, {"summary", nil}}
	if ofKind(r.Effort, "s") {
		out[0].value = r.Effort
	}
	if ofKind(r.Summary, "s") {
		out[1].value = r.Summary
	}
	return mustJSON(out)
}

// Response is a Response object the relay writes itself: a bridged answer, or the end the
// relay gives a response the upstream did not end (an interrupt, a broken stream). It
// marshals with the 31 members of the API's objects, in the API's order; Echo gives what the
// object repeats of the request.
type Response struct {
	ID        string
	Model     string
	CreatedAt int64 // Unix seconds
	// CompletedAt is when the response completed (Unix seconds): written for a completed
	// response only, null for any other status.
	CompletedAt int64
	// Status is in_progress, completed, incomplete or failed.
	Status string
	// Error is a failed response's error; IncompleteReason an incomplete one's reason.
	Error            *ResponseError
	IncompleteReason string
	// Output is the output items; Usage the usage object (nil: null).
	Output []json.RawMessage
	Usage  json.RawMessage
	Echo   *Echo
}

// ResponseError is a failed response's error.
type ResponseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// JSON is the response object.
func (r *Response) JSON() []byte {
	output := make([]any, len(r.Output))
	for i, it := range r.Output {
		output[i] = it
	}
	var usage any
	if !isNull(r.Usage) {
		usage = r.Usage
	}
	return mustJSON(r.object(output, usage))
}

// object is the response object with output and usage given as built (items and usage the
// stream made, or raw).
func (r *Response) object(output []any, usage any) ordered {
	if output == nil {
		output = []any{}
	}
	var completedAt, errObj, incomplete any
	switch r.Status {
	case "completed":
		completedAt = r.CompletedAt
	case "incomplete":
		if r.IncompleteReason != "" {
			incomplete = ordered{{"reason", r.IncompleteReason}}
		}
	}
	if r.Error != nil {
		errObj = r.Error
	}
	e := r.Echo
	return ordered{
		{"id", r.ID},
		{"object", "response"},
		{"created_at", r.CreatedAt},
		{"status", r.Status},
		{"background", e.value(echoBackground)},
		{"completed_at", completedAt},
		{"error", errObj},
		{"frequency_penalty", e.value(echoFrequencyPenalty)},
		{"incomplete_details", incomplete},
		{"instructions", e.value(echoInstructions)},
		{"max_output_tokens", e.value(echoMaxOutputTokens)},
		{"max_tool_calls", e.value(echoMaxToolCalls)},
		{"model", r.Model},
		{"output", output},
		{"parallel_tool_calls", e.value(echoParallelToolCalls)},
		{"presence_penalty", e.value(echoPresencePenalty)},
		{"previous_response_id", e.value(echoPreviousResponseID)},
		{"prompt_cache_key", e.value(echoPromptCacheKey)},
		{"reasoning", e.value(echoReasoning)},
		{"safety_identifier", e.value(echoSafetyIdentifier)},
		{"service_tier", e.value(echoServiceTier)},
		{"store", e.value(echoStore)},
		{"temperature", e.value(echoTemperature)},
		{"text", e.value(echoText)},
		{"tool_choice", e.value(echoToolChoice)},
		{"tools", e.value(echoTools)},
		{"top_logprobs", e.value(echoTopLogprobs)},
		{"top_p", e.value(echoTopP)},
		{"truncation", e.value(echoTruncation)},
		{"usage", usage},
		{"metadata", e.value(echoMetadata)},
	}
}

// ResponseEvent is the data of a response lifecycle event that carries r (response.created,
// response.incomplete, response.failed, ...): {"type", "sequence_number", "response"}.
func ResponseEvent(name string, seq int64, r *Response) []byte {
	return mustJSON(ordered{{"type", name}, {"sequence_number", seq}, {"response", compactJSON(r.JSON())}})
}
