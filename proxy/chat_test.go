package proxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/codexrelay/codexrelay/proxy"
)

// chatUpstream answers like a Chat Completions server (llama.cpp, vLLM...): a chunk stream with
// text, one tool call with argument deltas and usage, or the same as one JSON completion.
func chatUpstream(w http.ResponseWriter, r *http.Request, n int) {
	var req struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
	}
	json.Unmarshal(readRecorded(r), &req)
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1764460800,"model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":"Hello there","tool_calls":[{"id":"call_1","type":"function","function":{"name":"shell","arguments":"{\"cmd\":\"ls\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":11,"completion_tokens":7,"total_tokens":18}}`, req.Model)
		return
	}
	chunk := func(delta string, finish string) string {
		f := "null"
		if finish != "" {
			f = `"` + finish + `"`
		}
		return fmt.Sprintf(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1764460800,"model":%q,"choices":[{"index":0,"delta":%s,"finish_reason":%s}]}`+"\n\n", req.Model, delta, f)
	}
	writeEvents(w, []string{
		chunk(`{"role":"assistant","content":""}`, ""),
		chunk(`{"content":"Hello"}`, ""),
		chunk(`{"content":" there"}`, ""),
		chunk(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"shell","arguments":""}}]}`, ""),
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"cmd\":"}}]}`, ""),
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"\"ls\"}"}}]}`, ""),
		chunk(`{}`, "tool_calls"),
		fmt.Sprintf(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1764460800,"model":%q,"choices":[],"usage":{"prompt_tokens":11,"completion_tokens":7,"total_tokens":18}}`+"\n\n", req.Model),
		"data: [DONE]\n\n",
	})
}

// toolEvents is a Responses stream with text, a function call and usage.
func toolEvents(w http.ResponseWriter, r *http.Request, n int) {
	msg := `{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hello there","annotations":[]}]}`
	fc := `{"id":"fc_1","type":"function_call","status":"completed","call_id":"call_1","name":"shell","arguments":"{\"cmd\":\"ls\"}"}`
	resp := func(status, output, usage string) string {
		return `{"id":"resp_t","object":"response","created_at":1764460800,"status":"` + status + `","model":"gpt-5","output":` + output + `,"usage":` + usage + `}`
	}
	usage := `{"input_tokens":11,"output_tokens":7,"total_tokens":18,"input_tokens_details":{"cached_tokens":4},"output_tokens_details":{"reasoning_tokens":2}}`
	ev := func(name, data string) string { return "event: " + name + "\ndata: " + data + "\n\n" }
	writeEvents(w, []string{
		ev("response.created", `{"type":"response.created","sequence_number":0,"response":`+resp("in_progress", "[]", "null")+`}`),
		ev("response.output_item.added", `{"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}}`),
		ev("response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":2,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hello"}`),
		ev("response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":3,"item_id":"msg_1","output_index":0,"content_index":0,"delta":" there"}`),
		ev("response.output_item.done", `{"type":"response.output_item.done","sequence_number":4,"output_index":0,"item":`+msg+`}`),
		ev("response.output_item.added", `{"type":"response.output_item.added","sequence_number":5,"output_index":1,"item":{"id":"fc_1","type":"function_call","status":"in_progress","call_id":"call_1","name":"shell","arguments":""}}`),
		ev("response.function_call_arguments.delta", `{"type":"response.function_call_arguments.delta","sequence_number":6,"item_id":"fc_1","output_index":1,"delta":"{\"cmd\":"}`),
		ev("response.function_call_arguments.delta", `{"type":"response.function_call_arguments.delta","sequence_number":7,"item_id":"fc_1","output_index":1,"delta":"\"ls\"}"}`),
		ev("response.output_item.done", `{"type":"response.output_item.done","sequence_number":8,"output_index":1,"item":`+fc+`}`),
		ev("response.completed", `{"type":"response.completed","sequence_number":9,"response":`+resp("completed", "["+msg+","+fc+"]", usage)+`}`),
	})
}

func chatParams() openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model: "gpt-5",
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("be brief"),
			openai.UserMessage("list files"),
		},
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
			Name: "shell", Parameters: openai.FunctionParameters{"type": "object"},
		})},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
}

func TestChatClientThroughEveryAccountKind(t *testing.T) {
	cases := map[string]proxy.Account{}
	chatUp := newUpstream(t, chatUpstream)
	cases["chat account (passthrough)"] = proxy.Account{Name: "local", Kind: proxy.KindOpenAI, API: proxy.APIChat, BaseURL: chatUp.URL + "/v1", Credentials: proxy.Static{Token: "k"}}
	respUp := newUpstream(t, toolEvents)
	cases["responses account (bridged)"] = openaiAccount("resp", respUp)
	cgUp := newUpstream(t, toolEvents)
	cases["chatgpt account (bridged)"] = chatgptAccount("cg", cgUp)
	for name, acct := range cases {
		t.Run(name, func(t *testing.T) {
			r := newRelay(t, proxy.Options{}, acct)
			client := r.sdk()
			stream := client.Chat.Completions.NewStreaming(context.Background(), chatParams())
			var acc openai.ChatCompletionAccumulator
			for stream.Next() {
				acc.AddChunk(stream.Current())
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			if len(acc.Choices) != 1 {
				t.Fatalf("choices %+v", acc.Choices)
			}
			msg := acc.Choices[0].Message
			if msg.Content != "Hello there" || len(msg.ToolCalls) != 1 || msg.ToolCalls[0].Function.Name != "shell" ||
				msg.ToolCalls[0].Function.Arguments != `{"cmd":"ls"}` || acc.Choices[0].FinishReason != "tool_calls" {
				t.Fatalf("accumulated %+v finish %q", msg, acc.Choices[0].FinishReason)
			}
			if acc.Usage.PromptTokens != 11 || acc.Usage.CompletionTokens != 7 || acc.Usage.TotalTokens != 18 {
				t.Fatalf("usage %+v", acc.Usage)
			}
			// Not streamed: one assembled chat.completion.
			done, err := client.Chat.Completions.New(context.Background(), chatParams())
			if err != nil {
				t.Fatal(err)
			}
			if done.Choices[0].Message.Content != "Hello there" || len(done.Choices[0].Message.ToolCalls) != 1 || done.Usage.TotalTokens != 18 {
				t.Fatalf("completion %+v", done)
			}
			if tr := r.lastTrace(t, 2); tr.Route != "chat" || tr.Serialization.Direct == 0 || tr.Serialization.Misses != 0 {
				t.Fatalf("trace %+v", tr)
			}
		})
	}
	// What the Responses account received is a Responses request.
	got := respUp.requests()[0]
	if got.Path != "/v1/responses" || !strings.Contains(string(got.Body), `"instructions":"be brief"`) || !strings.Contains(string(got.Body), `"type":"function"`) {
		t.Fatalf("translated request %s %s", got.Path, got.Body)
	}
}

func TestResponsesClientThroughAChatAccount(t *testing.T) {
	up := newUpstream(t, chatUpstream)
	r := newRelay(t, proxy.Options{}, proxy.Account{Name: "llama", Kind: proxy.KindOpenAI, API: proxy.APIChat, BaseURL: up.URL + "/v1", Credentials: proxy.Static{Token: "k"}})
	client := r.sdk()
	stream := client.Responses.NewStreaming(context.Background(), params("gpt-5", "list files"))
	var text strings.Builder
	var final responses.Response
	var args string
	for stream.Next() {
		ev := stream.Current()
		switch ev.Type {
		case "response.output_text.delta":
			text.WriteString(ev.Delta)
		case "response.function_call_arguments.delta":
			args += ev.Delta
		case "response.completed":
			final = ev.Response
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if text.String() != "Hello there" || args != `{"cmd":"ls"}` || final.Status != "completed" || final.Usage.TotalTokens != 18 || final.OutputText() != "Hello there" {
		t.Fatalf("text %q args %q final %+v", text.String(), args, final)
	}
	got := up.requests()[0]
	if got.Path != "/v1/chat/completions" || !strings.Contains(string(got.Body), `"messages"`) {
		t.Fatalf("upstream %s %s", got.Path, got.Body)
	}
	resp, err := client.Responses.New(context.Background(), params("gpt-5", "list files"))
	if err != nil || resp.OutputText() != "Hello there" {
		t.Fatalf("non-streamed: %v %v", resp, err)
	}
}

func TestChatRotatesAcrossKinds(t *testing.T) {
	limited := newUpstream(t, status(429, `{"error":{"message":"slow down","code":"rate_limit_exceeded"}}`))
	good := newUpstream(t, toolEvents)
	r := newRelay(t, proxy.Options{},
		proxy.Account{Name: "chat", Kind: proxy.KindOpenAI, API: proxy.APIChat, BaseURL: limited.URL + "/v1", Credentials: proxy.Static{Token: "k"}},
		chatgptAccount("cg", good))
	resp := r.post(t, "/v1/chat/completions", `{"model":"gpt-5","messages":[{"role":"user","content":"hi"}]}`)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(body), "Hello there") {
		t.Fatalf("status %d %s", resp.StatusCode, body)
	}
	tr := r.lastTrace(t, 1)
	if len(tr.Attempts) != 2 || tr.Attempts[0].Status != 429 || r.account(t, "chat").State != "cooldown" {
		t.Fatalf("trace %+v", tr.Attempts)
	}
}

func TestUntranslatableRequestIs400(t *testing.T) {
	up := newUpstream(t, chatUpstream)
	r := newRelay(t, proxy.Options{}, proxy.Account{Name: "llama", Kind: proxy.KindOpenAI, API: proxy.APIChat, BaseURL: up.URL + "/v1", Credentials: proxy.Static{Token: "k"}})
	resp := r.post(t, "/v1/responses", `{"model":"gpt-5","input":[{"type":"reasoning","id":"rs_1","summary":[]}]}`)
	if resp.StatusCode != 400 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if e := decodeErr(t, resp); e.Error.Code != "untranslatable_request" {
		t.Fatalf("error %+v", e.Error)
	}
	if len(up.requests()) != 0 {
		t.Fatal("an untranslatable request went upstream")
	}
}
