package bridge

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// minOutputTokens is the smallest max_output_tokens the Responses API accepts; smaller chat
// limits (max_tokens: 1 is a common health check) are raised to it rather than failing.
const minOutputTokens = 16

// ChatToResponsesRequest translates a Chat Completions request body into a Responses request
// body.
//
// Leading system and developer messages become "instructions"; every other message becomes
// input items (messages, function_call, function_call_output). Function tools are flattened,
// response_format becomes text.format, reasoning_effort becomes reasoning.effort and
// max_tokens/max_completion_tokens become max_output_tokens. Parameters that Responses does not
// have (stop, logit_bias, ...) are left out and named in dropped. An error means that the body
// cannot be served at all (it is not a JSON object, n > 1, no messages): answer 400.
func ChatToResponsesRequest(chat []byte) (responses []byte, dropped []string, err error) {
	in, err := decodeObject(chat, "chat request")
	if err != nil {
		return nil, nil, err
	}
	var drops dropList
	out := map[string]any{}
	text := ordered{}
	var maxTokens, maxCompletionTokens json.RawMessage
	for _, key := range sortedKeys(in) {
		raw := in[key]
		if isNull(raw) {
			continue
		}
		switch key {
		case "model", "temperature", "top_p", "user", "metadata", "parallel_tool_calls", "stream",
			"store", "service_tier", "prompt_cache_key", "safety_identifier":
			out[key] = raw
		case "messages":
			instructions, input, err := chatMessagesToInput(raw, &drops)
			if err != nil {
				return nil, nil, err
			}
			if instructions != "" {
				out["instructions"] = instructions
			}
			out["input"] = input
		case "tools":
			tools, err := chatToolsToResponses(raw, &drops)
			if err != nil {
				return nil, nil, err
			}
			if len(tools) > 0 {
				out["tools"] = tools
			}
		case "tool_choice":
			if choice, ok := chatToolChoiceToResponses(raw); ok {
				out["tool_choice"] = choice
			} else {
				drops.add("param", "tool_choice")
			}
		case "response_format":
			if format, ok := chatFormatToResponses(raw); ok {
				text = append(text, member{"format", format})
			} else {
				drops.add("param", "response_format")
			}
		case "verbosity":
			text = append(text, member{"verbosity", raw})
		case "reasoning_effort":
			out["reasoning"] = ordered{{"effort", raw}}
		case "max_completion_tokens":
			maxCompletionTokens = raw
		case "max_tokens":
			maxTokens = raw // deprecated: max_completion_tokens wins when both are set
		case "n":
			var n int
			if err := json.Unmarshal(raw, &n); err != nil {
				return nil, nil, errors.New("bridge: chat request: n must be an integer")
			}
			if n > 1 {
				return nil, nil, fmt.Errorf("bridge: chat request: n = %d is not supported by a Responses upstream (only one choice)", n)
			}
		case "stream_options":
			// include_usage is honoured by the caller through NewChatStream.
		default:
			drops.add("param", key)
		}
	}
	if _, ok := out["input"]; !ok {
		return nil, nil, fmt.Errorf("%w: the chat request has no messages", ErrNothingUsable)
	}
	if maxCompletionTokens != nil {
		maxTokens = maxCompletionTokens
	}
	if maxTokens != nil {
		var n int64
		if err := json.Unmarshal(maxTokens, &n); err != nil {
			return nil, nil, errors.New("bridge: chat request: max_tokens must be an integer")
		}
		out["max_output_tokens"] = max(n, minOutputTokens)
	}
	if len(text) > 0 {
		out["text"] = text
	}
	return translated(out), drops, nil
}

// translated is a translated request as JSON. Both APIs reject a tool_choice (or
// parallel_tool_calls) without tools, which a request whose tools were all dropped may have.
func translated(out map[string]any) []byte {
	if _, ok := out["tools"]; !ok {
		delete(out, "tool_choice")
		delete(out, "parallel_tool_calls")
	}
	return mustJSON(out)
}

// chatMessage is one message of a Chat Completions request.
type chatMessage struct {
	Role         string          `json:"role"`
	Content      json.RawMessage `json:"content"`
	Refusal      string          `json:"refusal"`
	ToolCalls    []chatToolCall  `json:"tool_calls"`
	ToolCallID   string          `json:"tool_call_id"`
	FunctionCall json.RawMessage `json:"function_call"`
}

// chatToolCall is one entry of an assistant message's tool_calls.
type chatToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
	Custom struct {
		Name  string `json:"name"`
		Input string `json:"input"`
	} `json:"custom"`
}

// chatPart is one content part of a chat message.
type chatPart struct {
	Type     string          `json:"type"`
	Text     string          `json:"text"`
	Refusal  string          `json:"refusal"`
	ImageURL json.RawMessage `json:"image_url"` // {"url","detail"}; some clients send a bare string
	File     struct {
		FileID   string `json:"file_id"`
		FileData string `json:"file_data"`
		Filename string `json:"filename"`
	} `json:"file"`
}

// chatMessagesToInput turns chat messages into Responses instructions and input items.
func chatMessagesToInput(raw json.RawMessage, drops *dropList) (string, []any, error) {
	var msgs []chatMessage
	if err := json.Unmarshal(raw, &msgs); err != nil {
		return "", nil, fmt.Errorf("bridge: chat request: messages: %w", err)
	}
	// Leading system and developer messages are the instructions, unless they are all there is:
	// then they stay messages so that the input is not empty.
	lead := 0
	for lead < len(msgs) && (msgs[lead].Role == "system" || msgs[lead].Role == "developer") {
		lead++
	}
	if lead == len(msgs) {
		lead = 0
	}
	var instructions []string
	for i, m := range msgs[:lead] {
		parts, err := chatContent(m.Content)
		if err != nil {
			return "", nil, fmt.Errorf("bridge: chat request: messages[%d]: %w", i, err)
		}
		instructions = append(instructions, partsText(parts, "\n", m.Role+" message", drops))
	}
	var input []any
	customCalls := map[string]bool{} // call ids of custom tool calls, whose results differ in type
	for i, m := range msgs[lead:] {
		i += lead
		parts, err := chatContent(m.Content)
		if err != nil {
			return "", nil, fmt.Errorf("bridge: chat request: messages[%d]: %w", i, err)
		}
		switch m.Role {
		case "system", "developer", "user":
			if content := chatPartsToInput(parts, m.Role, drops); len(content) > 0 {
				input = append(input, ordered{{"type", "message"}, {"role", m.Role}, {"content", content}})
			}
		case "assistant":
			input = assistantToInput(input, m, parts, customCalls, drops)
		case "tool":
			kind := "function_call_output"
			if customCalls[m.ToolCallID] {
				kind = "custom_tool_call_output"
			}
			input = append(input, ordered{{"type", kind}, {"call_id", m.ToolCallID}, {"output", partsText(parts, "", "tool message", drops)}})
		default:
			drops.add("message", m.Role)
		}
	}
	if len(input) == 0 {
		return "", nil, fmt.Errorf("%w: no chat message could be translated", ErrNothingUsable)
	}
	return strings.Join(instructions, "\n\n"), input, nil
}

// partsText is the text parts of a message joined by sep; any other part is dropped, named as
// in where.
func partsText(parts []chatPart, sep, where string, drops *dropList) string {
	var texts []string
	for _, p := range parts {
		if p.Type == "text" {
			texts = append(texts, p.Text)
		} else {
			drops.add("content", p.Type+" in "+where)
		}
	}
	return strings.Join(texts, sep)
}

// assistantToInput appends to input the items of an assistant message: its text and refusals
// as one message, then its tool calls (a custom one's id goes into customCalls).
func assistantToInput(input []any, m chatMessage, parts []chatPart, customCalls map[string]bool, drops *dropList) []any {
	var content []any
	for _, p := range parts {
		switch {
		case p.Type == "text" && p.Text != "":
			content = append(content, ordered{{"type", "output_text"}, {"text", p.Text}})
		case p.Type == "refusal":
			content = append(content, ordered{{"type", "refusal"}, {"refusal", p.Refusal}})
		case p.Type != "text":
			drops.add("content", p.Type+" in assistant message")
		}
	}
	if m.Refusal != "" {
		content = append(content, ordered{{"type", "refusal"}, {"refusal", m.Refusal}})
	}
	if len(content) > 0 {
		input = append(input, ordered{{"type", "message"}, {"role", "assistant"}, {"content", content}})
	}
	for _, tc := range m.ToolCalls {
		switch tc.Type {
		case "function", "":
			input = append(input, ordered{{"type", "function_call"}, {"call_id", tc.ID},
				{"name", tc.Function.Name}, {"arguments", tc.Function.Arguments}})
		case "custom":
			customCalls[tc.ID] = true
			input = append(input, ordered{{"type", "custom_tool_call"}, {"call_id", tc.ID},
				{"name", tc.Custom.Name}, {"input", tc.Custom.Input}})
		default:
			drops.add("item", "tool_call "+tc.Type)
		}
	}
	if !isNull(m.FunctionCall) {
		drops.add("message", "function_call")
	}
	return input
}

// chatContent decodes a message's content, which is a string, an array of parts or null, as
// parts (a string is one text part).
func chatContent(raw json.RawMessage) ([]chatPart, error) {
	if isNull(raw) {
		return nil, nil
	}
	if s, ok := asString(raw); ok {
		return []chatPart{{Type: "text", Text: s}}, nil
	}
	var parts []chatPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return nil, errors.New("content must be a string or an array of content parts")
	}
	return parts, nil
}

// chatPartsToInput converts the parts of a user, system or developer message to Responses
// input content.
func chatPartsToInput(parts []chatPart, role string, drops *dropList) []any {
	var content []any
	for _, p := range parts {
		switch p.Type {
		case "text":
			content = append(content, ordered{{"type", "input_text"}, {"text", p.Text}})
		case "image_url":
			var img struct {
				URL    string `json:"url"`
				Detail string `json:"detail"`
			}
			if url, ok := asString(p.ImageURL); ok { // the bare-string form
				img.URL = url
			} else {
				json.Unmarshal(p.ImageURL, &img)
			}
			if img.URL == "" {
				drops.add("content", "image_url without url")
				continue
			}
			if img.Detail == "" {
				img.Detail = "auto"
			}
			content = append(content, ordered{{"type", "input_image"}, {"image_url", img.URL}, {"detail", img.Detail}})
		case "file":
			file := ordered{{"type", "input_file"}}.
				withString("file_id", p.File.FileID).
				withString("file_data", p.File.FileData).
				withString("filename", p.File.Filename)
			content = append(content, file)
		default:
			drops.add("content", p.Type+" in "+role+" message")
		}
	}
	return content
}

// chatTool is one entry of a chat request's tools.
type chatTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description json.RawMessage `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
		Strict      json.RawMessage `json:"strict"`
	} `json:"function"`
	Custom struct {
		Name string `json:"name"`
	} `json:"custom"`
}

// chatToolsToResponses flattens chat function tools into Responses function tools.
//
// Chat's "strict" defaults to false and Responses' to true, so an unset strict is written as
// false: otherwise a schema that is not valid for strict mode would be rejected upstream.
func chatToolsToResponses(raw json.RawMessage, drops *dropList) ([]any, error) {
	var tools []chatTool
	if err := json.Unmarshal(raw, &tools); err != nil {
		return nil, fmt.Errorf("bridge: chat request: tools: %w", err)
	}
	var out []any
	for _, t := range tools {
		switch t.Type {
		case "function":
			f := t.Function
			tool := ordered{{"type", "function"}, {"name", f.Name}}.withRaw("description", f.Description)
			params := f.Parameters
			if isNull(params) {
				params = json.RawMessage(`{"type":"object","properties":{}}`)
			}
			tool = append(tool, member{"parameters", params})
			strict := f.Strict
			if isNull(strict) {
				strict = json.RawMessage("false")
			}
			out = append(out, append(tool, member{"strict", strict}))
		case "custom":
			drops.add("tool", "custom "+t.Custom.Name)
		default:
			drops.add("tool", t.Type)
		}
	}
	return out, nil
}

// chatToolChoiceToResponses converts a chat tool_choice: the strings are the same, and
// {"type":"function","function":{"name":N}} becomes {"type":"function","name":N}.
func chatToolChoiceToResponses(raw json.RawMessage) (any, bool) {
	if s, ok := asString(raw); ok {
		return s, true
	}
	var c struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if json.Unmarshal(raw, &c) != nil || c.Type != "function" || c.Function.Name == "" {
		return nil, false
	}
	return ordered{{"type", "function"}, {"name", c.Function.Name}}, true
}

// chatFormatToResponses converts a chat response_format to a Responses text.format.
func chatFormatToResponses(raw json.RawMessage) (any, bool) {
	var f struct {
		Type       string `json:"type"`
		JSONSchema struct {
			Name        string          `json:"name"`
			Description json.RawMessage `json:"description"`
			Schema      json.RawMessage `json:"schema"`
			Strict      json.RawMessage `json:"strict"`
		} `json:"json_schema"`
	}
	if json.Unmarshal(raw, &f) != nil {
		return nil, false
	}
	switch f.Type {
	case "text", "json_object":
		return ordered{{"type", f.Type}}, true
	case "json_schema":
		s := f.JSONSchema
		format := ordered{{"type", "json_schema"}, {"name", s.Name}}.
			withRaw("description", s.Description).
			withRaw("schema", s.Schema).
			withRaw("strict", s.Strict)
		return format, true
	}
	return nil, false
}

// ErrPreviousResponse is returned (wrapped, with the id) for a Responses request that continues
// a stored response (previous_response_id): a Chat Completions upstream keeps no responses, so
// the caller must replay the conversation up to it in the input instead, or answer that the
// response is not found.
var ErrPreviousResponse = errors.New("bridge: a Chat Completions upstream cannot continue a stored response: previous_response_id")

// ResponsesToChatRequest translates a Responses request body into a Chat Completions request
// body.
//
// "instructions" becomes the first (system) message and the input items become messages:
// consecutive function calls join the assistant message before them, function call outputs
// become tool messages, developer messages become system messages (which every chat upstream
// accepts; OpenAI treats both alike), and reasoning items are left out silently (they are
// model-internal). Only function tools can be declared in chat; other tools (custom, namespace,
// web_search, ...) are left out and named in dropped, as are parameters chat does not have. An
// error means that the body cannot be served at all (not a JSON object, nothing translatable
// in input: ErrNothingUsable; a previous_response_id: ErrPreviousResponse): answer 400.
func ResponsesToChatRequest(resp []byte) (chat []byte, dropped []string, err error) {
	in, err := decodeObject(resp, "responses request")
	if err != nil {
		return nil, nil, err
	}
	var drops dropList
	out := map[string]any{}
	var system *outMessage
	var messages []*outMessage
	for _, key := range sortedKeys(in) {
		raw := in[key]
		if isNull(raw) {
			continue
		}
		switch key {
		case "model", "temperature", "top_p", "user", "parallel_tool_calls":
			out[key] = raw
		case "instructions":
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return nil, nil, errors.New("bridge: responses request: instructions must be a string")
			}
			if s != "" {
				system = &outMessage{Role: "system", Content: s}
			}
		case "input":
			messages, err = responsesInputToMessages(raw, &drops)
			if err != nil {
				return nil, nil, err
			}
		case "tools":
			if tools := responsesToolsToChat(raw, &drops); len(tools) > 0 {
				out["tools"] = tools
			}
		case "tool_choice":
			if choice, ok := responsesToolChoiceToChat(raw); ok {
				out["tool_choice"] = choice
			} else {
				drops.add("param", "tool_choice")
			}
		case "text":
			var t struct {
				Format    json.RawMessage `json:"format"`
				Verbosity json.RawMessage `json:"verbosity"`
			}
			json.Unmarshal(raw, &t) // a malformed text is only dropped
			if !isNull(t.Format) {
				if format, ok := responsesFormatToChat(t.Format); ok {
					out["response_format"] = format
				} else {
					drops.add("param", "text.format")
				}
			}
			if !isNull(t.Verbosity) {
				drops.add("param", "text.verbosity")
			}
		case "reasoning":
			var r struct {
				Effort json.RawMessage `json:"effort"`
			}
			if json.Unmarshal(raw, &r) == nil && !isNull(r.Effort) {
				out["reasoning_effort"] = r.Effort
			}
		case "max_output_tokens":
			out["max_completion_tokens"] = raw
		case "stream":
			out["stream"] = raw
			if string(raw) == "true" {
				out["stream_options"] = ordered{{"include_usage", true}}
			}
		case "store", "prompt_cache_key", "stream_options":
			// Left out silently: store (nothing needs the upstream to keep the answer),
			// prompt_cache_key (not every chat upstream accepts it) and the Responses
			// stream_options (include_usage is set from stream instead).
		case "include":
			var list []json.RawMessage
			if json.Unmarshal(raw, &list) != nil || len(list) > 0 {
				drops.add("param", "include")
			}
		case "previous_response_id":
			// The earlier turns are nowhere in the request: dropping the id would answer a
			// different conversation (and a tool result would come without its call).
			return nil, nil, fmt.Errorf("%w %s", ErrPreviousResponse, raw)
		default:
			drops.add("param", key) // truncation, background, metadata, ...
		}
	}
	if len(messages) == 0 {
		return nil, nil, fmt.Errorf("%w: the responses input has no message, function call or function call output that chat can take", ErrNothingUsable)
	}
	if system != nil {
		messages = append([]*outMessage{system}, messages...)
	}
	out["messages"] = messages
	return translated(out), drops, nil
}

// outMessage is one message of a produced chat request.
type outMessage struct {
	Role       string        `json:"role"`
	Content    any           `json:"content"` // string, []ordered parts, or nil (null) for tool-call-only messages
	Refusal    string        `json:"refusal,omitempty"`
	ToolCalls  []outToolCall `json:"tool_calls,omitempty"`
	ToolCallID string        `json:"tool_call_id,omitempty"`
}

type outToolCall struct {
	ID       string      `json:"id"`
	Type     string      `json:"type"`
	Function outFunction `json:"function"`
}

type outFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// responsesItem is one input item of a Responses request. Fields whose type varies between
// item types are kept raw.
type responsesItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Input     json.RawMessage `json:"input"`
	Output    json.RawMessage `json:"output"`
}

// responsesPart is one content part of a Responses message (or of a function call output).
type responsesPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Refusal  string `json:"refusal"`
	ImageURL string `json:"image_url"`
	FileID   string `json:"file_id"`
	FileData string `json:"file_data"`
	Filename string `json:"filename"`
	Detail   string `json:"detail"`
}

// responsesInputToMessages converts a Responses input (a string or a list of items) to chat
// messages.
func responsesInputToMessages(raw json.RawMessage, drops *dropList) ([]*outMessage, error) {
	if s, ok := asString(raw); ok {
		return []*outMessage{{Role: "user", Content: s}}, nil
	}
	if raw[0] != '[' {
		return nil, errors.New("bridge: responses request: input must be a string or an array of items")
	}
	var items []responsesItem
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("bridge: responses request: input: %w", err)
	}
	var msgs []*outMessage
	// lastAssistant returns the assistant message that a function call joins: the previous
	// message when it is an assistant one, else a new one.
	lastAssistant := func() *outMessage {
		if n := len(msgs); n > 0 && msgs[n-1].Role == "assistant" {
			return msgs[n-1]
		}
		m := &outMessage{Role: "assistant"}
		msgs = append(msgs, m)
		return m
	}
	for _, it := range items {
		if it.Type == "" && it.Role != "" {
			it.Type = "message" // the short form {"role":..., "content":...}
		}
		switch it.Type {
		case "message":
			if m := responsesMessageToChat(it, drops); m != nil {
				msgs = append(msgs, m)
			}
		case "function_call":
			m := lastAssistant()
			m.ToolCalls = append(m.ToolCalls, outToolCall{ID: it.CallID, Type: "function",
				Function: outFunction{Name: it.Name, Arguments: rawString(it.Arguments)}})
		case "custom_tool_call":
			// Chat upstreams know only function calls: the history keeps the call as one with
			// the free-form input wrapped in JSON.
			input := string(mustJSON(ordered{{"input", rawString(it.Input)}}))
			m := lastAssistant()
			m.ToolCalls = append(m.ToolCalls, outToolCall{ID: it.CallID, Type: "function",
				Function: outFunction{Name: it.Name, Arguments: input}})
		case "function_call_output", "custom_tool_call_output":
			msgs = append(msgs, &outMessage{Role: "tool", ToolCallID: it.CallID, Content: toolOutputToChat(it.Output, drops)})
		case "reasoning":
			// Model-internal (often encrypted): a chat upstream cannot use it.
		case "compaction_trigger":
			// A remote compaction asks for one sealed compaction item, which only a Responses
			// upstream makes: without it the client would get an ordinary answer instead.
			return nil, errors.New("a Chat Completions upstream cannot compact a conversation (compaction_trigger)")
		default:
			drops.add("item", it.Type)
		}
	}
	return msgs, nil
}

// rawString returns a raw JSON string's value, or the raw text itself when it is not a string.
func rawString(raw json.RawMessage) string {
	if s, ok := asString(raw); ok || isNull(raw) {
		return s
	}
	return string(raw)
}

// responsesMessageToChat converts a message item, or returns nil when nothing of it is left.
func responsesMessageToChat(it responsesItem, drops *dropList) *outMessage {
	role := it.Role
	switch role {
	case "user", "assistant", "system":
	case "developer":
		role = "system"
	default:
		drops.add("message", role)
		return nil
	}
	if s, ok := asString(it.Content); ok {
		return &outMessage{Role: role, Content: s}
	}
	var parts []responsesPart
	if json.Unmarshal(it.Content, &parts) != nil {
		drops.add("content", "malformed in "+it.Role+" message")
		return nil
	}
	m := &outMessage{Role: role}
	var content []ordered
	for _, p := range parts {
		switch {
		case p.Type == "input_text" || p.Type == "output_text":
			content = append(content, ordered{{"type", "text"}, {"text", p.Text}})
		case p.Type == "refusal" && role == "assistant":
			m.Refusal += p.Refusal
		case p.Type == "input_image" && role == "user":
			if p.ImageURL == "" {
				drops.add("content", "input_image file_id")
				continue
			}
			img := ordered{{"url", p.ImageURL}}
			if p.Detail != "" {
				img = append(img, member{"detail", p.Detail})
			}
			content = append(content, ordered{{"type", "image_url"}, {"image_url", img}})
		case p.Type == "input_file" && role == "user" && (p.FileID != "" || p.FileData != ""):
			file := ordered{}.
				withString("file_id", p.FileID).
				withString("file_data", p.FileData).
				withString("filename", p.Filename)
			content = append(content, ordered{{"type", "file"}, {"file", file}})
		default:
			drops.add("content", p.Type+" in "+it.Role+" message")
		}
	}
	if len(content) == 0 && m.Refusal == "" {
		return nil
	}
	m.Content = collapseParts(content)
	return m
}

// collapseParts returns a lone text part as a plain string (the form every chat upstream
// accepts), other parts as they are, and nil for no parts.
func collapseParts(parts []ordered) any {
	switch {
	case len(parts) == 0:
		return nil
	case len(parts) == 1 && parts[0][0] == member{"type", "text"}:
		return parts[0][1].value // the text of {"type":"text","text":...}
	}
	return parts
}

// toolOutputToChat converts a function call output (a string or a list of content parts) to
// tool message content; chat tool messages take text only.
func toolOutputToChat(raw json.RawMessage, drops *dropList) any {
	if s, ok := asString(raw); ok || isNull(raw) {
		return s
	}
	var parts []responsesPart
	if json.Unmarshal(raw, &parts) != nil {
		return string(raw) // an unexpected shape: give the model the JSON as text
	}
	var content []ordered
	for _, p := range parts {
		if p.Type == "input_text" || p.Type == "output_text" {
			content = append(content, ordered{{"type", "text"}, {"text", p.Text}})
		} else {
			drops.add("content", p.Type+" in function_call_output")
		}
	}
	if content := collapseParts(content); content != nil {
		return content
	}
	return ""
}

// responsesToolsToChat converts Responses function tools to chat function tools; every other
// tool type is named in drops.
func responsesToolsToChat(raw json.RawMessage, drops *dropList) []any {
	var tools []struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description json.RawMessage `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
		Strict      json.RawMessage `json:"strict"`
	}
	if json.Unmarshal(raw, &tools) != nil {
		drops.add("param", "tools")
		return nil
	}
	var out []any
	for _, t := range tools {
		if t.Type != "function" {
			drops.add("tool", strings.TrimSpace(t.Type+" "+t.Name))
			continue
		}
		f := ordered{{"name", t.Name}}.
			withRaw("description", t.Description).
			withRaw("parameters", t.Parameters).
			withRaw("strict", t.Strict)
		out = append(out, ordered{{"type", "function"}, {"function", f}})
	}
	return out
}

// responsesToolChoiceToChat converts a Responses tool_choice: the strings are the same, and
// {"type":"function","name":N} becomes {"type":"function","function":{"name":N}}.
func responsesToolChoiceToChat(raw json.RawMessage) (any, bool) {
	if s, ok := asString(raw); ok {
		return s, true
	}
	var c struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if json.Unmarshal(raw, &c) != nil || c.Type != "function" || c.Name == "" {
		return nil, false
	}
	return ordered{{"type", "function"}, {"function", ordered{{"name", c.Name}}}}, true
}

// responsesFormatToChat converts a Responses text.format to a chat response_format.
func responsesFormatToChat(raw json.RawMessage) (any, bool) {
	var f struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description json.RawMessage `json:"description"`
		Schema      json.RawMessage `json:"schema"`
		Strict      json.RawMessage `json:"strict"`
	}
	if json.Unmarshal(raw, &f) != nil {
		return nil, false
	}
	switch f.Type {
	case "text", "json_object":
		return ordered{{"type", f.Type}}, true
	case "json_schema":
		schema := ordered{{"name", f.Name}}.
			withRaw("description", f.Description).
			withRaw("schema", f.Schema).
			withRaw("strict", f.Strict)
		return ordered{{"type", "json_schema"}, {"json_schema", schema}}, true
	}
	return nil, false
}

// decodeObject decodes a request body as a JSON object, keeping member values raw.
func decodeObject(body []byte, what string) (map[string]json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("bridge: %s: the body must be a JSON object", what)
	}
	return obj, nil
}

// sortedKeys returns the keys of obj in order, so that translations (and their dropped lists)
// do not depend on map iteration order.
func sortedKeys(obj map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
