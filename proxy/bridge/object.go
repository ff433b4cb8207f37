package bridge

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// upstreamResponse is what the bridge reads of a final Responses response object, whole or from
// a stream's terminal event.
type upstreamResponse struct {
	ID                string          `json:"id"`
	CreatedAt         float64         `json:"created_at"`
	Model             string          `json:"model"`
	Status            string          `json:"status"`
	Error             json.RawMessage `json:"error"`
	IncompleteDetails struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Output []json.RawMessage `json:"output"`
	Usage  json.RawMessage   `json:"usage"`
}

// ResponseToChatCompletion translates a final Responses response object (the body of a
// non-stream answer) into a chat.completion object for a chat client. model, when not empty,
// replaces the upstream's model (the client sees the name it asked for).
//
// The text of the message items becomes the message content, function_call items become
// tool_calls, reasoning summaries become reasoning_content, and the status becomes the
// finish_reason. A failed response, or an error body, returns an *UpstreamError.
func ResponseToChatCompletion(response []byte, model string) ([]byte, error) {
	var resp upstreamResponse
	if err := json.Unmarshal(response, &resp); err != nil {
		return nil, fmt.Errorf("bridge: upstream response: %w", err)
	}
	if !isNull(resp.Error) && (resp.Status == "failed" || resp.Status == "") {
		return nil, upstreamError(resp.Error)
	}
	if resp.Status == "failed" {
		return nil, &UpstreamError{Message: "the upstream response failed"}
	}
	if model == "" {
		model = resp.Model
	}

	var text, refusal, reasoning strings.Builder
	var calls []outToolCall
	for _, raw := range resp.Output {
		var item struct {
			outputItem
			Summary []struct {
				Text string `json:"text"`
			} `json:"summary"`
		}
		if json.Unmarshal(raw, &item) != nil {
			continue
		}
		switch item.Type {
		case "message":
			for _, part := range item.Content {
				text.WriteString(part.Text)
				refusal.WriteString(part.Refusal)
			}
		case "function_call":
			calls = append(calls, outToolCall{ID: item.CallID, Type: "function",
				Function: outFunction{Name: item.Name, Arguments: item.Arguments}})
		case "reasoning":
			for _, s := range item.Summary {
				if reasoning.Len() > 0 {
					reasoning.WriteString("\n\n")
				}
				reasoning.WriteString(s.Text)
			}
		}
	}

	message := ordered{{"role", "assistant"}, {"content", text.String()}}
	if text.Len() == 0 && len(calls) > 0 {
		message[1].value = nil // content is null beside tool calls, as OpenAI sends it
	}
	var refusalValue any
	if refusal.Len() > 0 {
		refusalValue = refusal.String()
	}
	message = append(message, member{"refusal", refusalValue})
	if len(calls) > 0 {
		message = append(message, member{"tool_calls", calls})
	}
	if reasoning.Len() > 0 {
		message = append(message, member{"reasoning_content", reasoning.String()})
	}

	finish := "stop"
	switch {
	case resp.Status == "incomplete":
		finish = incompleteToFinish(resp.IncompleteDetails.Reason)
	case len(calls) > 0:
		finish = "tool_calls"
	}
	out := ordered{
		{"id", resp.ID},
		{"object", "chat.completion"},
		{"created", int64(resp.CreatedAt)},
		{"model", model},
		{"choices", []ordered{{{"index", 0}, {"message", message}, {"logprobs", nil}, {"finish_reason", finish}}}},
	}
	var usage responsesUsage
	if decodeUsage(resp.Usage, &usage) {
		out = append(out, member{"usage", usage.toChat()})
	}
	return mustJSON(out), nil
}

// ChatCompletionToResponse translates a chat.completion object (the body of a non-stream chat
// answer) into a Responses response object: the one head names (its ID, Model, CreatedAt and the
// Echo of its request; a CreatedAt of 0 keeps the upstream's created, an empty Model the
// upstream's model), completed at head.CompletedAt when it completed. The output is what
// ResponsesStream would have built from the same answer streamed: a message item for the text
// and refusal, then one function_call item per tool call. An error body returns an
// *UpstreamError.
func ChatCompletionToResponse(chat []byte, head Response) ([]byte, error) {
	var cc struct {
		Created int64  `json:"created"`
		Model   string `json:"model"`
		Choices []struct {
			Index   int         `json:"index"`
			Message chatMessage `json:"message"`
			// FinishReason is read loosely: some upstreams send null.
			FinishReason looseString `json:"finish_reason"`
		} `json:"choices"`
		Usage json.RawMessage `json:"usage"`
		Error json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(chat, &cc); err != nil {
		return nil, fmt.Errorf("bridge: upstream chat completion: %w", err)
	}
	if !isNull(cc.Error) {
		return nil, upstreamError(cc.Error)
	}
	if head.CreatedAt == 0 {
		head.CreatedAt = cc.Created
	}
	if head.Model == "" {
		head.Model = cc.Model
	}
	completed := time.Unix(head.CompletedAt, 0)
	r := NewResponsesStream(head, func() time.Time { return completed })
	stop := ""
	for _, choice := range cc.Choices {
		if choice.Index != 0 {
			continue
		}
		m := choice.Message
		parts, err := chatContent(m.Content)
		if err != nil {
			return nil, fmt.Errorf("bridge: upstream chat completion: message %w", err)
		}
		var text strings.Builder
		for _, p := range parts {
			text.WriteString(p.Text)
		}
		if text.Len() > 0 || m.Refusal == "" && len(m.ToolCalls) == 0 {
			r.text(nil, false, text.String()) // an empty answer is still an (empty) message
		}
		if m.Refusal != "" {
			r.text(nil, true, m.Refusal)
		}
		for i, tc := range m.ToolCalls {
			if tc.Type == "function" || tc.Type == "" {
				r.toolCall(nil, &i, tc.ID, tc.Function.Name, tc.Function.Arguments)
			}
		}
		stop = string(choice.FinishReason)
	}
	status, reason := finishToStatus(stop)
	for _, it := range r.items {
		it.status = status
	}
	var usage chatUsage
	if decodeUsage(cc.Usage, &usage) {
		r.usage = &usage
	}
	return mustJSON(r.response(status, nil, reason)), nil
}
