package proxy_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/codexrelay/codexrelay/proxy"
)

// A Responses client served by a Chat Completions account continues its conversation over HTTP
// as the OpenAI SDKs do: the next request names the last response in previous_response_id and
// carries only the new items (a tool's result). The relay made those responses; it replays the
// conversation it kept.

// idOf is a response object's id.
func idOf(t *testing.T, resp json.RawMessage) string {
	t.Helper()
	var r struct{ ID string }
	if json.Unmarshal(resp, &r) != nil || r.ID == "" {
		t.Fatalf("no response id in %s", resp)
	}
	return r.ID
}

// roles is the roles of the messages a Chat upstream received in request n, with each tool
// message's call id.
func roles(t *testing.T, u *upstream, n int) string {
	t.Helper()
	var body struct{ Messages []chatMessage }
	json.Unmarshal(u.requests()[n].Body, &body)
	var out []string
	for _, m := range body.Messages {
		switch {
		case m.Role == "tool":
			out = append(out, "tool "+m.ToolCallID+" "+fmt.Sprint(m.Content))
		case len(m.ToolCalls) > 0:
			out = append(out, "assistant call "+m.ToolCalls[0].ID)
		default:
			out = append(out, m.Role)
		}
	}
	return strings.Join(out, ", ")
}

func TestHTTPContinuationOfABridgedResponseIsReplayed(t *testing.T) {
	up := newUpstream(t, toolLoopChat)
	r := newRelay(t, proxy.Options{}, chatAccount("llama", up))

	// Turn 1: the model calls the tool.
	first, _ := responseBody(t, r.post(t, "/v1/responses", `{"model":"gpt-5","input":"list files","tools":`+shellTool+`}`))
	id1 := idOf(t, first)
	if !strings.Contains(string(first), `"call_id":"call_0"`) || !strings.Contains(string(first), `"previous_response_id":null`) {
		t.Fatalf("first answer: %s", first)
	}
	// Turn 2, streamed: only the tool's result, after id1.
	cont := func(prev, items string, extra string) *http.Response {
		return r.post(t, "/v1/responses", `{"model":"gpt-5","tools":`+shellTool+`,"previous_response_id":`+mustJSON(prev)+`,"input":`+items+extra+`}`)
	}
	second, text := responseBody(t, cont(id1, `[{"type":"function_call_output","call_id":"call_0","output":"a.txt"}]`, `,"stream":true`))
	if text != "the tool said: a.txt" || !strings.Contains(string(second), `"previous_response_id":`+mustJSON(id1)) {
		t.Fatalf("second answer %q: %s", text, second)
	}
	if got := roles(t, up, 1); got != "user, assistant call call_0, tool call_0 a.txt" {
		t.Fatalf("the upstream got %s", got)
	}
	tr := r.lastTrace(t, 2)
	if tr.Replayed == nil || tr.Replayed.PreviousResponseID != id1 || tr.Replayed.Items != 2 || tr.Replayed.Bytes == 0 {
		t.Fatalf("trace replayed %+v", tr.Replayed)
	}
	id2 := idOf(t, second)

	// Turn 3 follows turn 2: the whole conversation, its answers included.
	third, _ := responseBody(t, cont(id2, `"what else?"`, ""))
	if got := roles(t, up, 2); got != "user, assistant call call_0, tool call_0 a.txt, assistant, user" {
		t.Fatalf("the upstream got %s", got)
	}
	if tr := r.lastTrace(t, 3); tr.Replayed == nil || tr.Replayed.Items != 4 {
		t.Fatalf("trace replayed %+v", tr.Replayed)
	}
	// A fork: turn 1 continued again, with another result; turn 2's branch stays.
	responseBody(t, cont(id1, `[{"type":"function_call_output","call_id":"call_0","output":"b.txt"}]`, ""))
	if got := roles(t, up, 3); got != "user, assistant call call_0, tool call_0 b.txt" {
		t.Fatalf("the fork sent %s", got)
	}
	responseBody(t, cont(idOf(t, third), `"and?"`, ""))
	if got := roles(t, up, 4); !strings.HasPrefix(got, "user, assistant call call_0, tool call_0 a.txt, assistant, user, assistant call call_2, user") {
		t.Fatalf("turn 3's branch sent %s", got)
	}

	// A response nobody holds is not found, as the API says it; nothing goes upstream.
	n := len(up.requests())
	resp := cont("resp_unknown", `[{"type":"function_call_output","call_id":"call_0","output":"a.txt"}]`, "")
	e := decodeErr(t, resp)
	if resp.StatusCode != 400 || e.Error.Code != "previous_response_not_found" || e.Error.Param != "previous_response_id" ||
		e.Error.Message != "Previous response with id 'resp_unknown' not found." || e.Error.Type != "invalid_request_error" {
		t.Fatalf("unknown previous response: %d %+v", resp.StatusCode, e.Error)
	}
	if len(up.requests()) != n {
		t.Fatal("a continuation of an unknown response went upstream")
	}
	// A response made with store:false is not kept, as the API keeps none.
	unstored, _ := responseBody(t, r.post(t, "/v1/responses", `{"model":"gpt-5","input":"list files","store":false,"tools":`+shellTool+`}`))
	if !strings.Contains(string(unstored), `"store":false`) {
		t.Fatalf("store not echoed: %s", unstored)
	}
	if resp := cont(idOf(t, unstored), `"hi"`, ""); resp.StatusCode != 400 || decodeErr(t, resp).Error.Code != "previous_response_not_found" {
		t.Fatalf("continuing an unstored response: %d", resp.StatusCode)
	}
}

// The kept conversations share the sockets' budget: past it the least recently used are
// forgotten, and continuing one is previous_response_not_found, never a silent drop.
func TestServedConversationsAreBounded(t *testing.T) {
	up := newUpstream(t, toolLoopChat)
	r := newRelay(t, proxy.Options{ConversationBudget: 16 << 10}, chatAccount("llama", up))
	long := strings.Repeat("x", 2000)
	var ids []string
	for i := range 12 { // about 2.5 KB each: the budget holds 6
		resp, _ := responseBody(t, r.post(t, "/v1/responses", `{"model":"gpt-5","input":`+mustJSON(fmt.Sprintf("%d %s", i, long))+`}`))
		ids = append(ids, idOf(t, resp))
	}
	resp := r.post(t, "/v1/responses", `{"model":"gpt-5","previous_response_id":`+mustJSON(ids[0])+`,"input":"more"}`)
	if resp.StatusCode != 400 || decodeErr(t, resp).Error.Code != "previous_response_not_found" {
		t.Fatalf("the oldest conversation: status %d", resp.StatusCode)
	}
	responseBody(t, r.post(t, "/v1/responses", `{"model":"gpt-5","previous_response_id":`+mustJSON(ids[11])+`,"input":"more"}`))
	if got := roles(t, up, len(up.requests())-1); got != "user, assistant call call_11, user" {
		t.Fatalf("the newest conversation replayed %s", got)
	}
}

// With a Responses account beside the Chat one: a response the relay made reaches the
// Responses account replayed (no upstream knows its id), and one the relay does not hold goes
// up as it came (the Responses upstream keeps its own).
func TestContinuationAcrossAccountKinds(t *testing.T) {
	chat := newUpstream(t, sequence(toolLoopChat, status(429, `{"error":{"message":"slow down","type":"rate_limit_exceeded","code":"rate_limit_exceeded"}}`)))
	api := newUpstream(t, answerText("from the api"))
	r := newRelay(t, proxy.Options{}, chatAccount("llama", chat), openaiAccount("api", api))
	first, _ := responseBody(t, r.post(t, "/v1/responses", `{"model":"gpt-5","input":"list files","tools":`+shellTool+`}`))
	// llama is limited now: the continuation is served by api.
	_, text := readResponse(t, r.post(t, "/v1/responses", `{"model":"gpt-5","previous_response_id":`+mustJSON(idOf(t, first))+
		`,"input":[{"type":"function_call_output","call_id":"call_0","output":"a.txt"}]}`), false)
	if text != "from the api" {
		t.Fatalf("answer %q", text)
	}
	got := api.requests()[0].Body
	var body struct {
		Input []struct {
			Type string `json:"type"`
		}
		PreviousResponseID *string `json:"previous_response_id"`
	}
	json.Unmarshal(got, &body)
	var kinds []string
	for _, it := range body.Input {
		kinds = append(kinds, it.Type)
	}
	if strings.Join(kinds, ",") != "message,function_call,function_call_output" || body.PreviousResponseID != nil {
		t.Fatalf("api got %s", got)
	}
	// A response the relay did not make: as it came.
	readResponse(t, r.post(t, "/v1/responses", `{"model":"gpt-5","previous_response_id":"resp_api_7","input":"hi"}`), false)
	if got := api.requests()[1].Body; !strings.Contains(string(got), `"previous_response_id":"resp_api_7"`) || !strings.Contains(string(got), `"input":"hi"`) {
		t.Fatalf("api got %s", got)
	}
}
