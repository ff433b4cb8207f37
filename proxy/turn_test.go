package proxy_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/codexrelay/codexrelay/proxy"
)

// The Codex turn headers reach Responses upstreams; a turn state reaches only the account
// that issued it, and the new account's own comes back to the client after a rotation.
func TestTurnHeadersAndTurnState(t *testing.T) {
	issue := func(state string, next func(w http.ResponseWriter, r *http.Request, n int)) func(w http.ResponseWriter, r *http.Request, n int) {
		return func(w http.ResponseWriter, r *http.Request, n int) {
			w.Header().Set("X-Codex-Turn-State", state)
			next(w, r, n)
		}
	}
	a := newUpstream(t, nil)
	a.handle = sequence(issue("ts-from-a", answerText("one")), answerText("two"),
		status(429, `{"error":{"type":"usage_limit_reached","code":"usage_limit_reached","message":"limit"}}`, "Retry-After", "3600"))
	b := newUpstream(t, issue("ts-from-b", answerText("three")))
	r := newRelay(t, proxy.Options{}, openaiAccount("a", a), openaiAccount("b", b))

	codex := []string{
		"X-Codex-Turn-Metadata", `{"turn_id":"t1","workspaces":{"/src/app":{}}}`,
		"X-Codex-Beta-Features", "unified_exec",
		"X-Openai-Subagent", "review",
		"X-Client-Request-Id", "req-42",
		"X-Codex-Window-Id", "win-7",
	}
	resp := r.post(t, "/v1/responses", smallBody, codex...)
	readAll(t, resp)
	if got := resp.Header.Get("X-Codex-Turn-State"); got != "ts-from-a" {
		t.Fatalf("the client got turn state %q", got)
	}
	first := a.requests()[0].Header
	for i := 0; i < len(codex); i += 2 {
		if first.Get(codex[i]) != codex[i+1] {
			t.Errorf("%s reached the upstream as %q", codex[i], first.Get(codex[i]))
		}
	}
	if first.Get("X-Codex-Turn-State") != "" {
		t.Errorf("a turn state went up before one was issued")
	}

	// The same turn again: the state goes back to a, which issued it.
	withState := append(codex, "X-Codex-Turn-State", "ts-from-a")
	readAll(t, r.post(t, "/v1/responses", smallBody, withState...))
	if got := a.requests()[1].Header.Get("X-Codex-Turn-State"); got != "ts-from-a" {
		t.Fatalf("a got turn state %q", got)
	}
	if r.lastTrace(t, 2).TurnStateOmitted {
		t.Errorf("trace says the turn state was left out")
	}

	// a rests: b gets the turn headers but not a's state, and issues its own.
	resp = r.post(t, "/v1/responses", smallBody, withState...)
	readAll(t, resp)
	bh := b.requests()[0].Header
	if bh.Get("X-Codex-Turn-State") != "" || bh.Get("X-Codex-Turn-Metadata") != codex[1] {
		t.Fatalf("b got turn state %q, metadata %q", bh.Get("X-Codex-Turn-State"), bh.Get("X-Codex-Turn-Metadata"))
	}
	if got := resp.Header.Get("X-Codex-Turn-State"); got != "ts-from-b" {
		t.Errorf("the client got turn state %q after the rotation", got)
	}
	if tr := r.lastTrace(t, 3); !tr.TurnStateOmitted || tr.Account != "b" {
		t.Errorf("trace: omitted %v, account %q", tr.TurnStateOmitted, tr.Account)
	}
}

// Chat Completions accounts get none of the Codex headers.
func TestTurnHeadersNotSentToChatAccounts(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
	})
	acc := openaiAccount("chat", up)
	acc.API = proxy.APIChat
	r := newRelay(t, proxy.Options{}, acc)
	readAll(t, r.post(t, "/v1/responses", `{"model":"m","input":"hi"}`, "X-Codex-Turn-Metadata", `{"turn_id":"t1"}`))
	if h := up.requests()[0].Header; h.Get("X-Codex-Turn-Metadata") != "" {
		t.Fatalf("a chat account got the turn metadata")
	}
}

// The catalog is read with the newest client_version a client asked it with: a newer Codex sees
// the models gated above the configured version; an older one, or a value that is no version,
// changes nothing. Concurrent askers share one refresh.
func TestCatalogFollowsTheClientVersion(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	entry := func(slug string) string {
		return `{"slug":"` + slug + `","display_name":"` + slug + `","supported_reasoning_levels":[],"shell_type":"shell_command","visibility":"list","supported_in_api":true,"priority":1,"base_instructions":"","support_verbosity":false,"truncation_policy":{"mode":"tokens","limit":10000},"experimental_supported_tools":[]}`
	}
	cg := newUpstream(t, answerText("ok"))
	cg.setModels(func(w http.ResponseWriter, r *http.Request) {
		v := r.URL.Query().Get("client_version")
		mu.Lock()
		asked = append(asked, v)
		mu.Unlock()
		list := entry("gpt-5-codex")
		if v == "0.200.1" {
			list += "," + entry("gpt-6-codex") // gated above 0.200
		}
		io.WriteString(w, `{"models":[`+list+`]}`)
	})
	r := catalogRelay(t, newClock(), true, chatgptAccount("me", cg))
	slugs := func(q string) string {
		resp, err := http.Get(r.URL + "/v1/models" + q)
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			Models []struct {
				Slug string `json:"slug"`
			} `json:"models"`
		}
		json.Unmarshal(readAll(t, resp), &v)
		var out []string
		for _, m := range v.Models {
			out = append(out, m.Slug)
		}
		return strings.Join(out, ",")
	}
	if got := slugs("?client_version=0.171.0"); got != "gpt-5-codex" {
		t.Fatalf("first list: %s", got)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if got := slugs("?client_version=0.200.1"); !strings.Contains(got, "gpt-6-codex") {
				t.Errorf("a newer client's list: %s", got)
			}
		}()
	}
	wg.Wait()
	for _, q := range []string{"?client_version=0.150.0", "?client_version=9.9.9%0d%0aX-Evil:1", "?client_version=1.2.3-beta"} {
		if got := slugs(q); got != "gpt-5-codex,gpt-6-codex" {
			t.Errorf("%s: %s", q, got)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(asked, " ") != "0.171.0 0.200.1" {
		t.Errorf("the upstream was asked with %v (want one refresh with the newer version)", asked)
	}
	// Every later upstream call names the newer version.
	readAll(t, r.post(t, "/v1/responses", `{"model":"gpt-6-codex","input":"hi","stream":true}`))
	if ua := cg.requests()[0].Header.Get("User-Agent"); !strings.Contains(ua, "/0.200.1 ") || cg.requests()[0].Header.Get("Version") != "0.200.1" {
		t.Errorf("user agent %q", ua)
	}
}

// A response.processed frame is accepted without an answer: the next frame's events are the
// first the client reads.
func TestSocketResponseProcessedIsSilent(t *testing.T) {
	up := newWSUpstream(t)
	r := newRelay(t, proxy.Options{}, up.account("a"))
	c := r.dial(t)
	id := responseID(t, turn(t, c, createFrame("", userItem("one"))))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"response.processed","response_id":"`+id+`"}`)); err != nil {
		t.Fatal(err)
	}
	evs := turn(t, c, createFrame(id, userItem("two")))
	if evs[0]["type"] != "response.created" {
		t.Fatalf("first event after response.processed: %v", evs[0])
	}
	responseID(t, evs)
}

// Over a socket the Codex CLI sends each turn's headers in the frame's client_metadata (the
// handshake's are the connection's first, a prewarm's): the frame's reach the upstream.
func TestSocketTurnHeadersComeFromTheFrame(t *testing.T) {
	up := newUpstream(t, answerText("ok")) // HTTP only: the turn is replayed over HTTP
	r := newRelay(t, proxy.Options{}, openaiAccount("a", up))
	c := r.dial(t, "X-Codex-Turn-Metadata", `{"turn_id":"","request_kind":"prewarm"}`, "X-Codex-Window-Id", "w:0")
	frame := strings.TrimSuffix(createFrame("", userItem("one")), "}") +
		`,"client_metadata":{"x-codex-turn-metadata":"{\"turn_id\":\"t-42\",\"request_kind\":\"turn\",\"workspaces\":{\"/src/app\":{}}}","x-codex-window-id":"w:1"}}`
	responseID(t, turn(t, c, frame))
	reqs := up.requests()
	h := reqs[len(reqs)-1].Header // the POST (the refused upgrade came first)
	if got := h.Get("X-Codex-Turn-Metadata"); !strings.Contains(got, `"turn_id":"t-42"`) || h.Get("X-Codex-Window-Id") != "w:1" {
		t.Fatalf("upstream got metadata %q, window %q", got, h.Get("X-Codex-Window-Id"))
	}
	if tr := r.lastTrace(t, 1); tr.Project != "app" {
		t.Errorf("trace project %q", tr.Project)
	}
}
