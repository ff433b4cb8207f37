package testkit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// ResponseMembers are the members of a Response object in the order the OpenAI API writes them:
// the 31 of the OpenResponses schema's ResponseResource (all required but metadata).
var ResponseMembers = []string{
	"id", "object", "created_at", "status", "background", "completed_at", "error", "frequency_penalty",
	"incomplete_details", "instructions", "max_output_tokens", "max_tool_calls", "model", "output",
	"parallel_tool_calls", "presence_penalty", "previous_response_id", "prompt_cache_key", "reasoning",
	"safety_identifier", "service_tier", "store", "temperature", "text", "tool_choice", "tools",
	"top_logprobs", "top_p", "truncation", "usage", "metadata",
}

// responseTypes is the JSON type each member may have (a "|" list of string, integer, number,
// boolean, object, array, null).
var responseTypes = map[string]string{
	"id": "string", "object": "string", "created_at": "integer", "status": "string",
	"background": "boolean", "completed_at": "integer|null", "error": "object|null",
	"frequency_penalty": "number", "incomplete_details": "object|null", "instructions": "string|array|null",
	"max_output_tokens": "integer|null", "max_tool_calls": "integer|null", "model": "string", "output": "array",
	"parallel_tool_calls": "boolean", "presence_penalty": "number", "previous_response_id": "string|null",
	"prompt_cache_key": "string|null", "reasoning": "object|null", "safety_identifier": "string|null",
	"service_tier": "string", "store": "boolean", "temperature": "number", "text": "object",
	"tool_choice": "string|object", "tools": "array", "top_logprobs": "integer", "top_p": "number",
	"truncation": "string", "usage": "object|null", "metadata": "object",
}

// CheckResponse returns why obj is not a whole Response object, or nil: exactly the members of
// ResponseMembers (metadata may be absent), in that order, each of its JSON type, with the
// values that depend on each other consistent (object "response", completed_at set exactly when
// the status is completed, an error exactly when it failed, incomplete_details.reason a string,
// the text's format typed, the usage's counts integers).
func CheckResponse(obj []byte) error {
	keys, values, err := members(obj)
	if err != nil {
		return err
	}
	want := ResponseMembers
	if !slices.Contains(keys, "metadata") {
		want = want[:len(want)-1]
	}
	if !slices.Equal(keys, want) {
		return fmt.Errorf("members %v, want %v", keys, want)
	}
	for _, k := range keys {
		allowed := strings.Split(responseTypes[k], "|")
		t := jsonType(values[k])
		if !slices.Contains(allowed, t) && (t != "integer" || !slices.Contains(allowed, "number")) {
			return fmt.Errorf("%s is %s (%s), want %s", k, t, values[k], responseTypes[k])
		}
	}
	var r struct {
		Object            string `json:"object"`
		Status            string `json:"status"`
		CompletedAt       *int64 `json:"completed_at"`
		Error             *struct{ Code, Message *string }
		IncompleteDetails *struct{ Reason *string } `json:"incomplete_details"`
		Output            []json.RawMessage
		Text              struct {
			Format *struct{ Type string }
		}
		Truncation string
		Usage      *struct {
			InputTokens        *int64 `json:"input_tokens"`
			OutputTokens       *int64 `json:"output_tokens"`
			TotalTokens        *int64 `json:"total_tokens"`
			InputTokensDetails *struct {
				CachedTokens *int64 `json:"cached_tokens"`
			} `json:"input_tokens_details"`
			OutputTokensDetails *struct {
				ReasoningTokens *int64 `json:"reasoning_tokens"`
			} `json:"output_tokens_details"`
		}
	}
	if err := json.Unmarshal(obj, &r); err != nil {
		return err
	}
	switch {
	case r.Object != "response":
		return fmt.Errorf("object is %q", r.Object)
	case !slices.Contains([]string{"in_progress", "completed", "incomplete", "failed", "cancelled", "queued"}, r.Status):
		return fmt.Errorf("status %q", r.Status)
	case (r.CompletedAt != nil) != (r.Status == "completed"):
		return fmt.Errorf("completed_at %v for status %s", values["completed_at"], r.Status)
	case (r.Error != nil) != (r.Status == "failed"):
		return fmt.Errorf("error %s for status %s", values["error"], r.Status)
	case r.Error != nil && (r.Error.Code == nil || r.Error.Message == nil):
		return fmt.Errorf("error %s has no code or message", values["error"])
	case r.IncompleteDetails != nil && r.IncompleteDetails.Reason == nil:
		return fmt.Errorf("incomplete_details %s has no reason", values["incomplete_details"])
	case r.Text.Format == nil || r.Text.Format.Type == "":
		return fmt.Errorf("text %s has no format type", values["text"])
	case r.Truncation != "auto" && r.Truncation != "disabled":
		return fmt.Errorf("truncation %q", r.Truncation)
	case r.Usage != nil && (r.Usage.InputTokens == nil || r.Usage.OutputTokens == nil || r.Usage.TotalTokens == nil ||
		r.Usage.InputTokensDetails == nil || r.Usage.InputTokensDetails.CachedTokens == nil ||
		r.Usage.OutputTokensDetails == nil || r.Usage.OutputTokensDetails.ReasoningTokens == nil):
		return fmt.Errorf("usage %s lacks a count", values["usage"])
	}
	for i, it := range r.Output {
		if jsonType(it) != "object" {
			return fmt.Errorf("output[%d] is %s", i, jsonType(it))
		}
	}
	return nil
}

// CheckResponseEvents checks the response each lifecycle event of a Responses stream carries
// (events given as their data: response.created, response.in_progress, response.completed,
// response.incomplete, response.failed); it returns how many it checked.
func CheckResponseEvents(events [][]byte) (int, error) {
	n := 0
	for i, data := range events {
		var ev struct {
			Type     string          `json:"type"`
			Response json.RawMessage `json:"response"`
		}
		if err := json.Unmarshal(data, &ev); err != nil {
			return n, fmt.Errorf("event %d: %v", i, err)
		}
		switch ev.Type {
		case "response.created", "response.in_progress", "response.completed", "response.incomplete", "response.failed":
			if err := CheckResponse(ev.Response); err != nil {
				return n, fmt.Errorf("event %d (%s): %v", i, ev.Type, err)
			}
			n++
		}
	}
	return n, nil
}

// members decodes a JSON object's member names, in order, and raw values.
func members(obj []byte) ([]string, map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, nil, fmt.Errorf("not a JSON object: %.80s", obj)
	}
	var keys []string
	values := map[string]json.RawMessage{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		k := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		if _, dup := values[k]; dup {
			return nil, nil, fmt.Errorf("member %s twice", k)
		}
		keys = append(keys, k)
		values[k] = v
	}
	return keys, values, nil
}

// jsonType is the JSON type of a value: string, integer, number (with a fraction or exponent),
// boolean, object, array or null.
func jsonType(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "absent"
	}
	switch v[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	if bytes.ContainsAny(v, ".eE") {
		return "number"
	}
	return "integer"
}
