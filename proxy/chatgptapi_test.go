package proxy_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codexrelay/codexrelay/proxy"
)

// A Codex whose chatgpt_base_url is the relay reads its limits there (/status), discovers its
// workspace and syncs its plugins, with its own ChatGPT sign-in: the limits are the pool's,
// the rest goes to the ChatGPT backend as it came.

// codexGet is a GET Codex makes to its chatgpt_base_url: its own token, never the local key.
func (r *relay) codexGet(t *testing.T, path string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, r.URL+path, nil)
	req.Header.Set("Authorization", "Bearer codex-own-chatgpt-token")
	req.Header.Set("Chatgpt-Account-Id", "acct-codex")
	req.Header.Set("Originator", "codex_cli_rs")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// usageWindows is what Codex reads of the usage answer (its window fields are integers).
type usageWindows struct {
	PlanType  string `json:"plan_type"`
	RateLimit struct {
		Allowed      bool `json:"allowed"`
		LimitReached bool `json:"limit_reached"`
		Primary      *struct {
			UsedPercent        int   `json:"used_percent"`
			LimitWindowSeconds int   `json:"limit_window_seconds"`
			ResetAfterSeconds  int   `json:"reset_after_seconds"`
			ResetAt            int64 `json:"reset_at"`
		} `json:"primary_window"`
		Secondary *struct {
			UsedPercent        int `json:"used_percent"`
			LimitWindowSeconds int `json:"limit_window_seconds"`
		} `json:"secondary_window"`
	} `json:"rate_limit"`
	ResetCredits struct {
		Available int `json:"available_count"`
	} `json:"rate_limit_reset_credits"`
}

func (r *relay) poolUsage(t *testing.T) usageWindows {
	t.Helper()
	resp := r.codexGet(t, "/backend-api/wham/usage")
	b := readAll(t, resp)
	var u usageWindows
	if resp.StatusCode != 200 || json.Unmarshal(b, &u) != nil || u.RateLimit.Primary == nil || u.RateLimit.Secondary == nil {
		t.Fatalf("usage: %d %s", resp.StatusCode, b)
	}
	return u
}

func TestCodexReadsThePoolsLimits(t *testing.T) {
	clk := newClock()
	reset := clk.Now().Add(3 * time.Hour)
	limit := status(429, `{"error":{"code":"usage_limit_reached","message":"limit"}}`, "Retry-After", "600")
	busy := newUpstream(t, limit)
	withUsage(t, busy, 40.4, 40, reset)
	var turns atomic.Int32 // half answers its first turn, then meets its limit
	half := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if strings.HasSuffix(r.URL.Path, "/responses") && turns.Add(1) == 1 {
			answerText("half")(w, r, n)
			return
		}
		limit(w, r, n)
	})
	withUsage(t, half, 50.6, 10, reset)
	r := newRelay(t, proxy.Options{Now: clk.Now, LocalAPIKey: "sk-local"}, chatgptAccount("busy", busy), chatgptAccount("half", half))
	r.RefreshQuotas(context.Background())
	turn := func() {
		req, _ := http.NewRequest(http.MethodPost, r.URL+"/v1/responses", strings.NewReader(`{"model":"gpt-5","input":"hi"}`))
		req.Header.Set("Authorization", "Bearer sk-local")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}

	// Both can serve: the one with the most headroom speaks for the pool, in whole numbers.
	u := r.poolUsage(t)
	if !u.RateLimit.Allowed || u.RateLimit.LimitReached || u.RateLimit.Primary.UsedPercent != 40 || u.RateLimit.Secondary.UsedPercent != 40 ||
		u.RateLimit.Primary.LimitWindowSeconds != 18000 || u.RateLimit.Secondary.LimitWindowSeconds != 604800 || u.PlanType != "plus" {
		t.Fatalf("two accounts: %+v %+v %+v", u, *u.RateLimit.Primary, *u.RateLimit.Secondary)
	}
	if tr := r.lastTrace(t, 1); tr.Route != proxy.RouteChatGPT || tr.Path != "/backend-api/wham/usage" || tr.Account != "busy" || tr.Status != 200 {
		t.Fatalf("trace %+v", tr)
	}
	// busy meets its limit and rests; half serves. half, which can still serve, speaks for
	// the pool: the limit is not reached while an account can serve.
	turn()
	if st := r.account(t, "busy"); st.State != proxy.StateCooldown {
		t.Fatalf("busy: %+v", st)
	}
	if u = r.poolUsage(t); !u.RateLimit.Allowed || u.RateLimit.LimitReached || u.RateLimit.Primary.UsedPercent != 51 {
		t.Fatalf("one resting: %+v %+v", u.RateLimit, *u.RateLimit.Primary)
	}
	// half meets its limit too: every account rests. The pool's limit is reached, and its
	// window resets when the first account is back.
	turn()
	u = r.poolUsage(t)
	back := *r.account(t, "busy").CooldownUntil
	if u.RateLimit.Allowed || !u.RateLimit.LimitReached || u.RateLimit.Primary.UsedPercent != 100 || u.RateLimit.Primary.ResetAt != back.Unix() {
		t.Fatalf("all resting: %+v %+v (first back %v)", u.RateLimit, *u.RateLimit.Primary, back)
	}
	// One is back: the pool can serve again.
	clk.Advance(back.Sub(clk.Now()) + time.Minute)
	if u = r.poolUsage(t); !u.RateLimit.Allowed || u.RateLimit.LimitReached {
		t.Fatalf("after the rest: %+v", u.RateLimit)
	}
	// Model requests still need the local key; the ChatGPT routes take Codex's own sign-in.
	resp := r.post(t, "/v1/responses", `{"model":"gpt-5","input":"hi"}`)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a model request without the local key: %d", resp.StatusCode)
	}
}

func TestCodexsOtherChatGPTCallsGoToTheBackendAsTheyCame(t *testing.T) {
	backend := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		status(200, `{"items":[],"path":"`+r.URL.RequestURI()+`"}`)(w, r, n)
	})
	key := newUpstream(t, answerText("x"))
	r := newRelay(t, proxy.Options{LocalAPIKey: "sk-local", ChatGPTBackend: backend.URL + "/backend-api"}, openaiAccount("key", key))

	resp := r.codexGet(t, "/backend-api/ps/plugins/installed?limit=200")
	if b := readAll(t, resp); resp.StatusCode != 200 || !strings.Contains(string(b), `"path":"/backend-api/ps/plugins/installed?limit=200"`) {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	got := backend.requests()[0]
	if got.Header.Get("Authorization") != "Bearer codex-own-chatgpt-token" || got.Header.Get("Chatgpt-Account-Id") != "acct-codex" ||
		got.Header.Get("Originator") != "codex_cli_rs" {
		t.Fatalf("the backend got %v", got.Header)
	}
	// With no ChatGPT account in the pool, the usage is Codex's own account's.
	resp = r.codexGet(t, "/backend-api/wham/usage")
	if b := readAll(t, resp); resp.StatusCode != 200 || !strings.Contains(string(b), "/backend-api/wham/usage") {
		t.Fatalf("usage without a ChatGPT account: %d %s", resp.StatusCode, b)
	}
	tr := r.lastTrace(t, 2)
	b, _ := json.Marshal(r.Traces(0))
	if tr.Route != proxy.RouteChatGPT || tr.Path != "/backend-api/wham/usage" || tr.Status != 200 || strings.Contains(string(b), "codex-own-chatgpt-token") {
		t.Fatalf("trace %+v; traces %s", tr, b)
	}
	// Workspace discovery is answered by the relay: no routing constraint, so that Codex keeps
	// its ChatGPT calls on the relay.
	resp = r.codexGet(t, "/backend-api/wham/accounts/check")
	var check struct {
		Accounts []struct {
			ID     string `json:"id"`
			Origin string `json:"workspace_backend_origin"`
		} `json:"accounts"`
	}
	if json.Unmarshal(readAll(t, resp), &check) != nil || len(check.Accounts) != 1 || check.Accounts[0].ID != "acct-codex" || check.Accounts[0].Origin != "NO_CONSTRAINT" {
		t.Fatalf("accounts/check: %+v", check)
	}
	if n := len(backend.requests()); n != 2 {
		t.Fatalf("the backend got %d calls, want the plugins and the usage", n)
	}
	// An unreachable backend: a clear answer in the OpenAI shape.
	backend.Close()
	resp = r.codexGet(t, "/backend-api/wham/settings/user")
	if e := decodeErr(t, resp); resp.StatusCode != http.StatusBadGateway || e.Error.Code != "upstream_error" || strings.Contains(e.Error.Message, "codex-own") {
		t.Fatalf("%d %+v", resp.StatusCode, e)
	}
}

// Codex's own ChatGPT calls are not the pool's requests: they count in neither the requests
// nor the errors of the relay's stats.
func TestCodexsChatGPTCallsAreNotThePoolsRequests(t *testing.T) {
	backend := newUpstream(t, status(404, `{"detail":"Not Found"}`))
	r := newRelay(t, proxy.Options{ChatGPTBackend: backend.URL + "/backend-api"})
	if resp := r.codexGet(t, "/backend-api/ps/plugins/installed"); resp.StatusCode != 404 {
		t.Fatalf("%d", resp.StatusCode)
	}
	r.lastTrace(t, 1)
	if st := r.Stats().Requests; st.Total != 0 || st.Errors != 0 {
		t.Fatalf("requests %+v", st)
	}
}
