package proxy_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
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

// withUsageBody makes u's usage answer body.
func withUsageBody(t *testing.T, u *upstream, body string) {
	inner := u.Config.Handler
	u.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/backend-api/wham/usage" {
			io.WriteString(w, body)
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

// renewing is a sign-in whose access token the upstream stopped taking before its expiry:
// Refresh gives the next one.
type renewing struct {
	mu        sync.Mutex
	token     string
	refreshes int
}

func (c *renewing) Credential(context.Context) (proxy.Credential, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return proxy.Credential{Token: c.token, AccountID: "acct-r"}, nil
}

func (c *renewing) Refresh(context.Context, proxy.Credential) (proxy.Credential, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refreshes++
	c.token = fmt.Sprintf("access-renewed-%d", c.refreshes)
	return proxy.Credential{Token: c.token, AccountID: "acct-r"}, nil
}

// A usage read refused with 401 is sent again once with a renewed sign-in, as the credit calls
// are (issue 30, 8): the account keeps its quota figures instead of repeating the 401 every
// five minutes.
func TestAQuotaRead401IsRefreshedOnceAndRetried(t *testing.T) {
	up := newUpstream(t, answerText("hi"))
	inner := up.Config.Handler
	var reads atomic.Int32
	up.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/backend-api/wham/usage" {
			inner.ServeHTTP(w, r)
			return
		}
		reads.Add(1)
		if r.Header.Get("Authorization") != "Bearer access-renewed-1" {
			http.Error(w, `{"detail":"token revoked"}`, http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, `{"rate_limit":{"primary_window":{"used_percent":42,"limit_window_seconds":18000,"reset_after_seconds":600}}}`)
	})
	cred := &renewing{token: "access-stale"}
	r := newRelay(t, proxy.Options{}, proxy.Account{Name: "cg", Kind: proxy.KindChatGPT, BaseURL: up.URL + "/backend-api/codex", Credentials: cred})
	r.RefreshQuotas(context.Background())
	if q := r.account(t, "cg").Quota; q == nil || q.PrimaryUsedPercent != 42 {
		t.Fatalf("quota %+v after %d reads, %d refreshes", q, reads.Load(), cred.refreshes)
	}
	if cred.refreshes != 1 || reads.Load() != 2 {
		t.Fatalf("%d refreshes, %d reads; want one refresh and one retry", cred.refreshes, reads.Load())
	}
}

// Every call to an account goes through the pool's one way (pool.Call): a ChatGPT token the
// backend stopped taking is renewed once whichever call met it first, the model listing
// included (it once never renewed a sign-in), and one the backend still refuses after its
// renewal marks the account, a usage read included (it once marked nothing).
func TestEveryCallRenewsARefusedSignIn(t *testing.T) {
	up := newUpstream(t, answerText("hi"))
	up.setModels(listing(nil, "gpt-5"))
	inner := up.Config.Handler
	var refused atomic.Int32
	up.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer access-renewed-1" {
			refused.Add(1)
			http.Error(w, `{"detail":"token revoked"}`, http.StatusUnauthorized)
			return
		}
		if r.URL.Path == "/backend-api/wham/usage" {
			fmt.Fprint(w, `{"rate_limit":{"primary_window":{"used_percent":7,"limit_window_seconds":18000,"reset_after_seconds":600}}}`)
			return
		}
		inner.ServeHTTP(w, r)
	})
	cred := &renewing{token: "access-stale"}
	r := catalogRelay(t, newClock(), false, proxy.Account{Name: "cg", Kind: proxy.KindChatGPT, BaseURL: up.URL + "/backend-api/codex", Credentials: cred})
	// The first call is the catalog's listing, which the request waits for.
	tr := r.send(t, "gpt-5")
	if tr.Status != 200 || tr.Account != "cg" {
		t.Fatalf("the request: %+v", tr)
	}
	if cred.refreshes != 1 || refused.Load() != 1 {
		t.Fatalf("%d refreshes, %d refused calls; want the listing's 401 renewed once, and nothing refused after", cred.refreshes, refused.Load())
	}
	if len(tr.Attempts) != 1 {
		t.Fatalf("attempts %+v: the request met the renewed sign-in", tr.Attempts)
	}

	// A sign-in the backend refuses even renewed, met first by a usage read, marks the account.
	never := &renewing{token: "access-stale"}
	up2 := newUpstream(t, answerText("hi"))
	inner2 := up2.Config.Handler
	up2.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/backend-api/wham/usage" {
			http.Error(w, `{"detail":"token revoked"}`, http.StatusUnauthorized)
			return
		}
		inner2.ServeHTTP(w, r)
	})
	r2 := newRelay(t, proxy.Options{}, proxy.Account{Name: "gone", Kind: proxy.KindChatGPT, BaseURL: up2.URL + "/backend-api/codex", Credentials: never})
	r2.RefreshQuotas(context.Background())
	if a := r2.account(t, "gone"); a.State != proxy.StateNeedsLogin || never.refreshes != 1 {
		t.Fatalf("after a usage read refused twice: %+v, %d refreshes; want needs_login after one renewal", a, never.refreshes)
	}
}
