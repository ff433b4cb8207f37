package proxy_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codexrelay/codexrelay/proxy"
)

// TestSetAccountsKeepsStateByIDAndNeverTriesARemovedAccount: the app hands the proxy a new
// account list on every settings change. An account keeps its cooldown and counters across a
// rename (it is known by its ID), and a request already rotating does not try an account that
// was removed or disabled meanwhile.
func TestSetAccountsKeepsStateByIDAndNeverTriesARemovedAccount(t *testing.T) {
	clk := newClock()
	limited := newUpstream(t, status(429, `{"error":{"message":"slow down","code":"rate_limit_exceeded"}}`, "Retry-After", "600"))
	ok := newUpstream(t, answerText("fine"))
	a := openaiAccount("a", limited)
	a.ID = "id-a"
	b := openaiAccount("b", ok)
	b.ID = "id-b"
	r := newRelay(t, proxy.Options{Now: clk.Now}, a, b)
	resp := r.post(t, "/v1/responses", `{"model":"gpt-5","input":"hi"}`)
	readAll(t, resp)
	if resp.StatusCode != 200 || r.account(t, "a").State != proxy.StateCooldown {
		t.Fatalf("%d, a is %s", resp.StatusCode, r.account(t, "a").State)
	}
	// Renamed: the cooldown and the counters stay.
	a.Name = "alpha"
	r.SetAccounts([]proxy.Account{a, b})
	if st := r.account(t, "alpha"); st.State != proxy.StateCooldown || st.Requests != 1 || st.Failures != 1 {
		t.Fatalf("after the rename: %+v", st)
	}
	// A request that is trying b when b is removed and c added does not go on to b's ghost.
	clk.Advance(601 * time.Second)
	gate := make(chan struct{})
	var once sync.Once
	slow := newUpstream(t, func(w http.ResponseWriter, req *http.Request, n int) {
		once.Do(func() { <-gate })
		status(503, `{"error":{"message":"overloaded"}}`)(w, req, n)
	})
	c := openaiAccount("c", slow)
	c.ID = "id-c"
	r.SetAccounts([]proxy.Account{c, b})
	done := make(chan *http.Response)
	go func() { done <- r.post(t, "/v1/responses", `{"model":"gpt-5","input":"hi"}`) }()
	eventually(t, "the request to reach c", func() bool { return len(slow.requests()) == 1 })
	b.Disabled = true
	r.SetAccounts([]proxy.Account{c, b})
	close(gate)
	resp = <-done
	body := readAll(t, resp)
	if n := len(ok.requests()); n != 1 || resp.StatusCode == 200 {
		t.Fatalf("the disabled account took the rotated request: %d requests, answer %d %s", n, resp.StatusCode, body)
	}
	if !strings.Contains(string(body), "c:") {
		t.Fatalf("answer %s", body)
	}
}
