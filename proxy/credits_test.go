package proxy_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codexrelay/codexrelay/proxy"
)

// creditBackend is the reset-credit side of a fake ChatGPT backend: the list, the consume
// (idempotent by redeem_request_id, as the real one is), and the usage, which reads 100% used
// until a credit is spent and 0% after.
type creditBackend struct {
	mu      sync.Mutex
	credits []fakeCredit
	// spentBy maps a redeem_request_id to the credit it spent: a repeated id spends nothing.
	spentBy map[string]string
	// lists and consumes count the requests to the two routes; requestIDs are the ids the
	// consumes named, in order.
	lists, consumes int
	requestIDs      []string
	creditIDs       []string
	// lose: the next consumes spend their credit and then never answer (the answer is lost).
	lose int
	// refuse: every consume is refused (409), with a message that carries a key.
	refuse bool
	// gate, when set, holds each consume until it is closed.
	gate chan struct{}
	// active and maxActive count the consumes under way at once.
	active, maxActive int
}

type fakeCredit struct {
	ID, Status string
	ExpiresAt  any // an RFC 3339 string, epoch seconds, or nil
}

func newCreditBackend(credits ...fakeCredit) *creditBackend {
	return &creditBackend{credits: credits, spentBy: map[string]string{}}
}

func (b *creditBackend) spent() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.spentBy)
}

func (b *creditBackend) counts() (lists, consumes int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lists, b.consumes
}

// withCredits makes a ChatGPT fake answer the reset-credit routes and the usage from b.
func withCredits(t *testing.T, u *upstream, b *creditBackend) {
	t.Helper()
	inner := u.Config.Handler
	u.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		const base = "/backend-api/wham/"
		if !strings.HasPrefix(r.URL.Path, base) {
			inner.ServeHTTP(w, r)
			return
		}
		if r.Header.Get("chatgpt-account-id") == "" || !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") ||
			r.Header.Get("originator") != proxy.Originator {
			http.Error(w, `{"error":{"message":"unauthorized"}}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodGet && r.URL.Path == base+"usage":
			used := 100
			if b.spent() > 0 {
				used = 0
			}
			fmt.Fprintf(w, `{"rate_limit":{"primary_window":{"used_percent":%d,"limit_window_seconds":18000,"reset_after_seconds":7200},"secondary_window":{"used_percent":%d,"limit_window_seconds":604800,"reset_after_seconds":86400}}}`, used, used/2)
		case r.Method == http.MethodGet && r.URL.Path == base+"rate-limit-reset-credits":
			b.mu.Lock()
			b.lists++
			var list []map[string]any
			avail := 0
			for _, c := range b.credits {
				list = append(list, map[string]any{"id": c.ID, "reset_type": "codex_rate_limits", "status": c.Status,
					"granted_at": "2026-11-01T00:00:00Z", "expires_at": c.ExpiresAt, "title": "Rate limit reset\x1b[31m", "redeemed_at": nil})
				if c.Status == "available" {
					avail++
				}
			}
			b.mu.Unlock()
			json.NewEncoder(w).Encode(map[string]any{"credits": list, "available_count": avail})
		case r.Method == http.MethodPost && r.URL.Path == base+"rate-limit-reset-credits/consume":
			b.consume(w, r)
		default:
			http.NotFound(w, r)
		}
	})
}

func (b *creditBackend) consume(w http.ResponseWriter, r *http.Request) {
	var req struct {
		CreditID        string `json:"credit_id"`
		RedeemRequestID string `json:"redeem_request_id"`
	}
	if json.NewDecoder(r.Body).Decode(&req) != nil || req.RedeemRequestID == "" {
		http.Error(w, `{"error":{"message":"bad request"}}`, 400)
		return
	}
	b.mu.Lock()
	b.consumes++
	b.requestIDs = append(b.requestIDs, req.RedeemRequestID)
	b.creditIDs = append(b.creditIDs, req.CreditID)
	b.active++
	b.maxActive = max(b.maxActive, b.active)
	gate := b.gate
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		b.active--
		b.mu.Unlock()
	}()
	if gate != nil {
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
	}
	b.mu.Lock()
	code := "reset"
	if _, again := b.spentBy[req.RedeemRequestID]; again {
		code = "already_redeemed" // the same intent: nothing more is spent
	} else {
		found := false
		for i, c := range b.credits {
			if c.ID == req.CreditID && c.Status == "available" {
				b.credits[i].Status, found = "redeemed", true
			}
		}
		if !found || b.refuse {
			b.mu.Unlock()
			w.WriteHeader(409)
			io.WriteString(w, `{"error":{"message":"no such credit (token sk-leakedleakedleaked123)"}}`)
			return
		}
		b.spentBy[req.RedeemRequestID] = req.CreditID
	}
	lose := b.lose > 0
	if lose {
		b.lose--
	}
	b.mu.Unlock()
	if lose {
		<-r.Context().Done() // spent, and the answer never comes
		return
	}
	fmt.Fprintf(w, `{"code":%q,"credit":{"id":%q,"status":"redeemed","redeemed_at":"2026-11-30T12:00:00Z"},"windows_reset":2}`, code, req.CreditID)
}

// limitedUntilSpent answers 429 (for an hour) until b spent a credit, then serves.
func limitedUntilSpent(b *creditBackend) func(w http.ResponseWriter, r *http.Request, n int) {
	return func(w http.ResponseWriter, r *http.Request, n int) {
		if b.spent() == 0 {
			status(429, usageLimit, "Retry-After", "3600")(w, r, n)
			return
		}
		answerText("served after the reset")(w, r, n)
	}
}

// threeCredits: b expires first (epoch seconds), a later (RFC 3339), c is redeemed already
// and d expired; so two are available, b first.
func threeCredits(clk *clock) []fakeCredit {
	now := clk.Now()
	return []fakeCredit{
		{ID: "credit-a", Status: "available", ExpiresAt: now.Add(72 * time.Hour).Format(time.RFC3339Nano)},
		{ID: "credit-b", Status: "available", ExpiresAt: now.Add(20 * time.Hour).Unix()},
		{ID: "credit-c", Status: "redeemed", ExpiresAt: now.Add(time.Hour).Format(time.RFC3339)},
		{ID: "credit-d", Status: "available", ExpiresAt: now.Add(-time.Hour).Format(time.RFC3339)},
	}
}

// creditRelay is a relay over one ChatGPT account whose backend holds the credits.
func creditRelay(t *testing.T, mode string, opt proxy.Options, credits ...fakeCredit) (*relay, *creditBackend, *clock) {
	t.Helper()
	clk := newClock()
	if opt.Now == nil {
		opt.Now = clk.Now
	}
	b := newCreditBackend(credits...)
	up := newUpstream(t, limitedUntilSpent(b))
	withCredits(t, up, b)
	opt.ResetCredits = mode
	return newRelay(t, opt, chatgptAccount("plus", up)), b, clk
}

// rest makes the account rest for an hour: a request that gets the 429.
func (r *relay) rest(t *testing.T) {
	t.Helper()
	resp := r.post(t, "/v1/responses", smallBody)
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != 429 {
		t.Fatalf("status %d, want the 429", resp.StatusCode)
	}
}

func TestResetCreditsAreReadWithTheQuota(t *testing.T) {
	clk := newClock()
	r, b, _ := creditRelay(t, proxy.ResetCreditsAsk, proxy.Options{Now: clk.Now}, threeCredits(clk)...)
	r.RefreshQuotas(context.Background())
	c := r.account(t, "plus").ResetCredits
	if c == nil || c.Available != 2 || c.NextExpiresAt == nil || !c.NextExpiresAt.Equal(clk.Now().Add(20*time.Hour)) {
		t.Fatalf("reset credits %+v", c)
	}
	if c.Title != "Rate limit reset[31m" || c.Pending {
		t.Errorf("title %q (control characters must go), pending %v", c.Title, c.Pending)
	}
	// The stats never carry a credit's id.
	raw, _ := json.Marshal(r.Stats())
	if strings.Contains(string(raw), "credit-b") || !strings.Contains(string(raw), `"reset_credits":{"available":2`) {
		t.Errorf("stats: %s", raw)
	}
	if lists, consumes := b.counts(); lists != 1 || consumes != 0 {
		t.Errorf("%d lists, %d consumes", lists, consumes)
	}
}

func TestRedeemSpendsTheCreditThatExpiresFirstAndTheAccountServes(t *testing.T) {
	clk := newClock()
	r, b, _ := creditRelay(t, proxy.ResetCreditsAsk, proxy.Options{Now: clk.Now}, threeCredits(clk)...)
	var events []proxy.CreditEvent
	var mu sync.Mutex
	r.SetCreditHook(func(e proxy.CreditEvent) { mu.Lock(); events = append(events, e); mu.Unlock() })
	r.rest(t)
	if a := r.account(t, "plus"); a.State != proxy.StateCooldown {
		t.Fatalf("state %s", a.State)
	}
	res, err := r.RedeemCredit(context.Background(), "plus")
	if err != nil {
		t.Fatal(err)
	}
	if b.creditIDs[0] != "credit-b" {
		t.Errorf("spent %s, want the one that expires first", b.creditIDs[0])
	}
	if res.Code != "reset" || res.WindowsReset != 2 || res.RequestID != b.requestIDs[0] || res.Retried || res.Auto ||
		!res.CreditExpiresAt.Equal(clk.Now().Add(20*time.Hour)) {
		t.Errorf("result %+v", res)
	}
	if res.Quota == nil || res.Quota.PrimaryUsedPercent != 0 || res.Remaining == nil || res.Remaining.Available != 1 {
		t.Errorf("not read back: quota %+v, remaining %+v", res.Quota, res.Remaining)
	}
	if a := r.account(t, "plus"); a.State != proxy.StateReady || a.ResetCredits.Available != 1 {
		t.Fatalf("after the redemption: %+v", a)
	}
	resp := r.post(t, "/v1/responses", smallBody)
	if body := readAll(t, resp); resp.StatusCode != 200 || !strings.Contains(string(body), "served after the reset") {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	mu.Lock()
	defer mu.Unlock()
	var redeemed []proxy.CreditEvent
	for _, e := range events {
		if e.Kind == proxy.CreditRedeemed {
			redeemed = append(redeemed, e)
		}
	}
	if len(redeemed) != 1 || redeemed[0].Account != "plus" || redeemed[0].Result.RequestID != res.RequestID {
		t.Errorf("events %+v", events)
	}
	if st := r.Stats().ResetCredits; st.Redeemed != 1 || st.Auto != 0 || st.Mode != proxy.ResetCreditsAsk {
		t.Errorf("stats %+v", st)
	}
}

// The backend spends the credit but its answer is lost: the try times out, the intent is kept,
// and the retry sends the same redeem_request_id, which the backend answers without spending
// another credit.
func TestARedeemThatTimesOutIsRetriedWithTheSameID(t *testing.T) {
	clk := newClock()
	r, b, _ := creditRelay(t, proxy.ResetCreditsAsk, proxy.Options{Now: clk.Now}, threeCredits(clk)...)
	b.lose = 1
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	_, err := r.RedeemCredit(ctx, "plus")
	cancel()
	if !errors.Is(err, proxy.ErrRedeemPending) {
		t.Fatalf("error %v, want ErrRedeemPending", err)
	}
	if c := r.account(t, "plus").ResetCredits; c == nil || !c.Pending {
		t.Errorf("the pending intent is not shown: %+v", c)
	}
	res, err := r.RedeemCredit(context.Background(), "plus")
	if err != nil {
		t.Fatal(err)
	}
	b.mu.Lock()
	ids, credits := append([]string(nil), b.requestIDs...), append([]string(nil), b.creditIDs...)
	b.mu.Unlock()
	if len(ids) != 2 || ids[0] != ids[1] || credits[0] != credits[1] || res.RequestID != ids[0] {
		t.Fatalf("request ids %v, credits %v, result %+v", ids, credits, res)
	}
	if b.spent() != 1 || res.Code != "already_redeemed" || !res.Retried {
		t.Fatalf("spent %d credits; result %+v", b.spent(), res)
	}
	if c := r.account(t, "plus").ResetCredits; c.Pending || c.Available != 1 {
		t.Errorf("after the answer: %+v", c)
	}
	// A new intent, after the join window, is a new id.
	clk.Advance(time.Minute)
	res2, err := r.RedeemCredit(context.Background(), "plus")
	if err != nil || res2.RequestID == res.RequestID || b.spent() != 2 {
		t.Fatalf("second redemption: %+v, %v, spent %d", res2, err, b.spent())
	}
	clk.Advance(time.Minute)
	if _, err := r.RedeemCredit(context.Background(), "plus"); !errors.Is(err, proxy.ErrNoResetCredit) {
		t.Fatalf("with none left: %v", err)
	}
}

// Two redemptions of one account at once: the second consume starts only after the first
// redeeming is how many redemptions of the account are under way or waiting.
func redeeming(r *relay, account string) int {
	for _, a := range r.Stats().Accounts {
		if a.Name == account && a.ResetCredits != nil {
			return a.ResetCredits.Redeeming
		}
	}
	return 0
}

// Two redemptions of one account asked at once (two clicks) never overlap, and are one
// intent: the one that waited takes the other's answer and spends nothing.
func TestRedemptionsOfOneAccountAtOnceSpendOneCredit(t *testing.T) {
	clk := newClock()
	r, b, _ := creditRelay(t, proxy.ResetCreditsAsk, proxy.Options{Now: clk.Now}, threeCredits(clk)...)
	r.RefreshQuotas(context.Background())
	b.gate = make(chan struct{})
	type answer struct {
		res proxy.RedeemResult
		err error
	}
	answers := make(chan answer, 2)
	for range 2 {
		go func() {
			res, err := r.RedeemCredit(context.Background(), "plus")
			answers <- answer{res, err}
		}()
	}
	eventually(t, "the first consume and the second waiting", func() bool {
		_, c := b.counts()
		return c >= 1 && redeeming(r, "plus") == 2
	})
	close(b.gate)
	shared := 0
	for range 2 {
		a := <-answers
		if a.err != nil {
			t.Fatal(a.err)
		}
		if a.res.Shared {
			shared++
		}
	}
	b.mu.Lock()
	maxActive, consumes := b.maxActive, b.consumes
	b.mu.Unlock()
	if maxActive != 1 || consumes != 1 || b.spent() != 1 || shared != 1 {
		t.Fatalf("max at once %d, consumes %d, spent %d, shared %d", maxActive, consumes, b.spent(), shared)
	}
	// Asked again after both answered and the join window: a new intent, a second credit.
	clk.Advance(time.Minute)
	if _, err := r.RedeemCredit(context.Background(), "plus"); err != nil {
		t.Fatal(err)
	}
	if n := b.spent(); n != 2 {
		t.Fatalf("a later redemption spent %d in all", n)
	}
}

// gatedAutoRelay is a relay whose one ChatGPT account rests on its limit, with the auto
// policy on, its credits read, and its backend holding every consume until b.gate closes.
func gatedAutoRelay(t *testing.T) (*relay, *creditBackend) {
	t.Helper()
	clk := newClock()
	r, b, _ := creditRelay(t, proxy.ResetCreditsOff, proxy.Options{Now: clk.Now}, threeCredits(clk)...)
	r.rest(t)
	if err := r.SetResetCredits(proxy.ResetCreditsAuto); err != nil {
		t.Fatal(err)
	}
	r.RefreshQuotas(context.Background())
	b.mu.Lock()
	b.gate = make(chan struct{})
	b.mu.Unlock()
	return r, b
}

// A redemption by hand under way while a request finds the pool resting (auto): the request
// waits for it and is served; one credit is spent, not two.
func TestAutoWaitsForARedemptionByHand(t *testing.T) {
	r, b := gatedAutoRelay(t)
	manual := make(chan error, 1)
	go func() { _, err := r.RedeemCredit(context.Background(), "plus"); manual <- err }()
	eventually(t, "the manual consume", func() bool { _, c := b.counts(); return c == 1 })
	status := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, r.URL+"/v1/responses", strings.NewReader(smallBody))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			status <- 0
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		status <- resp.StatusCode
	}()
	eventually(t, "the request's redemption waiting", func() bool { return redeeming(r, "plus") == 2 })
	close(b.gate)
	if err := <-manual; err != nil {
		t.Fatal(err)
	}
	if st := <-status; st != http.StatusOK {
		t.Fatalf("the request got %d", st)
	}
	if n := b.spent(); n != 1 {
		t.Fatalf("%d credits spent for one resting pool", n)
	}
}

// With auto, five requests that find the pool resting for an hour share one redemption and
// are all served.
func TestAutoRedeemsOneCreditForConcurrentRequests(t *testing.T) {
	r, b := gatedAutoRelay(t)
	const n = 5
	type answer struct {
		status int
		body   string
	}
	answers := make(chan answer, n)
	for range n {
		go func() {
			req, _ := http.NewRequest(http.MethodPost, r.URL+"/v1/responses", strings.NewReader(smallBody))
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				answers <- answer{0, err.Error()}
				return
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			answers <- answer{resp.StatusCode, string(body)}
		}()
	}
	eventually(t, "the five requests and the consume", func() bool {
		_, c := b.counts()
		return c == 1 && r.Stats().Requests.InFlight == n
	})
	close(b.gate)
	for range n {
		a := <-answers
		if a.status != 200 || !strings.Contains(a.body, "served after the reset") {
			t.Fatalf("status %d: %s", a.status, a.body)
		}
	}
	if _, consumes := b.counts(); consumes != 1 || b.spent() != 1 {
		t.Fatalf("%d consumes, %d credits spent; want one", consumes, b.spent())
	}
	if st := r.Stats().ResetCredits; st.Redeemed != 1 || st.Auto != 1 {
		t.Errorf("stats %+v", st)
	}
}

// The auto policy skips an account that is back within 30 minutes anyway, even when its
// credit expires first, and spends the other's.
func TestAutoSkipsAnAccountBackSoon(t *testing.T) {
	clk := newClock()
	soonB := newCreditBackend(fakeCredit{ID: "soon-1", Status: "available", ExpiresAt: clk.Now().Add(time.Hour).Format(time.RFC3339)})
	soon := newUpstream(t, status(429, usageLimit, "Retry-After", "600"))
	withCredits(t, soon, soonB)
	laterB := newCreditBackend(fakeCredit{ID: "later-1", Status: "available", ExpiresAt: clk.Now().Add(48 * time.Hour).Format(time.RFC3339)})
	later := newUpstream(t, limitedUntilSpent(laterB))
	withCredits(t, later, laterB)
	r := newRelay(t, proxy.Options{Now: clk.Now, ResetCredits: proxy.ResetCreditsOff}, chatgptAccount("soon", soon), chatgptAccount("later", later))
	r.rest(t)
	r.SetResetCredits(proxy.ResetCreditsAuto)
	r.RefreshQuotas(context.Background())
	resp := r.post(t, "/v1/responses", smallBody)
	if body := readAll(t, resp); resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if soonB.spent() != 0 || laterB.spent() != 1 {
		t.Fatalf("spent: soon %d, later %d", soonB.spent(), laterB.spent())
	}
}

// With ask, a request past the hold gets its 429, nothing is spent, and the embedder is asked
// once (not once per request).
func TestAskSignalsAndSpendsNothing(t *testing.T) {
	clk := newClock()
	r, b, _ := creditRelay(t, proxy.ResetCreditsAsk, proxy.Options{Now: clk.Now}, threeCredits(clk)...)
	r.RefreshQuotas(context.Background())
	var mu sync.Mutex
	var asks []proxy.CreditEvent
	r.SetCreditHook(func(e proxy.CreditEvent) {
		mu.Lock()
		defer mu.Unlock()
		if e.Kind == proxy.CreditAsk {
			asks = append(asks, e)
		}
	})
	r.rest(t) // the 429 comes, and with it the question
	r.rest(t)
	mu.Lock()
	defer mu.Unlock()
	if len(asks) != 1 || asks[0].Account != "plus" || asks[0].Credits == nil || asks[0].Credits.Available != 2 ||
		!asks[0].BackAt.Equal(clk.Now().Add(time.Hour)) {
		t.Fatalf("asks %+v", asks)
	}
	if _, consumes := b.counts(); consumes != 0 {
		t.Fatalf("%d consumes", consumes)
	}
	if st := r.Stats().ResetCredits; st.Asked != 1 || st.Redeemed != 0 {
		t.Errorf("stats %+v", st)
	}
}

// Off reads no credit and spends none: the credit routes get no request at all.
func TestOffNeverTouchesTheCreditRoutes(t *testing.T) {
	clk := newClock()
	r, b, _ := creditRelay(t, proxy.ResetCreditsOff, proxy.Options{Now: clk.Now, Hold: -1}, threeCredits(clk)...)
	var events int
	r.SetCreditHook(func(proxy.CreditEvent) { events++ })
	r.RefreshQuotas(context.Background())
	r.rest(t)
	r.rest(t)
	if lists, consumes := b.counts(); lists != 0 || consumes != 0 || events != 0 {
		t.Fatalf("%d lists, %d consumes, %d events", lists, consumes, events)
	}
	if a := r.account(t, "plus"); a.ResetCredits != nil || a.Quota == nil {
		t.Fatalf("account %+v", a)
	}
	if err := r.SetResetCredits("sometimes"); err == nil || r.ResetCreditsMode() != proxy.ResetCreditsOff {
		t.Fatalf("a bad mode: %v, mode %s", err, r.ResetCreditsMode())
	}
}

// The relay's route redeems for the command line; its errors say what happened, and upstream
// text in them is redacted.
func TestTheRedeemRoute(t *testing.T) {
	clk := newClock()
	r, b, _ := creditRelay(t, proxy.ResetCreditsAsk, proxy.Options{Now: clk.Now, LocalAPIKey: "crk-route"},
		fakeCredit{ID: "only", Status: "available", ExpiresAt: nil})
	resp := r.post(t, "/relay/accounts/plus/redeem-credit", "", "Authorization", "Bearer crk-route")
	var res proxy.RedeemResult
	if err := json.Unmarshal(readAll(t, resp), &res); err != nil || resp.StatusCode != 200 || res.Code != "reset" {
		t.Fatalf("status %d, %+v, %v", resp.StatusCode, res, err)
	}
	clk.Advance(time.Minute) // past the join window
	if resp := r.post(t, "/relay/accounts/plus/redeem-credit", "", "Authorization", "Bearer crk-route"); resp.StatusCode != 409 || decodeErr(t, resp).Error.Code != "no_reset_credit" {
		t.Fatalf("none left: status %d", resp.StatusCode)
	}
	if resp := r.post(t, "/relay/accounts/nobody/redeem-credit", "", "Authorization", "Bearer crk-route"); resp.StatusCode != 404 {
		t.Fatalf("unknown account: status %d", resp.StatusCode)
	}
	// A credit the list shows but the backend refuses: its message comes back redacted.
	b.mu.Lock()
	b.credits = append(b.credits, fakeCredit{ID: "ghost", Status: "available"})
	b.refuse = true
	b.mu.Unlock()
	resp = r.post(t, "/relay/accounts/plus/redeem-credit", "", "Authorization", "Bearer crk-route")
	e := decodeErr(t, resp)
	if resp.StatusCode != 502 || e.Error.Code != "redeem_failed" || strings.Contains(e.Error.Message, "leakedleaked") ||
		!strings.Contains(e.Error.Message, "HTTP 409") {
		t.Fatalf("status %d, %+v", resp.StatusCode, e.Error)
	}
	if c := r.account(t, "plus").ResetCredits; c.Pending {
		t.Errorf("a refusal is an answer: nothing stays pending")
	}
}

// The intent hook runs before the consume is sent, with the intent already readable, and an
// error from it ends the redemption with nothing sent or spent (issue 30: a crash while the
// consume was on the wire spent a second credit on the retry).
func TestTheIntentIsKeptBeforeTheConsume(t *testing.T) {
	clk := newClock()
	r, b, _ := creditRelay(t, proxy.ResetCreditsAsk, proxy.Options{Now: clk.Now}, threeCredits(clk)...)
	var kept []proxy.PendingRedeem
	r.SetRedeemIntentHook(func(account string) error {
		p, ok := r.PendingRedeem(account)
		if _, consumes := b.counts(); !ok || consumes != 0 {
			t.Errorf("the hook ran with intent %v and %d consumes sent", ok, consumes)
		}
		kept = append(kept, p)
		return errors.New("disk full")
	})
	if _, err := r.RedeemCredit(context.Background(), "plus"); err == nil || errors.Is(err, proxy.ErrRedeemPending) {
		t.Fatalf("a redemption whose intent could not be kept: %v", err)
	}
	if _, consumes := b.counts(); consumes != 0 || b.spent() != 0 || len(kept) != 1 || kept[0].RequestID == "" {
		t.Fatalf("%d consumes, %d spent, kept %+v", consumes, b.spent(), kept)
	}
	if _, ok := r.PendingRedeem("plus"); ok {
		t.Fatal("an intent never sent is still pending")
	}
	r.SetRedeemIntentHook(func(string) error { return nil })
	res, err := r.RedeemCredit(context.Background(), "plus")
	if err != nil || res.Retried || b.spent() != 1 {
		t.Fatalf("with the intent kept: %+v %v, spent %d", res, err, b.spent())
	}
}

// Ten redeem requests at once through the local API (issue 49: they spent 3 of 3): one
// redemption spends one credit, the others share it; a request after the join window spends
// the next.
func TestTenRedeemRequestsAtOnceSpendOneCredit(t *testing.T) {
	r, b, clk := creditRelay(t, proxy.ResetCreditsAsk, proxy.Options{LocalAPIKey: "crk-ten"},
		fakeCredit{ID: "one", Status: "available"}, fakeCredit{ID: "two", Status: "available"}, fakeCredit{ID: "three", Status: "available"})
	r.RefreshQuotas(context.Background())
	statuses := make(chan int, 10)
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodPost, r.URL+"/relay/accounts/plus/redeem-credit", nil)
			req.Header.Set("Authorization", "Bearer crk-ten")
			resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
			if err != nil {
				statuses <- 0
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			statuses <- resp.StatusCode
		}()
	}
	wg.Wait()
	close(statuses)
	for s := range statuses {
		if s != 200 {
			t.Errorf("a redeem request was answered %d", s)
		}
	}
	if n := b.spent(); n != 1 {
		t.Fatalf("ten requests at once spent %d credits, want 1", n)
	}
	clk.Advance(time.Minute)
	if _, err := r.RedeemCredit(context.Background(), "plus"); err != nil {
		t.Fatal(err)
	}
	if n := b.spent(); n != 2 {
		t.Fatalf("a redemption a minute later spent %d in all, want 2", n)
	}
}
