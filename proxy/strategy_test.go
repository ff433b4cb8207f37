package proxy_test

import (
	"context"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/codexrelay/codexrelay/proxy"
)

// TestStrategiesTryAccountsInTheOrderTheySay: for a table of accounts (kind, quota used,
// state), the order each strategy tries them. Every account answers 503 here, so the trace
// lists the whole order (each account is tried twice: a 503 is retried once).
func TestStrategiesTryAccountsInTheOrderTheySay(t *testing.T) {
	type acct struct {
		name  string
		kind  proxy.Kind
		used  float64 // 5-hour window used, for ChatGPT accounts
		state string  // "" ready, "cooldown", "disabled"
	}
	accounts := []acct{
		{"seat-1", proxy.KindChatGPT, 60, "cooldown"},
		{"seat-2", proxy.KindChatGPT, 40, ""},
		{"api-key", proxy.KindOpenAI, 0, ""},
		{"seat-3", proxy.KindChatGPT, 10, ""},
		{"off", proxy.KindOpenAI, 0, "disabled"},
	}
	for _, c := range []struct {
		strategy string
		want     [][]string // the order of successive requests
	}{
		// Exactly the list order: untouched quota does not reorder it.
		{proxy.StrategyPriority, [][]string{{"seat-2", "api-key", "seat-3"}, {"seat-2", "api-key", "seat-3"}}},
		// Taking turns in list order (the request that made seat-1 cool down took the first).
		{proxy.StrategyRoundRobin, [][]string{{"api-key", "seat-3", "seat-2"}, {"seat-3", "seat-2", "api-key"}, {"seat-2", "api-key", "seat-3"}}},
		// Untouched first, then the least used.
		{proxy.StrategyMostQuotaLeft, [][]string{{"api-key", "seat-3", "seat-2"}}},
	} {
		t.Run(c.strategy, func(t *testing.T) {
			clk := newClock()
			var list []proxy.Account
			var limiter *upstream
			for _, a := range accounts {
				u := newUpstream(t, status(503, `{"error":{"message":"overloaded"}}`))
				withUsage(t, u, a.used, 0, clk.Now().Add(time.Hour))
				acc := openaiAccount(a.name, u)
				if a.kind == proxy.KindChatGPT {
					acc = chatgptAccount(a.name, u)
				}
				acc.Disabled = a.state == "disabled"
				if a.state == "cooldown" {
					limiter = u
				}
				list = append(list, acc)
			}
			r := newRelay(t, proxy.Options{Now: clk.Now, Strategy: c.strategy, RetryBackoff: time.Millisecond,
				Breaker: proxy.Breaker{Failures: 1000}}, list...)
			r.RefreshQuotas(context.Background())
			// seat-1 hits its limit once: it cools down for the rest of the test.
			limiter.handle = status(429, `{"error":{"message":"limit","code":"usage_limit_reached"}}`, "Retry-After", "3600")
			readAll(t, r.post(t, "/v1/responses", smallBody))
			for i, want := range c.want {
				readAll(t, r.post(t, "/v1/responses", smallBody))
				var got []string
				for _, at := range r.lastTrace(t, i+2).Attempts {
					if len(got) == 0 || got[len(got)-1] != at.Account {
						got = append(got, at.Account)
					}
				}
				if !slices.Equal(got, want) {
					t.Errorf("request %d tried %v, want %v", i+1, got, want)
				}
			}
		})
	}
}

// TestStatsNameWhoServedLastAndWhoServesNext, and a ChatGPT account added while the relay
// serves shows its quota at once.
func TestStatsNameWhoServedLastAndWhoServesNext(t *testing.T) {
	a, b := newUpstream(t, answerText("a")), newUpstream(t, answerText("b"))
	withUsage(t, b, 25, 5, time.Now().Add(time.Hour))
	r := newRelay(t, proxy.Options{Strategy: proxy.StrategyRoundRobin}, openaiAccount("a", a))
	if s := r.Stats(); s.Next != "a" || s.LastServed != "" {
		t.Fatalf("before any request: next %q, last %q", s.Next, s.LastServed)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.Serve(ctx, ln, time.Second) }()
	defer func() { stop(); <-done }()
	eventually(t, "serving", func() bool { return r.Stats().Listen != "" })
	r.SetAccounts([]proxy.Account{openaiAccount("a", a), chatgptAccount("b", b)})
	eventually(t, "b's quota", func() bool { return r.account(t, "b").Quota != nil })
	if q := r.account(t, "b").Quota; q.PrimaryUsedPercent != 25 {
		t.Fatalf("quota %+v", q)
	}
	readAll(t, r.post(t, "/v1/responses", smallBody))
	s := r.Stats()
	if s.LastServed == "" || s.Next == "" || s.Next == s.LastServed || !strings.Contains("ab", s.Next) {
		t.Fatalf("after one request: last %q, next %q", s.LastServed, s.Next)
	}
}
