package bridge

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Event is one Responses stream event to send: its SSE event name and its data (a JSON object
// whose "type" is Name and which carries its "sequence_number").
type Event struct {
	Name string
	Data []byte
}

// ResponsesStream turns the chat.completion.chunk payloads of an upstream Chat Completions
// stream into the events of a Responses stream. It keeps the state of one stream; it is not safe
// for concurrent use.
//
// The produced stream is always well formed, whatever the chunks: it starts with
// response.created and response.in_progress, sequence numbers go up by one, every delta belongs
// to an item that was added and is not yet done, every item is done before the single terminal
// event (response.completed, response.incomplete or response.failed), and that event carries the
// whole response. The text goes to one message item, which is done when a tool call starts
// (text after tool calls opens a new one); each tool call is a function_call item, done at the
// end because chat upstreams may interleave the arguments of several calls.
type ResponsesStream struct {
	head Response         // the response's id, model, created_at and echo
	now  func() time.Time // when the response completed
	ids  itemIDs

	seq     int
	started bool
	ended   bool

	items []*respItem       // every output item, in output_index order
	msg   *respItem         // the open message item, or nil
	calls map[int]*respItem // function calls by their chat tool_calls index
	last  *respItem         // the function call that the last tool call delta went to
	usage *chatUsage        // the upstream usage, once a chunk has carried it
	stop  string            // the upstream finish_reason
	final []json.RawMessage // the output items of the terminal event, once sent
}

// respItem is one output item of a Responses answer built from chat: a message or a function
// call.
type respItem struct {
	index  int
	id     string
	status string // "in_progress" until done
	call   bool   // a function_call item rather than a message

	parts []*respPart // message content; only the last one is still open

	callID string
	name   string
	args   strings.Builder
}

// respPart is one content part of a message item: output_text, or refusal.
type respPart struct {
	refusal bool
	text    strings.Builder
}

// NewResponsesStream returns a ResponsesStream for the response head names: its ID ("resp_...";
// item ids are made from it), Model (the one the client asked for), CreatedAt (Unix seconds)
// and the Echo of its request, which every response object of the stream carries. now tells
// the time the response completed (nil: time.Now).
func NewResponsesStream(head Response, now func() time.Time) *ResponsesStream {
	if now == nil {
		now = time.Now
	}
	return &ResponsesStream{
		head:  Response{ID: head.ID, Model: head.Model, CreatedAt: head.CreatedAt, Echo: head.Echo},
		now:   now,
		ids:   newItemIDs(head.ID),
		calls: map[int]*respItem{},
	}
}

// Start returns response.created and response.in_progress (sequence numbers 0 and 1). It may be
// sent before the upstream answers. If it was not called, the first Chunk, End or Fail returns
// these events first; later calls return nothing.
func (r *ResponsesStream) Start() []Event {
	if r.started {
		return nil
	}
	r.started = true
	return []Event{
		r.emit("response.created", member{"response", r.response("in_progress", nil, "")}),
		r.emit("response.in_progress", member{"response", r.response("in_progress", nil, "")}),
	}
}

// chatStreamChunk holds the fields of an upstream chunk that ResponsesStream reads.
type chatStreamChunk struct {
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content   string `json:"content"`
			Refusal   string `json:"refusal"`
			ToolCalls []struct {
				Index    *int   `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage json.RawMessage `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// Chunk consumes one upstream chunk payload (the JSON after "data: "; the caller handles
// "[DONE]") and returns the events it makes. Only choice 0 is read (the relay asks for one).
//
// Malformed JSON returns an error and changes nothing; so does a chunk with an "error" object,
// whose error is an *UpstreamError. After such an error the caller should call Fail (or End) to
// close the stream. Chunks after End or Fail return an error.
func (r *ResponsesStream) Chunk(data []byte) ([]Event, error) {
	if r.ended {
		return nil, errors.New("bridge: upstream chunk after the end of the stream")
	}
	var ch chatStreamChunk
	if err := json.Unmarshal(data, &ch); err != nil {
		return nil, fmt.Errorf("bridge: upstream chunk: %w", err)
	}
	if !isNull(ch.Error) {
		return nil, upstreamError(ch.Error)
	}
	events := r.Start()
	for _, choice := range ch.Choices {
		if choice.Index != 0 {
			continue
		}
		d := choice.Delta
		if d.Content != "" {
			events = r.text(events, false, d.Content)
		}
		if d.Refusal != "" {
			events = r.text(events, true, d.Refusal)
		}
		for _, tc := range d.ToolCalls {
			events = r.toolCall(events, tc.Index, tc.ID, tc.Function.Name, tc.Function.Arguments)
		}
		if choice.FinishReason != "" {
			r.stop = choice.FinishReason
		}
	}
	var usage chatUsage
	if decodeUsage(ch.Usage, &usage) {
		r.usage = &usage
	}
	return events, nil
}

// text appends message text (or refusal text) to the open message item, adding the item and a
// content part of the right kind when needed.
func (r *ResponsesStream) text(events []Event, refusal bool, s string) []Event {
	if r.msg == nil {
		r.msg = r.addItem(&respItem{id: r.ids.make("msg", len(r.items))})
		events = append(events, r.emit("response.output_item.added",
			member{"output_index", r.msg.index}, member{"item", r.msg.json()}))
	}
	it := r.msg
	n := len(it.parts)
	if n == 0 || it.parts[n-1].refusal != refusal {
		if n > 0 {
			events = r.closePart(events, it)
		}
		it.parts = append(it.parts, &respPart{refusal: refusal})
		events = append(events, r.emit("response.content_part.added", member{"item_id", it.id},
			member{"output_index", it.index}, member{"content_index", n}, member{"part", it.parts[n].json()}))
		n++
	}
	p := it.parts[n-1]
	p.text.WriteString(s)
	if refusal {
		return append(events, r.emit("response.refusal.delta", member{"item_id", it.id},
			member{"output_index", it.index}, member{"content_index", n - 1}, member{"delta", s}))
	}
	return append(events, r.emit("response.output_text.delta", member{"item_id", it.id},
		member{"output_index", it.index}, member{"content_index", n - 1}, member{"delta", s},
		member{"logprobs", []any{}}))
}

// toolCall applies one tool_calls entry of a chunk. The call is found by its index, else by its
// id, else it is the previous one (some upstreams omit the index); a call not seen before is
// added as a new function_call item.
func (r *ResponsesStream) toolCall(events []Event, index *int, id, name, args string) []Event {
	var it *respItem
	switch {
	case index != nil:
		it = r.calls[*index]
	case id != "":
		for _, item := range r.items {
			if item.call && item.callID == id {
				it = item
			}
		}
	default:
		it = r.last
	}
	if it == nil {
		events = r.closeItem(events, r.msg, "completed")
		n := len(r.items)
		it = r.addItem(&respItem{call: true, id: r.ids.make("fc", n), callID: id, name: name})
		if it.callID == "" {
			it.callID = r.ids.make("call", n)
		}
		if index != nil {
			r.calls[*index] = it
		}
		events = append(events, r.emit("response.output_item.added",
			member{"output_index", it.index}, member{"item", it.json()}))
	} else if it.name == "" {
		it.name = name
	}
	r.last = it
	if args == "" {
		return events
	}
	it.args.WriteString(args)
	return append(events, r.emit("response.function_call_arguments.delta", member{"item_id", it.id},
		member{"output_index", it.index}, member{"delta", args}))
}

// End closes the open items and returns the terminal event: response.completed, or
// response.incomplete (incomplete_details.reason "max_output_tokens") when the upstream
// finish_reason was "length" ("content_filter" for "content_filter"). The event carries the
// whole response: output items and usage. Calls after End or Fail return nothing.
func (r *ResponsesStream) End() []Event {
	if r.ended {
		return nil
	}
	status, reason := finishToStatus(r.stop)
	events := r.closeAll(r.Start(), status)
	r.ended = true
	name := "response.completed"
	if status == "incomplete" {
		name = "response.incomplete"
	}
	return append(events, r.emit(name, member{"response", r.response(status, nil, reason)}))
}

// Fail closes the open items (status "incomplete") and returns response.failed with the
// response so far and the error {code, message}, for an upstream that failed or broke off.
// code defaults to "server_error". Calls after End or Fail return nothing.
func (r *ResponsesStream) Fail(code, message string) []Event {
	if r.ended {
		return nil
	}
	if code == "" {
		code = "server_error"
	}
	events := r.closeAll(r.Start(), "incomplete")
	r.ended = true
	errObj := &ResponseError{Code: code, Message: message}
	return append(events, r.emit("response.failed", member{"response", r.response("failed", errObj, "")}))
}

// finishToStatus maps a chat finish_reason to a response status and incomplete reason.
func finishToStatus(finish string) (status, reason string) {
	switch finish {
	case "length":
		return "incomplete", "max_output_tokens"
	case "content_filter":
		return "incomplete", "content_filter"
	}
	return "completed", ""
}

func (r *ResponsesStream) addItem(it *respItem) *respItem {
	it.index = len(r.items)
	it.status = "in_progress"
	r.items = append(r.items, it)
	return it
}

// closeAll closes every open item, in output order.
func (r *ResponsesStream) closeAll(events []Event, status string) []Event {
	for _, it := range r.items {
		events = r.closeItem(events, it, status)
	}
	return events
}

// closeItem sends the .done events of an open item (nothing for nil or a done item).
func (r *ResponsesStream) closeItem(events []Event, it *respItem, status string) []Event {
	if it == nil || it.status != "in_progress" {
		return events
	}
	if it.call {
		events = append(events, r.emit("response.function_call_arguments.done", member{"item_id", it.id},
			member{"output_index", it.index}, member{"arguments", it.args.String()}))
	} else {
		if len(it.parts) > 0 {
			events = r.closePart(events, it)
		}
		if r.msg == it {
			r.msg = nil
		}
	}
	it.status = status
	return append(events, r.emit("response.output_item.done", member{"output_index", it.index}, member{"item", it.json()}))
}

// closePart sends the .done events of a message's last content part.
func (r *ResponsesStream) closePart(events []Event, it *respItem) []Event {
	n := len(it.parts) - 1
	p := it.parts[n]
	where := []member{{"item_id", it.id}, {"output_index", it.index}, {"content_index", n}}
	if p.refusal {
		events = append(events, r.emit("response.refusal.done", append(where, member{"refusal", p.text.String()})...))
	} else {
		events = append(events, r.emit("response.output_text.done",
			append(where, member{"text", p.text.String()}, member{"logprobs", []any{}})...))
	}
	return append(events, r.emit("response.content_part.done", append(where, member{"part", p.json()})...))
}

// emit makes the next event: its data is {"type": name, "sequence_number": n, fields...}.
func (r *ResponsesStream) emit(name string, fields ...member) Event {
	data := append(ordered{{"type", name}, {"sequence_number", r.seq}}, fields...)
	r.seq++
	return Event{Name: name, Data: mustJSON(data)}
}

// response returns the response object as it stands. errObj is the error of a failed
// response; incompleteReason the reason of an incomplete one. A response that ended keeps its
// output items, as Output gives them.
func (r *ResponsesStream) response(status string, errObj *ResponseError, incompleteReason string) ordered {
	output := make([]any, len(r.items))
	for i, it := range r.items {
		output[i] = it.json()
	}
	if r.ended {
		r.final = make([]json.RawMessage, len(output))
		for i, it := range output {
			r.final[i] = mustJSON(it)
			output[i] = compactJSON(r.final[i])
		}
	}
	var usage any
	if r.usage != nil {
		usage = r.usage.toResponses()
	}
	head := r.head
	head.Status, head.Error, head.IncompleteReason = status, errObj, incompleteReason
	if status == "completed" {
		head.CompletedAt = max(r.now().Unix(), head.CreatedAt)
	}
	return head.object(output, usage)
}

// Output is the output items of the response the terminal event carried (End, Fail), each as
// its JSON; nil before.
func (r *ResponsesStream) Output() []json.RawMessage { return r.final }

// json returns the item as it stands.
func (it *respItem) json() ordered {
	if it.call {
		return ordered{{"id", it.id}, {"type", "function_call"}, {"status", it.status},
			{"arguments", it.args.String()}, {"call_id", it.callID}, {"name", it.name}}
	}
	content := []any{}
	for _, p := range it.parts {
		content = append(content, p.json())
	}
	return ordered{{"id", it.id}, {"type", "message"}, {"status", it.status}, {"role", "assistant"}, {"content", content}}
}

func (p *respPart) json() ordered {
	if p.refusal {
		return ordered{{"type", "refusal"}, {"refusal", p.text.String()}}
	}
	return ordered{{"type", "output_text"}, {"text", p.text.String()}, {"annotations", []any{}}, {"logprobs", []any{}}}
}
