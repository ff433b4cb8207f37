package proxy_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/codexrelay/codexrelay/proxy"
	"github.com/codexrelay/codexrelay/proxy/internal/testkit"
	"github.com/codexrelay/codexrelay/proxy/sse"
)

// Every Response the relay writes itself is whole, as a client that validates the schema
// wants it: the 31 members in the API's order, each of its JSON type, the request's parameters
// echoed as the API echoes them.

// chatMessage is one message a Chat upstream received.
type chatMessage struct {
	Role       string `json:"role"`
	Content    any    `json:"content"`
	ToolCallID string `json:"tool_call_id"`
	ToolCalls  []struct {
		ID string `json:"id"`
	} `json:"tool_calls"`
}

// chatRequest is what a fake Chat server reads of a request.
type chatRequest struct {
	Model          string            `json:"model"`
	Stream         bool              `json:"stream"`
	Messages       []chatMessage     `json:"messages"`
	Tools          []json.RawMessage `json:"tools"`
	ResponseFormat json.RawMessage   `json:"response_format"`
}

// chatServer answers like a Chat Completions server, with what reply says to the n-th request:
// text, or a call of the shell tool with arguments {"cmd":"ls"} (call, its id, not empty); like
// every OpenAI-style server it refuses a tool result whose call is not in the conversation. It
// streams when asked to.
func chatServer(reply func(req chatRequest, n int) (text, call string)) func(w http.ResponseWriter, r *http.Request, n int) {
	return func(w http.ResponseWriter, r *http.Request, n int) {
		var req chatRequest
		json.Unmarshal(readRecorded(r), &req)
		calls := map[string]bool{}
		for _, m := range req.Messages {
			for _, c := range m.ToolCalls {
				calls[c.ID] = true
			}
			if m.Role == "tool" && !calls[m.ToolCallID] {
				status(400, `{"error":{"message":"No tool call found for function call output with call_id `+m.ToolCallID+`.","type":"invalid_request_error","code":null}}`)(w, r, n)
				return
			}
		}
		text, call := reply(req, n)
		usage := `{"prompt_tokens":9,"completion_tokens":4,"total_tokens":13}`
		toolCall := `{"id":"` + call + `","type":"function","function":{"name":"shell","arguments":"{\"cmd\":\"ls\"}"}}`
		if !req.Stream {
			msg, finish := `{"role":"assistant","content":`+mustJSON(text)+`}`, "stop"
			if call != "" {
				msg, finish = `{"role":"assistant","content":null,"tool_calls":[`+toolCall+`]}`, "tool_calls"
			}
			status(200, fmt.Sprintf(`{"id":"chatcmpl-%d","object":"chat.completion","created":1764460800,"model":%s,"choices":[{"index":0,"message":%s,"finish_reason":%q}],"usage":%s}`,
				n, mustJSON(req.Model), msg, finish, usage))(w, r, n)
			return
		}
		chunk := func(delta, finish string) string {
			return fmt.Sprintf(`data: {"id":"chatcmpl-%d","object":"chat.completion.chunk","created":1764460800,"model":%s,"choices":[{"index":0,"delta":%s,"finish_reason":%s}]}`+"\n\n",
				n, mustJSON(req.Model), delta, finish)
		}
		evs := []string{chunk(`{"role":"assistant","content":""}`, "null")}
		if call != "" {
			evs = append(evs, chunk(`{"tool_calls":[{"index":0,`+toolCall[1:]+`]}`, "null"), chunk(`{}`, `"tool_calls"`))
		} else {
			evs = append(evs, chunk(mustJSON(map[string]string{"content": text}), "null"), chunk(`{}`, `"stop"`))
		}
		evs = append(evs, fmt.Sprintf(`data: {"id":"chatcmpl-%d","object":"chat.completion.chunk","created":1764460800,"model":%s,"choices":[],"usage":%s}`+"\n\n", n, mustJSON(req.Model), usage),
			"data: [DONE]\n\n")
		writeEvents(w, evs)
	}
}

// toolLoopChat is a Chat server in a tool loop: a call of the shell tool (id call_<n>) to a
// conversation that ends with a user message, text quoting the result to one that ends with a
// tool's result.
var toolLoopChat = chatServer(func(req chatRequest, n int) (string, string) {
	if last := req.Messages[len(req.Messages)-1]; last.Role == "tool" {
		return fmt.Sprintf("the tool said: %v", last.Content), ""
	}
	return "", fmt.Sprintf("call_%d", n)
})

func chatAccount(name string, u *upstream) proxy.Account {
	a := openaiAccount(name, u)
	a.API = proxy.APIChat
	return a
}

const shellTool = `[{"type":"function","name":"shell","parameters":{"type":"object","properties":{"cmd":{"type":"string"}}}}]`

// responseBody reads the answer to a Responses request the relay made, streamed or not: its
// final response object (each response object checked against the full schema) and its text.
func responseBody(t *testing.T, resp *http.Response) (json.RawMessage, string) {
	t.Helper()
	return readResponse(t, resp, true)
}

// readResponse is responseBody, the schema checked when whole says so (an upstream's answer
// relayed is the upstream's own).
func readResponse(t *testing.T, resp *http.Response, whole bool) (json.RawMessage, string) {
	t.Helper()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, readAll(t, resp))
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b := readAll(t, resp)
		if err := testkit.CheckResponse(b); whole && err != nil {
			t.Fatalf("response: %v\n%s", err, b)
		}
		var r struct {
			Output []struct {
				Content []struct{ Text string }
			}
		}
		json.Unmarshal(b, &r)
		var text strings.Builder
		for _, it := range r.Output {
			for _, c := range it.Content {
				text.WriteString(c.Text)
			}
		}
		return b, text.String()
	}
	rd := sse.NewReader(resp.Body, 1<<20)
	var datas [][]byte
	var final json.RawMessage
	var text strings.Builder
	for {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		datas = append(datas, append([]byte(nil), ev.Data...))
		var d struct {
			Type     string          `json:"type"`
			Delta    string          `json:"delta"`
			Response json.RawMessage `json:"response"`
		}
		json.Unmarshal(ev.Data, &d)
		switch d.Type {
		case "response.output_text.delta":
			text.WriteString(d.Delta)
		case "response.completed", "response.incomplete", "response.failed":
			final = d.Response
		}
	}
	if n, err := testkit.CheckResponseEvents(datas); whole && (err != nil || n < 3) {
		t.Fatalf("%d response objects in the stream: %v", n, err)
	}
	return final, text.String()
}

// echoParams are request parameters the relay's responses must echo (checkEcho).
const echoParams = `"instructions":"be brief","temperature":0.2,"top_p":0.9,"metadata":{"team":"a"},"prompt_cache_key":"conv-1",` +
	`"tools":` + shellTool + `,"tool_choice":"required","max_output_tokens":300,"text":{"verbosity":"low"}`

// checkEcho fails unless resp is whole and repeats echoParams.
func checkEcho(t *testing.T, what string, resp json.RawMessage) {
	t.Helper()
	if err := testkit.CheckResponse(resp); err != nil {
		t.Fatalf("%s: %v\n%s", what, err, resp)
	}
	var r struct {
		Instructions    string            `json:"instructions"`
		Temperature     float64           `json:"temperature"`
		TopP            float64           `json:"top_p"`
		Metadata        map[string]string `json:"metadata"`
		PromptCacheKey  string            `json:"prompt_cache_key"`
		ToolChoice      string            `json:"tool_choice"`
		MaxOutputTokens int               `json:"max_output_tokens"`
		Text            struct {
			Format    struct{ Type string }
			Verbosity string
		}
		Tools []struct{ Name string }
		Store bool
	}
	json.Unmarshal(resp, &r)
	if r.Instructions != "be brief" || r.Temperature != 0.2 || r.TopP != 0.9 || r.Metadata["team"] != "a" || r.PromptCacheKey != "conv-1" ||
		r.ToolChoice != "required" || r.MaxOutputTokens != 300 || r.Text.Format.Type != "text" || r.Text.Verbosity != "low" ||
		len(r.Tools) != 1 || r.Tools[0].Name != "shell" || !r.Store {
		t.Fatalf("%s does not echo the request: %s", what, resp)
	}
}

// streamEvents reads an SSE answer's events' data.
func streamEvents(t *testing.T, resp *http.Response) []map[string]json.RawMessage {
	t.Helper()
	rd := sse.NewReader(resp.Body, 1<<20)
	var evs []map[string]json.RawMessage
	for {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return evs
		}
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(ev.Data, &m); err != nil {
			t.Fatalf("event data %s", ev.Data)
		}
		evs = append(evs, m)
	}
}

// rawUntil reads a socket's events until one of type typ (bounded), each with its members raw.
func rawUntil(t *testing.T, c *websocket.Conn, typ string) []map[string]json.RawMessage {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var evs []map[string]json.RawMessage
	for {
		_, data, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("waiting for %s after %d events: %v", typ, len(evs), err)
		}
		var ev map[string]json.RawMessage
		json.Unmarshal(data, &ev)
		evs = append(evs, ev)
		if string(ev["type"]) == mustJSON(typ) {
			return evs
		}
	}
}

func TestEveryResponseTheRelayWritesIsWhole(t *testing.T) {
	t.Run("bridged, streamed and whole", func(t *testing.T) {
		r := newRelay(t, proxy.Options{}, chatAccount("llama", newUpstream(t, toolLoopChat)))
		for _, stream := range []string{"true", "false"} {
			final, _ := responseBody(t, r.post(t, "/v1/responses", `{"model":"gpt-5","input":"list files","stream":`+stream+`,`+echoParams+`}`))
			checkEcho(t, "stream "+stream, final)
		}
	})
	t.Run("bridged, the upstream broke off", func(t *testing.T) {
		up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
			writeEvents(w, []string{`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}` + "\n\n"})
		})
		r := newRelay(t, proxy.Options{}, chatAccount("llama", up))
		final, _ := responseBody(t, r.post(t, "/v1/responses", `{"model":"gpt-5","input":"hi","stream":true,`+echoParams+`}`))
		checkEcho(t, "response.failed", final)
		if !strings.Contains(string(final), `"status":"failed"`) || !strings.Contains(string(final), `"code":"server_error"`) {
			t.Fatalf("final %s", final)
		}
	})
	t.Run("relayed, the upstream broke off", func(t *testing.T) {
		up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
			writeEvents(w, textEvents("resp_cut", "gpt-5", "partial answer")[:5])
		})
		r := newRelay(t, proxy.Options{}, openaiAccount("api", up))
		evs := streamEvents(t, r.post(t, "/v1/responses", `{"model":"gpt-5","input":"hi","stream":true,`+echoParams+`}`))
		end := evs[len(evs)-1]
		if string(end["type"]) != `"response.failed"` {
			t.Fatalf("the stream ended with %s", end["type"])
		}
		checkEcho(t, "the relay's response.failed", end["response"])
		if !strings.Contains(string(end["response"]), `"id":"resp_cut"`) {
			t.Fatalf("the failure does not name the upstream's response: %s", end["response"])
		}
	})
	t.Run("a socket's warm-up", func(t *testing.T) {
		up := newWSUpstream(t)
		r := newRelay(t, proxy.Options{}, up.account("a"))
		c := r.dial(t)
		c.Write(context.Background(), websocket.MessageText, []byte(`{"type":"response.create","generate":false,"model":"gpt-5","store":true,"input":[`+userItem("prepare")+`],`+echoParams+`}`))
		evs := rawUntil(t, c, "response.completed")
		if len(evs) != 2 || string(evs[0]["type"]) != `"response.created"` {
			t.Fatalf("warm-up answered %d events", len(evs))
		}
		for _, ev := range evs {
			checkEcho(t, string(ev["type"]), ev["response"])
		}
	})
	t.Run("an interrupted socket turn", func(t *testing.T) {
		slow := newSlowStream()
		r := newRelay(t, proxy.Options{}, chatgptAccount("a", newUpstream(t, slow.serve)))
		c := r.dial(t)
		ctx := context.Background()
		c.Write(ctx, websocket.MessageText, []byte(`{"type":"response.create","model":"gpt-5","store":true,"input":[`+userItem("count")+`],`+echoParams+`}`))
		readUntil(t, c, "response.output_text.delta")
		c.Write(ctx, websocket.MessageText, []byte(`{"type":"response.interrupt","response_id":"resp_slow"}`))
		evs := rawUntil(t, c, "response.incomplete")
		end := evs[len(evs)-1]["response"]
		checkEcho(t, "response.incomplete", end)
		if !strings.Contains(string(end), `"incomplete_details":{"reason":"interrupted"}`) || !strings.Contains(string(end), `"id":"resp_slow"`) {
			t.Fatalf("interrupted: %s", end)
		}
	})
}
