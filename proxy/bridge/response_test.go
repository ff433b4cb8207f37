package bridge

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/codexrelay/codexrelay/proxy/internal/testkit"
)

// richRequest sets every parameter a Response repeats, some with values other than the API's
// defaults, and more (input, stream, include) that it does not repeat.
const richRequest = `{"model":"m","input":[{"role":"user","content":"hi"}],"stream":true,"include":["reasoning.encrypted_content"],
	"instructions":"Be brief.","tools":[{"type":"function","name":"f","parameters":{"type":"object","properties":{}},"strict":false}],
	"tool_choice":{"type":"function","name":"f"},"truncation":"auto","parallel_tool_calls":false,
	"text":{"format":{"type":"json_object"},"verbosity":"low","extra":1},"top_p":0.5,"presence_penalty":0.25,
	"frequency_penalty":-0.5,"top_logprobs":3,"temperature":0.2,"reasoning":{"effort":"high","context":"all_turns"},
	"max_output_tokens":256,"max_tool_calls":4,"store":false,"background":true,"service_tier":"priority",
	"metadata":{"k":"v"},"safety_identifier":"user-1","prompt_cache_key":"conv-1","previous_response_id":"resp_prev"}`

// richEcho is what a Response repeats of richRequest: as sent, but background (the relay runs
// nothing in the background), text and reasoning (their members a Response has), and the
// function tool's description, which the API writes (null) when the request leaves it out.
const richEcho = `"background":false,"frequency_penalty":-0.5,"instructions":"Be brief.","max_output_tokens":256,"max_tool_calls":4,` +
	`"parallel_tool_calls":false,"presence_penalty":0.25,"previous_response_id":"resp_prev","prompt_cache_key":"conv-1",` +
	`"reasoning":{"effort":"high","summary":null},"safety_identifier":"user-1","service_tier":"priority","store":false,` +
	`"temperature":0.2,"text":{"format":{"type":"json_object"},"verbosity":"low"},"tool_choice":{"type":"function","name":"f"},` +
	`"tools":[{"type":"function","name":"f","parameters":{"type":"object","properties":{}},"strict":false,"description":null}],"top_logprobs":3,"top_p":0.5,` +
	`"truncation":"auto","metadata":{"k":"v"}`

func TestEchoAsSentAndDefaults(t *testing.T) {
	for _, c := range []struct {
		name, request, echo string
	}{
		{"nothing set", `{"model":"m","input":"hi"}`, defaultEcho},
		{"everything set", richRequest, richEcho},
		// A parameter of a kind the API would have refused (or null) echoes the default.
		{"wrong kinds", `{"instructions":7,"tools":{},"tool_choice":1,"truncation":null,"parallel_tool_calls":"yes",
			"text":"plain","top_p":"1","presence_penalty":true,"frequency_penalty":null,"top_logprobs":1.5,"temperature":[],
			"reasoning":"high","max_output_tokens":16.5,"max_tool_calls":"4","store":1,"background":"no","service_tier":2,
			"metadata":[],"safety_identifier":false,"prompt_cache_key":{},"previous_response_id":3}`, defaultEcho},
		{"partial text and reasoning", `{"text":{"verbosity":"high"},"reasoning":{"summary":"auto"}}`,
			strings.NewReplacer(`"text":{"format":{"type":"text"}}`, `"text":{"format":{"type":"text"},"verbosity":"high"}`,
				`"reasoning":{"effort":null,"summary":null}`, `"reasoning":{"effort":null,"summary":"auto"}`).Replace(defaultEcho)},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &Response{ID: "resp_1", Model: "m", CreatedAt: 10, Status: "in_progress", Echo: EchoOf([]byte(c.request))}
			got := r.JSON()
			assertJSONEqual(t, "response", got, []byte(responseWith("resp_1", "m", 10, "in_progress", "null", "[]", "null", c.echo)))
			if err := testkit.CheckResponse(got); err != nil {
				t.Errorf("%v\n%s", err, got)
			}
		})
	}
	// A parameter written over several lines is echoed on one: a line break would cut the SSE
	// event that carries it.
	pretty := EchoOf([]byte("{\"tools\": [\n  {\"type\": \"function\",\n   \"name\": \"f\"}\n],\n\"metadata\": {\"a\":\n\"b\"}}"))
	ev := ResponseEvent("response.created", 0, &Response{ID: "resp_1", Status: "in_progress", Echo: pretty})
	if bytes.ContainsAny(ev, "\r\n") || !bytes.Contains(ev, []byte(`"tools":[{"type":"function","name":"f","description":null,"parameters":null,"strict":false}]`)) ||
		!bytes.Contains(ev, []byte(`"metadata":{"a":"b"}`)) {
		t.Errorf("a pretty-printed parameter: %s", ev)
	}
	// A nil Echo is a request that set nothing; a body that is no object too.
	for _, e := range []*Echo{nil, EchoOf([]byte(`[1]`))} {
		r := &Response{ID: "resp_1", Model: "m", CreatedAt: 10, Status: "in_progress", Echo: e}
		assertJSONEqual(t, "default echo", r.JSON(), []byte(responseWith("resp_1", "m", 10, "in_progress", "null", "[]", "null", defaultEcho)))
	}
}

// TestEchoFillsFunctionTools checks the tools a Response repeats: what the request sent, byte
// for byte, with the members the API writes for a function tool (description, parameters,
// strict) appended when it left them out, and nothing else touched.
func TestEchoFillsFunctionTools(t *testing.T) {
	const filled = `"description":null,"parameters":null,"strict":false`
	for _, c := range []struct{ name, tools, want string }{
		{"the suite's tool: no strict",
			`[{"type":"function","name":"get_weather","description":"Get it","parameters":{"type":"object","properties":{"location":{"type":"string"}},"required":["location"]}}]`,
			`[{"type":"function","name":"get_weather","description":"Get it","parameters":{"type":"object","properties":{"location":{"type":"string"}},"required":["location"]},"strict":false}]`},
		{"a name only", `[{"type":"function","name":"f"}]`, `[{"type":"function","name":"f",` + filled + `}]`},
		{"spaces kept", `[ {"type": "function" , "name": "f" } ]`, `[{"type": "function" , "name": "f",` + filled + `}]`},
		{"strict true kept", `[{"type":"function","name":"f","strict":true}]`, `[{"type":"function","name":"f","strict":true,"description":null,"parameters":null}]`},
		{"nulls kept", `[{"strict":null,"description":null,"type":"function","name":"f"}]`, `[{"strict":null,"description":null,"type":"function","name":"f","parameters":null}]`},
		{"other tools untouched", `[{"type":"custom","name":"apply_patch"},{"type":"web_search"},{"type":"function","name":"f","description":"d","parameters":{},"strict":false}]`,
			`[{"type":"custom","name":"apply_patch"},{"type":"web_search"},{"type":"function","name":"f","description":"d","parameters":{},"strict":false}]`},
		{"mixed", `[{"type":"web_search"},{"type":"function","name":"f"},{"type":"function","name":"g","description":"d","parameters":{},"strict":true}]`,
			`[{"type":"web_search"},{"type":"function","name":"f",` + filled + `},{"type":"function","name":"g","description":"d","parameters":{},"strict":true}]`},
		{"no tools", `[]`, `[]`},
		{"not tool objects", `[{"type":"function"},1]`, `[{"type":"function"},1]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := NewEcho(func(key string) ([]byte, bool) {
				if key == "tools" {
					return []byte(c.tools), true
				}
				return nil, false
			})
			if got := string(e.value(echoTools)); got != c.want {
				t.Errorf("tools\ngot:  %s\nwant: %s", got, c.want)
			}
		})
	}
	// Tools that lack nothing (Codex sets every member) are kept as they came, not rebuilt.
	whole := []byte(`[{"type":"function","name":"f","description":"d","parameters":{},"strict":false}]`)
	if got := toolsEcho(whole); &got[0] != &whole[0] {
		t.Errorf("whole tools were copied: %s", got)
	}
}

// TestEchoFillsJSONSchemaFormat checks the text a Response repeats for a json_schema format:
// the request's format with description (null) and strict (false) appended when it left them
// out, as the API writes them; other formats as sent.
func TestEchoFillsJSONSchemaFormat(t *testing.T) {
	for _, c := range []struct{ name, text, want string }{
		{"name and schema only", `{"format":{"type":"json_schema","name":"out","schema":{"type":"object"}}}`,
			`{"format":{"type":"json_schema","name":"out","schema":{"type":"object"},"description":null,"strict":false}}`},
		{"strict set", `{"format":{"type":"json_schema","name":"out","schema":{},"strict":true},"verbosity":"low"}`,
			`{"format":{"type":"json_schema","name":"out","schema":{},"strict":true,"description":null},"verbosity":"low"}`},
		{"whole", `{"format":{"type":"json_schema","name":"out","description":"d","schema":{},"strict":false}}`,
			`{"format":{"type":"json_schema","name":"out","description":"d","schema":{},"strict":false}}`},
		{"written over lines", "{\"format\": {\n \"type\": \"json_schema\",\n \"name\": \"out\"\n}}",
			`{"format":{"type":"json_schema","name":"out","description":null,"strict":false}}`},
		{"json_object", `{"format":{"type":"json_object"}}`, `{"format":{"type":"json_object"}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := string(EchoOf([]byte(`{"text":` + c.text + `}`)).value(echoText)); got != c.want {
				t.Errorf("text\ngot:  %s\nwant: %s", got, c.want)
			}
		})
	}
}

// TestResponseStates checks the members that depend on the status: completed_at only when
// completed, the error only when failed, incomplete_details only when incomplete; and the
// event around a response.
func TestResponseStates(t *testing.T) {
	echo := EchoOf([]byte(richRequest))
	base := Response{ID: "resp_s", Model: "m", CreatedAt: 100, CompletedAt: 105, Echo: echo,
		Output: []json.RawMessage{json.RawMessage(`{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[]}`)},
		Usage:  json.RawMessage(`{"input_tokens":1,"input_tokens_details":{"cached_tokens":0},"output_tokens":2,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":3}`)}
	for _, c := range []struct {
		status, completed, errObj, incomplete string
		err                                   *ResponseError
		reason                                string
	}{
		{"completed", "105", "null", "null", nil, ""},
		{"in_progress", "null", "null", "null", nil, ""},
		{"incomplete", "null", "null", `{"reason":"interrupted"}`, nil, "interrupted"},
		{"failed", "null", `{"code":"server_error","message":"broke"}`, "null", &ResponseError{"server_error", "broke"}, ""},
	} {
		r := base
		r.Status, r.Error, r.IncompleteReason = c.status, c.err, c.reason
		got := r.JSON()
		want := strings.NewReplacer(`"error":null`, `"error":`+c.errObj, `"incomplete_details":null`, `"incomplete_details":`+c.incomplete).
			Replace(responseWith("resp_s", "m", 100, c.status, c.completed, "["+string(base.Output[0])+"]", string(base.Usage), richEcho))
		assertJSONEqual(t, c.status, got, []byte(want))
		if err := testkit.CheckResponse(got); err != nil {
			t.Errorf("%s: %v", c.status, err)
		}
		ev := ResponseEvent("response."+c.status, 7, &r)
		assertJSONEqual(t, c.status+" event", ev, []byte(`{"type":"response.`+c.status+`","sequence_number":7,"response":`+want+`}`))
	}
	// The members are written in the API's order.
	keys := memberNames(t, base.JSON())
	if strings.Join(keys, ",") != strings.Join(testkit.ResponseMembers, ",") {
		t.Errorf("member order %v\nwant %v", keys, testkit.ResponseMembers)
	}
}

// TestBridgeResponsesAreWhole checks every Response object the bridge writes, in a stream's
// lifecycle events (completed, incomplete, failed) and in a translated whole answer, against
// the full Response schema, and that they all carry the request's echo.
func TestBridgeResponsesAreWhole(t *testing.T) {
	echo := EchoOf([]byte(richRequest))
	head := Response{ID: "resp_w", Model: "client-model", CreatedAt: 1700000000, Echo: echo}
	streams := map[string][]string{
		"completed":  chatChunks,
		"incomplete": {`{"choices":[{"index":0,"delta":{"content":"Once"},"finish_reason":"length"}]}`},
		"filtered":   {`{"choices":[{"index":0,"delta":{"refusal":"No."},"finish_reason":"content_filter"}]}`},
	}
	check := func(name string, events []Event) {
		t.Helper()
		datas := make([][]byte, len(events))
		for i, e := range events {
			datas[i] = e.Data
			var ev struct {
				Response json.RawMessage `json:"response"`
			}
			json.Unmarshal(e.Data, &ev)
			if ev.Response != nil && !strings.Contains(string(ev.Response), `"prompt_cache_key":"conv-1"`) {
				t.Errorf("%s: %s does not carry the echo: %s", name, e.Name, ev.Response)
			}
		}
		n, err := testkit.CheckResponseEvents(datas)
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if n != 3 { // created, in_progress and the terminal event
			t.Errorf("%s: %d response objects, want 3", name, n)
		}
	}
	for name, chunks := range streams {
		r := NewResponsesStream(head, testNow)
		events := r.Start()
		for _, c := range chunks {
			evs, err := r.Chunk([]byte(c))
			if err != nil {
				t.Fatal(err)
			}
			events = append(events, evs...)
		}
		check(name, append(events, r.End()...))
		if len(r.Output()) == 0 {
			t.Errorf("%s: no output kept", name)
		}
	}
	r := NewResponsesStream(head, testNow)
	events := append(r.Start(), r.Fail("", "upstream stream ended before [DONE]")...)
	check("failed", events)

	for _, body := range []string{chatCompletion,
		`{"choices":[{"index":0,"finish_reason":"length","message":{"role":"assistant","content":"Once"}}]}`} {
		h := head
		h.CompletedAt = time.Now().Unix()
		got, err := ChatCompletionToResponse([]byte(body), h)
		if err != nil {
			t.Fatal(err)
		}
		if err := testkit.CheckResponse(got); err != nil {
			t.Errorf("whole answer: %v\n%s", err, got)
		}
	}
}

// memberNames is the member names of a JSON object, in order.
func memberNames(t *testing.T, obj []byte) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(string(obj)))
	dec.Token()
	var keys []string
	for dec.More() {
		k, _ := dec.Token()
		keys = append(keys, k.(string))
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}
