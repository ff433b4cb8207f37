package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/codexrelay/codexrelay/proxy"
)

func params(model, input string) responses.ResponseNewParams {
	return responses.ResponseNewParams{
		Model: model,
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(input)},
	}
}

func TestSDKStreamsThroughOpenAIAccount(t *testing.T) {
	up := newUpstream(t, answerText("Hello from upstream"))
	r := newRelay(t, proxy.Options{}, openaiAccount("key1", up))

	client := r.sdk()
	stream := client.Responses.NewStreaming(context.Background(), params("gpt-5", "hi"))
	var text strings.Builder
	var acc responses.ResponseAccumulator
	var types []string
	for stream.Next() {
		ev := stream.Current()
		types = append(types, ev.Type)
		if ev.Type == "response.output_text.delta" {
			text.WriteString(ev.Delta)
		}
		var wsEv responses.ResponsesServerEventUnion
		if err := json.Unmarshal([]byte(ev.RawJSON()), &wsEv); err != nil {
			t.Fatalf("event does not decode: %v", err)
		}
		if err := acc.AddEvent(wsEv); err != nil {
			t.Fatalf("accumulator refused %s: %v", ev.Type, err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream error: %v", err)
	}
	if text.String() != "Hello from upstream" {
		t.Fatalf("deltas gave %q", text.String())
	}
	snap := acc.Snapshot()
	if snap.TerminalEvent != "response.completed" || snap.OutputText() != "Hello from upstream" {
		t.Fatalf("accumulator: terminal %q text %q", snap.TerminalEvent, snap.OutputText())
	}
	final, err := acc.ReconstructedResponse()
	if err != nil || final.OutputText() != "Hello from upstream" {
		t.Fatalf("reconstructed response: %v %v", final, err)
	}
	if len(types) != 10 || types[0] != "response.created" || types[9] != "response.completed" {
		t.Fatalf("events: %v", types)
	}
	got := up.requests()
	if len(got) != 1 || got[0].Path != "/v1/responses" {
		t.Fatalf("upstream requests: %+v", got)
	}
	if h := got[0].Header.Get("Authorization"); h != "Bearer sk-test-key1" {
		t.Fatalf("upstream authorization %q", h)
	}
}

func TestSDKNonStreamed(t *testing.T) {
	for _, kind := range []string{"openai", "chatgpt"} {
		t.Run(kind, func(t *testing.T) {
			up := newUpstream(t, answerText("Whole answer"))
			acct := openaiAccount("a", up)
			if kind == "chatgpt" {
				acct = chatgptAccount("a", up)
			}
			r := newRelay(t, proxy.Options{}, acct)
			client := r.sdk()
			resp, err := client.Responses.New(context.Background(), params("gpt-5", "hi"))
			if err != nil {
				t.Fatal(err)
			}
			if resp.OutputText() != "Whole answer" || resp.Status != "completed" {
				t.Fatalf("response: status %q text %q", resp.Status, resp.OutputText())
			}
			var sent struct {
				Stream *bool `json:"stream"`
				Store  *bool `json:"store"`
			}
			json.Unmarshal(up.requests()[0].Body, &sent)
			if kind == "chatgpt" {
				// The Codex backend is always streamed and unstored; the relay assembles the answer.
				if sent.Stream == nil || !*sent.Stream || sent.Store == nil || *sent.Store {
					t.Fatalf("chatgpt upstream body: %s", up.requests()[0].Body)
				}
			} else if sent.Stream != nil && *sent.Stream {
				t.Fatalf("openai upstream was asked to stream: %s", up.requests()[0].Body)
			}
		})
	}
}

// codexBody is a request shaped like the Codex CLI's: every tool type it sends, a prompt cache
// key, include, reasoning, and an input history.
const codexBody = `{"model":"gpt-5-codex","instructions":"You are Codex.","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"fix the bug \u00e9\ud83d\ude00"}]},{"type":"function_call","name":"shell","arguments":"{\"cmd\":[\"ls\"]}","call_id":"c1"},{"type":"function_call_output","call_id":"c1","output":"main.go\n"}],` +
	`"tools":[{"type":"function","name":"shell","description":"run","strict":false,"parameters":{"type":"object","properties":{"cmd":{"type":"array","items":{"type":"string"}}},"required":["cmd"]}},` +
	`{"type":"custom","name":"apply_patch","description":"patch","format":{"type":"grammar","syntax":"lark","definition":"start: /.+/"}},` +
	`{"type":"namespace","name":"mcp__fs","tools":[{"type":"function","name":"read","parameters":{"type":"object"}}]},` +
	`{"type":"tool_search"},{"type":"web_search","external_web_access":false}],` +
	`"tool_choice":"auto","parallel_tool_calls":false,"reasoning":{"effort":"high","summary":"auto"},"store":false,"stream":true,` +
	`"include":["reasoning.encrypted_content"],"prompt_cache_key":"019a-session-cafe","text":{"verbosity":"low"}}`

func TestCodexRequestArrivesIntactAndEventsComeBackByteForByte(t *testing.T) {
	for _, kind := range []string{"openai", "chatgpt"} {
		t.Run(kind, func(t *testing.T) {
			events := textEvents("resp_x", "gpt-5-codex", "done")
			// A comment and CRLF line endings must come back untouched too.
			events = append([]string{": keep-alive\r\n\r\n"}, events...)
			up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) { writeEvents(w, events) })
			acct := openaiAccount("a", up)
			if kind == "chatgpt" {
				acct = chatgptAccount("a", up)
			}
			r := newRelay(t, proxy.Options{}, acct)
			resp := r.post(t, "/v1/responses", codexBody, "session-id", "sess-42", "Accept-Encoding", "zstd,gzip")
			if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
				t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			got := readAll(t, resp)
			if want := strings.Join(events, ""); string(got) != want {
				t.Fatalf("events changed on the way:\n got %q\nwant %q", got, want)
			}
			sent := up.requests()[0]
			if !bytes.Equal(sent.Body, []byte(codexBody)) {
				t.Fatalf("body changed on the way:\n got %s\nwant %s", sent.Body, codexBody)
			}
			h := sent.Header
			// The session id goes by the name Codex 0.171 gives it (testdata/codex-0.171/chatgpt-http).
			if h.Get("Session-Id") != "sess-42" || h.Get("Accept") != "text/event-stream" {
				t.Fatalf("session-id %q accept %q", h.Get("Session-Id"), h.Get("Accept"))
			}
			if kind == "chatgpt" {
				if sent.Path != "/backend-api/codex/responses" || h.Get("Authorization") != "Bearer access-a" ||
					h.Get("chatgpt-account-id") != "acct-a" || h.Get("originator") != "codex_cli_rs" ||
					h.Get("OpenAI-Beta") != "responses=experimental" {
					t.Fatalf("chatgpt request: path %s headers %v", sent.Path, h)
				}
			}
		})
	}
}

func TestChatGPTBodyRules(t *testing.T) {
	up := newUpstream(t, answerText("ok"))
	r := newRelay(t, proxy.Options{}, chatgptAccount("a", up))
	// A client that asks for a stored, non-streamed answer still reaches the backend streamed
	// and unstored; the other fields stay as they came.
	resp := r.post(t, "/v1/responses", `{"model":"gpt-5","store":true,"input":"hi","metadata":{"k":"v"}}`)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, readAll(t, resp))
	}
	want := `{"model":"gpt-5","store":false,"input":"hi","metadata":{"k":"v"},"stream":true}`
	if got := string(up.requests()[0].Body); got != want {
		t.Fatalf("upstream body\n got %s\nwant %s", got, want)
	}
	var final map[string]any
	if err := json.Unmarshal(readAll(t, resp), &final); err != nil || final["status"] != "completed" {
		t.Fatalf("assembled answer: %v %v", final, err)
	}
}

func TestBadInputIsRejectedAndNothingForwarded(t *testing.T) {
	up := newUpstream(t, answerText("never"))
	r := newRelay(t, proxy.Options{}, openaiAccount("a", up))
	cases := []struct {
		name, method, path, ctype, body string
		status                          int
		code, param                     string
	}{
		{"malformed JSON", "POST", "/v1/responses", "application/json", `{"model":"gpt-5",`, 400, "invalid_json", ""},
		{"not an object", "POST", "/v1/responses", "application/json", `["model"]`, 400, "invalid_json", ""},
		{"model missing", "POST", "/v1/responses", "application/json", `{"input":"hi"}`, 400, "missing_required_parameter", "model"},
		{"model not a string", "POST", "/v1/responses", "application/json", `{"model":5,"input":"hi"}`, 400, "invalid_type", "model"},
		{"model empty", "POST", "/v1/responses", "application/json", `{"model":"","input":"hi"}`, 400, "invalid_value", "model"},
		{"input an object", "POST", "/v1/responses", "application/json", `{"model":"m","input":{"a":1}}`, 400, "invalid_type", "input"},
		{"input a number", "POST", "/v1/responses", "application/json", `{"model":"m","input":7}`, 400, "invalid_type", "input"},
		{"stream a string", "POST", "/v1/responses", "application/json", `{"model":"m","input":"x","stream":"yes"}`, 400, "invalid_type", "stream"},
		{"duplicate keys", "POST", "/v1/responses", "application/json", `{"model":"m","model":"n","input":"x"}`, 400, "invalid_json", ""},
		{"invalid UTF-8", "POST", "/v1/responses", "application/json", "{\"model\":\"m\xff\",\"input\":\"x\"}", 400, "invalid_json", ""},
		{"text content type", "POST", "/v1/responses", "text/plain", `{"model":"m","input":"x"}`, 415, "unsupported_media_type", ""},
		{"form content type", "POST", "/v1/responses", "application/x-www-form-urlencoded", `model=m`, 415, "unsupported_media_type", ""},
		{"unknown route", "POST", "/v1/nothing", "application/json", `{}`, 404, "unknown_route", ""},
		{"wrong method", "GET", "/v1/responses", "", ``, 405, "method_not_allowed", ""},
		{"wrong method on models", "DELETE", "/v1/models", "", ``, 405, "method_not_allowed", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest(c.method, r.URL+c.path, strings.NewReader(c.body))
			if c.ctype != "" {
				req.Header.Set("Content-Type", c.ctype)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.status, readAll(t, resp))
			}
			e := decodeErr(t, resp)
			if e.Error.Code != c.code || e.Error.Param != c.param {
				t.Fatalf("code %q param %q, want %q %q (%s)", e.Error.Code, e.Error.Param, c.code, c.param, e.Error.Message)
			}
		})
	}
	if n := len(up.requests()); n != 0 {
		t.Fatalf("%d bad requests reached the upstream", n)
	}
}

func TestNoAccountSays503WithAdvice(t *testing.T) {
	r := newRelay(t, proxy.Options{})
	resp := r.post(t, "/v1/responses", `{"model":"m","input":"x"}`)
	if resp.StatusCode != 503 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if e := decodeErr(t, resp); !strings.Contains(e.Error.Message, "codexrelay accounts add") {
		t.Fatalf("message does not say how to add an account: %q", e.Error.Message)
	}
}

func TestNonStreamedUpstreamErrorOfClientIsRelayed(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(400)
		io.WriteString(w, `{"error":{"message":"context too long","type":"invalid_request_error","code":"context_length_exceeded"}}`)
	})
	r := newRelay(t, proxy.Options{}, openaiAccount("a", up), openaiAccount("b", up))
	resp := r.post(t, "/v1/responses", `{"model":"m","input":"x"}`)
	if resp.StatusCode != 400 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if e := decodeErr(t, resp); e.Error.Code != "context_length_exceeded" {
		t.Fatalf("error %+v", e)
	}
	if n := len(up.requests()); n != 1 {
		t.Fatalf("a client error was retried on another account (%d requests)", n)
	}
}
