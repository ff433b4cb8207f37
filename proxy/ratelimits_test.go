package proxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/codexrelay/codexrelay/proxy"
)

// selfMetered answers as a ChatGPT account whose answers carry its own rate limits, a model's
// bucket family and its credits: none of them may reach the client through the relay.
func selfMetered(text string) func(w http.ResponseWriter, r *http.Request, n int) {
	return func(w http.ResponseWriter, r *http.Request, n int) {
		h := w.Header()
		h.Set("X-Codex-Primary-Used-Percent", "12")
		h.Set("X-Codex-Primary-Window-Minutes", "300")
		h.Set("X-Codex-Bengalfox-Primary-Used-Percent", "99")
		h.Set("X-Codex-Bengalfox-Limit-Name", "GPT-5.3-Codex-Spark")
		h.Set("X-Codex-Credits-Has-Credits", "true")
		h.Set("X-Codex-Credits-Unlimited", "false")
		h.Set("X-Codex-Rate-Limit-Reached-Type", "workspace_member_usage_limit_reached")
		answerText(text)(w, r, n)
	}
}

// Codex's live meter shows the pool: every answer carries the pool's windows, with the meaning
// of the pooled /wham/usage (what the accounts that can serve have left), in the headers Codex
// reads over HTTP and in the codex.rate_limits event it reads over a WebSocket; the serving
// account's own figures, families and credits never reach it, nor a kind of limit reached while
// the pool serves.
func TestAnswersCarryThePoolsRateLimits(t *testing.T) {
	clk := newClock()
	reset := clk.Now().Add(3 * time.Hour)
	a, b := newUpstream(t, selfMetered("a")), newUpstream(t, selfMetered("b"))
	withUsage(t, a, 30, 40, reset)
	withUsage(t, b, 60, 20, reset)
	r := newRelay(t, proxy.Options{Now: clk.Now}, chatgptAccount("a", a), chatgptAccount("b", b))
	r.RefreshQuotas(context.Background())

	// The five hours: (70 + 40) / 200 left, 45% used; the week: (60 + 80) / 200, 30% used.
	resp := r.post(t, "/v1/responses", `{"model":"gpt-5","input":"hi","stream":true}`)
	readAll(t, resp)
	want := map[string]string{
		"X-Codex-Primary-Used-Percent": "45", "X-Codex-Primary-Window-Minutes": "300", "X-Codex-Primary-Reset-At": fmt.Sprint(reset.Unix()),
		"X-Codex-Secondary-Used-Percent": "30", "X-Codex-Secondary-Window-Minutes": "10080",
		"X-Codex-Bengalfox-Primary-Used-Percent": "", "X-Codex-Bengalfox-Limit-Name": "", "X-Codex-Credits-Has-Credits": "",
		"X-Codex-Rate-Limit-Reached-Type": "",
	}
	for k, v := range want {
		if got := resp.Header.Get(k); got != v {
			t.Errorf("over HTTP %s: %q, want %q", k, got, v)
		}
	}

	c := r.dial(t)
	evs := turn(t, c, createFrame("", userItem("hi")))
	var limits []map[string]any
	for i, ev := range evs {
		if ev["type"] == "codex.rate_limits" {
			limits = append(limits, ev)
			if i > 1 {
				t.Errorf("the rate limits came as event %d, after the response began", i)
			}
		}
	}
	if len(limits) != 1 {
		t.Fatalf("%d codex.rate_limits events over the socket, want the pool's one: %v", len(limits), evs)
	}
	rl := limits[0]["rate_limits"].(map[string]any)
	p, s := rl["primary"].(map[string]any), rl["secondary"].(map[string]any)
	if p["used_percent"] != 45.0 || p["window_minutes"] != 300.0 || p["reset_at"] != float64(reset.Unix()) || s["used_percent"] != 30.0 {
		t.Fatalf("the socket's rate limits: %v", rl)
	}
}

// Dry, the pool says so: the relay's own 429 names the kind of limit that stops it, with the
// pool's windows spent; the pooled /wham/usage says limit_reached, not allowed, and the kind.
// A pool whose only account's reading is spent is dry before any limit is met.
func TestADryPoolSaysSo(t *testing.T) {
	clk := newClock()
	reset := clk.Now().Add(2 * time.Hour)
	limit := status(429, `{"error":{"code":"usage_limit_reached","message":"limit"}}`, "Retry-After", "600")
	a := newUpstream(t, limit)
	withUsage(t, a, 100, 40, reset)
	own := ownUsageWithSpendControl(t)
	r := newRelay(t, proxy.Options{Now: clk.Now, Hold: -1, ChatGPTBackend: own.URL + "/backend-api"}, chatgptAccount("a", a))
	r.RefreshQuotas(context.Background())

	var u map[string]json.RawMessage
	resp := r.codexGet(t, "/backend-api/wham/usage")
	if err := json.Unmarshal(readAll(t, resp), &u); err != nil {
		t.Fatal(err)
	}
	var rl struct {
		Allowed      bool `json:"allowed"`
		LimitReached bool `json:"limit_reached"`
	}
	json.Unmarshal(u["rate_limit"], &rl)
	if rl.Allowed || !rl.LimitReached || string(u["rate_limit_reached_type"]) != `{"type":"rate_limit_reached"}` ||
		string(u["spend_control"]) != `{"limit":"25.00","reached":false}` {
		t.Fatalf("a pool whose one account is spent: rate_limit %s, reached type %s, spend control %s",
			u["rate_limit"], u["rate_limit_reached_type"], u["spend_control"])
	}

	resp = r.post(t, "/v1/responses", `{"model":"gpt-5","input":"hi","stream":true}`)
	readAll(t, resp)
	if resp.StatusCode != 429 || resp.Header.Get("X-Codex-Rate-Limit-Reached-Type") != "rate_limit_reached" ||
		resp.Header.Get("X-Codex-Active-Limit") != "codex" || resp.Header.Get("X-Codex-Primary-Used-Percent") != "100" {
		t.Fatalf("the dry pool's 429: %d %v", resp.StatusCode, resp.Header)
	}
}

// ownUsageWithSpendControl is the user's own usage with a spend control they reached.
func ownUsageWithSpendControl(t *testing.T) *upstream {
	return newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		status(200, `{"plan_type":"team","rate_limit":{"allowed":false,"limit_reached":true,"primary_window":{"used_percent":100,"limit_window_seconds":18000}},`+
			`"rate_limit_reached_type":{"type":"workspace_member_usage_limit_reached"},"spend_control":{"limit":"25.00","reached":true}}`)(w, r, n)
	})
}
