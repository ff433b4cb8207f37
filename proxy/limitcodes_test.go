package proxy_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/codexrelay/codexrelay/proxy"
)

// Today's limit codes move a request to the next account before any byte reached the client,
// whether they come as an error answer (with whatever status) or as a 200 stream's first
// event, and rest the account for the Retry-After the body carries, else the reset it names,
// else the default minute.
func TestTodaysLimitCodesRotate(t *testing.T) {
	failedEvent := func(code, extra string) func(w http.ResponseWriter, r *http.Request, n int) {
		return func(w http.ResponseWriter, r *http.Request, n int) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"id\":\"resp_x\",\"status\":\"failed\",\"error\":{\"code\":%q,\"message\":\"limit%s\"%s}}}\n\n", code, "", extra)
		}
	}
	cases := []struct {
		code   string
		answer func(code string) func(w http.ResponseWriter, r *http.Request, n int)
		rest   time.Duration // how long the account rests
	}{
		{"slow_down", func(c string) func(http.ResponseWriter, *http.Request, int) {
			return failedEvent(c, `,"retry_after":7`)
		}, 7 * time.Second},
		{"credit_balance_exhausted", func(c string) func(http.ResponseWriter, *http.Request, int) {
			return status(402, `{"error":{"code":"`+c+`","message":"no credits","resets_in_seconds":3600}}`)
		}, time.Hour},
		{"organization_spend_limit_exceeded", func(c string) func(http.ResponseWriter, *http.Request, int) {
			return status(403, `{"error":{"code":"`+c+`","message":"spend limit"}}`)
		}, time.Minute},
		{"project_spend_limit_exceeded", func(c string) func(http.ResponseWriter, *http.Request, int) {
			return status(400, `{"error":{"code":"`+c+`","message":"spend limit","retry_after_seconds":90}}`)
		}, 90 * time.Second},
		{"organization_usage_limit_exceeded", func(c string) func(http.ResponseWriter, *http.Request, int) { return failedEvent(c, "") }, time.Minute},
	}
	for _, c := range cases {
		t.Run(c.code, func(t *testing.T) {
			a := newUpstream(t, c.answer(c.code))
			b := newUpstream(t, answerText("from b"))
			// The wall clock: resets_in_seconds and retry_after are relative to it.
			r := newRelay(t, proxy.Options{}, openaiAccount("a", a), openaiAccount("b", b))
			resp := r.post(t, "/v1/responses", `{"model":"gpt-5","input":"hi","stream":true}`)
			io.Copy(io.Discard, resp.Body)
			tr := r.lastTrace(t, 1)
			if resp.StatusCode != 200 || tr.Account != "b" || len(tr.Attempts) != 2 {
				t.Fatalf("%d, served by %q, attempts %+v", resp.StatusCode, tr.Account, tr.Attempts)
			}
			st := r.account(t, "a")
			if st.State != proxy.StateCooldown || st.CooldownUntil == nil {
				t.Fatalf("a: %+v", st)
			}
			// Whole seconds, read against the wall clock: two seconds' slack.
			if got := time.Until(*st.CooldownUntil); got < c.rest-2*time.Second || got > c.rest+2*time.Second {
				t.Fatalf("a rests %v, want %v", got, c.rest)
			}
		})
	}
}

// flex_unavailable is a moment without capacity: the same account once more, then the next.
func TestFlexUnavailableIsTransient(t *testing.T) {
	a := newUpstream(t, status(503, `{"error":{"code":"flex_unavailable","message":"no flex capacity"}}`))
	b := newUpstream(t, answerText("from b"))
	r := newRelay(t, proxy.Options{RetryBackoff: time.Millisecond}, openaiAccount("a", a), openaiAccount("b", b))
	resp := r.post(t, "/v1/responses", `{"model":"gpt-5","input":"hi","stream":true}`)
	io.Copy(io.Discard, resp.Body)
	if tr := r.lastTrace(t, 1); tr.Account != "b" || len(a.requests()) != 2 {
		t.Fatalf("served by %q after %d tries of a", tr.Account, len(a.requests()))
	}
	if st := r.account(t, "a"); st.State == proxy.StateCooldown && st.CooldownReason == proxy.CooldownRateLimit {
		t.Fatalf("a rests as if limited: %+v", st)
	}
}

// teamAccount is a ChatGPT account of the workspace ws-team.
func teamAccount(name string, u *upstream) proxy.Account {
	acc := chatgptAccount(name, u)
	acc.Credentials = proxy.Static{Token: "access-" + name, AccountID: "ws-team"}
	return acc
}

// A workspace-wide limit rests every account of that workspace (the same chatgpt-account-id),
// not one: the request goes to an account of another workspace, and the next one too.
func TestAWorkspaceLimitRestsTheWholeWorkspace(t *testing.T) {
	limit := status(429, `{"error":{"code":"workspace_usage_limit_reached","message":"the workspace is at its limit","resets_in_seconds":1800}}`)
	a1 := newUpstream(t, limit)
	a2 := newUpstream(t, limit)
	b := newUpstream(t, answerText("from b"))
	r := newRelay(t, proxy.Options{}, teamAccount("a1", a1), teamAccount("a2", a2), chatgptAccount("b", b))
	r.RefreshQuotas(t.Context()) // the usage reads tell each account's workspace
	resp := r.post(t, "/v1/responses", `{"model":"gpt-5","input":"hi","stream":true}`)
	io.Copy(io.Discard, resp.Body)
	tr := r.lastTrace(t, 1)
	if tr.Account != "b" || len(tr.Attempts) != 2 || tr.Attempts[0].Account != "a1" {
		t.Fatalf("attempts %+v", tr.Attempts)
	}
	for _, n := range []string{"a1", "a2"} {
		if st := r.account(t, n); st.State != proxy.StateCooldown {
			t.Fatalf("%s: %+v", n, st)
		}
	}
	for _, rec := range a2.requests() {
		if strings.HasSuffix(rec.Path, "/responses") {
			t.Fatal("a2, of the same workspace, was sent the request")
		}
	}
	if st := r.account(t, "b"); st.State != proxy.StateReady {
		t.Fatalf("b, of another workspace: %+v", st)
	}
}

// A workspace's limit that arrives after output (the answer has begun and cannot move) rests
// the whole workspace too, as one before output does: one judge, one writer of rests.
func TestAWorkspaceLimitAfterOutputRestsTheWholeWorkspace(t *testing.T) {
	after := func(w http.ResponseWriter, r *http.Request, n int) {
		writeEvents(w, []string{
			"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"half an answer\"}\n\n",
			"event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"status\":\"failed\",\"error\":{\"code\":\"workspace_usage_limit_reached\",\"message\":\"the workspace is at its limit\"}}}\n\n",
		})
	}
	a1 := newUpstream(t, after)
	a2 := newUpstream(t, answerText("from a2"))
	r := newRelay(t, proxy.Options{}, teamAccount("a1", a1), teamAccount("a2", a2))
	r.RefreshQuotas(t.Context())
	resp := r.post(t, "/v1/responses", `{"model":"gpt-5","input":"hi","stream":true}`)
	io.Copy(io.Discard, resp.Body)
	r.lastTrace(t, 1)
	for _, n := range []string{"a1", "a2"} {
		if st := r.account(t, n); st.State != proxy.StateCooldown {
			t.Fatalf("%s, of the workspace at its limit: %+v", n, st)
		}
	}
}

// However far an upstream asks an account to rest (a Retry-After or a body's retry_after that
// overflows a duration, infinity), the account rests for the longest rest, never for none.
func TestTheLongestRestIsTheCap(t *testing.T) {
	for _, c := range []struct{ name, header, body string }{
		{"header 1e10", "1e10", `{"error":{"code":"rate_limit_exceeded","message":"slow down"}}`},
		{"header 9.3e9", "9.3e9", `{"error":{"code":"rate_limit_exceeded","message":"slow down"}}`},
		{"header Inf", "Inf", `{"error":{"code":"rate_limit_exceeded","message":"slow down"}}`},
		{"header 20 digits", "99999999999999999999", `{"error":{"code":"rate_limit_exceeded","message":"slow down"}}`},
		{"body retry_after", "", `{"error":{"code":"rate_limit_exceeded","message":"slow down","retry_after":1e10}}`},
		{"body resets_in_seconds", "", `{"error":{"code":"rate_limit_exceeded","message":"slow down","resets_in_seconds":9300000000000000000}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			clk := newClock()
			hdr := []string{}
			if c.header != "" {
				hdr = []string{"Retry-After", c.header}
			}
			a := newUpstream(t, status(429, c.body, hdr...))
			b := newUpstream(t, answerText("b"))
			r := newRelay(t, proxy.Options{Now: clk.Now}, openaiAccount("a", a), openaiAccount("b", b))
			resp := r.post(t, "/v1/responses", `{"model":"gpt-5","input":"hi"}`)
			io.Copy(io.Discard, resp.Body)
			r.lastTrace(t, 1)
			st := r.account(t, "a")
			if st.State != proxy.StateCooldown || st.CooldownUntil == nil || st.CooldownUntil.Sub(clk.Now()) < 7*24*time.Hour {
				t.Fatalf("a rests until %v (now %v): want the longest rest", st.CooldownUntil, clk.Now())
			}
		})
	}
}
