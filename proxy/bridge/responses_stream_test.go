package bridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3/responses"

	"github.com/codexrelay/codexrelay/proxy/internal/testkit"
)

// chatChunks is a realistic upstream Chat Completions stream: text, then two tool calls whose
// arguments interleave, the finish chunk, and the usage chunk.
var chatChunks = []string{
	`{"id":"chatcmpl-9","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
	`{"id":"chatcmpl-9","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"Let me "},"finish_reason":null}]}`,
	`{"id":"chatcmpl-9","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"check."},"finish_reason":null}]}`,
	`{"id":"chatcmpl-9","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"lookup","arguments":""}}]},"finish_reason":null}]}`,
	`{"id":"chatcmpl-9","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"weather","arguments":""}}]},"finish_reason":null}]}`,
	`{"id":"chatcmpl-9","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"q\":"}}]},"finish_reason":null}]}`,
	`{"id":"chatcmpl-9","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{}"}}]},"finish_reason":null}]}`,
	`{"id":"chatcmpl-9","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"cat\"}"}}]},"finish_reason":null}]}`,
	`{"id":"chatcmpl-9","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":null}`,
	`{"id":"chatcmpl-9","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[],"usage":{"prompt_tokens":100,"completion_tokens":50,"total_tokens":150,"prompt_tokens_details":{"cached_tokens":40},"completion_tokens_details":{"reasoning_tokens":20}}}`,
}

// wantEvent is an expected event: its name and data.
type wantEvent struct{ name, data string }

func assertEvents(t *testing.T, got []Event, want []wantEvent) {
	t.Helper()
	for i := 0; i < max(len(got), len(want)); i++ {
		switch {
		case i >= len(got):
			t.Fatalf("missing event %d: %s %s", i, want[i].name, want[i].data)
		case i >= len(want):
			t.Fatalf("extra event %d: %s %s", i, got[i].Name, got[i].Data)
		case got[i].Name != want[i].name:
			t.Fatalf("event %d is %s, want %s (%s)", i, got[i].Name, want[i].name, got[i].Data)
		}
		assertJSONEqual(t, "event "+strconv.Itoa(i)+" "+want[i].name, got[i].Data, []byte(want[i].data))
	}
}

// runResponsesStream feeds chunks to a new ResponsesStream (Start first) and ends it.
func runResponsesStream(t *testing.T, chunks []string) []Event {
	t.Helper()
	r := NewResponsesStream(Response{ID: "resp_abc", Model: "client-model", CreatedAt: 1700000000}, testNow)
	events := r.Start()
	for _, c := range chunks {
		evs, err := r.Chunk([]byte(c))
		if err != nil {
			t.Fatalf("chunk %s: %v", c, err)
		}
		events = append(events, evs...)
	}
	return append(events, r.End()...)
}

const (
	msgAdded  = `{"id":"msg_abc_0","type":"message","status":"in_progress","role":"assistant","content":[]}`
	msgDone   = `{"id":"msg_abc_0","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Let me check.","annotations":[],"logprobs":[]}]}`
	callAAdd  = `{"id":"fc_abc_1","type":"function_call","status":"in_progress","arguments":"","call_id":"call_a","name":"lookup"}`
	callADone = `{"id":"fc_abc_1","type":"function_call","status":"completed","arguments":"{\"q\":\"cat\"}","call_id":"call_a","name":"lookup"}`
	callBAdd  = `{"id":"fc_abc_2","type":"function_call","status":"in_progress","arguments":"","call_id":"call_b","name":"weather"}`
	callBDone = `{"id":"fc_abc_2","type":"function_call","status":"completed","arguments":"{}","call_id":"call_b","name":"weather"}`
)

// testNow is the clock of the test streams: they complete 5 seconds after they were created.
func testNow() time.Time { return time.Unix(1700000005, 0) }

// responseObject is the response object the test streams carry, with the given fields: a
// request that set no parameter echoes the API's defaults.
func responseObject(status, output, usage string) string {
	completed := "null"
	if status == "completed" {
		completed = "1700000005"
	}
	return responseWith("resp_abc", "client-model", 1700000000, status, completed, output, usage, defaultEcho)
}

// defaultEcho is what a Response repeats of a request that set no parameter, in the API's
// member order (responseWith splits it around model, output and usage).
const defaultEcho = `"background":false,"frequency_penalty":0,"instructions":null,"max_output_tokens":null,"max_tool_calls":null,` +
	`"parallel_tool_calls":true,"presence_penalty":0,"previous_response_id":null,"prompt_cache_key":null,` +
	`"reasoning":{"effort":null,"summary":null},"safety_identifier":null,"service_tier":"default","store":true,` +
	`"temperature":1,"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_logprobs":0,"top_p":1,` +
	`"truncation":"disabled","metadata":{}`

// responseWith is a whole response object; echo holds the echoed members (member order does
// not matter to assertJSONEqual).
func responseWith(id, model string, created int64, status, completedAt, output, usage, echo string) string {
	return `{"id":"` + id + `","object":"response","created_at":` + strconv.FormatInt(created, 10) + `,"status":"` + status +
		`","completed_at":` + completedAt + `,"error":null,"incomplete_details":null,"model":"` + model + `","output":` + output +
		`,"usage":` + usage + `,` + echo + `}`
}

func TestResponsesStreamGoldenTools(t *testing.T) {
	inProgress := responseObject("in_progress", "[]", "null")
	usage := `{"input_tokens":100,"input_tokens_details":{"cached_tokens":40},"output_tokens":50,"output_tokens_details":{"reasoning_tokens":20},"total_tokens":150}`
	assertEvents(t, runResponsesStream(t, chatChunks), []wantEvent{
		{"response.created", `{"type":"response.created","sequence_number":0,"response":` + inProgress + `}`},
		{"response.in_progress", `{"type":"response.in_progress","sequence_number":1,"response":` + inProgress + `}`},
		{"response.output_item.added", `{"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":` + msgAdded + `}`},
		{"response.content_part.added", `{"type":"response.content_part.added","sequence_number":3,"item_id":"msg_abc_0","output_index":0,"content_index":0,"part":{"type":"output_text","text":"","annotations":[],"logprobs":[]}}`},
		{"response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_abc_0","output_index":0,"content_index":0,"delta":"Let me ","logprobs":[]}`},
		{"response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":5,"item_id":"msg_abc_0","output_index":0,"content_index":0,"delta":"check.","logprobs":[]}`},
		{"response.output_text.done", `{"type":"response.output_text.done","sequence_number":6,"item_id":"msg_abc_0","output_index":0,"content_index":0,"text":"Let me check.","logprobs":[]}`},
		{"response.content_part.done", `{"type":"response.content_part.done","sequence_number":7,"item_id":"msg_abc_0","output_index":0,"content_index":0,"part":{"type":"output_text","text":"Let me check.","annotations":[],"logprobs":[]}}`},
		{"response.output_item.done", `{"type":"response.output_item.done","sequence_number":8,"output_index":0,"item":` + msgDone + `}`},
		{"response.output_item.added", `{"type":"response.output_item.added","sequence_number":9,"output_index":1,"item":` + callAAdd + `}`},
		{"response.output_item.added", `{"type":"response.output_item.added","sequence_number":10,"output_index":2,"item":` + callBAdd + `}`},
		{"response.function_call_arguments.delta", `{"type":"response.function_call_arguments.delta","sequence_number":11,"item_id":"fc_abc_1","output_index":1,"delta":"{\"q\":"}`},
		{"response.function_call_arguments.delta", `{"type":"response.function_call_arguments.delta","sequence_number":12,"item_id":"fc_abc_2","output_index":2,"delta":"{}"}`},
		{"response.function_call_arguments.delta", `{"type":"response.function_call_arguments.delta","sequence_number":13,"item_id":"fc_abc_1","output_index":1,"delta":"\"cat\"}"}`},
		{"response.function_call_arguments.done", `{"type":"response.function_call_arguments.done","sequence_number":14,"item_id":"fc_abc_1","output_index":1,"arguments":"{\"q\":\"cat\"}"}`},
		{"response.output_item.done", `{"type":"response.output_item.done","sequence_number":15,"output_index":1,"item":` + callADone + `}`},
		{"response.function_call_arguments.done", `{"type":"response.function_call_arguments.done","sequence_number":16,"item_id":"fc_abc_2","output_index":2,"arguments":"{}"}`},
		{"response.output_item.done", `{"type":"response.output_item.done","sequence_number":17,"output_index":2,"item":` + callBDone + `}`},
		{"response.completed", `{"type":"response.completed","sequence_number":18,"response":` +
			responseObject("completed", "["+msgDone+","+callADone+","+callBDone+"]", usage) + `}`},
	})
}

func TestResponsesStreamGoldenLengthRefusal(t *testing.T) {
	// Chunk without Start (the start events come first), text then refusal in one message,
	// cut by the token limit, no usage. Other choices and unknown delta fields are ignored.
	r := NewResponsesStream(Response{ID: "resp_abc", Model: "client-model", CreatedAt: 1700000000}, testNow)
	var events []Event
	for _, c := range []string{
		`{"choices":[{"index":0,"delta":{"role":"assistant","content":"Hi","reasoning_content":"hmm"}},{"index":1,"delta":{"content":"other choice"}}]}`,
		`{"choices":[{"index":0,"delta":{"refusal":"No."}}]}`,
		`{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`,
	} {
		evs, err := r.Chunk([]byte(c))
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, evs...)
	}
	events = append(events, r.End()...)
	if more := r.End(); more != nil {
		t.Errorf("second End returned %d events", len(more))
	}
	if more := r.Fail("x", "y"); more != nil {
		t.Errorf("Fail after End returned %d events", len(more))
	}
	inProgress := responseObject("in_progress", "[]", "null")
	textPart := `{"type":"output_text","text":"Hi","annotations":[],"logprobs":[]}`
	refusalPart := `{"type":"refusal","refusal":"No."}`
	msg := `{"id":"msg_abc_0","type":"message","status":"incomplete","role":"assistant","content":[` + textPart + `,` + refusalPart + `]}`
	final := strings.Replace(responseObject("incomplete", "["+msg+"]", "null"),
		`"incomplete_details":null`, `"incomplete_details":{"reason":"max_output_tokens"}`, 1)
	assertEvents(t, events, []wantEvent{
		{"response.created", `{"type":"response.created","sequence_number":0,"response":` + inProgress + `}`},
		{"response.in_progress", `{"type":"response.in_progress","sequence_number":1,"response":` + inProgress + `}`},
		{"response.output_item.added", `{"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":` + msgAdded + `}`},
		{"response.content_part.added", `{"type":"response.content_part.added","sequence_number":3,"item_id":"msg_abc_0","output_index":0,"content_index":0,"part":{"type":"output_text","text":"","annotations":[],"logprobs":[]}}`},
		{"response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_abc_0","output_index":0,"content_index":0,"delta":"Hi","logprobs":[]}`},
		{"response.output_text.done", `{"type":"response.output_text.done","sequence_number":5,"item_id":"msg_abc_0","output_index":0,"content_index":0,"text":"Hi","logprobs":[]}`},
		{"response.content_part.done", `{"type":"response.content_part.done","sequence_number":6,"item_id":"msg_abc_0","output_index":0,"content_index":0,"part":` + textPart + `}`},
		{"response.content_part.added", `{"type":"response.content_part.added","sequence_number":7,"item_id":"msg_abc_0","output_index":0,"content_index":1,"part":{"type":"refusal","refusal":""}}`},
		{"response.refusal.delta", `{"type":"response.refusal.delta","sequence_number":8,"item_id":"msg_abc_0","output_index":0,"content_index":1,"delta":"No."}`},
		{"response.refusal.done", `{"type":"response.refusal.done","sequence_number":9,"item_id":"msg_abc_0","output_index":0,"content_index":1,"refusal":"No."}`},
		{"response.content_part.done", `{"type":"response.content_part.done","sequence_number":10,"item_id":"msg_abc_0","output_index":0,"content_index":1,"part":` + refusalPart + `}`},
		{"response.output_item.done", `{"type":"response.output_item.done","sequence_number":11,"output_index":0,"item":` + msg + `}`},
		{"response.incomplete", `{"type":"response.incomplete","sequence_number":12,"response":` + final + `}`},
	})
}

func TestResponsesStreamFail(t *testing.T) {
	r := NewResponsesStream(Response{ID: "resp_abc", Model: "client-model", CreatedAt: 1700000000}, testNow)
	events := r.Start()
	evs, err := r.Chunk([]byte(`{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"call_x","function":{"name":"f","arguments":"{\"a\""}}]}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	events = append(events, evs...)
	// A malformed chunk and an error chunk change nothing and say why.
	if evs, err := r.Chunk([]byte(`{"choices":[`)); err == nil || evs != nil {
		t.Fatalf("malformed chunk: %d events, err %v", len(evs), err)
	}
	evs, err = r.Chunk([]byte(`{"error":{"message":"overloaded","type":"server_error","code":503}}`))
	var ue *UpstreamError
	if !errors.As(err, &ue) || ue.Code != "503" || ue.Message != "overloaded" || evs != nil {
		t.Fatalf("error chunk: %d events, err %#v", len(evs), err)
	}
	events = append(events, r.Fail(ue.Code, ue.Message)...)
	if _, err := r.Chunk([]byte(`{"choices":[]}`)); err == nil {
		t.Error("Chunk after Fail did not fail")
	}
	inProgress := responseObject("in_progress", "[]", "null")
	call := `{"id":"fc_abc_0","type":"function_call","status":"%s","arguments":"%s","call_id":"call_x","name":"f"}`
	added := strings.Replace(strings.Replace(call, "%s", "in_progress", 1), "%s", "", 1)
	done := strings.Replace(strings.Replace(call, "%s", "incomplete", 1), "%s", `{\"a\"`, 1)
	final := strings.Replace(responseObject("failed", "["+done+"]", "null"),
		`"error":null`, `"error":{"code":"503","message":"overloaded"}`, 1)
	assertEvents(t, events, []wantEvent{
		{"response.created", `{"type":"response.created","sequence_number":0,"response":` + inProgress + `}`},
		{"response.in_progress", `{"type":"response.in_progress","sequence_number":1,"response":` + inProgress + `}`},
		{"response.output_item.added", `{"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":` + added + `}`},
		{"response.function_call_arguments.delta", `{"type":"response.function_call_arguments.delta","sequence_number":3,"item_id":"fc_abc_0","output_index":0,"delta":"{\"a\""}`},
		{"response.function_call_arguments.done", `{"type":"response.function_call_arguments.done","sequence_number":4,"item_id":"fc_abc_0","output_index":0,"arguments":"{\"a\""}`},
		{"response.output_item.done", `{"type":"response.output_item.done","sequence_number":5,"output_index":0,"item":` + done + `}`},
		{"response.failed", `{"type":"response.failed","sequence_number":6,"response":` + final + `}`},
	})
}

func TestResponsesStreamToolCallsWithoutIndex(t *testing.T) {
	// Some upstreams omit the tool call index: a new id is a new call, no id continues the
	// previous one. Text after a tool call opens a new message item.
	events := runResponsesStream(t, []string{
		`{"choices":[{"delta":{"tool_calls":[{"id":"c1","function":{"name":"a","arguments":"{"}}]}}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"}"}}]}}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"id":"c2","function":{"name":"b","arguments":"[]"}}]}}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"id":"c1","function":{"arguments":""}}]}}]}`,
		`{"choices":[{"delta":{"content":"after"}}]}`,
	})
	final := events[len(events)-1]
	var ev responses.ResponseStreamEventUnion
	if err := json.Unmarshal(final.Data, &ev); err != nil {
		t.Fatal(err)
	}
	out := ev.Response.Output
	if len(out) != 3 || out[0].CallID != "c1" || out[0].Arguments.OfString != "{}" ||
		out[1].CallID != "c2" || out[1].Arguments.OfString != "[]" || out[2].Type != "message" || ev.Response.OutputText() != "after" {
		t.Fatalf("output: %s", final.Data)
	}
	checkWellFormed(t, events, false)
}

// TestResponsesStreamSDK checks that the official SDK reads every produced event as a
// responses.ResponseStreamEventUnion with the right type and sequence number, and that the
// deltas and the final response carry the answer.
func TestResponsesStreamSDK(t *testing.T) {
	events := runResponsesStream(t, chatChunks)
	var text strings.Builder
	args := map[string]string{}
	var final responses.Response
	for i, e := range events {
		var ev responses.ResponseStreamEventUnion
		if err := json.Unmarshal(e.Data, &ev); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if ev.Type != e.Name || ev.SequenceNumber != int64(i) {
			t.Fatalf("event %d: type %q sequence %d, name %q", i, ev.Type, ev.SequenceNumber, e.Name)
		}
		switch ev.Type {
		case "response.output_text.delta":
			text.WriteString(ev.AsResponseOutputTextDelta().Delta)
		case "response.function_call_arguments.delta":
			d := ev.AsResponseFunctionCallArgumentsDelta()
			args[d.ItemID] += d.Delta
		case "response.output_item.done":
			if item := ev.AsResponseOutputItemDone().Item; item.Type == "function_call" && args[item.ID] != item.Arguments.OfString {
				t.Errorf("%s: deltas %q, done %q", item.ID, args[item.ID], item.Arguments.OfString)
			}
		case "response.completed":
			final = ev.AsResponseCompleted().Response
		}
	}
	if text.String() != "Let me check." || final.OutputText() != "Let me check." {
		t.Errorf("text: deltas %q, final %q", text.String(), final.OutputText())
	}
	if final.ID != "resp_abc" || final.Status != "completed" || final.Model != "client-model" || final.CreatedAt != 1700000000 {
		t.Errorf("final response: %+v", final.RawJSON())
	}
	var calls []responses.ResponseFunctionToolCall
	for _, item := range final.Output {
		if item.Type == "function_call" {
			calls = append(calls, item.AsFunctionCall())
		}
	}
	if len(calls) != 2 || calls[0].CallID != "call_a" || calls[0].Name != "lookup" || calls[0].Arguments != `{"q":"cat"}` ||
		calls[1].CallID != "call_b" || calls[1].Name != "weather" || calls[1].Arguments != "{}" {
		t.Errorf("function calls: %+v", calls)
	}
	u := final.Usage
	if u.InputTokens != 100 || u.OutputTokens != 50 || u.TotalTokens != 150 ||
		u.InputTokensDetails.CachedTokens != 40 || u.OutputTokensDetails.ReasoningTokens != 20 {
		t.Errorf("usage: %+v", u)
	}
}

// checkWellFormed fails unless events are a well-formed Responses stream: response.created
// first, sequence numbers 0, 1, 2, ..., valid JSON data whose type is the event name, deltas
// only for items added and not yet done, every item done before the terminal event, and
// exactly one terminal event, the last one (response.failed only when failed is true).
func checkWellFormed(t *testing.T, events []Event, failed bool) {
	t.Helper()
	if len(events) == 0 || events[0].Name != "response.created" {
		t.Fatalf("the stream does not start with response.created")
	}
	open := map[string]bool{} // item ids added and not done
	terminals := 0
	for i, e := range events {
		var d struct {
			Type           string `json:"type"`
			SequenceNumber *int   `json:"sequence_number"`
			ItemID         string `json:"item_id"`
			Item           struct {
				ID string `json:"id"`
			} `json:"item"`
		}
		if !json.Valid(e.Data) || json.Unmarshal(e.Data, &d) != nil {
			t.Fatalf("event %d: invalid data %q", i, e.Data)
		}
		if d.Type != e.Name || d.SequenceNumber == nil || *d.SequenceNumber != i {
			t.Fatalf("event %d (%s): type %q, sequence_number %v", i, e.Name, d.Type, d.SequenceNumber)
		}
		if terminals > 0 {
			t.Fatalf("event %d (%s) after the terminal event", i, e.Name)
		}
		switch {
		case e.Name == "response.output_item.added":
			if d.Item.ID == "" || open[d.Item.ID] {
				t.Fatalf("event %d: item %q added twice or without id", i, d.Item.ID)
			}
			open[d.Item.ID] = true
		case e.Name == "response.output_item.done":
			if !open[d.Item.ID] {
				t.Fatalf("event %d: item %q done but not open", i, d.Item.ID)
			}
			delete(open, d.Item.ID)
		case d.ItemID != "":
			// Deltas, content parts and .done events of an item's content.
			if !open[d.ItemID] {
				t.Fatalf("event %d (%s): item %q is not open", i, e.Name, d.ItemID)
			}
		case e.Name == "response.completed" || e.Name == "response.incomplete":
			if failed {
				t.Fatalf("event %d: %s, want response.failed", i, e.Name)
			}
			terminals++
		case e.Name == "response.failed":
			if !failed {
				t.Fatalf("event %d: unexpected response.failed", i)
			}
			terminals++
		case e.Name == "response.created" && i == 0, e.Name == "response.in_progress" && i == 1:
		default:
			t.Fatalf("event %d: unexpected %s", i, e.Name)
		}
		if strings.HasSuffix(e.Name, ".delta") && d.ItemID == "" {
			t.Fatalf("event %d: delta without item_id", i)
		}
	}
	if terminals != 1 {
		t.Fatalf("%d terminal events", terminals)
	}
	if len(open) > 0 {
		t.Fatalf("items never done: %v", open)
	}
}

// FuzzResponsesStream feeds arbitrary chunk payloads (separated by newlines) and checks that
// the stream never panics and is always well formed, each response object whole: after a Chunk
// error the relay calls Fail, else End.
func FuzzResponsesStream(f *testing.F) {
	f.Add(strings.Join(chatChunks, "\n"))
	f.Add(`{"choices":[{"delta":{"tool_calls":[{"id":"c1","function":{"name":"a"}}]}}]}` + "\n" +
		`{"choices":[{"delta":{"content":"x","refusal":"y","tool_calls":[{"index":-1,"function":{"arguments":"z"}}]}}]}` + "\n" +
		`{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"w"}}]},"finish_reason":"length"}]}`)
	f.Add(`{"choices":[{"index":0,"delta":{"content":"a"}}]}` + "\n" + `{"error":{"message":"x"}}`)
	f.Add("{\"choices\":[{\"delta\":{\"content\":\"\\u003c\\ud800\"}}]}\n[DONE]\nnull")
	f.Fuzz(func(t *testing.T, input string) {
		r := NewResponsesStream(Response{ID: "resp_f", Model: "m", CreatedAt: 1}, nil)
		events := r.Start()
		failed := false
		for _, chunk := range bytes.Split([]byte(input), []byte("\n")) {
			evs, err := r.Chunk(chunk)
			if err != nil && evs != nil {
				t.Fatalf("Chunk returned events with an error: %v", err)
			}
			events = append(events, evs...)
			if err != nil && len(chunk)%2 == 0 { // fail on some errors, carry on after others
				failed = true
				events = append(events, r.Fail("upstream_error", err.Error())...)
				break
			}
		}
		if !failed {
			events = append(events, r.End()...)
		}
		checkWellFormed(t, events, failed)
		datas := make([][]byte, len(events))
		for i, e := range events {
			datas[i] = e.Data
		}
		if _, err := testkit.CheckResponseEvents(datas); err != nil {
			t.Fatalf("a response object is not whole: %v", err)
		}
	})
}
