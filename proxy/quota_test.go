package proxy_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/codexrelay/codexrelay/proxy"
)

// withUsage makes a ChatGPT fake answer the usage endpoint with the given used percentages.
func withUsage(t *testing.T, u *upstream, primary, weekly float64, reset time.Time) {
	inner := u.Config.Handler
	u.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/backend-api/wham/usage" {
			if r.Header.Get("chatgpt-account-id") == "" || !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			fmt.Fprintf(w, `{"plan_type":"plus","rate_limit":{"allowed":true,"primary_window":{"used_percent":%g,"limit_window_seconds":18000,"reset_at":%d},"secondary_window":{"used_percent":%g,"limit_window_seconds":604800,"reset_at":%d}}}`,
				primary, reset.Unix(), weekly, reset.Add(72*time.Hour).Unix())
			return
		}
		inner.ServeHTTP(w, r)
	})
}

func TestQuotaIsReadAndRoutingPrefersHeadroom(t *testing.T) {
	clk := newClock()
	reset := clk.Now().Add(3 * time.Hour)
	busy := newUpstream(t, answerText("busy"))
	withUsage(t, busy, 80, 40, reset)
	fresh := newUpstream(t, answerText("fresh"))
	withUsage(t, fresh, 0, 0, reset)
	half := newUpstream(t, answerText("half"))
	withUsage(t, half, 50, 10, reset)
	// The strategy that orders by quota (priority would keep the list order).
	r := newRelay(t, proxy.Options{Now: clk.Now, Strategy: proxy.StrategyMostQuotaLeft}, chatgptAccount("busy", busy), chatgptAccount("half", half), chatgptAccount("fresh", fresh))
	r.RefreshQuotas(context.Background())
	q := r.account(t, "busy").Quota
	if q == nil || q.PrimaryUsedPercent != 80 || q.SecondaryUsedPercent != 40 || !q.PrimaryResetsAt.Equal(reset) {
		t.Fatalf("quota %+v", q)
	}
	// The untouched account is preferred, then the one with the most headroom.
	order := func() string {
		tr := r.send(t, "gpt-5")
		return tr.Attempts[len(tr.Attempts)-1].Account
	}
	if got := order(); got != "fresh" {
		t.Fatalf("served by %s", got)
	}
	r.SetAccounts([]proxy.Account{chatgptAccount("busy", busy), chatgptAccount("half", half)})
	if got := order(); got != "half" {
		t.Fatalf("served by %s", got)
	}
}

func TestRateLimitCooldownLastsUntilTheKnownReset(t *testing.T) {
	clk := newClock()
	reset := clk.Now().Add(90 * time.Minute)
	limited := newUpstream(t, status(429, `{"error":{"message":"slow down"}}`))
	withUsage(t, limited, 100, 30, reset)
	r := newRelay(t, proxy.Options{Now: clk.Now}, chatgptAccount("limited", limited))
	r.RefreshQuotas(context.Background())
	resp := r.post(t, "/v1/responses", smallBody)
	io.Copy(io.Discard, resp.Body)
	if a := r.account(t, "limited"); a.State != "cooldown" || !a.CooldownUntil.Equal(reset) {
		t.Fatalf("account %+v", a)
	}
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "5400" {
		t.Fatalf("status %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}
