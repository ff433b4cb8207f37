package proxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/codexrelay/codexrelay/proxy"
)

// The ChatGPT backend as the Codex CLI 0.171 meets it (testdata/codex-0.171 has what the real
// CLI sends): it takes the tools of an additional_tools input item only with the Lite marker,
// refuses the marker on a model that is not Lite, seals reasoning, a multi-agent call's
// arguments and an agent message's block to the account, refuses anything another account
// sealed (at any depth) and a call output without its call.

const (
	liteTools  = `{"type":"additional_tools","id":"at_1","role":"developer","tools":[{"type":"namespace","name":"functions","description":"","tools":[{"type":"custom","name":"exec","description":"Run JavaScript"}]},{"type":"namespace","name":"collaboration","description":"","tools":[{"type":"function","name":"spawn_agent","parameters":{"type":"object"}}]}]}`
	liteMarker = "X-Openai-Internal-Codex-Responses-Lite"
)

// liteBody is a Codex 0.171 request for model in the Lite form (items after the tools).
func liteBody(model string, items ...string) string {
	return `{"model":"` + model + `","instructions":"","input":[` + strings.Join(append([]string{liteTools}, items...), ",") +
		`],"tool_choice":"auto","parallel_tool_calls":false,"reasoning":{"effort":"low","context":"all_turns"},"store":false,"stream":true,"include":["reasoning.encrypted_content"],"prompt_cache_key":"conv-lite"}`
}

// spawnCall is the model's spawn_agent call as a multi-agent backend produces it (as
// testdata/codex-0.171/multiagent shows): the task's message in its arguments, sealed to key,
// and the list of sealed arguments, which Codex leaves out when it replays the call (replay).
func spawnCall(key, n string) string {
	return `{"type":"function_call","status":"completed","id":"fc_` + n + `","call_id":"call_` + n + `","namespace":"collaboration","name":"spawn_agent","arguments":"{\"message\":\"gAAAAB` + key + `-args-` + n + `=\",\"task_name\":\"helper\"}","encrypted_function_args":["message"]}`
}

func replay(item string) string {
	var m map[string]any
	json.Unmarshal([]byte(item), &m)
	delete(m, "encrypted_function_args")
	return mustJSON(m)
}

func spawnOutput(n string) string {
	return `{"type":"function_call_output","call_id":"call_` + n + `","output":"agent /root/a1 spawned"}`
}

// agentMessage is a sub-agent's task as its request carries it: readable parts and the block
// its parent's call sealed.
func agentMessage(key, n string) string {
	return `{"type":"agent_message","author":"/root","recipient":"/root/a1","content":[{"type":"input_text","text":"task from /root"},{"type":"encrypted_content","encrypted_content":"gAAAAB` + key + `-args-` + n + `="}]}`
}

// sealedValues walks v for every encrypted_content and encrypted_function_args string.
func sealedValues(v any, f func(string)) {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			if s, ok := x.(string); ok && (k == "encrypted_content" || k == "encrypted_function_args") && s != "" {
				f(s)
			}
			sealedValues(x, f)
		}
	case []any:
		for _, x := range t {
			sealedValues(x, f)
		}
	}
}

// backendCheck is what the backend of account key refuses in a request, "" when it takes it.
func backendCheck(key string, lite map[string]bool, r *http.Request, body []byte) (status int, answer string) {
	var b struct {
		Model string           `json:"model"`
		Input []map[string]any `json:"input"`
	}
	json.Unmarshal(body, &b)
	hasTools := false
	calls := map[string]bool{}
	for _, it := range b.Input {
		switch it["type"] {
		case "additional_tools":
			hasTools = true
		case "function_call", "custom_tool_call":
			calls[fmt.Sprint(it["call_id"])] = true
		}
	}
	marked := r.Header.Get(liteMarker) == "true"
	if marked && !lite[b.Model] {
		return 400, `{"error":{"type":"invalid_request_error","code":null,"message":"This model is not supported when using X-OpenAI-Internal-Codex-Responses-Lite"}}`
	}
	foreign := ""
	var all []any
	for _, it := range b.Input {
		all = append(all, it)
		if it["type"] == "function_call" {
			// A call's sealed arguments are inside its arguments.
			var args map[string]any
			json.Unmarshal([]byte(fmt.Sprint(it["arguments"])), &args)
			for _, v := range args {
				if s, ok := v.(string); ok && strings.HasPrefix(s, "gAAAA") && !strings.HasPrefix(s, "gAAAAB"+key) && foreign == "" {
					foreign = s
				}
			}
		}
	}
	sealedValues(all, func(s string) {
		if foreign == "" && !strings.HasPrefix(s, "gAAAAB"+key) {
			foreign = s
		}
	})
	if foreign != "" {
		return 400, `{"error":{"type":"invalid_request_error","code":"invalid_request_body","message":"Encrypted function output content could not be decrypted or decoded."}}`
	}
	for _, it := range b.Input {
		if it["type"] == "function_call_output" && !calls[fmt.Sprint(it["call_id"])] {
			return 400, `{"error":{"type":"invalid_request_error","code":null,"message":"No tool call found for function call output with call_id ` + fmt.Sprint(it["call_id"]) + `."}}`
		}
	}
	if hasTools && !marked {
		return 200, "I have no tools in this conversation."
	}
	return 0, ""
}

// codexBackend answers for account key after backendCheck: a reasoning item sealed to key,
// then items(n), or "ok".
func codexBackend(key string, lite map[string]bool, items func(n int) []string) func(w http.ResponseWriter, r *http.Request, n int) {
	return func(w http.ResponseWriter, r *http.Request, n int) {
		body := readRecorded(r)
		if st, answer := backendCheck(key, lite, r, body); st == 400 {
			status(400, answer)(w, r, n)
			return
		} else if st == 200 {
			writeEvents(w, textEvents(fmt.Sprintf("resp_%s_%d", key, n), "m", answer))
			return
		}
		out := []string{sealedItem(key, n)}
		if items != nil {
			out = append(out, items(n)...)
		} else {
			out = append(out, outputItem("ok"))
		}
		writeEvents(w, itemEvents(fmt.Sprintf("resp_%s_%d", key, n), out))
	}
}

// itemEvents is a Responses stream answering with items.
func itemEvents(id string, items []string) []string {
	resp := func(status, output string) string {
		return fmt.Sprintf(`{"id":%q,"object":"response","created_at":1764460800,"status":%q,"model":"m","output":%s,"usage":{"input_tokens":10,"output_tokens":2,"total_tokens":12}}`, id, status, output)
	}
	evs := []string{"event: response.created\ndata: " + `{"type":"response.created","sequence_number":0,"response":` + resp("in_progress", "[]") + "}\n\n"}
	for i, it := range items {
		evs = append(evs, fmt.Sprintf("event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"sequence_number\":%d,\"output_index\":%d,\"item\":%s}\n\n", i+1, i, it))
	}
	return append(evs, "event: response.completed\ndata: "+`{"type":"response.completed","sequence_number":99,"response":`+resp("completed", "["+strings.Join(items, ",")+"]")+"}\n\n")
}

var liteModels = map[string]bool{"gpt-5.6-sol": true}

// codexCatalog is a ChatGPT model list with a Lite model and one that is not.
func codexCatalog(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, `{"models":[{"slug":"gpt-5.6-sol","use_responses_lite":true},{"slug":"gpt-5.5","use_responses_lite":false}]}`)
}

func withCatalog(u *upstream) *upstream {
	u.mu.Lock()
	u.models = codexCatalog
	u.mu.Unlock()
	return u
}

// Over HTTP a Lite request reaches a ChatGPT account with its marker and its body as Codex
// sent it; an account that takes no Lite body (an API key's, a ChatGPT account asked for a
// model that is not Lite) gets the classic form: tools at the top, no additional_tools item,
// no reasoning.context, no marker.
func TestResponsesLiteOnEveryAccount(t *testing.T) {
	a := withCatalog(newUpstream(t, nil))
	a.handle = sequence(codexBackend("A", liteModels, nil), status(429, `{"error":{"type":"usage_limit_reached","code":"usage_limit_reached","message":"limit"}}`, "Retry-After", "3600"))
	api := newUpstream(t, answerText("from the API"))
	r := newRelay(t, proxy.Options{}, chatgptAccount("a", a), openaiAccount("api", api))

	body := liteBody("gpt-5.6-sol", userItem("run ls"))
	items, _ := r.streamItems(t, body, liteMarker, "true", "Session-Id", "s-1", "Thread-Id", "s-1", "X-Codex-Parent-Thread-Id", "p-1",
		"X-Api-Key", "local-key-secret", "Openai-Organization", "org-client", "Cookie", "c=1", "Connection", "X-Hop", "X-Hop", "1")
	if len(items) != 2 || !strings.Contains(items[1], `"ok"`) {
		t.Fatalf("the Lite model had no tools through the relay: %v", items)
	}
	got := a.requests()[0]
	if got.Header.Get(liteMarker) != "true" {
		t.Fatalf("the marker did not reach the ChatGPT account")
	}
	for _, h := range []string{"Session-Id", "Thread-Id", "X-Codex-Parent-Thread-Id"} {
		if got.Header.Get(h) == "" {
			t.Errorf("%s did not reach the account", h)
		}
	}
	for _, h := range []string{"X-Api-Key", "Openai-Organization", "Cookie", "X-Hop"} {
		if v := got.Header.Get(h); v != "" {
			t.Errorf("the relay's own header %s reached the account: %q", h, v)
		}
	}
	if got.Header.Get("Authorization") != "Bearer access-a" || got.Header.Get("Chatgpt-Account-Id") != "acct-a" {
		t.Errorf("the account's credential: %q %q", got.Header.Get("Authorization"), got.Header.Get("Chatgpt-Account-Id"))
	}
	if hint := got.Header.Get("X-Codex-Routing-Hint"); hint != "model=gpt-5.6-sol" {
		t.Errorf("routing hint %q", hint)
	}
	if string(got.Body) != body {
		t.Errorf("the Lite body changed on its way:\n got %s\nwant %s", got.Body, body)
	}
	if tr := r.lastTrace(t, 1); tr.ResponsesLite != proxy.LiteSent {
		t.Errorf("trace responsesLite %q", tr.ResponsesLite)
	}

	// A rests: the API-key account gets the classic form.
	resp := r.post(t, "/v1/responses", body, liteMarker, "true")
	readAll(t, resp)
	up := api.requests()
	if len(up) != 1 {
		t.Fatalf("the API account got %d requests", len(up))
	}
	classic := up[0]
	if classic.Header.Get(liteMarker) != "" || classic.Header.Get("X-Codex-Routing-Hint") != "" {
		t.Errorf("an API account got the marker or the routing hint: %v", classic.Header)
	}
	var cb struct {
		Tools     []map[string]any `json:"tools"`
		Input     []map[string]any `json:"input"`
		Reasoning map[string]any   `json:"reasoning"`
	}
	json.Unmarshal(classic.Body, &cb)
	if len(cb.Tools) != 2 || cb.Tools[0]["name"] != "functions" || len(cb.Input) != 1 || cb.Input[0]["type"] != "message" {
		t.Errorf("classic form: tools %v input %v", cb.Tools, cb.Input)
	}
	if _, ok := cb.Reasoning["context"]; ok || cb.Reasoning["effort"] != "low" {
		t.Errorf("classic reasoning %v", cb.Reasoning)
	}
	if tr := r.lastTrace(t, 2); tr.ResponsesLite != proxy.LiteConverted || tr.Account != "api" {
		t.Errorf("trace: %+v", tr)
	}
}

// A ChatGPT account asked for a model its catalog says is not Lite gets the classic form
// (the backend refuses the marker there), and the model has its tools.
func TestResponsesLiteNotForANonLiteModel(t *testing.T) {
	a := withCatalog(newUpstream(t, nil))
	a.handle = codexBackend("A", liteModels, nil)
	r := newRelay(t, proxy.Options{}, chatgptAccount("a", a))
	items, _ := r.streamItems(t, liteBody("gpt-5.5", userItem("hi")), liteMarker, "true")
	if len(items) != 2 {
		t.Fatalf("answer %v", items)
	}
	got := a.requests()[0]
	if got.Header.Get(liteMarker) != "" || strings.Contains(string(got.Body), "additional_tools") || !strings.Contains(string(got.Body), `"tools":[`) {
		t.Fatalf("a non-Lite model got the Lite form: %s %v", got.Body, got.Header)
	}
}

// A multi-agent conversation across a rotation: the new account gets neither the call whose
// arguments the first sealed nor its output, and the sub-agent's task keeps its readable part;
// the trace names what was left out, and the client never sees a refusal.
func TestMultiAgentSealedAcrossARotation(t *testing.T) {
	a := newUpstream(t, nil)
	a.handle = sequence(codexBackend("A", liteModels, func(n int) []string { return []string{spawnCall("A", "1")} }),
		status(429, `{"error":{"type":"usage_limit_reached","code":"usage_limit_reached","message":"limit"}}`, "Retry-After", "3600"))
	b := newUpstream(t, codexBackend("B", liteModels, nil))
	r := newRelay(t, proxy.Options{}, chatgptAccount("a", a), chatgptAccount("b", b))

	user := userItem("spawn a helper")
	items, _ := r.streamItems(t, liteBody("gpt-5.6-sol", user), liteMarker, "true")
	if len(items) != 2 {
		t.Fatalf("turn 1: %v", items)
	}
	// The parent goes on with the call's output: A rests, B serves.
	if !strings.Contains(items[1], "encrypted_function_args") {
		t.Fatalf("the call reached the client without its list of sealed arguments: %s", items[1])
	}
	parent := liteBody("gpt-5.6-sol", user, items[0], replay(items[1]), spawnOutput("1"))
	if _, last := r.streamItems(t, parent, liteMarker, "true"); last != "response.completed" {
		t.Fatalf("the parent's turn on B ended with %s", last)
	}
	tr := r.lastTrace(t, 2)
	want := map[string]int{"reasoning": 1, "function_call": 1, "function_call_output": 1}
	if tr.Account != "b" || fmt.Sprint(tr.SealedOmittedParts) != fmt.Sprint(want) || tr.SealedOmitted != 3 {
		t.Fatalf("trace account %q omitted %d %v, want %v", tr.Account, tr.SealedOmitted, tr.SealedOmittedParts, want)
	}
	// The sub-agent's first request, as Codex sends it: the parent's history (the spawn's output
	// "aborted") and its task, sealed by A: B gets the task without the sealed block.
	child := liteBody("gpt-5.6-sol", user, items[0], replay(items[1]), `{"type":"function_call_output","call_id":"call_1","output":"aborted"}`, agentMessage("A", "1"))
	if _, last := r.streamItems(t, child, liteMarker, "true", "X-Openai-Subagent", "collab_spawn", "X-Codex-Parent-Thread-Id", "t-parent"); last != "response.completed" {
		t.Fatalf("the sub-agent's turn ended with %s", last)
	}
	reqs := b.requests()
	got := string(reqs[len(reqs)-1].Body)
	if !strings.Contains(got, `"agent_message"`) || !strings.Contains(got, "task from /root") || strings.Contains(got, "gAAAABA") {
		t.Fatalf("B got the sub-agent's task as %s", got)
	}
	if h := reqs[len(reqs)-1].Header; h.Get("X-Openai-Subagent") != "collab_spawn" || h.Get("X-Codex-Parent-Thread-Id") != "t-parent" {
		t.Errorf("sub-agent headers: %v", h)
	}
	want["agent_message content"] = 1
	if tr := r.lastTrace(t, 3); fmt.Sprint(tr.SealedOmittedParts) != fmt.Sprint(want) {
		t.Errorf("trace %v, want %v", tr.SealedOmittedParts, want)
	}
	// What the client sent is what it keeps: nothing the relay did changed its copy.
	if !strings.Contains(child, "gAAAABA-args-1") {
		t.Fatal("the client's body changed")
	}
}

// While the account that sealed a sub-agent's task is back within the hold, the sub-agent's
// request waits for it rather than go elsewhere without the task.
func TestMultiAgentPrefersTheSealer(t *testing.T) {
	a := newUpstream(t, nil)
	a.handle = sequence(codexBackend("A", liteModels, func(n int) []string { return []string{spawnCall("A", "1")} }),
		status(429, `{"error":{"type":"rate_limit_exceeded","code":"rate_limit_exceeded","message":"slow down"}}`, "Retry-After", "1"),
		codexBackend("A", liteModels, nil))
	b := newUpstream(t, codexBackend("B", liteModels, nil))
	r := newRelay(t, proxy.Options{}, chatgptAccount("a", a), chatgptAccount("b", b))

	user := userItem("spawn")
	items, _ := r.streamItems(t, liteBody("gpt-5.6-sol", user), liteMarker, "true")
	r.streamItems(t, liteBody("gpt-5.6-sol", user, items[0], replay(items[1]), spawnOutput("1")), liteMarker, "true") // A rests a second: B
	if tr := r.lastTrace(t, 2); tr.Account != "b" {
		t.Fatalf("turn 2 went to %q", tr.Account)
	}
	r.streamItems(t, liteBody("gpt-5.6-sol", agentMessage("A", "1")), liteMarker, "true", "X-Openai-Subagent", "collab_spawn")
	tr := r.lastTrace(t, 3)
	if tr.Account != "a" || tr.SealedOmitted != 0 || tr.HeldMs == 0 {
		t.Fatalf("the sub-agent's request went to %q (omitted %d, held %v ms)", tr.Account, tr.SealedOmitted, tr.HeldMs)
	}
	reqs := a.requests()
	if !strings.Contains(string(reqs[len(reqs)-1].Body), "gAAAABA-args-1") {
		t.Fatal("A did not get its own sealed task")
	}
}

// After a restart the relay knows no sealer: B's refusal of A's parts is retried once without
// them, and remembered as B's alone: back on A, A still gets its own parts.
func TestSealedRefusalIsPerAccount(t *testing.T) {
	a := newUpstream(t, codexBackend("A", liteModels, nil))
	b := newUpstream(t, nil)
	b.handle = sequence(codexBackend("B", liteModels, nil), codexBackend("B", liteModels, nil),
		status(429, `{"error":{"type":"usage_limit_reached","code":"usage_limit_reached","message":"limit"}}`, "Retry-After", "3600"))
	r := newRelay(t, proxy.Options{}, chatgptAccount("b", b), chatgptAccount("a", a)) // a fresh relay: B first

	convo := liteBody("gpt-5.6-sol", userItem("go on"), sealedItem("A", 0), replay(spawnCall("A", "7")), spawnOutput("7"), userItem("and?"))
	if _, last := r.streamItems(t, convo, liteMarker, "true"); last != "response.completed" {
		t.Fatalf("B's turn ended with %s", last)
	}
	if tr := r.lastTrace(t, 1); !tr.SealedRetry || tr.Account != "b" {
		t.Fatalf("trace %+v", tr)
	}
	if n := len(b.requests()); n != 2 {
		t.Fatalf("B got %d requests, want the refused one and its retry", n)
	}
	// B rests: A gets the conversation with its own parts.
	if _, last := r.streamItems(t, convo, liteMarker, "true"); last != "response.completed" {
		t.Fatalf("A's turn ended with %s", last)
	}
	got := string(a.requests()[0].Body)
	if !strings.Contains(got, "gAAAABA0") || !strings.Contains(got, "gAAAABA-args-7") {
		t.Fatalf("A did not get its own sealed parts: %s", got)
	}
}

// Ownership is learned from output items only: an upstream that echoes what the client sent
// (metadata, instructions) does not let a client declare content sealed.
func TestSealedOwnershipOnlyFromOutput(t *testing.T) {
	echo := func(w http.ResponseWriter, r *http.Request, n int) {
		resp := `{"id":"resp_e","object":"response","status":"completed","model":"m","metadata":{"encrypted_content":"gAAAABvictim="},"output":[` + outputItem("ok") + `]}`
		writeEvents(w, []string{"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":" + resp + "}\n\n"})
	}
	a := newUpstream(t, nil)
	a.handle = sequence(echo, status(429, `{"error":{"type":"usage_limit_reached","code":"usage_limit_reached","message":"limit"}}`, "Retry-After", "3600"))
	b := newUpstream(t, answerText("ok"))
	r := newRelay(t, proxy.Options{}, openaiAccount("a", a), openaiAccount("b", b))
	readAll(t, r.post(t, "/v1/responses", turnBody(userItem("hi"))))
	readAll(t, r.post(t, "/v1/responses", turnBody(userItem("hi"), `{"type":"reasoning","summary":[],"encrypted_content":"gAAAABvictim="}`)))
	if tr := r.lastTrace(t, 2); tr.Account != "b" || tr.SealedOmitted != 0 {
		t.Fatalf("an echoed value was taken as sealed: %+v", tr)
	}
}

// A socket turn served over HTTP: the frame's Lite key becomes the header (and leaves the
// body's metadata), and the turn state the upstream issues in its headers reaches the client
// as a response.metadata event.
func TestLiteSocketTurnOverHTTP(t *testing.T) {
	a := newUpstream(t, nil)
	a.handle = func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("X-Codex-Turn-State", "ts-http-a")
		codexBackend("A", liteModels, nil)(w, r, n)
	}
	r := newRelay(t, proxy.Options{}, chatgptAccount("a", a))
	c := r.dial(t)
	frame := `{"type":"response.create","model":"gpt-5.6-sol","store":false,"input":[` + liteTools + `,` + userItem("hi") +
		`],"client_metadata":{"ws_request_header_x_openai_internal_codex_responses_lite":"true","x-codex-window-id":"w:0","turn_id":"t1","x-codex-ws-stream-request-start-ms":"1","x-codex-installation-id":"i-1"}}`
	evs := turn(t, c, frame)
	responseID(t, evs)
	if evs[0]["type"] != "response.metadata" || fmt.Sprint(evs[0]["headers"]) != "map[x-codex-turn-state:ts-http-a]" {
		t.Fatalf("the turn state did not reach the socket client: %v", evs[0])
	}
	reqs := a.requests()
	got := reqs[len(reqs)-1]
	if got.Header.Get(liteMarker) != "true" || got.Header.Get("X-Codex-Window-Id") != "w:0" ||
		got.Header.Get("X-Codex-Ws-Stream-Request-Start-Ms") != "" || got.Header.Get("X-Codex-Installation-Id") != "" {
		t.Fatalf("headers of the HTTP turn: %v", got.Header)
	}
	if strings.Contains(string(got.Body), "ws_request_header") || !strings.Contains(string(got.Body), `"turn_id":"t1"`) {
		t.Errorf("body metadata %s", field(t, got.Body, "client_metadata"))
	}
}

// Over an upstream socket the turn state comes in the stream (response.metadata): it is
// relayed, kept on the frames of the turn to the account that issued it, and left out of the
// frame's client_metadata for another account. A response.metadata before a usage limit
// still lets the turn rotate.
func TestSocketTurnStateFromTheStream(t *testing.T) {
	a, b := newWSUpstream(t), newWSUpstream(t)
	a.answer = func(n int, c *websocket.Conn, f map[string]any) bool {
		ctx := context.Background()
		c.Write(ctx, websocket.MessageText, []byte(`{"type":"response.metadata","headers":{"x-codex-turn-state":"ts-ws-a"}}`))
		if n == 0 {
			return false // the text answer follows
		}
		c.Write(ctx, websocket.MessageText, []byte(`{"type":"response.failed","response":{"id":"resp_f","status":"failed","error":{"code":"usage_limit_reached","message":"The usage limit has been reached"}}}`))
		return true
	}
	r := newRelay(t, proxy.Options{}, a.account("a"), b.account("b"))
	c := r.dial(t)
	frame := func(prev, state string) string {
		f := `{"type":"response.create","model":"gpt-5.6-sol","store":false,"input":[` + userItem("hi") + `]`
		if prev != "" {
			f += `,"previous_response_id":"` + prev + `"`
		}
		return f + `,"client_metadata":{"ws_request_header_x_openai_internal_codex_responses_lite":"true","x-codex-turn-state":"` + state + `"}}`
	}
	evs := turn(t, c, frame("", ""))
	if evs[0]["type"] != "response.metadata" {
		t.Fatalf("first event %v", evs[0])
	}
	id := responseID(t, evs)
	// The next frame of the turn replays A's state; A fails at once, B serves.
	evs = turn(t, c, frame(id, "ts-ws-a"))
	if last(evs)["type"] != "response.completed" {
		t.Fatalf("the turn did not rotate: %v", last(evs))
	}
	fa, fb := a.got(), b.got()
	if len(fa) != 2 || len(fb) != 1 {
		t.Fatalf("frames: a %d, b %d", len(fa), len(fb))
	}
	var ma, mb map[string]string
	json.Unmarshal(field(t, fa[1], "client_metadata"), &ma)
	json.Unmarshal(field(t, fb[0], "client_metadata"), &mb)
	if ma["x-codex-turn-state"] != "ts-ws-a" {
		t.Errorf("A's own state did not reach it: %v", ma)
	}
	if _, ok := mb["x-codex-turn-state"]; ok || mb[strings.ToLower("ws_request_header_x_openai_internal_codex_responses_lite")] != "true" {
		t.Errorf("B's frame metadata %v", mb)
	}
	if tr := r.lastTrace(t, 2); !tr.TurnStateOmitted || tr.Account != "b" {
		t.Errorf("trace %+v", tr)
	}
	if st := r.account(t, "a"); st.State != proxy.StateCooldown {
		t.Errorf("A is %s after its usage limit", st.State)
	}
}

// A model_reroute in response.metadata is the model served.
func TestModelRerouteIsTheModelServed(t *testing.T) {
	a := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		evs := textEvents("resp_r", "gpt-5.6-terra", "ok")
		writeEvents(w, append([]string{"event: response.metadata\ndata: {\"type\":\"response.metadata\",\"model_reroute\":{\"from_model\":\"gpt-5.6-sol\",\"to_model\":\"gpt-5.6-terra\"}}\n\n"}, evs...))
	})
	r := newRelay(t, proxy.Options{}, chatgptAccount("a", a))
	items, _ := r.streamItems(t, liteBody("gpt-5.6-sol", userItem("hi")), liteMarker, "true")
	if len(items) != 1 {
		t.Fatalf("items %v", items)
	}
	tr := r.lastTrace(t, 1)
	if tr.ResolvedModel != "gpt-5.6-terra" || tr.ReroutedFrom != "gpt-5.6-sol" {
		t.Fatalf("trace model %q from %q", tr.ResolvedModel, tr.ReroutedFrom)
	}
}

// A Lite body that lost its marker on the way to the relay (an additional_tools item first in
// its input) still reaches a ChatGPT account marked, as codex-lb derives it from the body.
func TestResponsesLiteMarkerFromTheBody(t *testing.T) {
	a := withCatalog(newUpstream(t, nil))
	a.handle = codexBackend("A", liteModels, nil)
	r := newRelay(t, proxy.Options{}, chatgptAccount("a", a))
	if items, _ := r.streamItems(t, liteBody("gpt-5.6-sol", userItem("hi"))); len(items) != 2 {
		t.Fatalf("the model had no tools: %v", items)
	}
	if a.requests()[0].Header.Get(liteMarker) != "true" {
		t.Fatal("no marker")
	}
	// A body that is not Lite gets none.
	r.streamItems(t, strings.Replace(turnBody(userItem("hi")), "gpt-5-codex", "gpt-5.6-sol", 1))
	if got := a.requests()[1].Header.Get(liteMarker); got != "" {
		t.Fatalf("a classic body was marked %q", got)
	}
}
