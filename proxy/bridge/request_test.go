package bridge

import (
	"errors"
	"strings"
	"testing"
)

func TestChatToResponsesRequestGolden(t *testing.T) {
	chat := `{
	"model": "gpt-4.1",
	"messages": [
		{"role": "system", "content": "You are terse."},
		{"role": "developer", "content": [{"type": "text", "text": "Use tools."}]},
		{"role": "user", "content": [
			{"type": "text", "text": "What is in this image?"},
			{"type": "image_url", "image_url": {"url": "https://example.com/cat.png", "detail": "low"}}
		]},
		{"role": "assistant", "content": "Let me check.", "tool_calls": [
			{"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{\"q\":\"cat\"}"}},
			{"id": "call_2", "type": "function", "function": {"name": "weather", "arguments": "{}"}}
		]},
		{"role": "tool", "tool_call_id": "call_1", "content": "a cat"},
		{"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "sunny"}]},
		{"role": "system", "content": "Answer in French."},
		{"role": "user", "content": "Summarise."}
	],
	"tools": [
		{"type": "function", "function": {"name": "lookup", "description": "Look up",
			"parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}},
		{"type": "function", "function": {"name": "weather", "parameters": {"type": "object", "properties": {}}, "strict": true}},
		{"type": "custom", "custom": {"name": "apply_patch"}}
	],
	"tool_choice": {"type": "function", "function": {"name": "lookup"}},
	"response_format": {"type": "json_schema", "json_schema": {"name": "answer", "schema": {"type": "object"}, "strict": true}},
	"reasoning_effort": "low",
	"max_tokens": 100,
	"max_completion_tokens": 200,
	"temperature": 0.5, "top_p": 0.9, "user": "u1", "metadata": {"k": "v"},
	"parallel_tool_calls": false, "stream": true, "stream_options": {"include_usage": true},
	"stop": ["\n"], "n": 1, "seed": 7, "logit_bias": null
}`
	want := `{
	"model": "gpt-4.1",
	"instructions": "You are terse.\n\nUse tools.",
	"input": [
		{"type": "message", "role": "user", "content": [
			{"type": "input_text", "text": "What is in this image?"},
			{"type": "input_image", "image_url": "https://example.com/cat.png", "detail": "low"}
		]},
		{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Let me check."}]},
		{"type": "function_call", "call_id": "call_1", "name": "lookup", "arguments": "{\"q\":\"cat\"}"},
		{"type": "function_call", "call_id": "call_2", "name": "weather", "arguments": "{}"},
		{"type": "function_call_output", "call_id": "call_1", "output": "a cat"},
		{"type": "function_call_output", "call_id": "call_2", "output": "sunny"},
		{"type": "message", "role": "system", "content": [{"type": "input_text", "text": "Answer in French."}]},
		{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Summarise."}]}
	],
	"tools": [
		{"type": "function", "name": "lookup", "description": "Look up",
			"parameters": {"type": "object", "properties": {"q": {"type": "string"}}}, "strict": false},
		{"type": "function", "name": "weather", "parameters": {"type": "object", "properties": {}}, "strict": true}
	],
	"tool_choice": {"type": "function", "name": "lookup"},
	"text": {"format": {"type": "json_schema", "name": "answer", "schema": {"type": "object"}, "strict": true}},
	"reasoning": {"effort": "low"},
	"max_output_tokens": 200,
	"temperature": 0.5, "top_p": 0.9, "user": "u1", "metadata": {"k": "v"},
	"parallel_tool_calls": false, "stream": true
}`
	got, dropped, err := ChatToResponsesRequest([]byte(chat))
	if err != nil {
		t.Fatal(err)
	}
	assertJSONEqual(t, "request", got, []byte(want))
	assertDropped(t, dropped, []string{"param:seed", "param:stop", "tool:custom apply_patch"})
}

func TestChatToResponsesRequestCases(t *testing.T) {
	tests := []struct {
		name, chat, want string
		dropped          []string
	}{{
		name: "system only stays a message; tiny max_tokens raised; tool_choice without tools removed",
		chat: `{"model":"m","messages":[{"role":"system","content":"ping"}],"max_tokens":1,"tool_choice":"auto","parallel_tool_calls":true}`,
		want: `{"model":"m","input":[{"type":"message","role":"system","content":[{"type":"input_text","text":"ping"}]}],"max_output_tokens":16}`,
	}, {
		name: "json_object format, verbosity, file part, audio dropped, image as bare string",
		chat: `{"messages":[{"role":"user","content":[{"type":"file","file":{"file_id":"file-1"}},{"type":"input_audio","input_audio":{}},{"type":"image_url","image_url":"https://x/y.png"}]}],
			"response_format":{"type":"json_object"},"verbosity":"low"}`,
		want: `{"input":[{"type":"message","role":"user","content":[{"type":"input_file","file_id":"file-1"},{"type":"input_image","image_url":"https://x/y.png","detail":"auto"}]}],
			"text":{"format":{"type":"json_object"},"verbosity":"low"}}`,
		dropped: []string{"content:input_audio in user message"},
	}, {
		name: "custom tool call history, refusal, legacy function message, function without parameters",
		chat: `{"messages":[{"role":"user","content":"patch it"},
			{"role":"assistant","content":null,"refusal":"no","tool_calls":[{"id":"c1","type":"custom","custom":{"name":"apply_patch","input":"*** Begin"}}]},
			{"role":"tool","tool_call_id":"c1","content":"ok"},
			{"role":"function","name":"f","content":"x"}],
			"tools":[{"type":"function","function":{"name":"noargs"}}],"tool_choice":"required"}`,
		want: `{"input":[
			{"type":"message","role":"user","content":[{"type":"input_text","text":"patch it"}]},
			{"type":"message","role":"assistant","content":[{"type":"refusal","refusal":"no"}]},
			{"type":"custom_tool_call","call_id":"c1","name":"apply_patch","input":"*** Begin"},
			{"type":"custom_tool_call_output","call_id":"c1","output":"ok"}],
			"tools":[{"type":"function","name":"noargs","parameters":{"type":"object","properties":{}},"strict":false}],
			"tool_choice":"required"}`,
		dropped: []string{"message:function"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, dropped, err := ChatToResponsesRequest([]byte(tt.chat))
			if err != nil {
				t.Fatal(err)
			}
			assertJSONEqual(t, "request", got, []byte(tt.want))
			assertDropped(t, dropped, tt.dropped)
		})
	}
}

func TestChatToResponsesRequestErrors(t *testing.T) {
	tests := []struct {
		name, chat, want string
		nothingUsable    bool
	}{
		{"n > 1", `{"messages":[{"role":"user","content":"hi"}],"n":3}`, "n = 3", false},
		{"no messages", `{"model":"m"}`, "no messages", true},
		{"empty messages", `{"messages":[]}`, "no chat message", true},
		{"only untranslatable", `{"messages":[{"role":"function","content":"x"}]}`, "no chat message", true},
		{"not an object", `[1,2]`, "JSON object", false},
		{"bad content", `{"messages":[{"role":"user","content":5}]}`, "messages[0]", false},
		{"bad max_tokens", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":"many"}`, "max_tokens", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := ChatToResponsesRequest([]byte(tt.chat))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one containing %q", err, tt.want)
			}
			if errors.Is(err, ErrNothingUsable) != tt.nothingUsable {
				t.Errorf("errors.Is(err, ErrNothingUsable) = %v, want %v", !tt.nothingUsable, tt.nothingUsable)
			}
		})
	}
}

func TestResponsesToChatRequestGolden(t *testing.T) {
	// A Codex CLI turn, trimmed.
	resp := `{
	"model": "gpt-5-codex",
	"instructions": "You are Codex.",
	"input": [
		{"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "<permissions>"}]},
		{"type": "message", "role": "user", "content": [
			{"type": "input_text", "text": "Fix the bug"},
			{"type": "input_image", "image_url": "data:image/png;base64,AAA", "detail": "high"}
		]},
		{"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "xyz"},
		{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Looking."}]},
		{"type": "function_call", "call_id": "call_a", "name": "shell", "arguments": "{\"cmd\":\"ls\"}"},
		{"type": "function_call", "call_id": "call_b", "name": "shell", "arguments": "{\"cmd\":\"pwd\"}"},
		{"type": "function_call_output", "call_id": "call_a", "output": "main.go"},
		{"type": "function_call_output", "call_id": "call_b", "output": [{"type": "input_text", "text": "/work"}]},
		{"type": "custom_tool_call", "call_id": "call_c", "name": "apply_patch", "input": "*** Begin Patch"},
		{"type": "custom_tool_call_output", "call_id": "call_c", "output": "Done"},
		{"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search"}},
		{"role": "user", "content": "thanks"}
	],
	"tools": [
		{"type": "function", "name": "shell", "description": "Run",
			"parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}, "strict": false},
		{"type": "custom", "name": "apply_patch", "format": {"type": "grammar"}},
		{"type": "namespace", "name": "mcp__fs", "description": "fs", "tools": []},
		{"type": "web_search"}
	],
	"tool_choice": "auto",
	"parallel_tool_calls": true,
	"reasoning": {"effort": "high", "summary": "auto"},
	"store": false,
	"stream": true,
	"include": ["reasoning.encrypted_content"],
	"prompt_cache_key": "abc",
	"previous_response_id": null,
	"text": {"format": {"type": "json_schema", "name": "out", "schema": {"type": "object"}, "strict": true}, "verbosity": "low"},
	"max_output_tokens": 500,
	"temperature": 1, "top_p": 1
}`
	want := `{
	"model": "gpt-5-codex",
	"messages": [
		{"role": "system", "content": "You are Codex."},
		{"role": "system", "content": "<permissions>"},
		{"role": "user", "content": [
			{"type": "text", "text": "Fix the bug"},
			{"type": "image_url", "image_url": {"url": "data:image/png;base64,AAA", "detail": "high"}}
		]},
		{"role": "assistant", "content": "Looking.", "tool_calls": [
			{"id": "call_a", "type": "function", "function": {"name": "shell", "arguments": "{\"cmd\":\"ls\"}"}},
			{"id": "call_b", "type": "function", "function": {"name": "shell", "arguments": "{\"cmd\":\"pwd\"}"}}
		]},
		{"role": "tool", "tool_call_id": "call_a", "content": "main.go"},
		{"role": "tool", "tool_call_id": "call_b", "content": "/work"},
		{"role": "assistant", "content": null, "tool_calls": [
			{"id": "call_c", "type": "function", "function": {"name": "apply_patch", "arguments": "{\"input\":\"*** Begin Patch\"}"}}
		]},
		{"role": "tool", "tool_call_id": "call_c", "content": "Done"},
		{"role": "user", "content": "thanks"}
	],
	"tools": [{"type": "function", "function": {"name": "shell", "description": "Run",
		"parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}, "strict": false}}],
	"tool_choice": "auto",
	"parallel_tool_calls": true,
	"reasoning_effort": "high",
	"stream": true,
	"stream_options": {"include_usage": true},
	"response_format": {"type": "json_schema", "json_schema": {"name": "out", "schema": {"type": "object"}, "strict": true}},
	"max_completion_tokens": 500,
	"temperature": 1, "top_p": 1
}`
	got, dropped, err := ResponsesToChatRequest([]byte(resp))
	if err != nil {
		t.Fatal(err)
	}
	assertJSONEqual(t, "request", got, []byte(want))
	assertDropped(t, dropped, []string{"param:include", "item:web_search_call",
		"param:text.verbosity", "tool:custom apply_patch", "tool:namespace mcp__fs", "tool:web_search"})
}

func TestResponsesToChatRequestCases(t *testing.T) {
	tests := []struct {
		name, resp, want string
		dropped          []string
	}{{
		name:    "string input, no stream options when not streaming, empty include",
		resp:    `{"model":"m","input":"Hello","stream":false,"include":[],"metadata":{"a":"b"}}`,
		want:    `{"model":"m","messages":[{"role":"user","content":"Hello"}],"stream":false}`,
		dropped: []string{"param:metadata"},
	}, {
		name: "function choice, json_object, file_id image and image in tool output dropped, refusal",
		resp: `{"input":[
			{"type":"message","role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_text","text":"b"},{"type":"input_image","file_id":"file-1"}]},
			{"type":"message","role":"assistant","content":[{"type":"refusal","refusal":"I can't"}]},
			{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},
			{"type":"function_call_output","call_id":"c","output":[{"type":"input_image","image_url":"https://x"}]}],
			"tools":[{"type":"function","name":"f","parameters":{"type":"object"}}],
			"tool_choice":{"type":"function","name":"f"},
			"text":{"format":{"type":"json_object"}}}`,
		want: `{"messages":[
			{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},
			{"role":"assistant","content":null,"refusal":"I can't","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},
			{"role":"tool","tool_call_id":"c","content":""}],
			"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],
			"tool_choice":{"type":"function","function":{"name":"f"}},
			"response_format":{"type":"json_object"}}`,
		dropped: []string{"content:input_image file_id", "content:input_image in function_call_output"},
	}, {
		name:    "hosted tool choice and tool choice without kept tools are removed",
		resp:    `{"input":[{"role":"user","content":"x"}],"tools":[{"type":"web_search"}],"tool_choice":{"type":"web_search"},"parallel_tool_calls":false}`,
		want:    `{"messages":[{"role":"user","content":"x"}]}`,
		dropped: []string{"param:tool_choice", "tool:web_search"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, dropped, err := ResponsesToChatRequest([]byte(tt.resp))
			if err != nil {
				t.Fatal(err)
			}
			assertJSONEqual(t, "request", got, []byte(tt.want))
			assertDropped(t, dropped, tt.dropped)
		})
	}
}

func TestResponsesToChatRequestErrors(t *testing.T) {
	tests := []struct {
		name, resp, want string
		nothingUsable    bool
	}{
		{"only reasoning", `{"instructions":"x","input":[{"type":"reasoning","summary":[]}]}`, "no message", true},
		{"no input", `{"instructions":"x"}`, "no message", true},
		{"only hosted items", `{"input":[{"type":"web_search_call","id":"ws"}]}`, "no message", true},
		{"not an object", `"hi"`, "JSON object", false},
		{"bad input", `{"input":5}`, "input must be", false},
		{"bad instructions", `{"instructions":{},"input":"x"}`, "instructions", false},
		{"a remote compaction", `{"input":[{"type":"message","role":"user","content":"hi"},{"type":"compaction_trigger"}]}`, "cannot compact", false},
		// Never dropped: the earlier turns would vanish, and a tool result come without its call.
		{"a continuation", `{"previous_response_id":"resp_0","input":[{"type":"function_call_output","call_id":"c","output":"ok"}]}`,
			`previous_response_id "resp_0"`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := ResponsesToChatRequest([]byte(tt.resp))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one containing %q", err, tt.want)
			}
			if errors.Is(err, ErrNothingUsable) != tt.nothingUsable {
				t.Errorf("errors.Is(err, ErrNothingUsable) = %v, want %v", !tt.nothingUsable, tt.nothingUsable)
			}
			if errors.Is(err, ErrPreviousResponse) != strings.Contains(tt.resp, "previous_response_id") {
				t.Errorf("errors.Is(err, ErrPreviousResponse) = %v", errors.Is(err, ErrPreviousResponse))
			}
		})
	}
}
