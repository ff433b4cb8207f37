package proxy_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/codexrelay/codexrelay/app/localapi"
	"github.com/codexrelay/codexrelay/proxy"
)

// A compacting upstream does what the ChatGPT backend does with compaction v2
// (testdata/codex-0.171/compact-*): a request whose input ends with {"type":"compaction_trigger"}
// is answered with one compaction item that stands for the whole history before it, sealed to
// the account; it refuses content sealed by another account; and it answers any other request
// with what it knows: the facts of the input's plain text and of its own compactions. A
// compaction's sealed value carries, readable only to its account in this fake, the facts the
// history held (every word that starts with "FACT-").

// compactionItem is account key's compaction of facts.
func compactionItem(key string, n int, facts []string) string {
	enc := "gAAAAB" + key + "cmp" + base64.RawURLEncoding.EncodeToString([]byte(strings.Join(facts, " ")))
	return fmt.Sprintf(`{"type":"compaction","id":"cmp_%s_%d","encrypted_content":%q}`, key, n, enc)
}

// factsOf is what an account key can read of input: the FACT- words of its plain text and of
// key's own compactions.
func factsOf(key string, input []json.RawMessage) []string {
	var facts []string
	add := func(s string) {
		for _, w := range strings.Fields(s) {
			if strings.HasPrefix(w, "FACT-") {
				facts = append(facts, w)
			}
		}
	}
	for _, raw := range input {
		var it struct {
			Type    string `json:"type"`
			Output  string `json:"output"`
			Enc     string `json:"encrypted_content"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		json.Unmarshal(raw, &it)
		add(it.Output)
		for _, c := range it.Content {
			add(c.Text)
		}
		if own, ok := strings.CutPrefix(it.Enc, "gAAAAB"+key+"cmp"); ok {
			b, _ := base64.RawURLEncoding.DecodeString(own)
			add(string(b))
		}
	}
	return facts
}

// compacter is the upstream handler of account key.
func compacter(key string) func(w http.ResponseWriter, r *http.Request, n int) {
	return func(w http.ResponseWriter, r *http.Request, n int) {
		if r.Method != http.MethodPost {
			http.NotFound(w, r) // a usage read, a socket: not this fake's
			return
		}
		body := readRecorded(r)
		if enc := foreignSealed(body, key); enc != "" {
			status(400, refusal("code", enc))(w, r, n)
			return
		}
		var req struct {
			Input []json.RawMessage `json:"input"`
		}
		json.Unmarshal(body, &req)
		facts := factsOf(key, req.Input)
		item := `{"type":"message","id":"msg_` + key + `","status":"completed","role":"assistant","content":[{"type":"output_text","text":"I know: ` +
			strings.Join(facts, " ") + `","annotations":[]}]}`
		if last := req.Input[len(req.Input)-1]; strings.Contains(string(last), `"compaction_trigger"`) {
			item = compactionItem(key, n, facts)
		}
		writeEvents(w, oneItemEvents(fmt.Sprintf("resp_%s_%d", key, n), item))
	}
}

// oneItemEvents is a Responses stream that answers item.
func oneItemEvents(id, item string) []string {
	resp := func(status, output string) string {
		return fmt.Sprintf(`{"id":%q,"object":"response","created_at":1764460800,"status":%q,"model":"gpt-5-codex","output":%s}`, id, status, output)
	}
	return []string{
		"event: response.created\ndata: " + `{"type":"response.created","sequence_number":0,"response":` + resp("in_progress", "[]") + "}\n\n",
		"event: response.output_item.done\ndata: " + `{"type":"response.output_item.done","sequence_number":1,"output_index":0,"item":` + item + "}\n\n",
		"event: response.completed\ndata: " + `{"type":"response.completed","sequence_number":2,"response":` + resp("completed", "["+item+"]") + "}\n\n",
	}
}

const (
	userSays    = `{"type":"message","role":"user","content":[{"type":"input_text","text":"run the tool"}]}`
	toolCall    = `{"type":"function_call","call_id":"call_1","name":"shell","arguments":"{}"}`
	toolSaid    = `{"type":"function_call_output","call_id":"call_1","output":"the answer is FACT-PAPAYA"}`
	trigger     = `{"type":"compaction_trigger"}`
	userAsks    = `{"type":"message","role":"user","content":[{"type":"input_text","text":"what did the tool say?"}]}`
	limitAnswer = `{"error":{"type":"usage_limit_reached","code":"usage_limit_reached","message":"The usage limit has been reached","resets_at":4102444800}}`
)

// compactOnA has account a compact a conversation whose tool said FACT-PAPAYA and returns its
// compaction item as the client received it.
func compactOnA(t *testing.T, r *relay) string {
	t.Helper()
	items, last := r.streamItems(t, turnBody(userSays, toolCall, toolSaid, trigger))
	if last != "response.completed" || len(items) != 1 || !strings.Contains(items[0], `"type":"compaction"`) {
		t.Fatalf("the compaction request got %s, items %v", last, items)
	}
	return items[0]
}

func TestCompactionRemadeOnTheAccountThatServesAfterARotation(t *testing.T) {
	a := newUpstream(t, sequence(compacter("A"), status(429, limitAnswer)))
	b := newUpstream(t, compacter("B"))
	r := newRelay(t, proxy.Options{}, chatgptAccount("a", a), chatgptAccount("b", b))
	cmp := compactOnA(t, r)

	// A reaches its limit; the conversation goes on on B, which cannot read A's compaction.
	next := turnBody(userSays, cmp, userAsks)
	items, _ := r.streamItems(t, next)
	if len(items) != 1 || !strings.Contains(items[0], "FACT-PAPAYA") {
		t.Fatalf("B's answer forgot what the compaction stood for: %v", items)
	}
	tr := r.lastTrace(t, 2)
	if tr.Account != "b" || tr.CompactionRemade != 1 || tr.SealedOmitted != 0 {
		t.Fatalf("trace: account %q, compactionRemade %d, sealedOmitted %d %v", tr.Account, tr.CompactionRemade, tr.SealedOmitted, tr.SealedOmittedParts)
	}
	kinds := []string{}
	for _, at := range tr.Attempts {
		kinds = append(kinds, at.Account+":"+at.Kind)
	}
	if strings.Join(kinds, ",") != "a:,b:compaction,b:" {
		t.Fatalf("attempts %v, want a's refusal, b's compaction, b's answer", kinds)
	}
	got := b.requests()
	if len(got) != 2 {
		t.Fatalf("b got %d requests, want the re-making and the turn", len(got))
	}
	// The re-making is the request that produced A's compaction, as the client sent it.
	if remake := string(got[0].Body); !strings.Contains(remake, `"compaction_trigger"`) || !strings.Contains(remake, "FACT-PAPAYA") {
		t.Fatalf("the re-making sent %s", remake)
	}
	// The turn carries B's own compaction in A's place; what the client sent is unchanged.
	if turn := string(got[1].Body); strings.Contains(turn, "gAAAABAcmp") || !strings.Contains(turn, "gAAAABBcmp") {
		t.Fatalf("b's turn carries %s", turn)
	}

	// The next request of the conversation reuses B's compaction: no second re-making.
	items, _ = r.streamItems(t, turnBody(userSays, cmp, userAsks, items[0], userAsks))
	if len(items) != 1 || !strings.Contains(items[0], "FACT-PAPAYA") || len(b.requests()) != 3 {
		t.Fatalf("the next turn: %v, b got %d requests", items, len(b.requests()))
	}
	if tr := r.lastTrace(t, 3); tr.CompactionRemade != 1 || len(tr.Attempts) != 1 {
		t.Fatalf("the next turn's trace: compactionRemade %d, attempts %+v", tr.CompactionRemade, tr.Attempts)
	}
}

func TestCompactionPrefersTheAccountThatSealedIt(t *testing.T) {
	a := newUpstream(t, compacter("A"))
	b := newUpstream(t, compacter("B"))
	r := newRelay(t, proxy.Options{}, chatgptAccount("a", a), chatgptAccount("b", b))
	cmp := compactOnA(t, r)
	// B comes first now; the conversation's compaction is A's, and A can serve.
	r.SetAccounts([]proxy.Account{chatgptAccount("b", b), chatgptAccount("a", a)})
	items, _ := r.streamItems(t, turnBody(userSays, cmp, userAsks))
	if len(items) != 1 || !strings.Contains(items[0], "FACT-PAPAYA") {
		t.Fatalf("answer %v", items)
	}
	if tr := r.lastTrace(t, 2); tr.Account != "a" || len(b.requests()) != 0 {
		t.Fatalf("served by %q with b asked %d times; want the sealer, a", tr.Account, len(b.requests()))
	}
}

func TestCompactionLeftOutWhenTheServingAccountCannotRemakeIt(t *testing.T) {
	a := newUpstream(t, sequence(compacter("A"), status(429, limitAnswer)))
	// B takes no compaction request (an upstream without compaction v2), and answers turns.
	b := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if strings.Contains(string(readRecorded(r)), `"compaction_trigger"`) {
			status(400, `{"error":{"type":"invalid_request_error","code":"invalid_value","param":"input","message":"Invalid value: 'compaction_trigger'."}}`)(w, r, n)
			return
		}
		compacter("B")(w, r, n)
	})
	r := newRelay(t, proxy.Options{}, chatgptAccount("a", a), chatgptAccount("b", b))
	cmp := compactOnA(t, r)
	items, _ := r.streamItems(t, turnBody(userSays, cmp, userAsks))
	if len(items) != 1 || strings.Contains(items[0], "FACT-PAPAYA") {
		t.Fatalf("answer %v: B cannot know what A's compaction stood for", items)
	}
	tr := r.lastTrace(t, 2)
	if tr.Account != "b" || tr.CompactionRemade != 0 || tr.SealedOmittedParts["compaction"] != 1 {
		t.Fatalf("trace: account %q, compactionRemade %d, left out %v", tr.Account, tr.CompactionRemade, tr.SealedOmittedParts)
	}
	// B is not asked again for a while: the next turn leaves the compaction out at once.
	n := len(b.requests())
	r.streamItems(t, turnBody(userSays, cmp, userAsks))
	if got := len(b.requests()) - n; got != 1 {
		t.Fatalf("the next turn sent b %d requests, want 1", got)
	}
}

// The real Codex's frames of a remote compaction over a socket (testdata/codex-0.171/compact-ws):
// the turn, the compaction (previous_response_id, the tool's output and the trigger), then, after
// A reached its limit, the new window that carries A's compaction, and the turn after its tool.
// B, which serves the new window, gets its own compaction of the conversation, re-made from
// the compaction request the relay replayed whole from the socket's conversation.
func TestCodexCompactionOverASocketSurvivesARotation(t *testing.T) {
	var mu sync.Mutex
	limited := false
	a := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		mu.Lock()
		done := limited
		mu.Unlock()
		switch {
		case r.Method == http.MethodGet:
			http.NotFound(w, r) // no WebSocket: the relay serves the turns over HTTP
		case done:
			status(429, limitAnswer)(w, r, n)
		default:
			if strings.Contains(string(readRecorded(r)), `"compaction_trigger"`) {
				mu.Lock()
				limited = true // A's limit, once it compacted
				mu.Unlock()
			}
			compacter("A")(w, r, n)
		}
	})
	b := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if r.Method == http.MethodGet {
			http.NotFound(w, r)
			return
		}
		compacter("B")(w, r, n)
	})
	r := newRelay(t, proxy.Options{}, chatgptAccount("a", a), chatgptAccount("b", b))
	c, _, err := websocket.Dial(context.Background(), strings.Replace(r.URL, "http", "ws", 1)+"/v1/responses", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	c.SetReadLimit(64 << 20)
	prev, compaction := "", ""
	for _, capture := range loadCaptures(t, "compact-ws") {
		if capture.Kind != "ws-frame" {
			continue
		}
		var f map[string]json.RawMessage
		json.Unmarshal(capture.Body, &f)
		if _, ok := f["previous_response_id"]; ok {
			f["previous_response_id"], _ = json.Marshal(prev)
		}
		var input []json.RawMessage
		json.Unmarshal(f["input"], &input)
		if n := len(input); n > 0 && strings.Contains(string(input[n-1]), `"type":"compaction"`) {
			input[n-1] = json.RawMessage(compaction) // the new window carries the compaction Codex got
			f["input"], _ = json.Marshal(input)
		}
		frame, _ := json.Marshal(f)
		evs := turn(t, c, string(frame))
		prev = responseID(t, evs)
		for _, ev := range evs {
			if item, _ := json.Marshal(ev["item"]); ev["type"] == "response.output_item.done" && strings.Contains(string(item), `"compaction"`) {
				compaction = string(item)
			}
		}
	}
	if !strings.Contains(compaction, "gAAAABAcmp") {
		t.Fatalf("Codex got no compaction of A's: %q", compaction)
	}
	var remade, carried bool
	for _, got := range b.requests() {
		body := string(got.Body)
		if strings.Contains(body, "gAAAABAcmp") {
			t.Fatalf("B was sent A's compaction: %.300s", body)
		}
		remade = remade || strings.Contains(body, `"compaction_trigger"`) && strings.Contains(body, `"custom_tool_call_output"`)
		carried = carried || strings.Contains(body, "gAAAABBcmp")
	}
	if !remade || !carried {
		t.Fatalf("B re-made the compaction: %v; B's own compaction in its turns: %v", remade, carried)
	}
	if tr := r.lastTrace(t, 4); tr.Account != "b" || tr.CompactionRemade != 1 {
		t.Fatalf("the last turn: account %q, compactionRemade %d", tr.Account, tr.CompactionRemade)
	}
}

// Compaction v1 through the official SDK: a ChatGPT account gets it as a v2 compaction (the
// trigger after the input) and the answer comes back in v1's shape; an API key gets it as it
// came, on its own v1 route; a Chat Completions account summarizes and the relay seals it.
func TestCompactionV1(t *testing.T) {
	params := responses.ResponseCompactParams{Model: "gpt-5-codex",
		Input: responses.ResponseCompactParamsInputUnion{OfString: openai.String("remember FACT-PAPAYA")}}

	chatgpt := newUpstream(t, compacter("A"))
	r := newRelay(t, proxy.Options{}, chatgptAccount("a", chatgpt))
	client := r.sdk()
	got, err := client.Responses.Compact(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Output) != 2 || got.Output[0].Type != "message" || got.Output[1].Type != "compaction" ||
		!strings.HasPrefix(got.Output[1].EncryptedContent, "gAAAABAcmp") || got.Object != "response.compaction" || got.ID == "" {
		t.Fatalf("v1 answer %s", got.RawJSON())
	}
	sent := chatgpt.requests()[0]
	if sent.Path != "/backend-api/codex/responses" || !strings.HasSuffix(string(sent.Body), `{"type":"compaction_trigger"}]}`) &&
		!strings.Contains(string(sent.Body), `{"type":"compaction_trigger"}]`) {
		t.Fatalf("the ChatGPT account got %s %s", sent.Path, sent.Body)
	}

	key := newUpstream(t, status(200, `{"id":"cmp_1","object":"response.compaction","created_at":1,"output":[{"type":"compaction","id":"c1","encrypted_content":"gAAAABkey"}],"usage":{"input_tokens":1,"output_tokens":1,"total_tokens":2}}`))
	r = newRelay(t, proxy.Options{}, openaiAccount("key", key))
	client = r.sdk()
	if got, err = client.Responses.Compact(context.Background(), params); err != nil || got.Output[0].EncryptedContent != "gAAAABkey" {
		t.Fatalf("API key: %v %s", err, got.RawJSON())
	}
	if sent := key.requests()[0]; sent.Path != "/v1/responses/compact" || strings.Contains(string(sent.Body), "compaction_trigger") {
		t.Fatalf("the API key got %s %s", sent.Path, sent.Body)
	}

	// A Chat account summarizes, and the relay seals the summary into the compaction item.
	chat := newUpstream(t, chatSummarizer)
	r = newRelay(t, proxy.Options{}, chatAccount("llama", chat))
	client = r.sdk()
	if got, err = client.Responses.Compact(context.Background(), params); err != nil || len(got.Output) != 2 ||
		got.Output[1].Type != "compaction" || !strings.HasPrefix(got.Output[1].EncryptedContent, "crcmp1.") {
		t.Fatalf("a Chat account: %v %s", err, got.RawJSON())
	}
	if sent := string(chat.requests()[0].Body); !strings.Contains(sent, "CONTEXT CHECKPOINT COMPACTION") || !strings.Contains(sent, "FACT-PAPAYA") {
		t.Fatalf("the Chat account was sent %s", sent)
	}
	// The kept message is an output Message (id, status, a list of parts) and the usage the
	// account reported is there, as the OpenResponses CompactResource wants them.
	var v1 struct {
		Output []struct {
			ID, Status string
			Content    []struct{ Type, Text string }
		}
	}
	json.Unmarshal([]byte(got.RawJSON()), &v1)
	if m := v1.Output[0]; m.ID == "" || m.Status != "completed" || len(m.Content) != 1 || m.Content[0].Type != "input_text" ||
		m.Content[0].Text != "remember FACT-PAPAYA" || got.Usage.TotalTokens != 2 {
		t.Fatalf("a Chat account's v1 answer: %s", got.RawJSON())
	}
	var resp *http.Response

	// Streamed, it is a clear 400, never an empty 200 (issue 49), and nothing goes upstream.
	r = newRelay(t, proxy.Options{}, chatgptAccount("a", chatgpt))
	before := len(chatgpt.requests())
	resp = r.post(t, "/v1/responses/compact", `{"model":"gpt-5-codex","input":"hi","stream":true}`)
	if e := decodeErr(t, resp); resp.StatusCode != 400 || e.Error.Code != "unsupported_parameter" || e.Error.Param != "stream" {
		t.Fatalf("a streamed compaction: %d %+v", resp.StatusCode, e)
	}
	if n := len(chatgpt.requests()); n != before {
		t.Fatalf("a streamed compaction reached the upstream (%d requests)", n-before)
	}
}

// A conversation compacted on A before the relay stopped still has its memory after it starts
// again with A at its limit: the request that produced the compaction was kept on disk, with
// who sealed it.
func TestCompactionSurvivesARestartOfTheRelay(t *testing.T) {
	dir := t.TempDir()
	var limited atomic.Bool
	a := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if limited.Load() {
			status(429, limitAnswer)(w, r, n)
			return
		}
		compacter("A")(w, r, n)
	})
	b := newUpstream(t, compacter("B"))
	serve := func() (*relay, func()) {
		return servedRelay(t, proxy.Options{CompactionDir: dir}, chatgptAccount("a", a), chatgptAccount("b", b))
	}
	r, stop := serve()
	cmp := compactOnA(t, r)
	stop()
	if files, _ := filepath.Glob(dir + "/*.compaction"); len(files) != 1 {
		t.Fatalf("kept on disk: %v", files)
	}

	limited.Store(true)
	r, stop = serve()
	defer stop()
	items, _ := r.streamItems(t, turnBody(userSays, cmp, userAsks))
	if len(items) != 1 || !strings.Contains(items[0], "FACT-PAPAYA") {
		t.Fatalf("after the restart, B's answer forgot what the compaction stood for: %v", items)
	}
	if tr := r.lastTrace(t, 1); tr.Account != "b" || tr.CompactionRemade != 1 {
		t.Fatalf("trace: account %q, compactionRemade %d", tr.Account, tr.CompactionRemade)
	}
}

// Turns of one compacted conversation at once, right after its sealer rested, join one
// re-making on the account that serves them (issue 49: sixteen turns asked it sixteen times).
func TestConcurrentTurnsJoinOneRemake(t *testing.T) {
	const turns = 8
	gate := make(chan struct{})
	var remakes atomic.Int32
	a := newUpstream(t, sequence(compacter("A"), status(429, limitAnswer)))
	b := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if r.Method == http.MethodPost && strings.Contains(string(readRecorded(r)), `"compaction_trigger"`) {
			remakes.Add(1)
			select {
			case <-gate:
			case <-time.After(30 * time.Second):
			}
		}
		compacter("B")(w, r, n)
	})
	r := newRelay(t, proxy.Options{}, chatgptAccount("a", a), chatgptAccount("b", b))
	cmp := compactOnA(t, r)
	// Another conversation meets A's limit: A rests, and B serves it.
	r.streamItems(t, `{"model":"gpt-5-codex","stream":true,"store":false,"prompt_cache_key":"other","input":[`+userAsks+`]}`)

	answers := make(chan string, turns)
	client := &http.Client{Timeout: time.Minute}
	for range turns {
		go func() {
			resp, err := client.Post(r.URL+"/v1/responses", "application/json", strings.NewReader(turnBody(userSays, cmp, userAsks)))
			if err != nil {
				answers <- err.Error()
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			answers <- fmt.Sprint(resp.StatusCode, " ", string(b))
		}()
	}
	eventually(t, "every turn admitted and one re-making asked", func() bool {
		return r.Stats().Requests.InFlight == turns && remakes.Load() >= 1
	})
	// A turn that did not join would ask B again while the first re-making is held: give
	// them a bounded while to show.
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end) && remakes.Load() == 1; {
		time.Sleep(10 * time.Millisecond)
	}
	close(gate)
	for range turns {
		if got := <-answers; !strings.HasPrefix(got, "200 ") || !strings.Contains(got, "FACT-PAPAYA") {
			t.Fatalf("a turn got %.300s", got)
		}
	}
	if n := remakes.Load(); n != 1 {
		t.Fatalf("%d turns at once asked B for %d re-makings, want 1", turns, n)
	}
}

// A conversation compacted on A before a restart, whose compaction request held reasoning A
// sealed, keeps its memory on B after the restart (issue 49: the relay no longer knew who
// sealed the reasoning, sent it to B in the re-making, B refused it, and the compaction was
// left out): a re-making leaves out every sealed value the serving account is not known to
// have sealed.
func TestCompactionWithSealedReasoningSurvivesARestart(t *testing.T) {
	dir := t.TempDir()
	const reasoningA = `{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAAABAreasoning"}`
	var limited atomic.Bool
	a := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if limited.Load() {
			status(429, limitAnswer)(w, r, n)
			return
		}
		compacter("A")(w, r, n)
	})
	b := newUpstream(t, compacter("B"))
	serve := func() (*relay, func()) {
		return servedRelay(t, proxy.Options{CompactionDir: dir}, chatgptAccount("a", a), chatgptAccount("b", b))
	}
	r, stop := serve()
	items, _ := r.streamItems(t, turnBody(userSays, reasoningA, toolCall, toolSaid, trigger))
	if len(items) != 1 || !strings.Contains(items[0], `"type":"compaction"`) {
		t.Fatalf("the compaction request got %v", items)
	}
	cmp := items[0]
	stop()

	limited.Store(true)
	r, stop = serve()
	defer stop()
	// The turn after the compaction carries reasoning A sealed after it, which the restarted
	// relay never saw A make: in a conversation A compacted, it is left out for B, not sent to
	// be refused.
	const laterA = `{"type":"reasoning","id":"rs_2","summary":[],"encrypted_content":"gAAAABAreasoning-later"}`
	items, _ = r.streamItems(t, turnBody(userSays, cmp, laterA, userAsks))
	if len(items) != 1 || !strings.Contains(items[0], "FACT-PAPAYA") {
		t.Fatalf("after the restart, B's answer forgot what the compaction stood for: %v", items)
	}
	if tr := r.lastTrace(t, 1); tr.Account != "b" || tr.CompactionRemade != 1 || tr.SealedRetry || tr.SealedOmittedParts["reasoning"] != 1 {
		t.Fatalf("trace: account %q, compactionRemade %d, retried %v, left out %v", tr.Account, tr.CompactionRemade, tr.SealedRetry, tr.SealedOmittedParts)
	}
	for _, got := range b.requests() {
		if strings.Contains(string(got.Body), "gAAAABAreasoning") {
			t.Fatalf("B was sent A's reasoning: %s", got.Body)
		}
	}
}

// A compaction its own sealer now refuses (its backend's key changed, openai/codex#36704) is
// re-made on it from the request the relay kept, not dropped.
func TestACompactionItsSealerRefusesIsRemadeOnIt(t *testing.T) {
	var rekeyed atomic.Bool
	a := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if rekeyed.Load() {
			compacter("A2")(w, r, n) // the new key: refuses what the old one sealed
			return
		}
		compacter("A")(w, r, n)
	})
	r := newRelay(t, proxy.Options{}, chatgptAccount("a", a))
	cmp := compactOnA(t, r)
	rekeyed.Store(true)
	items, _ := r.streamItems(t, turnBody(userSays, cmp, userAsks))
	if len(items) != 1 || !strings.Contains(items[0], "FACT-PAPAYA") {
		t.Fatalf("after the key change the answer forgot what the compaction stood for: %v", items)
	}
	tr := r.lastTrace(t, 2)
	if tr.Account != "a" || tr.CompactionRemade != 1 || len(tr.SealedOmittedParts) != 0 {
		t.Fatalf("trace: account %q, compactionRemade %d, left out %v", tr.Account, tr.CompactionRemade, tr.SealedOmittedParts)
	}
	// What the client sent is unchanged; the answer's own turn carried the new compaction.
	got := a.requests()
	if last := string(got[len(got)-1].Body); strings.Contains(last, "gAAAABAcmp") || !strings.Contains(last, "gAAAABA2cmp") {
		t.Fatalf("the turn sent %s", last)
	}
}

// chatSummarizer is a Chat Completions server that knows the FACT- words of the messages it is
// sent: asked with Codex's checkpoint prompt it answers a summary of them, else what it knows;
// streamed when asked.
func chatSummarizer(w http.ResponseWriter, r *http.Request, n int) {
	var req struct {
		Stream   bool `json:"stream"`
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	json.Unmarshal(readRecorded(r), &req)
	var facts []string
	checkpoint := false
	for _, m := range req.Messages {
		text := string(m.Content)
		checkpoint = checkpoint || strings.Contains(text, "CONTEXT CHECKPOINT COMPACTION")
		for _, w := range strings.FieldsFunc(text, func(r rune) bool { return r == ' ' || r == '"' || r == '\\' || r == ',' || r == ':' }) {
			if strings.HasPrefix(w, "FACT-") && !slices.Contains(facts, w) {
				facts = append(facts, w)
			}
		}
	}
	text := "I know: " + strings.Join(facts, " ")
	if checkpoint {
		text = "SUMMARY: " + strings.Join(facts, " ")
	}
	if req.Stream {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"id\":\"c%d\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":%q},\"finish_reason\":null}]}\n\n", n, text)
		fmt.Fprintf(w, "data: {\"id\":\"c%d\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n", n)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"c%d","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`, n, text)
}

// A Chat account compacts a conversation (the relay seals the summary it made), and the next
// turn, on the Chat account or on a ChatGPT account, carries the summary as text in the
// compaction's place: the conversation keeps its memory on any account.
func TestAChatAccountCompacts(t *testing.T) {
	chat := newUpstream(t, chatSummarizer)
	gpt := newUpstream(t, compacter("B"))
	llama, b := chatAccount("llama", chat), chatgptAccount("b", gpt)
	b.Disabled = true
	r := newRelay(t, proxy.Options{}, llama, b)
	items, last := r.streamItems(t, turnBody(userSays, toolCall, toolSaid, trigger))
	if last != "response.completed" || len(items) != 1 || !strings.Contains(items[0], `"encrypted_content":"crcmp1.`) ||
		strings.Contains(items[0], "FACT-PAPAYA") {
		t.Fatalf("the compaction: %s, %v", last, items)
	}
	cmp := items[0]
	items, _ = r.streamItems(t, turnBody(userSays, cmp, userAsks))
	if len(items) != 1 || !strings.Contains(items[0], "FACT-PAPAYA") {
		t.Fatalf("the Chat account's next turn forgot the compaction: %v", items)
	}
	if sent := string(chat.requests()[1].Body); strings.Contains(sent, "crcmp1.") || !strings.Contains(sent, "Another language model") {
		t.Fatalf("the Chat account was sent %s", sent)
	}
	// On a ChatGPT account, the relay's compaction is put as text too.
	b.Disabled, llama.Disabled = false, true
	r.SetAccounts([]proxy.Account{llama, b})
	items, _ = r.streamItems(t, turnBody(userSays, cmp, userAsks))
	if len(items) != 1 || !strings.Contains(items[0], "FACT-PAPAYA") {
		t.Fatalf("the ChatGPT account's turn forgot the compaction: %v", items)
	}
	if sent := string(gpt.requests()[0].Body); strings.Contains(sent, "crcmp1.") || !strings.Contains(sent, "SUMMARY: FACT-PAPAYA") {
		t.Fatalf("the ChatGPT account was sent %s", sent)
	}
}

// A conversation compacted on a ChatGPT account that rotates onto a Chat account keeps its
// memory: the relay has the Chat account summarize the request it kept, and puts the summary
// where the sealed compaction stood.
func TestACompactionIsRemadeOnAChatAccount(t *testing.T) {
	a := newUpstream(t, sequence(compacter("A"), status(429, limitAnswer)))
	chat := newUpstream(t, chatSummarizer)
	r := newRelay(t, proxy.Options{}, chatgptAccount("a", a), chatAccount("llama", chat))
	cmp := compactOnA(t, r)
	items, _ := r.streamItems(t, turnBody(userSays, cmp, userAsks))
	if len(items) != 1 || !strings.Contains(items[0], "FACT-PAPAYA") {
		t.Fatalf("the Chat account's answer forgot what the compaction stood for: %v", items)
	}
	tr := r.lastTrace(t, 2)
	if tr.Account != "llama" || tr.CompactionRemade != 1 || tr.SealedOmitted != 0 {
		t.Fatalf("trace: account %q, compactionRemade %d, left out %v", tr.Account, tr.CompactionRemade, tr.SealedOmittedParts)
	}
	got := chat.requests()
	if len(got) != 2 || !strings.Contains(string(got[0].Body), "CONTEXT CHECKPOINT COMPACTION") || strings.Contains(string(got[1].Body), "gAAAABAcmp") {
		t.Fatalf("the Chat account got %d requests: %s", len(got), got[len(got)-1].Body)
	}
}

// servedRelay is a relay that Serve runs (as the app runs it: compactions read back, its sealing
// key kept), and its stop.
func servedRelay(t *testing.T, opt proxy.Options, accounts ...proxy.Account) (*relay, func()) {
	t.Helper()
	s := proxy.New(opt)
	s.SetAccounts(accounts)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln, time.Second) }()
	return &relay{Server: s, URL: "http://" + ln.Addr().String()}, func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("the relay did not stop")
		}
	}
}

// A compaction a Chat account made is read by the relay after a restart: its key is kept in
// the compactions' folder (mode 0600).
func TestAChatCompactionSurvivesARestart(t *testing.T) {
	dir := t.TempDir()
	chat := newUpstream(t, chatSummarizer)
	r, stop := servedRelay(t, proxy.Options{CompactionDir: dir}, chatAccount("llama", chat))
	items, _ := r.streamItems(t, turnBody(userSays, toolCall, toolSaid, trigger))
	stop()
	if len(items) != 1 || !strings.Contains(items[0], "crcmp1.") {
		t.Fatalf("the compaction: %v", items)
	}
	if st, err := os.Stat(dir + "/seal.key"); err != nil || st.Mode().Perm() != 0o600 || st.Size() != 32 {
		t.Fatalf("the sealing key: %v %v", st, err)
	}
	r, stop = servedRelay(t, proxy.Options{CompactionDir: dir}, chatAccount("llama", chat))
	defer stop()
	got, _ := r.streamItems(t, turnBody(userSays, items[0], userAsks))
	if len(got) != 1 || !strings.Contains(got[0], "FACT-PAPAYA") {
		t.Fatalf("after a restart the compaction was forgotten: %v", got)
	}
}

// A window's long poll of /relay/changes does not hold the relay's stop: it answers as the stop
// begins (issue 50: Quit with a window open took 1-2 s; the drain allows a minute here).
func TestALongPollDoesNotHoldTheStop(t *testing.T) {
	started := make(chan struct{}, 1)
	s := proxy.New(proxy.Options{LocalAPI: func(s *proxy.Server) http.Handler {
		h := localapi.Handler(localapi.ServerBackend(s))
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/relay/changes" {
				started <- struct{}{}
			}
			h.ServeHTTP(w, r)
		})
	}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln, time.Minute) }()
	// The generation once the relay serves, as a window reads it before it polls.
	resp, err := http.Get(fmt.Sprintf("http://%s/relay/changes", ln.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	var at struct{ Generation uint64 }
	json.NewDecoder(resp.Body).Decode(&at)
	resp.Body.Close()
	<-started
	polled := make(chan error, 1)
	go func() {
		resp, err := (&http.Client{Timeout: 90 * time.Second}).Get(fmt.Sprintf("http://%s/relay/changes?after=%d&wait=60s", ln.Addr(), at.Generation))
		if err == nil {
			resp.Body.Close()
		}
		polled <- err
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the long poll never reached the relay")
	}
	cancel()
	select {
	case <-done:
	case <-time.After(20 * time.Second): // the poll's 60 s, or the drain's minute
		t.Fatal("the relay's stop waited for the long poll")
	}
	if err := <-polled; err != nil {
		t.Fatalf("the long poll got no answer: %v", err)
	}
}
