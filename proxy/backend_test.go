package proxy_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/codexrelay/codexrelay/proxy"
)

// Codex's web search and image generation (testdata/codex-0.171/web: code mode calling
// web.run, then image_gen.imagegen twice, a generation and an edit of a project image)
// replayed through the relay: each call reaches a ChatGPT account as Codex sent it, with the
// account's credential, and moves to the next account on a limit before any byte reached
// Codex.

// backendCaptures are the web capture's backend calls (search, generation, edit), in order.
func backendCaptures(t *testing.T) []captured {
	t.Helper()
	var out []captured
	for _, c := range loadCaptures(t, "web") {
		p := strings.TrimPrefix(c.Path, "/v1")
		if c.Method == http.MethodPost && (p == "/alpha/search" || strings.HasPrefix(p, "/images/")) {
			out = append(out, c)
		}
	}
	if len(out) != 3 {
		t.Fatalf("the web capture has %d backend calls, want the search, the generation and the edit", len(out))
	}
	return out
}

// replay sends c to the relay as Codex sent it (its headers, the local key as credential).
func (r *relay) replay(t *testing.T, c captured) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(c.Method, r.URL+c.Path, bytes.NewReader(c.Body))
	for _, h := range c.Headers {
		req.Header.Add(h[0], h[1])
	}
	req.Header.Del("Host")
	req.Header.Del("Content-Length")
	req.Header.Set("Authorization", "Bearer sk-local")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestWebSearchAndImagesReachAChatGPTAccountAcrossARotation(t *testing.T) {
	limited := newUpstream(t, status(429, `{"error":{"type":"usage_limit_reached","code":"usage_limit_reached","message":"The usage limit has been reached","resets_in_seconds":3600}}`))
	answers := map[string]string{
		"/backend-api/codex/alpha/search":       `{"output":"results for codex relay"}`,
		"/backend-api/codex/images/generations": `{"created":1,"data":[{"b64_json":"aW1n"}]}`,
		"/backend-api/codex/images/edits":       `{"created":2,"data":[{"b64_json":"ZWRpdA=="}]}`,
	}
	serving := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		status(200, answers[r.URL.Path])(w, r, n)
	})
	apiKey := newUpstream(t, status(500, `{"error":{"message":"an API key account is never asked"}}`))
	r := newRelay(t, proxy.Options{LocalAPIKey: "sk-local"},
		openaiAccount("key", apiKey), chatgptAccount("a", limited), chatgptAccount("b", serving))

	for i, c := range backendCaptures(t) {
		resp := r.replay(t, c)
		got := readAll(t, resp)
		up := strings.Replace(c.Path, "/v1", "/backend-api/codex", 1)
		if resp.StatusCode != 200 || string(got) != answers[up] {
			t.Fatalf("%s: %d %s", c.file, resp.StatusCode, got)
		}
		rec := serving.requests()[i]
		if rec.Path != up || !bytes.Equal(rec.Body, c.Body) {
			t.Errorf("%s: the account got %s with %d bytes, want %s as Codex sent it (%d bytes)", c.file, rec.Path, len(rec.Body), up, len(c.Body))
		}
		if rec.Header.Get("Authorization") != "Bearer access-b" || rec.Header.Get("Chatgpt-Account-Id") != "acct-b" {
			t.Errorf("%s: sent with %q / %q, not account b's credential", c.file, rec.Header.Get("Authorization"), rec.Header.Get("Chatgpt-Account-Id"))
		}
		checkHeaders(t, c.file, c.Headers, rec.Header)
		tr := r.lastTrace(t, i+1)
		want := proxy.RouteSearch
		if strings.Contains(c.Path, "/images/") {
			want = proxy.RouteImages
		}
		if tr.Route != want || tr.Account != "b" || tr.Status != 200 || tr.Model != map[string]string{proxy.RouteSearch: "gpt-5.6-sol", proxy.RouteImages: "gpt-image-2"}[want] {
			t.Errorf("%s: trace %+v", c.file, tr)
		}
		if i == 0 && (len(tr.Attempts) != 2 || tr.Attempts[0].Account != "a" || tr.Attempts[0].Status != 429) {
			t.Errorf("%s: attempts %+v, want a's 429 then b", c.file, tr.Attempts)
		}
		if i > 0 && len(tr.Attempts) != 1 {
			t.Errorf("%s: attempts %+v, want b alone while a rests", c.file, tr.Attempts)
		}
	}
	if a := r.account(t, "a"); a.State != proxy.StateCooldown {
		t.Errorf("a after its limit: %+v", a)
	}
	if n := len(limited.requests()); n != 1 {
		t.Errorf("the resting account was asked %d times", n)
	}
	if n := len(apiKey.requests()); n != 0 {
		t.Errorf("the API key account was asked %d times", n)
	}
	if st := r.Stats(); st.Requests.Rotations != 1 {
		t.Errorf("rotations %d", st.Requests.Rotations)
	}
}

// A search goes first to the account that serves the conversation (the thread of Codex's
// turn metadata), as the conversation's own requests do.
func TestASearchFollowsItsConversation(t *testing.T) {
	a := newUpstream(t, answerText("from a"))
	b := newUpstream(t, answerText("from b"))
	r := newRelay(t, proxy.Options{Strategy: proxy.StrategyRoundRobin}, chatgptAccount("a", a), chatgptAccount("b", b))
	meta := `{"thread_id":"thread-1","turn_id":"t1"}`
	// The conversation's turn: whichever account round-robin gives it serves the thread.
	resp := r.post(t, "/v1/responses", `{"model":"gpt-5.6-sol","input":"hi","prompt_cache_key":"thread-1","stream":true}`)
	readAll(t, resp)
	owner := r.lastTrace(t, 1).Account
	for i := 0; i < 3; i++ {
		resp := r.post(t, "/v1/alpha/search", `{"id":"thread-1","model":"gpt-5.6-sol","commands":{"search_query":[{"q":"x"}]}}`, "X-Codex-Turn-Metadata", meta)
		readAll(t, resp)
		if tr := r.lastTrace(t, 2+i); tr.Account != owner {
			t.Fatalf("search %d went to %s, the conversation is %s's", i, tr.Account, owner)
		}
	}
}

// The answers when no ChatGPT account can take the call: none at all, all resting, the
// client's own mistake (relayed, not rotated), a body that is not JSON, and an upstream that
// quotes the credential.
func TestBackendCallAnswers(t *testing.T) {
	search := `{"model":"gpt-5.6-sol","commands":{"search_query":[{"q":"x"}]}}`
	t.Run("no ChatGPT account", func(t *testing.T) {
		up := newUpstream(t, answerText("x"))
		r := newRelay(t, proxy.Options{}, openaiAccount("key", up))
		resp := r.post(t, "/v1/images/generations", `{"prompt":"a cat"}`)
		e := decodeErr(t, resp)
		if resp.StatusCode != http.StatusNotImplemented || e.Error.Code != "no_chatgpt_account" || !strings.Contains(e.Error.Message, "accounts add --kind chatgpt") {
			t.Fatalf("%d %+v", resp.StatusCode, e)
		}
		if n := len(up.requests()); n != 0 {
			t.Fatalf("the API key account was asked %d times", n)
		}
	})
	t.Run("every account resting", func(t *testing.T) {
		clk := newClock()
		up := newUpstream(t, status(429, `{"error":{"code":"rate_limit_exceeded","message":"slow down"}}`, "Retry-After", "120"))
		r := newRelay(t, proxy.Options{Now: clk.Now}, chatgptAccount("a", up))
		resp := r.post(t, "/alpha/search", search)
		e := decodeErr(t, resp)
		if resp.StatusCode != http.StatusTooManyRequests || e.Error.Code != "usage_limit_reached" || e.Error.ResetsAt != clk.Now().Add(120*time.Second).Unix() ||
			!strings.Contains(e.Error.Message, "a: HTTP 429") {
			t.Fatalf("%d %+v", resp.StatusCode, e)
		}
		// The next one is not even sent: the account rests.
		resp = r.post(t, "/alpha/search", search)
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || len(up.requests()) != 1 {
			t.Fatalf("%d, Retry-After %q, %d sent", resp.StatusCode, resp.Header.Get("Retry-After"), len(up.requests()))
		}
	})
	t.Run("the client's own mistake", func(t *testing.T) {
		bad := `{"error":{"type":"invalid_request_error","code":"invalid_prompt","message":"prompt refused"}}`
		a := newUpstream(t, status(400, bad))
		b := newUpstream(t, answerText("x"))
		r := newRelay(t, proxy.Options{}, chatgptAccount("a", a), chatgptAccount("b", b))
		resp := r.post(t, "/v1/images/generations", `{"prompt":"x"}`)
		if got := readAll(t, resp); resp.StatusCode != 400 || string(got) != bad {
			t.Fatalf("%d %s", resp.StatusCode, got)
		}
		if len(b.requests()) != 0 || r.account(t, "a").State != proxy.StateReady {
			t.Fatalf("a refusal of the prompt moved the call or rested the account")
		}
		if tr := r.lastTrace(t, 1); tr.Outcome != proxy.OutcomeFailed || tr.Status != 400 || !strings.Contains(tr.Error, "invalid_prompt") {
			t.Fatalf("trace %+v", tr)
		}
	})
	t.Run("not JSON", func(t *testing.T) {
		up := newUpstream(t, answerText("x"))
		r := newRelay(t, proxy.Options{}, chatgptAccount("a", up))
		resp := r.post(t, "/v1/alpha/search", `{"model":`)
		if e := decodeErr(t, resp); resp.StatusCode != 400 || e.Error.Code != "invalid_json" || len(up.requests()) != 0 {
			t.Fatalf("%d %+v", resp.StatusCode, e)
		}
	})
	t.Run("too large", func(t *testing.T) {
		up := newUpstream(t, answerText("x"))
		r := newRelay(t, proxy.Options{MaxBodyBytes: 1 << 10}, chatgptAccount("a", up))
		resp := r.post(t, "/v1/images/edits", `{"images":[{"image_url":"data:image/png;base64,`+strings.Repeat("A", 2<<10)+`"}],"prompt":"x"}`)
		if e := decodeErr(t, resp); resp.StatusCode != http.StatusRequestEntityTooLarge || len(up.requests()) != 0 {
			t.Fatalf("%d %+v", resp.StatusCode, e)
		}
	})
	t.Run("a signed-out account and a credential quoted back", func(t *testing.T) {
		a := newUpstream(t, status(401, `{"error":{"message":"token access-a is expired","code":"token_expired"}}`))
		b := newUpstream(t, status(200, `{"output":"ok"}`))
		r := newRelay(t, proxy.Options{}, chatgptAccount("a", a), chatgptAccount("b", b))
		if resp := r.post(t, "/v1/alpha/search", search); resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, readAll(t, resp))
		}
		st := r.account(t, "a")
		tr := r.lastTrace(t, 1)
		b2, _ := json.Marshal(tr)
		if st.State != proxy.StateNeedsLogin || strings.Contains(st.LastError, "access-a") || strings.Contains(string(b2), "access-a") {
			t.Fatalf("a: %+v; trace %s", st, b2)
		}
	})
}

// What the relay does not serve is answered clearly and named in a trace.
func TestAnUnservedRouteIsNamedInATrace(t *testing.T) {
	r := newRelay(t, proxy.Options{})
	resp := r.post(t, "/v1/alpha/notes/v2/list", `{}`)
	if e := decodeErr(t, resp); resp.StatusCode != 404 || e.Error.Code != "unknown_route" || !strings.Contains(e.Error.Message, "/v1/alpha/search") {
		t.Fatalf("%d %+v", resp.StatusCode, e)
	}
	if tr := r.lastTrace(t, 1); tr.Route != proxy.RouteUnserved || tr.Status != 404 || !strings.Contains(tr.Error, "POST /v1/alpha/notes/v2/list") {
		t.Fatalf("trace %+v", tr)
	}
}

// A backend call's answer is relayed as it comes, with the account's own credential masked if
// the upstream echoed it; what else it carries (base64) goes as it came.
func TestABackendAnswerIsRelayedWithTheAccountsTokenMasked(t *testing.T) {
	big := strings.Repeat("QUJD", 256<<10) // 1 MiB of base64
	up := newUpstream(t, status(200, `{"created":1,"data":[{"b64_json":"`+big+`"}],"note":"for access-b-0123456789"}`))
	acct := chatgptAccount("b", up)
	acct.Credentials = proxy.Static{Token: "access-b-0123456789", AccountID: "acct-b"}
	r := newRelay(t, proxy.Options{}, acct)
	resp := r.post(t, "/v1/images/generations", `{"prompt":"draw","model":"gpt-image-2"}`)
	got := readAll(t, resp)
	if resp.StatusCode != 200 || strings.Contains(string(got), "access-b-0123456789") || !strings.Contains(string(got), `"note":"for ****6789"`) ||
		!strings.Contains(string(got), big) {
		t.Fatalf("%d, %d bytes, token masked: %v", resp.StatusCode, len(got), !strings.Contains(string(got), "access-b"))
	}
	if tr := r.lastTrace(t, 1); tr.Bytes != int64(len(got)) || tr.Outcome != proxy.OutcomeCompleted {
		t.Fatalf("trace %+v", tr)
	}
}
