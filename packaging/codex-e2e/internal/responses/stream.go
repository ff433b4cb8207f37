package responses

// Stream is one scripted response, to be sent as its events.
type Stream struct {
	ID, Model         string
	CreatedAt         int64
	ParallelToolCalls any              // echoed from the request
	Items             []map[string]any // the output; nil is sent as null in response.completed
	// TurnState, when set, is sent as a response.metadata event (x-codex-turn-state) right after
	// response.created, numbered like the others.
	TurnState string
	// ArgumentDeltas streams a function_call's arguments as the Responses API does: the item is
	// added with empty arguments, then function_call_arguments.delta and .done. Without it the
	// call is added whole.
	ArgumentDeltas bool
	// TotalTokens is the usage's total_tokens (0: 1240); a client compacts its history when
	// it passes the compaction limit.
	TotalTokens int
}

// Events is the response's stream: created, in_progress, each item added (a message's text and
// a call's arguments as deltas) and done, completed; each event with its sequence_number.
func (s Stream) Events() []map[string]any {
	var evs []map[string]any
	add := func(ev map[string]any) {
		ev["sequence_number"] = len(evs)
		evs = append(evs, ev)
	}
	add(map[string]any{"type": "response.created", "response": s.response("in_progress", []map[string]any{})})
	if s.TurnState != "" {
		add(map[string]any{"type": "response.metadata", "headers": map[string]any{"x-codex-turn-state": s.TurnState}})
	}
	add(map[string]any{"type": "response.in_progress", "response": s.response("in_progress", []map[string]any{})})
	for i, it := range s.Items {
		add(map[string]any{"type": "response.output_item.added", "output_index": i, "item": s.inProgress(it)})
		switch {
		case it["type"] == "message":
			text := it["content"].([]any)[0].(map[string]any)["text"]
			part := map[string]any{"type": "output_text", "text": "", "annotations": []any{}}
			add(map[string]any{"type": "response.content_part.added", "item_id": it["id"], "output_index": i, "content_index": 0, "part": part})
			add(map[string]any{"type": "response.output_text.delta", "item_id": it["id"], "output_index": i, "content_index": 0, "delta": text})
			add(map[string]any{"type": "response.output_text.done", "item_id": it["id"], "output_index": i, "content_index": 0, "text": text})
			add(map[string]any{"type": "response.content_part.done", "item_id": it["id"], "output_index": i, "content_index": 0,
				"part": it["content"].([]any)[0]})
		case it["type"] == "function_call" && s.ArgumentDeltas:
			add(map[string]any{"type": "response.function_call_arguments.delta", "item_id": it["id"], "output_index": i, "delta": it["arguments"]})
			add(map[string]any{"type": "response.function_call_arguments.done", "item_id": it["id"], "output_index": i, "arguments": it["arguments"]})
		}
		add(map[string]any{"type": "response.output_item.done", "output_index": i, "item": it})
	}
	add(map[string]any{"type": "response.completed", "response": s.response("completed", s.Items)})
	return evs
}

// response is the response object of an event: completed ones carry the usage.
func (s Stream) response(status string, output []map[string]any) map[string]any {
	r := map[string]any{"id": s.ID, "object": "response", "created_at": s.CreatedAt, "status": status, "model": s.Model,
		"output": output, "parallel_tool_calls": s.ParallelToolCalls, "store": false}
	if status == "completed" {
		total := s.TotalTokens
		if total == 0 {
			total = 1240
		}
		r["usage"] = map[string]any{"input_tokens": total - 40, "input_tokens_details": map[string]any{"cached_tokens": 1024},
			"output_tokens": 40, "output_tokens_details": map[string]any{"reasoning_tokens": 16}, "total_tokens": total}
	}
	return r
}

// inProgress is the item as response.output_item.added carries it: a message without its
// content, a streamed call without its arguments.
func (s Stream) inProgress(it map[string]any) map[string]any {
	c := map[string]any{}
	for k, v := range it {
		c[k] = v
	}
	switch {
	case it["type"] == "message":
		c["status"] = "in_progress"
		c["content"] = []any{}
	case it["type"] == "function_call" && s.ArgumentDeltas:
		c["status"] = "in_progress"
		c["arguments"] = ""
	}
	return c
}
