package proxy_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/codexrelay/codexrelay/proxy"
)

// A sealing upstream seals each reasoning item it produces to its own key, as the ChatGPT
// backend and the OpenAI API do with reasoning.encrypted_content, and refuses a body that
// carries content sealed by another key: with code invalid_encrypted_content, or (as some
// upstreams do) with code null and only the message.

// sealedItem is a reasoning item sealed to key.
func sealedItem(key string, n int) string {
	return fmt.Sprintf(`{"id":"rs_%s_%d","type":"reasoning","summary":[],"encrypted_content":"gAAAAB%s%d0xyz="}`, key, n, key, n)
}

func functionCall(id string) string {
	return `{"type":"function_call","id":"fc_` + id + `","call_id":"call_` + id + `","name":"shell","arguments":"{\"cmd\":\"ls\"}"}`
}

func functionOutput(id string) string {
	return `{"type":"function_call_output","call_id":"call_` + id + `","output":"README.md\nmain.go"}`
}

// foreignSealed returns the first encrypted_content of body's input not sealed to key.
func foreignSealed(body []byte, key string) string {
	var b struct {
		Input []struct {
			Enc string `json:"encrypted_content"`
		} `json:"input"`
	}
	json.Unmarshal(body, &b)
	for _, it := range b.Input {
		if it.Enc != "" && !strings.HasPrefix(it.Enc, "gAAAAB"+key) {
			return it.Enc
		}
	}
	return ""
}

// refusal is the upstream's answer to foreign sealed content, in one of the two shapes.
func refusal(shape, enc string) string {
	if shape == "null" {
		return `{"error":{"type":"invalid_request_error","code":null,"param":null,"message":"The encrypted content ` + enc[:8] + `...= could not be verified. Reason: Encrypted content could not be decrypted or parsed."}}`
	}
	return `{"error":{"type":"invalid_request_error","code":"invalid_encrypted_content","param":null,"message":"The encrypted content ` + enc[:8] + `...= could not be verified."}}`
}

// sealedEvents is a Responses stream that answers with a reasoning item sealed to key, then
// item (a function call or a message).
func sealedEvents(id, key string, n int, item string) []string {
	r := sealedItem(key, n)
	resp := func(status, output string) string {
		return fmt.Sprintf(`{"id":%q,"object":"response","created_at":1764460800,"status":%q,"model":"gpt-5-codex","output":%s,"usage":{"input_tokens":10,"output_tokens":2,"total_tokens":12}}`, id, status, output)
	}
	evs := []struct{ name, data string }{
		{"response.created", `{"type":"response.created","sequence_number":0,"response":` + resp("in_progress", "[]") + `}`},
		{"response.output_item.done", `{"type":"response.output_item.done","sequence_number":1,"output_index":0,"item":` + r + `}`},
		{"response.output_item.done", `{"type":"response.output_item.done","sequence_number":2,"output_index":1,"item":` + item + `}`},
		{"response.completed", `{"type":"response.completed","sequence_number":3,"response":` + resp("completed", "["+r+","+item+"]") + `}`},
	}
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = "event: " + e.name + "\ndata: " + e.data + "\n\n"
	}
	return out
}

// sealer is an HTTP upstream handler for the account key: refuses foreign sealed content in
// the given shape, else answers with a reasoning item sealed to key and item(n).
func sealer(key, shape string, item func(n int) string) func(w http.ResponseWriter, r *http.Request, n int) {
	return func(w http.ResponseWriter, r *http.Request, n int) {
		body := readRecorded(r)
		if enc := foreignSealed(body, key); enc != "" {
			status(400, refusal(shape, enc))(w, r, n)
			return
		}
		writeEvents(w, sealedEvents(fmt.Sprintf("resp_%s_%d", key, n), key, n, item(n)))
	}
}

// turnBody is a Codex request: streamed, unstored, reasoning content included.
func turnBody(items ...string) string {
	return `{"model":"gpt-5-codex","stream":true,"store":false,"include":["reasoning.encrypted_content"],"prompt_cache_key":"conv-1","input":[` + strings.Join(items, ",") + `]}`
}

// streamItems posts body and returns the output items of the stream it answers, as the
// client received them (the items of response.output_item.done), and its last event's type.
func (r *relay) streamItems(t *testing.T, body string, header ...string) (items []string, lastType string) {
	t.Helper()
	resp := r.post(t, "/v1/responses", body, header...)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, readAll(t, resp))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type string          `json:"type"`
			Item json.RawMessage `json:"item"`
		}
		json.Unmarshal([]byte(data), &ev)
		lastType = ev.Type
		if ev.Type == "response.output_item.done" {
			items = append(items, string(ev.Item))
		}
	}
	return items, lastType
}

func inputOf(t *testing.T, body []byte) string {
	t.Helper()
	return string(field(t, body, "input"))
}

// A Codex tool loop whose account changes between the call and its output: the new account
// gets the conversation without the reasoning the first one sealed, everything else byte for
// byte, and the client never sees a refusal. The account keeps its own reasoning on the next
// turn, and the other's stays out.
func TestSealedItemsLeftOutAfterRotation(t *testing.T) {
	for _, shape := range []string{"code", "null"} {
		t.Run(shape, func(t *testing.T) {
			a := newUpstream(t, nil)
			a.handle = sequence(sealer("A", shape, func(int) string { return functionCall("1") }),
				status(429, `{"error":{"type":"usage_limit_reached","code":"usage_limit_reached","message":"The usage limit has been reached"}}`, "Retry-After", "3600"))
			b := newUpstream(t, sealer("B", shape, func(int) string { return outputItem("done") }))
			r := newRelay(t, proxy.Options{}, openaiAccount("a", a), openaiAccount("b", b))

			user := userItem("list the files")
			out, end := r.streamItems(t, turnBody(user))
			if end != "response.completed" || len(out) != 2 || !strings.Contains(out[0], "gAAAABA0") {
				t.Fatalf("turn 1: %s, %v", end, out)
			}
			reasoningA, call := out[0], out[1]

			turn2 := []string{user, reasoningA, call, functionOutput("1")}
			out, end = r.streamItems(t, turnBody(turn2...))
			if end != "response.completed" {
				t.Fatalf("turn 2 ended with %s", end)
			}
			got := b.requests()
			if len(got) != 1 {
				t.Fatalf("account b got %d requests, want 1 (no refusal, no retry)", len(got))
			}
			if want := "[" + strings.Join([]string{user, call, functionOutput("1")}, ",") + "]"; inputOf(t, got[0].Body) != want {
				t.Fatalf("account b's input:\n got %s\nwant %s", inputOf(t, got[0].Body), want)
			}
			tr := r.lastTrace(t, 2)
			if tr.SealedOmitted != 1 || tr.SealedRetry || tr.Account != "b" || len(tr.Attempts) != 2 || tr.Attempts[0].Status != 429 {
				t.Fatalf("trace: omitted %d retry %v account %q attempts %+v", tr.SealedOmitted, tr.SealedRetry, tr.Account, tr.Attempts)
			}

			// Turn 3 stays on b: its own reasoning goes, a's does not.
			reasoningB := out[0]
			turn3 := append(turn2, reasoningB, out[1], userItem("thanks"))
			if _, end = r.streamItems(t, turnBody(turn3...)); end != "response.completed" {
				t.Fatalf("turn 3 ended with %s", end)
			}
			got = b.requests()
			in := inputOf(t, got[len(got)-1].Body)
			if strings.Contains(in, "gAAAABA") || !strings.Contains(in, reasoningB) {
				t.Fatalf("turn 3's input on b: %s", in)
			}
			st := r.Stats().Requests
			if st.SealedItems < 2 || st.SealedOmitted != 2 || st.SealedRetries != 0 {
				t.Errorf("stats: %+v", st)
			}
		})
	}
}

// Where the relay cannot know who sealed an item (after a restart), the account's refusal is
// retried once on it without that item: not relayed, not the account's failure, said in the
// trace. The relay learns from it: the next turn leaves the item out at once.
func TestSealedRefusalRetriedOnceWithoutTheItem(t *testing.T) {
	for _, shape := range []string{"code", "null"} {
		t.Run(shape, func(t *testing.T) {
			b := newUpstream(t, sealer("B", shape, func(int) string { return outputItem("done") }))
			r := newRelay(t, proxy.Options{RetryBackoff: time.Hour}, openaiAccount("b", b))
			// Sealed by an account of a relay that has since restarted.
			items := []string{userItem("hi"), sealedItem("A", 0), functionCall("1"), functionOutput("1")}
			if _, end := r.streamItems(t, turnBody(items...)); end != "response.completed" {
				t.Fatalf("turn ended with %s", end)
			}
			got := b.requests()
			if len(got) != 2 || !strings.Contains(string(got[0].Body), "gAAAABA0") || strings.Contains(string(got[1].Body), "gAAAABA0") {
				t.Fatalf("b got %d requests; want the refused one, then one without the item", len(got))
			}
			tr := r.lastTrace(t, 1)
			if !tr.SealedRetry || tr.SealedOmitted != 1 || len(tr.Attempts) != 2 || tr.Attempts[0].Status != 400 || tr.Outcome != proxy.OutcomeCompleted {
				t.Fatalf("trace: %+v", tr)
			}
			if st := r.account(t, "b"); st.Failures != 0 || st.State != proxy.StateReady {
				t.Errorf("the refusal was blamed on the account: %+v", st)
			}
			// The next turn pays nothing: the item is left out at once.
			if _, end := r.streamItems(t, turnBody(append(items, userItem("more"))...)); end != "response.completed" {
				t.Fatalf("turn ended with %s", end)
			}
			if got = b.requests(); len(got) != 3 || strings.Contains(string(got[2].Body), "gAAAABA0") {
				t.Fatalf("b got %d requests, the last with the refused item: %v", len(got), len(got) == 3)
			}
			if tr = r.lastTrace(t, 2); tr.SealedRetry || tr.SealedOmitted != 1 {
				t.Errorf("second trace: retry %v omitted %d", tr.SealedRetry, tr.SealedOmitted)
			}
		})
	}
}

// A refusal of sealed content when the request carries none the relay could leave out is the
// client's answer: relayed once, not retried.
func TestSealedRefusalWithNothingToLeaveOutIsRelayed(t *testing.T) {
	b := newUpstream(t, status(400, refusal("code", "gAAAABxxxxxxxx")))
	r := newRelay(t, proxy.Options{}, openaiAccount("b", b))
	resp := r.post(t, "/v1/responses", turnBody(userItem("hi")))
	if e := decodeErr(t, resp); resp.StatusCode != 400 || e.Error.Code != "invalid_encrypted_content" {
		t.Fatalf("status %d, %+v", resp.StatusCode, e)
	}
	if n := len(b.requests()); n != 1 {
		t.Fatalf("%d upstream requests, want 1", n)
	}
}

// A refusal that arrives as the first event of a 200 stream (the WebSocket transport's error
// event, or response.failed) is retried the same way.
func TestSealedRefusalInTheStream(t *testing.T) {
	b := newUpstream(t, nil)
	b.handle = func(w http.ResponseWriter, r *http.Request, n int) {
		if enc := foreignSealed(readRecorded(r), "B"); enc != "" {
			writeEvents(w, []string{"event: response.failed\ndata: " + `{"type":"response.failed","sequence_number":0,"response":{"id":"resp_x","status":"failed","output":[],"error":{"code":"invalid_encrypted_content","message":"The encrypted content could not be verified."}}}` + "\n\n"})
			return
		}
		writeEvents(w, sealedEvents("resp_b", "B", n, outputItem("ok")))
	}
	r := newRelay(t, proxy.Options{}, openaiAccount("b", b))
	if _, end := r.streamItems(t, turnBody(userItem("hi"), sealedItem("A", 1))); end != "response.completed" {
		t.Fatalf("turn ended with %s", end)
	}
	if tr := r.lastTrace(t, 1); !tr.SealedRetry || tr.SealedOmitted != 1 {
		t.Fatalf("trace: %+v", tr)
	}
}

// wsSealer answers WebSocket frames as sealer does HTTP requests.
func wsSealer(key string, item func(n int) string, fail func(n int) string) func(n int, c *websocket.Conn, f map[string]any) bool {
	return func(n int, c *websocket.Conn, f map[string]any) bool {
		ctx := context.Background()
		if fail != nil {
			if ev := fail(n); ev != "" {
				c.Write(ctx, websocket.MessageText, []byte(ev))
				return true
			}
		}
		b, _ := json.Marshal(f)
		if enc := foreignSealed(b, key); enc != "" {
			var e map[string]any
			json.Unmarshal([]byte(refusal("code", enc)), &e)
			c.Write(ctx, websocket.MessageText, []byte(mustJSON(map[string]any{"type": "error", "status": 400, "error": e["error"]})))
			return true
		}
		for _, ev := range sealedEvents(fmt.Sprintf("resp_%s_%d", key, n), key, n, item(n)) {
			c.Write(ctx, websocket.MessageText, []byte(sseData(ev)))
		}
		return true
	}
}

func wsItems(evs []map[string]any) []string {
	var out []string
	for _, ev := range evs {
		if ev["type"] == "response.output_item.done" {
			out = append(out, mustJSON(ev["item"]))
		}
	}
	return out
}

// The same tool loop over a WebSocket: the replay to the new account after the rotation
// leaves out what the first sealed, and the incremental turns after it follow the same rule.
func TestSealedItemsOverASocket(t *testing.T) {
	a, b := newWSUpstream(t), newWSUpstream(t)
	a.answer = wsSealer("A", func(int) string { return functionCall("1") }, func(n int) string {
		if n == 0 {
			return ""
		}
		return `{"type":"error","status":429,"error":{"type":"usage_limit_reached","code":"usage_limit_reached","message":"The usage limit has been reached"}}`
	})
	b.answer = wsSealer("B", func(int) string { return outputItem("done") }, nil)
	r := newRelay(t, proxy.Options{}, a.account("a"), b.account("b"))
	c := r.dial(t)
	user := userItem("list the files")
	evs := turn(t, c, createFrame("", user))
	id, out := responseID(t, evs), wsItems(evs)
	if len(out) != 2 || !strings.Contains(out[0], "gAAAABA0") {
		t.Fatalf("turn 1 items: %v", out)
	}
	// Turn 2: the call's output, on a rotation from a to b.
	evs = turn(t, c, createFrame(id, functionOutput("1")))
	id = responseID(t, evs)
	bf := b.got()
	if len(bf) != 1 {
		t.Fatalf("b got %d frames, want 1", len(bf))
	}
	// The conversation replayed: the user's item and the call as the client and upstream sent
	// them, the new output; a's reasoning left out.
	if in, want := string(field(t, bf[0], "input")), "["+user+","+functionCall("1")+","+functionOutput("1")+"]"; in != want {
		t.Fatalf("b's replay:\n got %s\nwant %s", in, want)
	}
	if tr := r.lastTrace(t, 2); tr.SealedOmitted != 1 || tr.Incremental || tr.Status != 200 || tr.Account != "b" {
		t.Fatalf("trace: omitted %d incremental %v status %d account %q", tr.SealedOmitted, tr.Incremental, tr.Status, tr.Account)
	}
	// Turn 3 stays on b, incremental; a's item is still not sent (it is not in the new items).
	evs = turn(t, c, createFrame(id, userItem("thanks")))
	responseID(t, evs)
	bf = b.got()
	if len(bf) != 2 || string(field(t, bf[1], "previous_response_id")) == "" || bytes.Contains(bf[1], []byte("gAAAABA")) {
		t.Fatalf("turn 3 on b: %d frames, last %s", len(bf), bf[len(bf)-1])
	}
}

// A conversation that never rotated goes as the client sent it, untouched and unscanned,
// even when another conversation rotated.
func TestSealedNothingToDoCostsNothing(t *testing.T) {
	a := newUpstream(t, sealer("A", "code", func(int) string { return outputItem("ok") }))
	r := newRelay(t, proxy.Options{}, openaiAccount("a", a))
	// Another conversation carried an item a refused: the relay left it out and remembers it.
	other := strings.Replace(turnBody(userItem("elsewhere"), sealedItem("Z", 0)), "conv-1", "conv-2", 1)
	if _, end := r.streamItems(t, other); end != "response.completed" || !r.lastTrace(t, 1).SealedRetry {
		t.Fatalf("the other conversation: %s", end)
	}
	out, _ := r.streamItems(t, turnBody(userItem("one")))
	body := turnBody(userItem("one"), out[0], out[1], userItem("two"))
	r.streamItems(t, body)
	got := a.requests()
	if string(got[len(got)-1].Body) != body {
		t.Fatalf("the body changed:\n got %s\nwant %s", got[len(got)-1].Body, body)
	}
	if tr := r.lastTrace(t, 3); tr.SealedOmitted != 0 || tr.SealedRetry || tr.Serialization.Direct != 1 {
		t.Fatalf("trace: %+v", tr)
	}
}

// The same content written two ways (an upstream that escapes "/", a client that does not) is
// the same sealed item.
func TestSealedContentIsComparedByValue(t *testing.T) {
	a := newUpstream(t, nil)
	a.handle = sequence(func(w http.ResponseWriter, r *http.Request, n int) {
		evs := sealedEvents("resp_a", "A", 0, functionCall("1"))
		for i := range evs {
			evs[i] = strings.ReplaceAll(evs[i], "gAAAABA00xyz=", `gAAAABA0\/0xyz=`)
		}
		writeEvents(w, evs)
	}, status(429, `{"error":{"type":"usage_limit_reached","code":"usage_limit_reached","message":"limit"}}`, "Retry-After", "3600"))
	b := newUpstream(t, sealer("B", "code", func(int) string { return outputItem("done") }))
	r := newRelay(t, proxy.Options{}, openaiAccount("a", a), openaiAccount("b", b))
	r.streamItems(t, turnBody(userItem("one")))
	// The client replays the item as it decoded it: "/" unescaped.
	replayed := `{"id":"rs_A_0","type":"reasoning","summary":[],"encrypted_content":"gAAAABA0/0xyz="}`
	if _, end := r.streamItems(t, turnBody(userItem("one"), replayed, functionCall("1"), functionOutput("1"))); end != "response.completed" {
		t.Fatalf("turn 2 ended with %s", end)
	}
	if got := b.requests(); len(got) != 1 || strings.Contains(string(got[0].Body), "gAAAABA0") {
		t.Fatalf("b got %d requests; the item went: %v", len(got), len(got) > 0 && strings.Contains(string(got[0].Body), "gAAAABA0"))
	}
}
