package bridge

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
)

// upstreamEvent is one Responses stream event as an upstream sends it.
type upstreamEvent struct{ name, data string }

// toolTurn is a realistic Responses stream: reasoning, text, then two function calls.
var toolTurn = []upstreamEvent{
	{"response.created", `{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","output":[]}}`},
	{"response.in_progress", `{"type":"response.in_progress","sequence_number":1,"response":{"id":"resp_1","object":"response","status":"in_progress","output":[]}}`},
	{"response.output_item.added", `{"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[]}}`},
	{"response.reasoning_summary_text.delta", `{"type":"response.reasoning_summary_text.delta","sequence_number":3,"item_id":"rs_1","output_index":0,"summary_index":0,"delta":"Thinking"}`},
	{"response.output_item.done", `{"type":"response.output_item.done","sequence_number":4,"output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"Thinking"}]}}`},
	{"response.output_item.added", `{"type":"response.output_item.added","sequence_number":5,"output_index":1,"item":{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}}`},
	{"response.content_part.added", `{"type":"response.content_part.added","sequence_number":6,"item_id":"msg_1","output_index":1,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}}`},
	{"response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":7,"item_id":"msg_1","output_index":1,"content_index":0,"delta":"Hello"}`},
	{"response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":8,"item_id":"msg_1","output_index":1,"content_index":0,"delta":" world"}`},
	{"response.output_text.done", `{"type":"response.output_text.done","sequence_number":9,"item_id":"msg_1","output_index":1,"content_index":0,"text":"Hello world"}`},
	{"response.content_part.done", `{"type":"response.content_part.done","sequence_number":10,"item_id":"msg_1","output_index":1,"content_index":0,"part":{"type":"output_text","text":"Hello world","annotations":[]}}`},
	{"response.output_item.done", `{"type":"response.output_item.done","sequence_number":11,"output_index":1,"item":{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hello world","annotations":[]}]}}`},
	{"response.output_item.added", `{"type":"response.output_item.added","sequence_number":12,"output_index":2,"item":{"id":"fc_1","type":"function_call","status":"in_progress","call_id":"call_1","name":"lookup","arguments":""}}`},
	{"response.function_call_arguments.delta", `{"type":"response.function_call_arguments.delta","sequence_number":13,"item_id":"fc_1","output_index":2,"delta":"{\"q\":"}`},
	{"response.function_call_arguments.delta", `{"type":"response.function_call_arguments.delta","sequence_number":14,"item_id":"fc_1","output_index":2,"delta":"\"cat\"}"}`},
	{"response.function_call_arguments.done", `{"type":"response.function_call_arguments.done","sequence_number":15,"item_id":"fc_1","output_index":2,"arguments":"{\"q\":\"cat\"}"}`},
	{"response.output_item.done", `{"type":"response.output_item.done","sequence_number":16,"output_index":2,"item":{"id":"fc_1","type":"function_call","status":"completed","call_id":"call_1","name":"lookup","arguments":"{\"q\":\"cat\"}"}}`},
	{"response.output_item.added", `{"type":"response.output_item.added","sequence_number":17,"output_index":3,"item":{"id":"fc_2","type":"function_call","status":"in_progress","call_id":"call_2","name":"weather","arguments":""}}`},
	{"response.function_call_arguments.delta", `{"type":"response.function_call_arguments.delta","sequence_number":18,"item_id":"fc_2","output_index":3,"delta":"{}"}`},
	{"response.output_item.done", `{"type":"response.output_item.done","sequence_number":19,"output_index":3,"item":{"id":"fc_2","type":"function_call","status":"completed","call_id":"call_2","name":"weather","arguments":"{}"}}`},
	{"response.completed", `{"type":"response.completed","sequence_number":20,"response":{"id":"resp_1","object":"response","status":"completed","output":[
		{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"Thinking"}]},
		{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hello world","annotations":[]}]},
		{"id":"fc_1","type":"function_call","status":"completed","call_id":"call_1","name":"lookup","arguments":"{\"q\":\"cat\"}"},
		{"id":"fc_2","type":"function_call","status":"completed","call_id":"call_2","name":"weather","arguments":"{}"}],
		"usage":{"input_tokens":100,"input_tokens_details":{"cached_tokens":40},"output_tokens":50,"output_tokens_details":{"reasoning_tokens":20},"total_tokens":150}}}`},
}

// chunkOf wraps choices (and usage) in the envelope every chunk of the test streams has.
func chunkOf(choices string, usage ...string) string {
	s := `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"client-model","choices":` + choices
	if len(usage) > 0 {
		s += `,"usage":` + usage[0]
	}
	return s + "}"
}

// runChatStream feeds events to a new ChatStream and returns all chunks, whether it finished,
// and the last error.
func runChatStream(t *testing.T, includeUsage bool, events []upstreamEvent) ([][]byte, bool, error) {
	t.Helper()
	c := NewChatStream("client-model", includeUsage, 1700000000, "chatcmpl-1")
	var all [][]byte
	var done bool
	var lastErr error
	for _, ev := range events {
		chunks, d, err := c.Event(ev.name, []byte(ev.data))
		all = append(all, chunks...)
		done = d
		if err != nil {
			lastErr = err
		}
	}
	return all, done, lastErr
}

func assertChunks(t *testing.T, got [][]byte, want []string) {
	t.Helper()
	if len(got) != len(want) {
		for _, g := range got {
			t.Logf("got chunk: %s", g)
		}
		t.Fatalf("got %d chunks, want %d", len(got), len(want))
	}
	for i := range want {
		assertJSONEqual(t, "chunk "+strconv.Itoa(i), got[i], []byte(want[i]))
	}
}

func TestChatStreamGoldenTools(t *testing.T) {
	got, done, err := runChatStream(t, true, toolTurn)
	if err != nil || !done {
		t.Fatalf("done = %v, err = %v", done, err)
	}
	assertChunks(t, got, []string{
		chunkOf(`[{"index":0,"delta":{"role":"assistant","reasoning_content":"Thinking"},"finish_reason":null}]`),
		chunkOf(`[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]`),
		chunkOf(`[{"index":0,"delta":{"content":" world"},"finish_reason":null}]`),
		chunkOf(`[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"lookup","arguments":""}}]},"finish_reason":null}]`),
		chunkOf(`[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"q\":"}}]},"finish_reason":null}]`),
		chunkOf(`[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"cat\"}"}}]},"finish_reason":null}]`),
		chunkOf(`[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_2","type":"function","function":{"name":"weather","arguments":""}}]},"finish_reason":null}]`),
		chunkOf(`[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{}"}}]},"finish_reason":null}]`),
		chunkOf(`[{"index":0,"delta":{},"finish_reason":"tool_calls"}]`),
		chunkOf(`[]`, `{"prompt_tokens":100,"completion_tokens":50,"total_tokens":150,
			"prompt_tokens_details":{"cached_tokens":40},"completion_tokens_details":{"reasoning_tokens":20}}`),
	})
}

func TestChatStreamGoldenTextLength(t *testing.T) {
	// Text only, cut by max_output_tokens; no usage chunk unless asked; the SSE name may be
	// missing (the type in data is used); unknown events are ignored.
	events := []upstreamEvent{
		{"response.created", `{"type":"response.created","response":{"id":"r"}}`},
		{"", `{"type":"response.output_text.delta","output_index":0,"delta":"Once upon"}`},
		{"response.something_new", `{"type":"response.something_new","delta":{"not":"a string"}}`},
		{"response.output_text.delta", `{"type":"response.output_text.delta","output_index":0,"delta":" a time"}`},
		{"response.incomplete", `{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},
			"output":[{"type":"message","content":[{"type":"output_text","text":"Once upon a time"}]}],
			"usage":{"input_tokens":5,"output_tokens":16,"total_tokens":21}}}`},
		{"response.output_text.delta", `{"type":"response.output_text.delta","output_index":0,"delta":"ignored after the end"}`},
	}
	got, done, err := runChatStream(t, false, events)
	if err != nil || !done {
		t.Fatalf("done = %v, err = %v", done, err)
	}
	assertChunks(t, got, []string{
		chunkOf(`[{"index":0,"delta":{"role":"assistant","content":"Once upon"},"finish_reason":null}]`),
		chunkOf(`[{"index":0,"delta":{"content":" a time"},"finish_reason":null}]`),
		chunkOf(`[{"index":0,"delta":{},"finish_reason":"length"}]`),
	})
}

func TestChatStreamCatchUp(t *testing.T) {
	// An upstream that sends whole items only: a function call's output_item.done without
	// added or deltas, and a message that only the final response carries.
	events := []upstreamEvent{
		{"response.output_item.done", `{"type":"response.output_item.done","output_index":0,"item":{"type":"function_call","call_id":"call_9","name":"f","arguments":"{\"a\":1}"}}`},
		{"response.output_item.added", `{"type":"response.output_item.added","output_index":1,"item":{"type":"function_call","call_id":"call_10","name":"g","arguments":""}}`},
		{"response.function_call_arguments.done", `{"type":"response.function_call_arguments.done","output_index":1,"arguments":"{}"}`},
		{"response.function_call_arguments.delta", `{"type":"response.function_call_arguments.delta","output_index":7,"delta":"unknown item: skipped"}`},
		{"response.completed", `{"type":"response.completed","response":{"status":"completed","output":[
			{"type":"function_call","call_id":"call_9","name":"f","arguments":"{\"a\":1}"},
			{"type":"function_call","call_id":"call_10","name":"g","arguments":"{}"},
			{"type":"message","content":[{"type":"output_text","text":"Done."}]}]}}`},
	}
	got, done, err := runChatStream(t, true, events)
	if err != nil || !done {
		t.Fatalf("done = %v, err = %v", done, err)
	}
	assertChunks(t, got, []string{
		chunkOf(`[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_9","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},"finish_reason":null}]`),
		chunkOf(`[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_10","type":"function","function":{"name":"g","arguments":""}}]},"finish_reason":null}]`),
		chunkOf(`[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{}"}}]},"finish_reason":null}]`),
		chunkOf(`[{"index":0,"delta":{"content":"Done."},"finish_reason":null}]`),
		chunkOf(`[{"index":0,"delta":{},"finish_reason":"tool_calls"}]`),
	})
}

func TestChatStreamFailures(t *testing.T) {
	tests := []struct {
		name          string
		events        []upstreamEvent
		code, message string
	}{{
		name: "response.failed",
		events: []upstreamEvent{
			{"response.output_text.delta", `{"type":"response.output_text.delta","output_index":0,"delta":"Hi"}`},
			{"response.failed", `{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"boom"},"output":[]}}`},
		},
		code: "server_error", message: "boom",
	}, {
		name:   "error event",
		events: []upstreamEvent{{"error", `{"type":"error","code":"rate_limit_exceeded","message":"slow down","param":null}`}},
		code:   "rate_limit_exceeded", message: "slow down",
	}, {
		name:   "error event with a nested error",
		events: []upstreamEvent{{"error", `{"type":"error","error":{"type":"invalid_request_error","code":null,"message":"bad"}}`}},
		code:   "invalid_request_error", message: "bad",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, done, err := runChatStream(t, true, tt.events)
			if !done {
				t.Fatal("not done after the failure")
			}
			var ue *UpstreamError
			if !errors.As(err, &ue) || ue.Code != tt.code || ue.Message != tt.message {
				t.Fatalf("err = %#v, want code %q message %q", err, tt.code, tt.message)
			}
			last := got[len(got)-1]
			want := chunkOf(`[{"index":0,"delta":{"role":"assistant"},"finish_reason":"stop"}]`)
			if len(got) == 2 {
				want = chunkOf(`[{"index":0,"delta":{},"finish_reason":"stop"}]`)
			}
			assertJSONEqual(t, "final chunk", last, []byte(want))
		})
	}
}

func TestChatStreamMalformed(t *testing.T) {
	c := NewChatStream("m", false, 1, "id")
	chunks, done, err := c.Event("response.output_text.delta", []byte(`{"delta":`))
	if err == nil || done || len(chunks) != 0 {
		t.Fatalf("malformed event: chunks %q, done %v, err %v", chunks, done, err)
	}
	// The stream goes on.
	chunks, _, err = c.Event("response.output_text.delta", []byte(`{"delta":"ok"}`))
	if err != nil || len(chunks) != 1 || !strings.Contains(string(chunks[0]), `"ok"`) {
		t.Fatalf("after a malformed event: chunks %q, err %v", chunks, err)
	}
}

// TestChatStreamSDK checks that the official SDK reads the produced chunks: each one
// unmarshals into openai.ChatCompletionChunk and the accumulator rebuilds the whole answer.
func TestChatStreamSDK(t *testing.T) {
	got, _, err := runChatStream(t, true, toolTurn)
	if err != nil {
		t.Fatal(err)
	}
	var acc openai.ChatCompletionAccumulator
	for i, raw := range got {
		var chunk openai.ChatCompletionChunk
		if err := json.Unmarshal(raw, &chunk); err != nil {
			t.Fatalf("chunk %d: %v", i, err)
		}
		if chunk.ID != "chatcmpl-1" || chunk.Model != "client-model" || chunk.Created != 1700000000 || chunk.Object != "chat.completion.chunk" {
			t.Fatalf("chunk %d envelope: %s", i, raw)
		}
		if !acc.AddChunk(chunk) {
			t.Fatalf("accumulator rejected chunk %d: %s", i, raw)
		}
	}
	if len(acc.Choices) != 1 {
		t.Fatalf("choices: %d", len(acc.Choices))
	}
	msg := acc.Choices[0].Message
	if msg.Content != "Hello world" {
		t.Errorf("content = %q", msg.Content)
	}
	if acc.Choices[0].FinishReason != "tool_calls" {
		t.Errorf("finish_reason = %q", acc.Choices[0].FinishReason)
	}
	if len(msg.ToolCalls) != 2 {
		t.Fatalf("tool calls: %+v", msg.ToolCalls)
	}
	for i, want := range []struct{ id, name, args string }{{"call_1", "lookup", `{"q":"cat"}`}, {"call_2", "weather", "{}"}} {
		tc := msg.ToolCalls[i]
		if tc.ID != want.id || tc.Function.Name != want.name || tc.Function.Arguments != want.args {
			t.Errorf("tool call %d = %s %s %s, want %v", i, tc.ID, tc.Function.Name, tc.Function.Arguments, want)
		}
	}
	u := acc.Usage
	if u.PromptTokens != 100 || u.CompletionTokens != 50 || u.TotalTokens != 150 ||
		u.PromptTokensDetails.CachedTokens != 40 || u.CompletionTokensDetails.ReasoningTokens != 20 {
		t.Errorf("usage = %+v", u)
	}
}

// FuzzChatStream feeds arbitrary events (name and data separated by a newline, events by a NUL
// byte) and checks that the stream never panics and every chunk is a valid JSON object of the
// right shape.
func FuzzChatStream(f *testing.F) {
	var seed strings.Builder
	for _, ev := range toolTurn {
		seed.WriteString(ev.name + "\n" + ev.data + "\x00")
	}
	f.Add(seed.String())
	f.Add("response.output_item.done\n{\"output_index\":3,\"item\":{\"type\":\"message\",\"content\":[{\"type\":\"refusal\",\"refusal\":\"no\"}]}}\x00response.failed\n{\"response\":{\"error\":\"x\"}}")
	f.Add("\n{\"type\":\"error\",\"code\":5}\x00error\n[]")
	f.Fuzz(func(t *testing.T, input string) {
		c := NewChatStream("m", true, 1, "id")
		for _, ev := range strings.Split(input, "\x00") {
			name, data, _ := strings.Cut(ev, "\n")
			chunks, _, _ := c.Event(name, []byte(data))
			for _, chunk := range chunks {
				var v struct {
					Object  string            `json:"object"`
					Choices []json.RawMessage `json:"choices"`
				}
				if err := json.Unmarshal(chunk, &v); err != nil || v.Object != "chat.completion.chunk" || v.Choices == nil {
					t.Fatalf("bad chunk %q: %v", chunk, err)
				}
			}
		}
	})
}
