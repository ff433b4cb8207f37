package bridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// finalResponse is a Responses answer with reasoning, text and two function calls.
const finalResponse = `{
	"id": "resp_1", "object": "response", "created_at": 1700000000, "status": "completed", "model": "gpt-5",
	"error": null, "incomplete_details": null,
	"output": [
		{"id": "rs_1", "type": "reasoning", "summary": [{"type": "summary_text", "text": "Plan"}, {"type": "summary_text", "text": "Act"}]},
		{"id": "msg_1", "type": "message", "status": "completed", "role": "assistant",
			"content": [{"type": "output_text", "text": "Hello <world>", "annotations": []}]},
		{"id": "fc_1", "type": "function_call", "status": "completed", "call_id": "call_1", "name": "lookup", "arguments": "{\"q\":\"cat\"}"},
		{"id": "fc_2", "type": "function_call", "status": "completed", "call_id": "call_2", "name": "weather", "arguments": "{}"}
	],
	"usage": {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 40}, "output_tokens": 50,
		"output_tokens_details": {"reasoning_tokens": 20}, "total_tokens": 150}
}`

func TestResponseToChatCompletionGolden(t *testing.T) {
	got, err := ResponseToChatCompletion([]byte(finalResponse), "client-model")
	if err != nil {
		t.Fatal(err)
	}
	want := `{
	"id": "resp_1", "object": "chat.completion", "created": 1700000000, "model": "client-model",
	"choices": [{"index": 0, "logprobs": null, "finish_reason": "tool_calls", "message": {
		"role": "assistant", "content": "Hello <world>", "refusal": null, "reasoning_content": "Plan\n\nAct",
		"tool_calls": [
			{"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{\"q\":\"cat\"}"}},
			{"id": "call_2", "type": "function", "function": {"name": "weather", "arguments": "{}"}}
		]}}],
	"usage": {"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150,
		"prompt_tokens_details": {"cached_tokens": 40}, "completion_tokens_details": {"reasoning_tokens": 20}}
}`
	assertJSONEqual(t, "chat completion", got, []byte(want))
	if !bytes.Contains(got, []byte("Hello <world>")) {
		t.Errorf("text is escaped: %s", got) // "<" must not become "\u003c"
	}

	// The SDK reads it.
	var cc openai.ChatCompletion
	if err := json.Unmarshal(got, &cc); err != nil {
		t.Fatal(err)
	}
	msg := cc.Choices[0].Message
	if msg.Content != "Hello <world>" || len(msg.ToolCalls) != 2 || msg.ToolCalls[1].Function.Name != "weather" ||
		cc.Choices[0].FinishReason != "tool_calls" || cc.Usage.PromptTokensDetails.CachedTokens != 40 {
		t.Errorf("SDK view: %+v", cc)
	}
}

func TestResponseToChatCompletionCases(t *testing.T) {
	// Cut by the token limit: finish_reason length, upstream model kept when none is given.
	got, err := ResponseToChatCompletion([]byte(`{"id":"r","created_at":5,"model":"up","status":"incomplete",
		"incomplete_details":{"reason":"max_output_tokens"},"output":[{"type":"message","content":[{"type":"output_text","text":"Once"}]}]}`), "")
	if err != nil {
		t.Fatal(err)
	}
	assertJSONEqual(t, "incomplete", got, []byte(`{"id":"r","object":"chat.completion","created":5,"model":"up",
		"choices":[{"index":0,"logprobs":null,"finish_reason":"length","message":{"role":"assistant","content":"Once","refusal":null}}]}`))

	// Tool calls only: content null.
	got, err = ResponseToChatCompletion([]byte(`{"id":"r","status":"completed","output":[{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}]}`), "m")
	if err != nil {
		t.Fatal(err)
	}
	assertJSONEqual(t, "tool calls only", got, []byte(`{"id":"r","object":"chat.completion","created":0,"model":"m",
		"choices":[{"index":0,"logprobs":null,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"refusal":null,
		"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}}]}`))

	// Failures.
	for _, body := range []string{
		`{"id":"r","status":"failed","error":{"code":"server_error","message":"boom"}}`,
		`{"error":{"type":"server_error","message":"boom","code":null}}`,
	} {
		_, err := ResponseToChatCompletion([]byte(body), "m")
		var ue *UpstreamError
		if !errors.As(err, &ue) || ue.Code != "server_error" || ue.Message != "boom" {
			t.Errorf("%s: err = %#v", body, err)
		}
	}
	if _, err := ResponseToChatCompletion([]byte(`{"output":`), "m"); err == nil {
		t.Error("malformed body accepted")
	}
}

// chatCompletion is a chat answer with text and two tool calls.
const chatCompletion = `{
	"id": "chatcmpl-9", "object": "chat.completion", "created": 1, "model": "gpt-4o",
	"choices": [{"index": 0, "finish_reason": "tool_calls", "logprobs": null, "message": {
		"role": "assistant", "content": "Let me check.", "refusal": null,
		"tool_calls": [
			{"id": "call_a", "type": "function", "function": {"name": "lookup", "arguments": "{\"q\":\"cat\"}"}},
			{"id": "call_b", "type": "function", "function": {"name": "weather", "arguments": "{}"}}
		]}}],
	"usage": {"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150,
		"prompt_tokens_details": {"cached_tokens": 40}, "completion_tokens_details": {"reasoning_tokens": 20}}
}`

func TestChatCompletionToResponseGolden(t *testing.T) {
	got, err := ChatCompletionToResponse([]byte(chatCompletion), Response{ID: "resp_abc", CreatedAt: 1700000000, CompletedAt: 1700000005})
	if err != nil {
		t.Fatal(err)
	}
	usage := `{"input_tokens":100,"input_tokens_details":{"cached_tokens":40},"output_tokens":50,"output_tokens_details":{"reasoning_tokens":20},"total_tokens":150}`
	want := responseWith("resp_abc", "gpt-4o", 1700000000, "completed", "1700000005",
		"["+msgDone+","+callADone+","+callBDone+"]", usage, defaultEcho)
	assertJSONEqual(t, "response", got, []byte(want))

	// The same answer streamed gives the same final response (but the model, which the stream
	// takes from the client).
	events := runResponsesStream(t, chatChunks)
	var streamed struct {
		Response json.RawMessage `json:"response"`
	}
	json.Unmarshal(events[len(events)-1].Data, &streamed)
	assertJSONEqual(t, "streamed response", streamed.Response, []byte(strings.Replace(want, `"gpt-4o"`, `"client-model"`, 1)))

	// The SDK reads it.
	var resp responses.Response
	if err := json.Unmarshal(got, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.OutputText() != "Let me check." || len(resp.Output) != 3 || resp.Output[2].AsFunctionCall().Name != "weather" ||
		resp.Usage.InputTokensDetails.CachedTokens != 40 || resp.Status != "completed" {
		t.Errorf("SDK view: %s", resp.RawJSON())
	}
}

func TestChatCompletionToResponseCases(t *testing.T) {
	// Cut by the token limit, content as parts, created taken from the upstream, no usage.
	got, err := ChatCompletionToResponse([]byte(`{"created":7,"model":"m","choices":[{"index":0,"finish_reason":"length",
		"message":{"role":"assistant","content":[{"type":"text","text":"Once"},{"type":"text","text":" upon"}]}}]}`), Response{ID: "resp_x", CompletedAt: 9})
	if err != nil {
		t.Fatal(err)
	}
	assertJSONEqual(t, "incomplete", got, []byte(strings.Replace(responseWith("resp_x", "m", 7, "incomplete", "null",
		`[{"id":"msg_x_0","type":"message","status":"incomplete","role":"assistant","content":[{"type":"output_text","text":"Once upon","annotations":[],"logprobs":[]}]}]`,
		"null", defaultEcho), `"incomplete_details":null`, `"incomplete_details":{"reason":"max_output_tokens"}`, 1)))

	// An empty answer is an empty message; a refusal is a refusal part.
	got, err = ChatCompletionToResponse([]byte(`{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":null,"refusal":"No."}}]}`),
		Response{ID: "resp_y", CreatedAt: 1, CompletedAt: 2})
	if err != nil {
		t.Fatal(err)
	}
	assertJSONEqual(t, "refusal", got, []byte(responseWith("resp_y", "", 1, "completed", "2",
		`[{"id":"msg_y_0","type":"message","status":"completed","role":"assistant","content":[{"type":"refusal","refusal":"No."}]}]`,
		"null", defaultEcho)))

	_, err = ChatCompletionToResponse([]byte(`{"error":{"message":"quota","type":"insufficient_quota","code":"insufficient_quota"}}`), Response{ID: "r"})
	var ue *UpstreamError
	if !errors.As(err, &ue) || ue.Code != "insufficient_quota" || ue.Message != "quota" {
		t.Errorf("error body: err = %#v", err)
	}
	if _, err := ChatCompletionToResponse([]byte(`nope`), Response{ID: "r"}); err == nil {
		t.Error("malformed body accepted")
	}
}
