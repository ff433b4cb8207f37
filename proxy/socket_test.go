package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/openai/openai-go/v3/responses"

	"github.com/codexrelay/codexrelay/proxy"
)

// wsUpstream is an upstream that speaks the Responses API over WebSocket, as the ChatGPT
// backend does: it keeps, per socket, the responses it answered (store:false), refuses a
// previous_response_id it did not answer on that socket, and records every frame.
type wsUpstream struct {
	*httptest.Server
	mu      sync.Mutex
	frames  [][]byte
	headers []http.Header // one per socket
	// answer, when set, answers the n-th frame (0-based, all sockets) instead of the text.
	answer func(n int, c *websocket.Conn, frame map[string]any) bool
	// refuse, when set, answers the upgrade with this status.
	refuse int
	closed int // sockets whose client went away
}

func newWSUpstream(t testing.TB) *wsUpstream {
	u := &wsUpstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		refuse := u.refuse
		u.mu.Unlock()
		if refuse != 0 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(refuse)
			fmt.Fprintf(w, `{"error":{"type":"usage_limit_reached","code":"usage_limit_reached","message":"limit reached for sk-refused-secret"}}`)
			return
		}
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		c.SetReadLimit(64 << 20)
		u.mu.Lock()
		u.headers = append(u.headers, r.Header.Clone())
		u.mu.Unlock()
		known := map[string]bool{}
		for {
			_, data, err := c.Read(context.Background())
			if err != nil {
				u.mu.Lock()
				u.closed++
				u.mu.Unlock()
				return
			}
			u.mu.Lock()
			n := len(u.frames)
			u.frames = append(u.frames, data)
			answer := u.answer
			u.mu.Unlock()
			var f map[string]any
			json.Unmarshal(data, &f)
			if answer != nil && answer(n, c, f) {
				continue
			}
			if p, _ := f["previous_response_id"].(string); p != "" && !known[p] {
				c.Write(context.Background(), websocket.MessageText, []byte(`{"type":"error","status":400,"error":{"type":"invalid_request_error","code":"previous_response_not_found","message":"Previous response with id '`+p+`' not found.","param":"previous_response_id"}}`))
				continue
			}
			id := fmt.Sprintf("resp_ws_%d", n)
			known[id] = true
			model, _ := f["model"].(string)
			for _, ev := range textEvents(id, model, fmt.Sprintf("answer %d", n)) {
				c.Write(context.Background(), websocket.MessageText, []byte(sseData(ev)))
			}
		}
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *wsUpstream) got() [][]byte {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([][]byte(nil), u.frames...)
}

func (u *wsUpstream) account(name string) proxy.Account {
	return proxy.Account{Name: name, Kind: proxy.KindChatGPT, BaseURL: u.URL + "/backend-api/codex",
		Credentials: proxy.Static{Token: "access-" + name, AccountID: "acct-" + name}}
}

// sseData is the data of one SSE event.
func sseData(ev string) string {
	return strings.TrimSuffix(ev[strings.Index(ev, "data: ")+6:], "\n\n")
}

// dial opens a WebSocket to the relay's /v1/responses.
func (r *relay) dial(t testing.TB, header ...string) *websocket.Conn {
	t.Helper()
	h := http.Header{}
	for i := 0; i+1 < len(header); i += 2 {
		h.Set(header[i], header[i+1])
	}
	c, _, err := websocket.Dial(context.Background(), strings.Replace(r.URL, "http", "ws", 1)+"/v1/responses", &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadLimit(64 << 20)
	t.Cleanup(func() { c.CloseNow() })
	return c
}

// turn sends frame and reads events up to the terminal one.
func turn(t testing.TB, c *websocket.Conn, frame string) []map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, []byte(frame)); err != nil {
		t.Fatal(err)
	}
	return readTurn(t, ctx, c)
}

func readTurn(t testing.TB, ctx context.Context, c *websocket.Conn) []map[string]any {
	t.Helper()
	var evs []map[string]any
	for {
		_, data, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("reading the turn's events (after %d): %v", len(evs), err)
		}
		var ev map[string]any
		if err := json.Unmarshal(data, &ev); err != nil {
			t.Fatalf("event is not JSON: %s", data)
		}
		evs = append(evs, ev)
		switch ev["type"] {
		case "response.completed", "response.failed", "response.incomplete", "error":
			return evs
		}
	}
}

// last is the terminal event of a turn; responseID its response's id.
func last(evs []map[string]any) map[string]any { return evs[len(evs)-1] }

func responseID(t testing.TB, evs []map[string]any) string {
	t.Helper()
	ev := last(evs)
	if ev["type"] != "response.completed" {
		t.Fatalf("turn ended with %v, want response.completed", ev)
	}
	return ev["response"].(map[string]any)["id"].(string)
}

func outputText(evs []map[string]any) string {
	var b strings.Builder
	for _, ev := range evs {
		if ev["type"] == "response.output_text.delta" {
			b.WriteString(ev["delta"].(string))
		}
	}
	return b.String()
}

func userItem(text string) string {
	return `{"type":"message","role":"user","content":[{"type":"input_text","text":` + mustJSON(text) + `}]}`
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func createFrame(prev string, items ...string) string {
	f := `{"type":"response.create","model":"gpt-5-codex","instructions":"be brief","store":false,"input":[` + strings.Join(items, ",") + `]`
	if prev != "" {
		f += `,"previous_response_id":` + mustJSON(prev)
	}
	return f + "}"
}

// outputItem is the output item textEvents answers with text.
func outputItem(text string) string {
	return fmt.Sprintf(`{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":%q,"annotations":[]}]}`, text)
}

func field(t testing.TB, frame []byte, key string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(frame, &m); err != nil {
		t.Fatalf("upstream body is not JSON: %s", frame)
	}
	return m[key]
}

// A conversation over a socket reaches a WebSocket upstream on one socket, the later turns
// as the client sent them: only the new items.
func TestSocketIncrementalTurnsOnOneUpstreamSocket(t *testing.T) {
	up := newWSUpstream(t)
	r := newRelay(t, proxy.Options{}, up.account("a"))
	c := r.dial(t)

	evs := turn(t, c, createFrame("", userItem("one"), userItem("two")))
	if got := outputText(evs); got != "answer 0" {
		t.Fatalf("first turn answered %q", got)
	}
	id := responseID(t, evs)
	for i, text := range []string{"three", "four"} {
		evs = turn(t, c, createFrame(id, userItem(text)))
		if got, want := outputText(evs), fmt.Sprintf("answer %d", i+1); got != want {
			t.Fatalf("turn %d answered %q, want %q", i+2, got, want)
		}
		id = responseID(t, evs)
	}
	frames := up.got()
	if len(frames) != 3 || len(up.headers) != 1 {
		t.Fatalf("upstream got %d frames on %d sockets, want 3 on 1", len(frames), len(up.headers))
	}
	for i, f := range frames[1:] {
		if string(field(t, f, "input")) != "["+userItem([]string{"three", "four"}[i])+"]" {
			t.Errorf("turn %d went up with input %s, want only the new item", i+2, field(t, f, "input"))
		}
		if string(field(t, f, "previous_response_id")) != mustJSON(fmt.Sprintf("resp_ws_%d", i)) {
			t.Errorf("turn %d went up with previous_response_id %s", i+2, field(t, f, "previous_response_id"))
		}
		if field(t, f, "stream") != nil {
			t.Errorf("a frame carries stream: %s", f)
		}
	}
	h := up.headers[0]
	if h.Get("OpenAI-Beta") != proxy.SocketBeta || h.Get("Authorization") != "Bearer access-a" || h.Get("chatgpt-account-id") != "acct-a" {
		t.Errorf("upstream socket headers: %v", h)
	}
	tr := r.lastTrace(t, 3)
	if tr.Transport != proxy.TransportWebSocket || !tr.Incremental || tr.UpstreamBytes != int64(len(frames[2])) || tr.ClientBytes == 0 {
		t.Errorf("trace: transport %q incremental %v upstreamBytes %d (frame %d) clientBytes %d", tr.Transport, tr.Incremental, tr.UpstreamBytes, len(frames[2]), tr.ClientBytes)
	}
	if n := r.Stats().Requests.WebSockets; n != 1 {
		t.Errorf("websockets_open = %d, want 1", n)
	}
	if resp, err := http.Get(r.URL + "/metrics"); err != nil || !strings.Contains(string(readAll(t, resp)), "\ncodexrelay_websockets_open 1\n") {
		t.Errorf("/metrics does not count the open socket (%v)", err)
	}
	c.Close(websocket.StatusNormalClosure, "")
	eventually(t, "the socket to close", func() bool { return r.Stats().Requests.WebSockets == 0 })
}

// An account that speaks only HTTP gets each turn with the whole conversation replayed: the
// client's items and the upstream's output items, byte for byte.
func TestSocketReplaysTheConversationToAnHTTPUpstream(t *testing.T) {
	var bodies [][]byte
	var mu sync.Mutex
	u := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if r.Method == http.MethodGet {
			http.NotFound(w, r) // no WebSocket here
			return
		}
		mu.Lock()
		bodies = append(bodies, readRecorded(r))
		k := len(bodies) - 1
		mu.Unlock()
		writeEvents(w, textEvents(fmt.Sprintf("resp_http_%d", k), "gpt-5-codex", fmt.Sprintf("answer %d", k)))
	})
	r := newRelay(t, proxy.Options{}, openaiAccount("api", u))
	c := r.dial(t)
	id := responseID(t, turn(t, c, createFrame("", userItem("one"))))
	id = responseID(t, turn(t, c, createFrame(id, userItem("two"))))
	responseID(t, turn(t, c, createFrame(id, userItem("three"))))
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 3 {
		t.Fatalf("upstream got %d requests, want 3", len(bodies))
	}
	want := "[" + strings.Join([]string{userItem("one"), outputItem("answer 0"), userItem("two"), outputItem("answer 1"), userItem("three")}, ",") + "]"
	if got := string(field(t, bodies[2], "input")); got != want {
		t.Fatalf("third turn's input:\n got %s\nwant %s", got, want)
	}
	if field(t, bodies[2], "previous_response_id") != nil || field(t, bodies[2], "type") != nil || string(field(t, bodies[2], "stream")) != "true" {
		t.Errorf("replayed body: %s", bodies[2])
	}
	if tr := r.lastTrace(t, 3); tr.Incremental || tr.UpstreamBytes != int64(len(bodies[2])) {
		t.Errorf("trace incremental %v upstreamBytes %d, want false and %d", tr.Incremental, tr.UpstreamBytes, len(bodies[2]))
	}
}

// A Chat-only account gets the conversation through the bridge, as over HTTP.
func TestSocketOverAChatAccount(t *testing.T) {
	var lastBody []byte
	u := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		lastBody = readRecorded(r)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"id\":\"c%d\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"chat %d\"},\"finish_reason\":null}]}\n\n", n, n)
		fmt.Fprintf(w, "data: {\"id\":\"c%d\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n", n)
	})
	a := openaiAccount("local", u)
	a.API = proxy.APIChat
	r := newRelay(t, proxy.Options{}, a)
	c := r.dial(t)
	evs := turn(t, c, createFrame("", userItem("hello")))
	if outputText(evs) != "chat 0" {
		t.Fatalf("first turn: %v", last(evs))
	}
	evs = turn(t, c, createFrame(responseID(t, evs), userItem("again")))
	if outputText(evs) != "chat 1" {
		t.Fatalf("second turn: %v", last(evs))
	}
	var body struct {
		Messages []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
	}
	json.Unmarshal(lastBody, &body)
	roles := []string{}
	for _, m := range body.Messages {
		roles = append(roles, m.Role)
	}
	if got := strings.Join(roles, ","); got != "system,user,assistant,user" || !strings.Contains(string(lastBody), "chat 0") {
		t.Fatalf("second turn's messages: %s (roles %s)", lastBody, got)
	}
}

// When the account fails before the first event of a turn, the turn goes to the next account
// with the conversation replayed whole, and the later turns follow on the new account's socket.
func TestSocketRotationReplaysTheConversation(t *testing.T) {
	a, b := newWSUpstream(t), newWSUpstream(t)
	a.answer = func(n int, c *websocket.Conn, f map[string]any) bool {
		if n == 0 {
			return false
		}
		c.Write(context.Background(), websocket.MessageText, []byte(`{"type":"error","status":429,"error":{"type":"usage_limit_reached","code":"usage_limit_reached","message":"The usage limit has been reached for access-a"}}`))
		return true
	}
	r := newRelay(t, proxy.Options{}, a.account("a"), b.account("b"))
	c := r.dial(t)
	id := responseID(t, turn(t, c, createFrame("", userItem("one"))))
	evs := turn(t, c, createFrame(id, userItem("two")))
	for _, ev := range evs {
		if ev["type"] == "error" || ev["type"] == "response.failed" {
			t.Fatalf("the client saw the failure: %v", ev)
		}
	}
	id = responseID(t, evs)
	responseID(t, turn(t, c, createFrame(id, userItem("three"))))

	bf := b.got()
	if len(bf) != 2 {
		t.Fatalf("account b got %d frames, want 2", len(bf))
	}
	want := "[" + strings.Join([]string{userItem("one"), outputItem("answer 0"), userItem("two")}, ",") + "]"
	if got := string(field(t, bf[0], "input")); got != want {
		t.Fatalf("replayed input:\n got %s\nwant %s", got, want)
	}
	if field(t, bf[0], "previous_response_id") != nil || string(field(t, bf[0], "type")) != `"response.create"` {
		t.Errorf("replayed frame: %s", bf[0])
	}
	if string(field(t, bf[1], "input")) != "["+userItem("three")+"]" || string(field(t, bf[1], "previous_response_id")) != `"resp_ws_0"` {
		t.Errorf("third turn on b is not incremental: %s", bf[1])
	}
	if st := r.account(t, "a"); st.State != proxy.StateCooldown || strings.Contains(st.LastError, "access-a") {
		t.Errorf("account a: state %s, last error %q", st.State, st.LastError)
	}
}

// A turn that fails after its first event ends with response.failed, and the connection stays
// usable for the client's retry.
func TestSocketFailureAfterTheFirstEvent(t *testing.T) {
	up := newWSUpstream(t)
	up.answer = func(n int, c *websocket.Conn, f map[string]any) bool {
		if n > 0 {
			return false
		}
		evs := textEvents("resp_cut", "gpt-5-codex", "partial answer")
		for _, ev := range evs[:5] {
			c.Write(context.Background(), websocket.MessageText, []byte(sseData(ev)))
		}
		c.CloseNow()
		return true
	}
	r := newRelay(t, proxy.Options{}, up.account("a"))
	c := r.dial(t)
	evs := turn(t, c, createFrame("", userItem("one")))
	ev := last(evs)
	if ev["type"] != "response.failed" || !strings.Contains(mustJSON(ev), "server_error") {
		t.Fatalf("cut turn ended with %v", ev)
	}
	evs = turn(t, c, createFrame("", userItem("one")))
	if outputText(evs) != "answer 1" {
		t.Fatalf("retry answered %v", last(evs))
	}
	if len(up.headers) != 2 {
		t.Errorf("the retry went up on %d sockets, want a new one (2 in all)", len(up.headers))
	}
}

// An unknown previous_response_id gets the upstream's error, never an empty history; the
// connection stays usable. A warm-up is answered by the relay and the next turn follows it.
func TestSocketUnknownPreviousAndWarmUp(t *testing.T) {
	up := newWSUpstream(t)
	r := newRelay(t, proxy.Options{}, up.account("a"))
	c := r.dial(t)
	ev := last(turn(t, c, createFrame("resp_nobody_knows", userItem("x"))))
	e, _ := ev["error"].(map[string]any)
	if ev["type"] != "error" || e["code"] != "previous_response_not_found" || ev["status"] != float64(400) {
		t.Fatalf("unknown previous_response_id answered %v", ev)
	}
	warm := strings.Replace(createFrame("", userItem("prepare")), `"type":"response.create"`, `"type":"response.create","generate":false`, 1)
	evs := turn(t, c, warm)
	if len(evs) != 2 || evs[0]["type"] != "response.created" {
		t.Fatalf("warm-up answered %v", evs)
	}
	if n := len(up.got()); n != 0 {
		t.Fatalf("the warm-up cost %d upstream frames", n)
	}
	evs = turn(t, c, createFrame(responseID(t, evs), userItem("go")))
	if outputText(evs) != "answer 0" {
		t.Fatalf("turn after the warm-up: %v", last(evs))
	}
	f := up.got()[0]
	if got, want := string(field(t, f, "input")), "["+userItem("prepare")+","+userItem("go")+"]"; got != want || field(t, f, "generate") != nil {
		t.Fatalf("turn after the warm-up went up as %s", f)
	}
}

// Bad frames get an error event in the OpenAI shape and the connection stays usable; a frame
// over the size limit closes it with 1009.
func TestSocketBadFrames(t *testing.T) {
	up := newWSUpstream(t)
	r := newRelay(t, proxy.Options{MaxBodyBytes: 4096}, up.account("a"))
	c := r.dial(t)
	ctx := context.Background()
	for _, tc := range []struct {
		typ  websocket.MessageType
		data string
		code string
	}{
		{websocket.MessageBinary, `{"type":"response.create"}`, "invalid_frame"},
		{websocket.MessageText, `{"type":`, "invalid_json"},
		{websocket.MessageText, `{"type":"session.update"}`, "unknown_event_type"},
		{websocket.MessageText, `{"type":"response.create","input":[]}`, "missing_required_parameter"},
		{websocket.MessageText, `{"type":"response.append","input":[]}`, "no_previous_response"},
	} {
		c.Write(ctx, tc.typ, []byte(tc.data))
		evs := readTurn(t, ctx, c)
		e, _ := last(evs)["error"].(map[string]any)
		if len(evs) != 1 || last(evs)["type"] != "error" || e["code"] != tc.code || e["message"] == "" {
			t.Errorf("%s: answered %v, want one error %s", tc.data, evs, tc.code)
		}
	}
	if outputText(turn(t, c, createFrame("", userItem("still here")))) != "answer 0" {
		t.Fatal("the connection is not usable after bad frames")
	}
	c.Write(ctx, websocket.MessageText, []byte(createFrame("", userItem(strings.Repeat("x", 5000)))))
	_, _, err := c.Read(ctx)
	if websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
		t.Fatalf("oversize frame: %v, want close 1009", err)
	}
}

// The guards of HTTP apply before the upgrade: Origin, Host, the local key.
func TestSocketGuards(t *testing.T) {
	up := newWSUpstream(t)
	r := newRelay(t, proxy.Options{LocalAPIKey: "local-key"}, up.account("a"))
	u := strings.Replace(r.URL, "http", "ws", 1) + "/v1/responses"
	for _, tc := range []struct {
		header http.Header
		status int
	}{
		{http.Header{"Authorization": {"Bearer local-key"}, "Origin": {"https://evil.example"}}, http.StatusForbidden},
		{http.Header{}, http.StatusUnauthorized},
	} {
		_, resp, err := websocket.Dial(context.Background(), u, &websocket.DialOptions{HTTPHeader: tc.header})
		if err == nil || resp == nil || resp.StatusCode != tc.status {
			t.Errorf("%v: err %v, status %v, want %d", tc.header, err, resp, tc.status)
		}
	}
	c := r.dial(t, "Authorization", "Bearer local-key")
	if outputText(turn(t, c, createFrame("", userItem("hi")))) != "answer 0" {
		t.Fatal("with the local key the socket does not serve")
	}
}

// A client that closes its socket in the middle of a turn cancels the upstream's.
func TestSocketClientCloseCancelsTheUpstream(t *testing.T) {
	up := newWSUpstream(t)
	started := make(chan struct{})
	up.answer = func(n int, c *websocket.Conn, f map[string]any) bool {
		evs := textEvents("resp_slow", "gpt-5-codex", "slow answer")
		for _, ev := range evs[:5] {
			c.Write(context.Background(), websocket.MessageText, []byte(sseData(ev)))
		}
		close(started)
		return true // and nothing more: the upstream keeps the turn open
	}
	r := newRelay(t, proxy.Options{}, up.account("a"))
	c := r.dial(t)
	c.Write(context.Background(), websocket.MessageText, []byte(createFrame("", userItem("one"))))
	<-started
	c.CloseNow()
	eventually(t, "the upstream socket to close", func() bool {
		up.mu.Lock()
		defer up.mu.Unlock()
		return up.closed == 1
	})
	if tr := r.lastTrace(t, 1); tr.Outcome != proxy.OutcomeCanceled {
		t.Errorf("trace outcome %q, want canceled", tr.Outcome)
	}
}

// An upstream that refuses the upgrade with a quota answer cools down like an HTTP 429; one
// that does not speak WebSocket serves over HTTP.
func TestSocketUpgradeRefused(t *testing.T) {
	a := newWSUpstream(t)
	a.refuse = http.StatusTooManyRequests
	b := newWSUpstream(t)
	r := newRelay(t, proxy.Options{}, a.account("a"), b.account("b"))
	c := r.dial(t)
	if outputText(turn(t, c, createFrame("", userItem("one")))) != "answer 0" {
		t.Fatal("the turn did not move to b")
	}
	if st := r.account(t, "a"); st.State != proxy.StateCooldown || strings.Contains(st.LastError, "sk-refused-secret") {
		t.Errorf("account a: %s, %q", st.State, st.LastError)
	}
}

// Many connections at once, each with a conversation of its own.
func TestSocketManyConnections(t *testing.T) {
	up := newWSUpstream(t)
	r := newRelay(t, proxy.Options{}, up.account("a"))
	const n = 200
	var wg sync.WaitGroup
	errs := make(chan string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := r.dial(t)
			id := responseID(t, turn(t, c, createFrame("", userItem(fmt.Sprint("hello ", i)))))
			evs := turn(t, c, createFrame(id, userItem("again")))
			if last(evs)["type"] != "response.completed" {
				errs <- mustJSON(last(evs))
			}
			c.Close(websocket.StatusNormalClosure, "")
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	eventually(t, "every socket to close", func() bool { return r.Stats().Requests.WebSockets == 0 })
	incremental := 0
	for _, f := range up.got() {
		if bytes.Contains(f, []byte(`"previous_response_id"`)) {
			incremental++
		}
	}
	if incremental != n {
		t.Errorf("%d second turns went up incremental, want %d", incremental, n)
	}
}

// The official SDK's WebSocket client speaks to the relay.
func TestSocketWithTheSDK(t *testing.T) {
	up := newWSUpstream(t)
	r := newRelay(t, proxy.Options{}, up.account("a"))
	client := r.sdk()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := client.Responses.Connect(ctx, responses.ResponseConnectionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SendRaw(ctx, json.RawMessage(createFrame("", userItem("hi")))); err != nil {
		t.Fatal(err)
	}
	resp, err := conn.FinalResponse(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if resp.OutputText() != "answer 0" || resp.ID != "resp_ws_0" {
		t.Fatalf("SDK got %q (%s)", resp.OutputText(), resp.ID)
	}
}

// When the relay stops, an idle socket is closed with 1001 (going away) and Serve returns.
func TestSocketClosesWhenTheRelayStops(t *testing.T) {
	up := newWSUpstream(t)
	s := proxy.New(proxy.Options{})
	s.SetAccounts([]proxy.Account{up.account("a")})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln, 5*time.Second) }()
	r := &relay{Server: s, URL: "http://" + ln.Addr().String()}
	c := r.dial(t)
	if outputText(turn(t, c, createFrame("", userItem("hi")))) != "answer 0" {
		t.Fatal("no answer")
	}
	stop()
	_, _, err = c.Read(context.Background())
	if websocket.CloseStatus(err) != websocket.StatusGoingAway {
		t.Fatalf("socket ended with %v, want close 1001", err)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}

// An upstream that closes a socket left idle between turns, or that lost the conversation,
// costs nothing: the turn goes again to the same account on a new socket with the whole
// conversation, the account is not blamed and the client sees one ordinary turn.
func TestSocketUpstreamClosedOrForgot(t *testing.T) {
	for _, how := range []string{"closed", "forgot", "time limit"} {
		t.Run(how, func(t *testing.T) {
			up := newWSUpstream(t)
			up.answer = func(n int, c *websocket.Conn, f map[string]any) bool {
				switch {
				case n == 0 && how == "closed":
					for _, ev := range textEvents("resp_first", "gpt-5-codex", "answer 0") {
						c.Write(context.Background(), websocket.MessageText, []byte(sseData(ev)))
					}
					c.Close(websocket.StatusNormalClosure, "idle")
					return true
				case n == 1 && how == "forgot":
					c.Write(context.Background(), websocket.MessageText, []byte(`{"type":"error","status":400,"error":{"type":"invalid_request_error","code":"previous_response_not_found","message":"Previous response with id 'resp_ws_0' not found.","param":"previous_response_id"}}`))
					return true
				case n == 1 && how == "time limit": // the upstream ends each socket after 60 minutes
					c.Write(context.Background(), websocket.MessageText, []byte(`{"type":"error","status":400,"error":{"type":"invalid_request_error","code":"websocket_connection_limit_reached","message":"Responses websocket connection limit reached (60 minutes). Create a new websocket connection to continue."}}`))
					c.Close(websocket.StatusNormalClosure, "websocket_connection_limit_reached")
					return true
				}
				return false
			}
			r := newRelay(t, proxy.Options{RetryBackoff: time.Hour}, up.account("a"))
			c := r.dial(t)
			id := responseID(t, turn(t, c, createFrame("", userItem("one"))))
			evs := turn(t, c, createFrame(id, userItem("two")))
			if last(evs)["type"] != "response.completed" {
				t.Fatalf("second turn ended with %v", last(evs))
			}
			frames := up.got()
			final := frames[len(frames)-1]
			if field(t, final, "previous_response_id") != nil || !bytes.Contains(field(t, final, "input"), []byte(`"answer 0"`)) {
				t.Fatalf("the turn was not replayed whole: %s", final)
			}
			if len(up.headers) != 2 {
				t.Errorf("%d upstream sockets, want 2", len(up.headers))
			}
			if st := r.account(t, "a"); st.Failures != 0 || st.State != proxy.StateReady {
				t.Errorf("account blamed: %+v", st)
			}
		})
	}
}

// A response the connection never saw, but that the upstream may have stored (store is not
// false), goes up with previous_response_id and only the new items: the upstream answers,
// its error included; it is never sent with an empty history.
func TestSocketUnknownPreviousOfAStoredResponse(t *testing.T) {
	up := newWSUpstream(t)
	r := newRelay(t, proxy.Options{}, up.account("a"))
	c := r.dial(t)
	frame := strings.Replace(createFrame("resp_from_yesterday", userItem("go on")), `"store":false`, `"store":true`, 1)
	ev := last(turn(t, c, frame))
	e, _ := ev["error"].(map[string]any)
	if ev["type"] != "error" || e["code"] != "previous_response_not_found" {
		t.Fatalf("answered %v", ev)
	}
	frames := up.got()
	if len(frames) != 1 || string(field(t, frames[0], "previous_response_id")) != `"resp_from_yesterday"` ||
		string(field(t, frames[0], "input")) != "["+userItem("go on")+"]" {
		t.Fatalf("upstream got %d frames: %s", len(frames), frames)
	}
	// Over HTTP too, and a Chat account is not asked.
	var body []byte
	h := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if r.Method == http.MethodGet {
			http.NotFound(w, r)
			return
		}
		body = readRecorded(r)
		writeEvents(w, textEvents("resp_h", "gpt-5-codex", "continued"))
	})
	chat := openaiAccount("chat", h)
	chat.API = proxy.APIChat
	r2 := newRelay(t, proxy.Options{}, chat, openaiAccount("api", h))
	c2 := r2.dial(t)
	if got := outputText(turn(t, c2, frame)); got != "continued" {
		t.Fatalf("over HTTP: %q", got)
	}
	if string(field(t, body, "previous_response_id")) != `"resp_from_yesterday"` || field(t, body, "messages") != nil {
		t.Fatalf("HTTP body: %s", body)
	}
}

// A continuation the upstream refused is forgotten, as the API forgets it: the next turn that
// names the same response is previous_response_not_found, not that conversation replayed as if
// nothing had failed. The connection's earlier responses stay.
func TestSocketRefusedContinuationIsEvicted(t *testing.T) {
	up := newWSUpstream(t)
	up.answer = func(n int, c *websocket.Conn, f map[string]any) bool {
		if n != 2 {
			return false
		}
		c.Write(context.Background(), websocket.MessageText, []byte(`{"type":"error","status":400,"error":{"type":"invalid_request_error","code":"invalid_prompt","message":"The prompt was refused."}}`))
		return true
	}
	r := newRelay(t, proxy.Options{}, up.account("a"))
	c := r.dial(t)
	first := responseID(t, turn(t, c, createFrame("", userItem("one"))))
	second := responseID(t, turn(t, c, createFrame(first, userItem("two"))))
	ev := last(turn(t, c, createFrame(second, userItem("refused"))))
	if e, _ := ev["error"].(map[string]any); ev["type"] != "error" || e["code"] != "invalid_prompt" {
		t.Fatalf("the refused turn answered %v", ev)
	}
	ev = last(turn(t, c, createFrame(second, userItem("again"))))
	if e, _ := ev["error"].(map[string]any); ev["type"] != "error" || e["code"] != "previous_response_not_found" {
		t.Fatalf("the evicted response answered %v", ev)
	}
	if n := len(up.got()); n != 3 {
		t.Fatalf("the upstream got %d frames, want 3 (nothing for the evicted response)", n)
	}
	// The response before it is still there: a fork from it is served, replayed on a new socket
	// or incremental, whichever the relay chooses.
	if got := outputText(turn(t, c, createFrame(first, userItem("fork")))); got == "" {
		t.Fatal("the earlier response was forgotten too")
	}
}
