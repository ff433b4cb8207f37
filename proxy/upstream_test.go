package proxy_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codexrelay/codexrelay/proxy"
)

// TestEveryChatGPTCallCarriesTheCodexIdentity: the Responses call, the model list and the
// usage read go through one request builder, so each carries what the Codex CLI's own calls
// carry. (The usage read used to lack originator, and no call set the user agent.)
func TestEveryChatGPTCallCarriesTheCodexIdentity(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]http.Header{}
	up := newUpstream(t, answerText("ok"))
	up.models = func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen["models"] = r.Header.Clone()
		mu.Unlock()
		w.Write([]byte(`{"models":[{"slug":"gpt-5"}]}`))
	}
	withUsage(t, up, 10, 5, time.Now().Add(time.Hour))
	inner := up.Config.Handler
	up.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := "responses"
		if strings.HasSuffix(r.URL.Path, "/wham/usage") {
			key = "usage"
		}
		if key == "usage" || r.Method == http.MethodPost {
			mu.Lock()
			seen[key] = r.Header.Clone()
			mu.Unlock()
		}
		inner.ServeHTTP(w, r)
	})
	r := newRelay(t, proxy.Options{}, chatgptAccount("cg", up))
	r.RefreshQuotas(context.Background())
	readAll(t, r.post(t, "/v1/responses", smallBody))
	for _, call := range []string{"responses", "models", "usage"} {
		h := seen[call]
		if h == nil {
			t.Fatalf("no %s call seen", call)
		}
		ua := h.Get("User-Agent")
		if h.Get("originator") != "codex_cli_rs" || h.Get("version") != "0.171.0" || h.Get("chatgpt-account-id") != "acct-cg" ||
			!strings.HasPrefix(ua, "codex_cli_rs/0.171.0 (") || !strings.HasSuffix(ua, ")") || ua != r.UserAgent() ||
			h.Get("Authorization") != "Bearer access-cg" {
			t.Errorf("%s call headers: %v", call, h)
		}
	}
}

// TestQuotaExceededMeansTheSameOnEveryPath: one table classifies upstream error codes, for a
// failure as the first event of a stream and for the final event of an answer the client gets
// whole. quota_exceeded is a quota failure everywhere (the whole-answer path used to make it a
// 400).
func TestQuotaExceededMeansTheSameOnEveryPath(t *testing.T) {
	t.Run("first event", func(t *testing.T) {
		a := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
			writeEvents(w, []string{"event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"error\":{\"code\":\"quota_exceeded\",\"message\":\"over\"}}}\n\n"})
		})
		b := newUpstream(t, answerText("from b"))
		r := newRelay(t, proxy.Options{}, openaiAccount("a", a), openaiAccount("b", b))
		body := readAll(t, r.post(t, "/v1/responses", smallBody))
		if !bytes.Contains(body, []byte("from b")) || r.account(t, "a").State != proxy.StateCooldown {
			t.Fatalf("a: %+v; client: %s", r.account(t, "a"), body)
		}
	})
	t.Run("final event of a whole answer", func(t *testing.T) {
		a := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
			evs := textEvents("resp_q", "gpt-5", "partial")[:5]
			writeEvents(w, append(evs, "event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"error\":{\"code\":\"quota_exceeded\",\"message\":\"over\"}}}\n\n"))
		})
		// Nothing of an answer read whole has reached the client: the limit, even after output,
		// rests the account and moves the request on (issue 30), here to no account left.
		r := newRelay(t, proxy.Options{}, chatgptAccount("cg", a))
		resp := r.post(t, "/v1/responses", `{"model":"gpt-5","input":"hi"}`)
		e := decodeErr(t, resp)
		if resp.StatusCode != 429 || !strings.Contains(e.Error.Message, "quota_exceeded") || r.account(t, "cg").State != proxy.StateCooldown {
			t.Fatalf("%d %+v; cg %+v", resp.StatusCode, e.Error, r.account(t, "cg"))
		}
	})
}
