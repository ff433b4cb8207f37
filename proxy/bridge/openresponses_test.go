package bridge

import (
	"encoding/json"
	"strings"
	"testing"
)

// The OpenResponses compliance suite (openresponses/openresponses at 92c12d9,
// src/lib/compliance-tests.ts) has 17 cases. TestOpenResponsesSuiteOverChat runs, without a
// network, the part of each that the bridge answers when a Chat Completions account serves a
// Responses client: the suite's request is translated for the Chat upstream, a Chat answer of
// the kind the case asks for is translated back, and the Response (and every stream event) is
// checked as the suite checks it: the schema (schemaCheck), then the case's own validators.
//
// What the bridge does not answer alone is left to package proxy: the WebSocket transport
// (websocket-*: its events are the stream events checked here), previous_response_id (the
// relay replays the conversation), and /responses/compact (compact-response,
// compact-missing-model, websocket-compact-new-chain). response-output-phase-schema sends no
// request (TestSchemaCheckReadsTheSuite reads its fixture).

// suiteModel is the suite's default model.
const suiteModel = "gpt-4o-mini"

// suiteWeatherTool is the function tool of the suite's tool-calling case, as it sends it: no
// strict.
const suiteWeatherTool = `{"type":"function","name":"get_weather","description":"Get the current weather for a location",` +
	`"parameters":{"type":"object","properties":{"location":{"type":"string","description":"The city and state, e.g. San Francisco, CA"}},"required":["location"]}}`

// Chat answers of the two kinds the cases ask for, whole and streamed.
const (
	chatTextAnswer = `{"id":"chatcmpl-1","object":"chat.completion","created":1764967971,"model":"gpt-4o-mini-2024-07-18",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"Hello there, friend!","refusal":null},"logprobs":null,"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":14,"completion_tokens":5,"total_tokens":19,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}}`
	chatToolAnswer = `{"id":"chatcmpl-2","object":"chat.completion","created":1764967971,"model":"gpt-4o-mini-2024-07-18",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":null,"tool_calls":[{"id":"call_w","type":"function",` +
		`"function":{"name":"get_weather","arguments":"{\"location\":\"San Francisco, CA\"}"}}]},"logprobs":null,"finish_reason":"tool_calls"}],` +
		`"usage":{"prompt_tokens":60,"completion_tokens":18,"total_tokens":78}}`
)

var (
	chatTextChunks = []string{
		`{"id":"chatcmpl-3","object":"chat.completion.chunk","created":1764967971,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"finish_reason":null}]}`,
		`{"id":"chatcmpl-3","object":"chat.completion.chunk","created":1764967971,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":"1, 2, 3"},"finish_reason":null}]}`,
		`{"id":"chatcmpl-3","object":"chat.completion.chunk","created":1764967971,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":", 4, 5."},"finish_reason":null}]}`,
		`{"id":"chatcmpl-3","object":"chat.completion.chunk","created":1764967971,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
		`{"id":"chatcmpl-3","object":"chat.completion.chunk","created":1764967971,"model":"gpt-4o-mini","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":9,"total_tokens":21}}`,
	}
	chatToolChunks = []string{
		`{"id":"chatcmpl-4","object":"chat.completion.chunk","created":1764967971,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_w","type":"function","function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}]}`,
		`{"id":"chatcmpl-4","object":"chat.completion.chunk","created":1764967971,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"location\":"}}]},"finish_reason":null}]}`,
		`{"id":"chatcmpl-4","object":"chat.completion.chunk","created":1764967971,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"San Francisco, CA\"}"}}]},"finish_reason":null}]}`,
		`{"id":"chatcmpl-4","object":"chat.completion.chunk","created":1764967971,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		`{"id":"chatcmpl-4","object":"chat.completion.chunk","created":1764967971,"model":"gpt-4o-mini","choices":[],"usage":{"prompt_tokens":60,"completion_tokens":18,"total_tokens":78}}`,
	}
)

// suiteValidator is one of the suite's semantic checks of a parsed Response: "" when it holds.
type suiteValidator func(resp map[string]any) string

func hasOutput(resp map[string]any) string {
	if out, _ := resp["output"].([]any); len(out) == 0 {
		return "Response has no output items"
	}
	return ""
}

func completedStatus(resp map[string]any) string {
	if resp["status"] != "completed" {
		return `Expected status "completed" but got "` + brief(resp["status"]) + `"`
	}
	return ""
}

func hasOutputType(typ string) suiteValidator {
	return func(resp map[string]any) string {
		out, _ := resp["output"].([]any)
		for _, it := range out {
			if m, _ := it.(map[string]any); m["type"] == typ {
				return ""
			}
		}
		return `Expected output item of type "` + typ + `" but none found`
	}
}

// hasStreamEvent is the check the suite's streamed tool call case made (before it was folded
// into tool-calling): an event of this type, with an item of itemType when given.
func hasStreamEvent(events []Event, typ, itemType string) string {
	for _, ev := range events {
		var d struct {
			Item struct{ Type string }
		}
		if ev.Name == typ && json.Unmarshal(ev.Data, &d) == nil && (itemType == "" || d.Item.Type == itemType) {
			return ""
		}
	}
	return "Missing " + typ + " event " + itemType
}

func TestOpenResponsesSuiteOverChat(t *testing.T) {
	msg := func(role, content string) string {
		return `{"type":"message","role":"` + role + `","content":"` + content + `"}`
	}
	for _, c := range []struct {
		id         string // the suite's case (extra: not one of the 17)
		request    string
		chat       string   // the whole Chat answer, for a case that does not stream
		chunks     []string // the streamed Chat answer, for one that does
		validators []suiteValidator
		events     [][2]string // stream events the case needs: type, item type
	}{
		{id: "basic-response", request: `{"model":"` + suiteModel + `","input":[` + msg("user", "Say hello in exactly 3 words.") + `]}`,
			chat: chatTextAnswer, validators: []suiteValidator{hasOutput, completedStatus}},
		{id: "assistant-phase", request: `{"model":"` + suiteModel + `","input":[` +
			`{"type":"message","role":"assistant","phase":"commentary","content":"I should answer with the saved number."},` +
			`{"type":"message","role":"assistant","phase":"final_answer","content":"The number is four."},` +
			msg("user", "Repeat only the number.") + `]}`,
			chat: chatTextAnswer, validators: []suiteValidator{hasOutput, completedStatus}},
		{id: "streaming-response", request: `{"model":"` + suiteModel + `","input":[` + msg("user", "Count from 1 to 5.") + `],"stream":true}`,
			chunks: chatTextChunks, validators: []suiteValidator{completedStatus}},
		// websocket-response sends this over a socket ({"type":"response.create",...}); the relay
		// sends the same events as frames.
		{id: "websocket-response", request: `{"model":"` + suiteModel + `","input":[` + msg("user", "Count from 1 to 3.") + `],"stream":true}`,
			chunks: chatTextChunks, validators: []suiteValidator{completedStatus}},
		{id: "system-prompt", request: `{"model":"` + suiteModel + `","input":[` + msg("system", "You are a pirate. Always respond in pirate speak.") +
			`,` + msg("user", "Say hello.") + `]}`,
			chat: chatTextAnswer, validators: []suiteValidator{hasOutput, completedStatus}},
		{id: "tool-calling", request: `{"model":"` + suiteModel + `","input":[` + msg("user", "What's the weather like in San Francisco?") +
			`],"tools":[` + suiteWeatherTool + `]}`,
			chat: chatToolAnswer, validators: []suiteValidator{hasOutput, hasOutputType("function_call")}},
		{id: "extra: tool-calling streamed", request: `{"model":"` + suiteModel + `","input":[` + msg("user", "What's the weather like in San Francisco?") +
			`],"tools":[` + suiteWeatherTool + `],"stream":true}`,
			chunks: chatToolChunks, validators: []suiteValidator{hasOutput, hasOutputType("function_call")},
			events: [][2]string{{"response.output_item.added", "function_call"}, {"response.function_call_arguments.delta", ""},
				{"response.function_call_arguments.done", ""}, {"response.output_item.done", "function_call"}}},
		{id: "image-input", request: `{"model":"` + suiteModel + `","input":[{"type":"message","role":"user","content":[` +
			`{"type":"input_text","text":"What do you see in this image? Answer in one sentence."},` +
			`{"type":"input_image","image_url":"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR42mP4z8AAAAMBAQD3A0FDAAAAAElFTkSuQmCC"}]}]}`,
			chat: chatTextAnswer, validators: []suiteValidator{hasOutput, completedStatus}},
		{id: "multi-turn", request: `{"model":"` + suiteModel + `","input":[` + msg("user", "My name is Alice.") + `,` +
			msg("assistant", "Hello Alice! Nice to meet you. How can I help you today?") + `,` + msg("user", "What is my name?") + `]}`,
			chat: chatTextAnswer, validators: []suiteValidator{hasOutput, completedStatus}},
	} {
		t.Run(c.id, func(t *testing.T) {
			if _, dropped, err := ResponsesToChatRequest([]byte(c.request)); err != nil {
				t.Fatalf("the request is refused: %v", err)
			} else if len(dropped) > 0 {
				t.Errorf("the request loses %v", dropped)
			}
			head := Response{ID: "resp_suite", Model: suiteModel, CreatedAt: 1764967971, CompletedAt: 1764967973,
				Echo: EchoOf([]byte(c.request))}
			var final []byte
			var events []Event
			if c.chunks == nil {
				got, err := ChatCompletionToResponse([]byte(c.chat), head)
				if err != nil {
					t.Fatal(err)
				}
				final = got
			} else {
				r := NewResponsesStream(head, testNow)
				events = r.Start()
				for _, ch := range c.chunks {
					evs, err := r.Chunk([]byte(ch))
					if err != nil {
						t.Fatal(err)
					}
					events = append(events, evs...)
				}
				events = append(events, r.End()...)
				for i, ev := range events {
					if errs := checkStreamEvent(t, ev); errs != nil {
						t.Errorf("event %d %s fails the suite's schema:\n%s\n%s", i, ev.Name, strings.Join(errs, "\n"), ev.Data)
					}
				}
				var terminal struct{ Response json.RawMessage }
				json.Unmarshal(events[len(events)-1].Data, &terminal)
				final = terminal.Response
			}
			if errs := checkSchema(t, "ResponseResource", final); errs != nil {
				t.Fatalf("the Response fails the suite's schema:\n%s\n%s", strings.Join(errs, "\n"), final)
			}
			var resp map[string]any
			if err := json.Unmarshal(final, &resp); err != nil {
				t.Fatal(err)
			}
			for _, v := range c.validators {
				if msg := v(resp); msg != "" {
					t.Error(msg)
				}
			}
			for _, e := range c.events {
				if msg := hasStreamEvent(events, e[0], e[1]); msg != "" {
					t.Error(msg)
				}
			}
		})
	}
}

// TestOpenResponsesSchemaOfEveryEnd checks, against the suite's schemas, the Responses and
// events of the ends a bridged stream can have besides completing (cut by the token limit, a
// refusal cut by the content filter, an upstream that broke off) and a Response the relay
// writes with no upstream answer (Response.JSON, ResponseEvent), for a request that sets tools
// without strict.
func TestOpenResponsesSchemaOfEveryEnd(t *testing.T) {
	request := `{"model":"` + suiteModel + `","input":"hi","tools":[` + suiteWeatherTool + `,{"type":"function","name":"f"}],"stream":true}`
	head := Response{ID: "resp_end", Model: suiteModel, CreatedAt: 1764967971, Echo: EchoOf([]byte(request))}
	check := func(what string, data []byte, schema string) {
		t.Helper()
		if errs := checkSchema(t, schema, data); errs != nil {
			t.Errorf("%s fails the suite's schema:\n%s\n%s", what, strings.Join(errs, "\n"), data)
		}
	}
	for _, c := range []struct {
		name   string
		chunks []string
		fail   bool // end with Fail rather than End
	}{
		{"length", []string{`{"choices":[{"index":0,"delta":{"content":"Once upon"},"finish_reason":"length"}]}`}, false},
		{"content filter", []string{`{"choices":[{"index":0,"delta":{"refusal":"I can't help with that."},"finish_reason":"content_filter"}]}`}, false},
		{"broke off", chatToolChunks[:2], true},
		{"nothing came", nil, true},
	} {
		r := NewResponsesStream(head, testNow)
		events := r.Start()
		for _, ch := range c.chunks {
			evs, err := r.Chunk([]byte(ch))
			if err != nil {
				t.Fatal(err)
			}
			events = append(events, evs...)
		}
		if c.fail {
			events = append(events, r.Fail("", "the upstream broke off")...)
		} else {
			events = append(events, r.End()...)
		}
		for i, ev := range events {
			if errs := checkStreamEvent(t, ev); errs != nil {
				t.Errorf("%s: event %d %s fails the suite's schema:\n%s\n%s", c.name, i, ev.Name, strings.Join(errs, "\n"), ev.Data)
			}
		}
	}
	for _, status := range []string{"in_progress", "completed", "incomplete", "failed"} {
		r := head
		r.Status, r.CompletedAt = status, 1764967972
		switch status {
		case "incomplete":
			r.IncompleteReason = "interrupted"
		case "failed":
			r.Error = &ResponseError{Code: "server_error", Message: "broke"}
		}
		check(status+" Response", r.JSON(), "ResponseResource")
		if status != "in_progress" {
			check("response."+status, ResponseEvent("response."+status, 3, &r), streamEventSchemas["response."+status])
		}
	}
}
