package proxy_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
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
		Allowed      bool         `json:"allowed"`
		LimitReached bool         `json:"limit_reached"`
		Primary      *usageWindow `json:"primary_window"`
		Secondary    *usageWindow `json:"secondary_window"`
	} `json:"rate_limit"`
	Credits struct {
		Balance string `json:"balance"`
	} `json:"credits"`
	ResetCredits struct {
		Available int `json:"available_count"`
	} `json:"rate_limit_reset_credits"`
	Additional []struct {
		LimitName string `json:"limit_name"`
		RateLimit struct {
			Primary   *usageWindow `json:"primary_window"`
			Secondary *usageWindow `json:"secondary_window"`
		} `json:"rate_limit"`
	} `json:"additional_rate_limits"`
}

type usageWindow struct {
	UsedPercent        int   `json:"used_percent"`
	LimitWindowSeconds int   `json:"limit_window_seconds"`
	ResetAfterSeconds  int   `json:"reset_after_seconds"`
	ResetAt            int64 `json:"reset_at"`
}

func (r *relay) poolUsage(t *testing.T) usageWindows {
	t.Helper()
	resp := r.codexGet(t, "/backend-api/wham/usage")
	b := readAll(t, resp)
	var u usageWindows
	if resp.StatusCode != 200 || json.Unmarshal(b, &u) != nil || u.RateLimit.Primary == nil {
		t.Fatalf("usage: %d %s", resp.StatusCode, b)
	}
	return u
}

// ownUsage is the ChatGPT backend of the user Codex is signed in as: their own plan, credits,
// banked resets and windows (80% of five hours, which the pool's replace).
func ownUsage(t *testing.T) *upstream {
	return newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if r.URL.Path != "/backend-api/wham/usage" || r.Header.Get("Authorization") != "Bearer codex-own-chatgpt-token" {
			status(401, `{"detail":"Unauthorized"}`)(w, r, n)
			return
		}
		status(200, `{"plan_type":"team","user_id":"user-1","rate_limit":{"allowed":true,"limit_reached":false,"primary_window":{"used_percent":80,"limit_window_seconds":18000,"reset_after_seconds":60,"reset_at":1}},`+
			`"credits":{"has_credits":true,"unlimited":false,"balance":"12.50"},"rate_limit_reset_credits":{"available_count":3},`+
			`"additional_rate_limits":[{"limit_name":"GPT-5.3-Codex-Spark","metered_feature":"codex_bengalfox","rate_limit":{"primary_window":{"used_percent":90,"limit_window_seconds":18000}}},`+
			`{"limit_name":"theirs-only","metered_feature":"x","rate_limit":{"primary_window":{"used_percent":7,"limit_window_seconds":18000}}}]}`)(w, r, n)
	})
}

func TestCodexReadsThePoolsLimits(t *testing.T) {
	clk := newClock()
	reset := clk.Now().Add(3 * time.Hour)
	limit := status(429, `{"error":{"code":"usage_limit_reached","message":"limit"}}`, "Retry-After", "600")
	busy := newUpstream(t, limit)
	withUsage(t, busy, 30, 40, reset)
	var turns atomic.Int32 // half answers its first turn, then meets its limit
	half := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if strings.HasSuffix(r.URL.Path, "/responses") && turns.Add(1) == 1 {
			answerText("half")(w, r, n)
			return
		}
		limit(w, r, n)
	})
	withUsage(t, half, 5, 10, reset)
	own := ownUsage(t)
	r := newRelay(t, proxy.Options{Now: clk.Now, LocalAPIKey: "sk-local", ChatGPTBackend: own.URL + "/backend-api"},
		chatgptAccount("busy", busy), chatgptAccount("half", half))
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

	// Both can serve, one 30% used and one 5%: the pool has left what both have together
	// against what they had, (70 + 95) / 200, in whole numbers; the plan, the credits and the
	// banked resets are the signed-in user's own.
	u := r.poolUsage(t)
	if !u.RateLimit.Allowed || u.RateLimit.LimitReached || u.RateLimit.Primary.UsedPercent != 18 || u.RateLimit.Secondary.UsedPercent != 25 ||
		u.RateLimit.Primary.LimitWindowSeconds != 18000 || u.RateLimit.Secondary.LimitWindowSeconds != 604800 ||
		u.RateLimit.Primary.ResetAt != reset.Unix() || u.PlanType != "team" || u.Credits.Balance != "12.50" || u.ResetCredits.Available != 3 {
		t.Fatalf("two accounts: %+v %+v %+v", u, *u.RateLimit.Primary, *u.RateLimit.Secondary)
	}
	if tr := r.lastTrace(t, 1); tr.Route != proxy.RouteChatGPT || tr.Path != "/backend-api/wham/usage" || tr.Account != "busy,half" || tr.Status != 200 {
		t.Fatalf("trace %+v", tr)
	}
	// The user's own feature limits: the pool has none of them, so they stay the user's.
	if len(u.Additional) != 2 || u.Additional[0].RateLimit.Primary.UsedPercent != 90 || u.Additional[1].LimitName != "theirs-only" {
		t.Fatalf("additional limits %+v", u.Additional)
	}
	// busy meets its limit and rests: half alone can serve, and speaks for the pool. The limit
	// is not reached while an account can serve.
	turn()
	if st := r.account(t, "busy"); st.State != proxy.StateCooldown {
		t.Fatalf("busy: %+v", st)
	}
	if u = r.poolUsage(t); !u.RateLimit.Allowed || u.RateLimit.LimitReached || u.RateLimit.Primary.UsedPercent != 5 {
		t.Fatalf("one resting: %+v %+v", u.RateLimit, *u.RateLimit.Primary)
	}
	// half meets its limit too: every account rests. The pool's limit is reached, and its
	// windows reset when the first account is back.
	turn()
	u = r.poolUsage(t)
	back := *r.account(t, "busy").CooldownUntil
	if u.RateLimit.Allowed || !u.RateLimit.LimitReached || u.RateLimit.Primary.UsedPercent != 100 || u.RateLimit.Primary.ResetAt != back.Unix() ||
		u.RateLimit.Secondary.UsedPercent != 100 {
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

// A weekly-only account has no five hours: the pool's week is its and the other's, its five
// hours the other's alone (the weekly-only account has all of them), and no window is invented
// where no account has one. A metered feature's own limit (GPT-5.3-Codex-Spark) is pooled by
// its limit_name over the accounts that have it.
func TestPooledUsageKeepsWindowLengthsAbsenceAndFeatureLimits(t *testing.T) {
	clk := newClock()
	weekly := newUpstream(t, answerText("w"))
	week := clk.Now().Add(48 * time.Hour).Unix()
	spark := clk.Now().Add(2 * time.Hour).Unix()
	withUsageBody(t, weekly, `{"plan_type":"plus","rate_limit":{"primary_window":{"used_percent":60,"limit_window_seconds":604800,"reset_at":`+fmt.Sprint(week)+`},"secondary_window":null}}`)
	sparky := newUpstream(t, answerText("s"))
	withUsageBody(t, sparky, `{"plan_type":"pro","rate_limit":{"primary_window":{"used_percent":20,"limit_window_seconds":18000,"reset_at":`+fmt.Sprint(spark)+`},"secondary_window":{"used_percent":10,"limit_window_seconds":604800,"reset_at":`+fmt.Sprint(week+3600)+`}},`+
		`"additional_rate_limits":[{"limit_name":"GPT-5.3-Codex-Spark","metered_feature":"codex_bengalfox","rate_limit":{"primary_window":{"used_percent":50,"limit_window_seconds":18000,"reset_at":`+fmt.Sprint(spark)+`}}}]}`)
	own := ownUsage(t)
	r := newRelay(t, proxy.Options{Now: clk.Now, ChatGPTBackend: own.URL + "/backend-api"}, chatgptAccount("weekly", weekly), chatgptAccount("sparky", sparky))
	r.RefreshQuotas(context.Background())
	u := r.poolUsage(t)
	p, s := u.RateLimit.Primary, u.RateLimit.Secondary
	// Five hours: weekly has all of them, sparky 80: (100 + 80) / 200 left. The week: (40 + 90) / 200.
	if p.LimitWindowSeconds != 18000 || p.UsedPercent != 10 || p.ResetAt != spark || s == nil || s.LimitWindowSeconds != 604800 || s.UsedPercent != 35 || s.ResetAt != week {
		t.Fatalf("windows %+v %+v", p, s)
	}
	if len(u.Additional) != 2 || u.Additional[0].LimitName != "GPT-5.3-Codex-Spark" || u.Additional[0].RateLimit.Primary.UsedPercent != 50 ||
		u.Additional[0].RateLimit.Secondary != nil || u.Additional[1].LimitName != "theirs-only" || u.Additional[1].RateLimit.Primary.UsedPercent != 7 {
		t.Fatalf("feature limits %+v", u.Additional)
	}

	// A pool of weekly-only accounts has the week alone: no five hours are invented.
	r = newRelay(t, proxy.Options{Now: clk.Now, ChatGPTBackend: own.URL + "/backend-api"}, chatgptAccount("weekly", weekly))
	r.RefreshQuotas(context.Background())
	u = r.poolUsage(t)
	if p := u.RateLimit.Primary; p.LimitWindowSeconds != 604800 || p.UsedPercent != 60 || u.RateLimit.Secondary != nil {
		t.Fatalf("weekly only: %+v %+v", p, u.RateLimit.Secondary)
	}
}

// A reading older than the freshness bound is read again before it speaks for the pool, and an
// account never read is read then: it never counts as untouched headroom.
func TestPooledUsageReadsWhatIsNotFresh(t *testing.T) {
	clk := newClock()
	used := atomic.Int64{}
	used.Store(30)
	up := newUpstream(t, answerText("a"))
	inner := up.Config.Handler
	up.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/backend-api/wham/usage" {
			fmt.Fprintf(w, `{"rate_limit":{"primary_window":{"used_percent":%d,"limit_window_seconds":18000}}}`, used.Load())
			return
		}
		inner.ServeHTTP(w, r)
	})
	own := ownUsage(t)
	r := newRelay(t, proxy.Options{Now: clk.Now, ChatGPTBackend: own.URL + "/backend-api"}, chatgptAccount("a", up))
	// Never read: read now.
	if u := r.poolUsage(t); u.RateLimit.Primary.UsedPercent != 30 {
		t.Fatalf("never read: %+v", *u.RateLimit.Primary)
	}
	used.Store(70)
	if u := r.poolUsage(t); u.RateLimit.Primary.UsedPercent != 30 {
		t.Fatalf("a fresh reading was read again: %+v", *u.RateLimit.Primary)
	}
	clk.Advance(proxy.QuotaInterval + 2*time.Minute)
	if u := r.poolUsage(t); u.RateLimit.Primary.UsedPercent != 70 {
		t.Fatalf("a stale reading: %+v", *u.RateLimit.Primary)
	}
	// An account whose usage cannot be read is not invented: the user's own answer goes as it came.
	up.Close()
	clk.Advance(proxy.QuotaInterval + 2*time.Minute)
	if u := r.poolUsage(t); u.RateLimit.Primary.UsedPercent != 80 || u.PlanType != "team" {
		t.Fatalf("unreadable: %+v", *u.RateLimit.Primary)
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

// The pool's figures go only over a sign-in the ChatGPT backend accepted: a refused sign-in is
// told as the backend told it, and with the backend out of reach nothing of the pool is given.
func TestPooledUsageOnlyOverAnAcceptedSignIn(t *testing.T) {
	up := newUpstream(t, answerText("a"))
	withUsage(t, up, 30, 40, time.Now().Add(time.Hour))
	own := ownUsage(t)
	r := newRelay(t, proxy.Options{ChatGPTBackend: own.URL + "/backend-api"}, chatgptAccount("a", up))
	req, _ := http.NewRequest(http.MethodGet, r.URL+"/backend-api/wham/usage", nil)
	req.Header.Set("Authorization", "Bearer someone-else")
	req.Header.Set("Chatgpt-Account-Id", "acct-x")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if b := readAll(t, resp); resp.StatusCode != 401 || strings.Contains(string(b), "rate_limit") {
		t.Fatalf("a refused sign-in: %d %s", resp.StatusCode, b)
	}
	own.Close()
	resp = r.codexGet(t, "/backend-api/wham/usage")
	if b := readAll(t, resp); resp.StatusCode != http.StatusBadGateway || strings.Contains(string(b), "rate_limit") {
		t.Fatalf("the backend out of reach: %d %s", resp.StatusCode, b)
	}
}

// The local key never reaches chatgpt.com, in whatever header or scheme a client put it
// (issue 49): every value that carries it is taken out, the rest of the header kept; in the
// query or a cookie the request is refused; HEAD, which the table does not list, is a 405.
func TestTheLocalKeyNeverReachesChatGPT(t *testing.T) {
	const key = "crk-local-key-0123456789"
	backend := newUpstream(t, status(200, `{"items":[]}`))
	r := newRelay(t, proxy.Options{LocalAPIKey: key, ChatGPTBackend: backend.URL + "/backend-api"})
	basic := base64.StdEncoding.EncodeToString([]byte("user:" + key))
	send := func(method, path string, h http.Header) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, r.URL+path, nil)
		req.Header = h
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	spellings := []http.Header{
		{"Api-Key": {key}},
		{"Authorization": {"Basic " + basic}},
		{"Authorization": {key}},
		{"Authorization": {"Bearer codex-own", "Bearer " + key}},
		{"X-Api-Key": {"other", key}},
		{"X-Forwarded-Authorization": {"Token " + key}},
	}
	for i, h := range spellings {
		h.Set("Chatgpt-Account-Id", "acct-codex")
		if resp := send(http.MethodGet, "/backend-api/ps/plugins/installed", h); resp.StatusCode != 200 {
			t.Fatalf("spelling %d: status %d", i, resp.StatusCode)
		}
		got := backend.requests()[i]
		for name, vs := range got.Header {
			for _, v := range vs {
				if carries(v, key) {
					t.Fatalf("spelling %d: the backend got the local key in %s: %q", i, name, v)
				}
			}
		}
		if i == 3 && got.Header.Get("Authorization") != "Bearer codex-own" {
			t.Fatalf("the client's own token went missing beside the key: %v", got.Header)
		}
		if i == 4 && got.Header.Get("X-Api-Key") != "other" {
			t.Fatalf("the other X-Api-Key went missing: %v", got.Header)
		}
	}
	n := len(backend.requests())
	for _, c := range []struct {
		path string
		h    http.Header
		code string
	}{
		{"/backend-api/ps/plugins/installed?api_key=" + key, http.Header{}, "local_key_in_query"},
		{"/backend-api/ps/plugins/installed?k=" + strings.ReplaceAll(key, "-", "%2D"), http.Header{}, "local_key_in_query"},
		{"/backend-api/ps/plugins/installed?x=%zz&k=%63" + key[1:], http.Header{}, "local_key_in_query"}, // one bad escape beside it
		{"/backend-api/ps/" + key + "/installed", http.Header{}, "local_key_in_query"},
		{"/backend-api/ps/plugins/installed", http.Header{"Cookie": {"session=" + key}}, "local_key_in_cookie"},
	} {
		resp := send(http.MethodGet, c.path, c.h)
		if e := decodeErr(t, resp); resp.StatusCode != 400 || e.Error.Code != c.code || strings.Contains(e.Error.Message, key) {
			t.Fatalf("%s %v: %d %+v", c.path, c.h, resp.StatusCode, e)
		}
	}
	if resp := send(http.MethodHead, "/backend-api/ps/plugins/installed", http.Header{}); resp.StatusCode != 405 ||
		!strings.Contains(resp.Header.Get("Allow"), "GET") {
		t.Fatalf("HEAD: %d, Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
	}
	if got := len(backend.requests()); got != n {
		t.Fatalf("%d refused requests reached the backend", got-n)
	}
}

// carries reports whether a header value holds key, as it is or in a Basic credential.
func carries(v, key string) bool {
	if strings.Contains(v, key) {
		return true
	}
	if dec, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(v, "Basic ")); err == nil {
		return strings.Contains(string(dec), key)
	}
	return false
}
