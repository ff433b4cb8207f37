package bridge

import (
	"encoding/json"
	"fmt"
)

// ChatStream turns the events of an upstream Responses stream into the chat.completion.chunk
// payloads of a Chat Completions stream. It keeps the state of one stream; it is not safe for
// concurrent use.
type ChatStream struct {
	id           string
	model        string
	created      int64
	includeUsage bool

	roleSent bool
	done     bool
	// tools maps the output_index of each function_call item to its chat tool call index.
	tools map[int]*chatStreamTool
	// texted holds the output_index of every message item whose text has been sent.
	texted map[int]bool
}

type chatStreamTool struct {
	index    int  // the chat tool_calls index: 0, 1, ... in order of appearance
	argsSent bool // whether any argument text has been sent
}

// NewChatStream returns a ChatStream whose chunks carry the given id, model (the one the client
// asked for), and created time (Unix seconds). includeUsage is the client's
// stream_options.include_usage: it adds a last chunk with empty choices and the usage.
func NewChatStream(model string, includeUsage bool, created int64, id string) *ChatStream {
	return &ChatStream{
		id:           id,
		model:        model,
		created:      created,
		includeUsage: includeUsage,
		tools:        map[int]*chatStreamTool{},
		texted:       map[int]bool{},
	}
}

// streamEvent holds the fields of the Responses stream events that ChatStream reads.
type streamEvent struct {
	Type        string          `json:"type"`
	OutputIndex int             `json:"output_index"`
	Delta       string          `json:"delta"`
	Arguments   string          `json:"arguments"`
	Item        json.RawMessage `json:"item"`
	Response    json.RawMessage `json:"response"`
}

// outputItem holds the fields of a Responses output item that the chat side can use.
type outputItem struct {
	Type      string `json:"type"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	Content   []struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Refusal string `json:"refusal"`
	} `json:"content"`
}

// Event consumes one upstream Responses event: its SSE event name (when empty, the "type" in
// data is used) and its data. It returns the chunk payloads to send, each as `data: <payload>`.
//
// done is true after the terminal event (response.completed, response.incomplete,
// response.failed or error); later calls return nothing. On response.failed and error the
// returned chunk ends the choice (finish_reason "stop": chat has no error reason) and err is an
// *UpstreamError with the upstream's code and message, so that the caller can send either.
// Events that have no chat counterpart (response.created, content_part events, ...) are ignored.
// Malformed data returns an error and no chunks; the stream can go on.
func (c *ChatStream) Event(name string, data []byte) (chunks [][]byte, done bool, err error) {
	if c.done {
		return nil, true, nil
	}
	if name == "" {
		var t struct {
			Type string `json:"type"`
		}
		json.Unmarshal(data, &t)
		name = t.Type
	}
	switch name {
	case "response.output_text.delta", "response.refusal.delta", "response.reasoning_summary_text.delta",
		"response.reasoning_text.delta", "response.output_item.added", "response.function_call_arguments.delta",
		"response.function_call_arguments.done", "response.output_item.done", "response.completed",
		"response.incomplete", "response.failed", "error":
	default:
		return nil, false, nil
	}
	var ev streamEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return nil, false, fmt.Errorf("bridge: upstream event %s: %w", name, err)
	}

	switch name {
	case "response.output_text.delta":
		c.texted[ev.OutputIndex] = true
		if ev.Delta != "" {
			chunks = append(chunks, c.delta(chunkDelta{Content: &ev.Delta}))
		}
	case "response.refusal.delta":
		c.texted[ev.OutputIndex] = true
		if ev.Delta != "" {
			chunks = append(chunks, c.delta(chunkDelta{Refusal: &ev.Delta}))
		}
	case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
		if ev.Delta != "" {
			chunks = append(chunks, c.delta(chunkDelta{ReasoningContent: &ev.Delta}))
		}
	case "response.output_item.added":
		var item outputItem
		if json.Unmarshal(ev.Item, &item) == nil && item.Type == "function_call" {
			chunks = append(chunks, c.startTool(ev.OutputIndex, item))
		}
	case "response.function_call_arguments.delta":
		// Deltas of a call that was never announced are skipped: output_item.done or the final
		// response sends the whole call instead.
		if t := c.tools[ev.OutputIndex]; t != nil && ev.Delta != "" {
			t.argsSent = true
			chunks = append(chunks, c.toolArgs(t, ev.Delta))
		}
	case "response.function_call_arguments.done":
		if t := c.tools[ev.OutputIndex]; t != nil && !t.argsSent && ev.Arguments != "" {
			t.argsSent = true
			chunks = append(chunks, c.toolArgs(t, ev.Arguments))
		}
	case "response.output_item.done":
		var item outputItem
		if json.Unmarshal(ev.Item, &item) == nil {
			chunks = append(chunks, c.catchUp(ev.OutputIndex, item)...)
		}
	case "response.completed", "response.incomplete", "response.failed":
		return c.finish(name, ev.Response)
	case "error":
		c.done = true
		return [][]byte{c.finishChunk("stop")}, true, errorEvent(data)
	}
	return chunks, false, nil
}

// catchUp sends what the chunks so far lack of a finished output item: a function call that
// was never announced, arguments or text that were never streamed. Some upstreams send whole
// items only.
func (c *ChatStream) catchUp(index int, item outputItem) [][]byte {
	var chunks [][]byte
	switch item.Type {
	case "function_call":
		t := c.tools[index]
		if t == nil {
			chunks = append(chunks, c.startTool(index, item))
		} else if !t.argsSent && item.Arguments != "" {
			t.argsSent = true
			chunks = append(chunks, c.toolArgs(t, item.Arguments))
		}
	case "message":
		if c.texted[index] {
			break
		}
		c.texted[index] = true
		for _, part := range item.Content {
			switch {
			case part.Type == "output_text" && part.Text != "":
				chunks = append(chunks, c.delta(chunkDelta{Content: &part.Text}))
			case part.Type == "refusal" && part.Refusal != "":
				chunks = append(chunks, c.delta(chunkDelta{Refusal: &part.Refusal}))
			}
		}
	}
	return chunks
}

// finish handles a terminal response event: it sends whatever of the final output was not
// streamed, the chunk with finish_reason, and the usage chunk when the client asked for it.
func (c *ChatStream) finish(name string, raw json.RawMessage) ([][]byte, bool, error) {
	c.done = true
	var resp upstreamResponse
	json.Unmarshal(raw, &resp) // a malformed final object still ends the stream

	var chunks [][]byte
	for i, rawItem := range resp.Output {
		var item outputItem
		if json.Unmarshal(rawItem, &item) == nil {
			chunks = append(chunks, c.catchUp(i, item)...)
		}
	}

	reason := "stop"
	switch {
	case name == "response.failed":
		// Chat has no finish_reason for errors; the error itself is returned to the caller.
	case name == "response.incomplete" || resp.Status == "incomplete":
		reason = incompleteToFinish(resp.IncompleteDetails.Reason)
	case len(c.tools) > 0:
		reason = "tool_calls"
	}
	chunks = append(chunks, c.finishChunk(reason))

	var usage responsesUsage
	if c.includeUsage && decodeUsage(resp.Usage, &usage) {
		chunks = append(chunks, mustJSON(c.chunk(nil, usage.toChat())))
	}

	if name == "response.failed" {
		e := upstreamError(resp.Error)
		if e.Code == "" && e.Message == "" {
			e.Message = "the upstream response failed"
		}
		return chunks, true, e
	}
	return chunks, true, nil
}

// errorEvent reads the code and message of an "error" event, which has them at the top level
// or, from some upstreams, in an "error" object.
func errorEvent(data []byte) *UpstreamError {
	var ev struct {
		Code    looseString     `json:"code"`
		Message looseString     `json:"message"`
		Error   json.RawMessage `json:"error"`
	}
	json.Unmarshal(data, &ev)
	e := &UpstreamError{Code: string(ev.Code), Message: string(ev.Message)}
	if e.Code == "" && e.Message == "" && !isNull(ev.Error) {
		e = upstreamError(ev.Error)
	}
	if e.Code == "" && e.Message == "" {
		e.Message = "the upstream stream reported an error"
	}
	return e
}

// incompleteToFinish maps a Responses incomplete_details.reason to a chat finish_reason.
func incompleteToFinish(reason string) string {
	if reason == "content_filter" {
		return "content_filter"
	}
	return "length" // max_output_tokens, and the reasons chat has no name for
}

// startTool announces a function call as a new chat tool call (id, name, and whatever
// arguments the item already has).
func (c *ChatStream) startTool(outputIndex int, item outputItem) []byte {
	t := &chatStreamTool{index: len(c.tools), argsSent: item.Arguments != ""}
	c.tools[outputIndex] = t
	return c.delta(chunkDelta{ToolCalls: []chunkToolCall{{
		Index:    t.index,
		ID:       item.CallID,
		Type:     "function",
		Function: chunkFunction{Name: item.Name, Arguments: item.Arguments},
	}}})
}

func (c *ChatStream) toolArgs(t *chatStreamTool, args string) []byte {
	return c.delta(chunkDelta{ToolCalls: []chunkToolCall{{Index: t.index, Function: chunkFunction{Arguments: args}}}})
}

// delta returns a chunk with one delta; the first one of the stream carries the role.
func (c *ChatStream) delta(d chunkDelta) []byte {
	if !c.roleSent {
		c.roleSent = true
		d.Role = "assistant"
	}
	return mustJSON(c.chunk([]chunkChoice{{Delta: d}}, nil))
}

func (c *ChatStream) finishChunk(reason string) []byte {
	d := chunkDelta{}
	if !c.roleSent {
		c.roleSent = true
		d.Role = "assistant"
	}
	return mustJSON(c.chunk([]chunkChoice{{Delta: d, FinishReason: &reason}}, nil))
}

func (c *ChatStream) chunk(choices []chunkChoice, usage *chatUsage) chatChunk {
	if choices == nil {
		choices = []chunkChoice{} // the usage chunk has "choices": []
	}
	return chatChunk{ID: c.id, Object: "chat.completion.chunk", Created: c.created, Model: c.model, Choices: choices, Usage: usage}
}

// chatChunk is a chat.completion.chunk object.
type chatChunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"`
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []chunkChoice `json:"choices"`
	Usage   *chatUsage    `json:"usage,omitempty"`
}

type chunkChoice struct {
	Index        int        `json:"index"`
	Delta        chunkDelta `json:"delta"`
	FinishReason *string    `json:"finish_reason"` // null until the last chunk
}

type chunkDelta struct {
	Role             string          `json:"role,omitempty"`
	Content          *string         `json:"content,omitempty"`
	Refusal          *string         `json:"refusal,omitempty"`
	ReasoningContent *string         `json:"reasoning_content,omitempty"`
	ToolCalls        []chunkToolCall `json:"tool_calls,omitempty"`
}

type chunkToolCall struct {
	Index    int           `json:"index"`
	ID       string        `json:"id,omitempty"`
	Type     string        `json:"type,omitempty"`
	Function chunkFunction `json:"function"`
}

type chunkFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}
