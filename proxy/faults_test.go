package proxy_test

import (
	"context"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codexrelay/codexrelay/proxy"
)

func TestSlowHeadersWithinTheTimeoutAreWaitedFor(t *testing.T) {
	slow := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		time.Sleep(100 * time.Millisecond)
		answerText("slow but fine")(w, r, n)
	})
	spare := newUpstream(t, answerText("spare"))
	r := newRelay(t, proxy.Options{Timeouts: proxy.Timeouts{Header: 10 * time.Second}}, openaiAccount("slow", slow), openaiAccount("spare", spare))
	body := readAll(t, r.post(t, "/v1/responses", smallBody))
	if !strings.Contains(string(body), "slow but fine") || len(spare.requests()) != 0 {
		t.Fatalf("body %.100s, spare got %d", body, len(spare.requests()))
	}
}

func TestRateLimitStormAcrossAllAccounts(t *testing.T) {
	var ups []*upstream
	var accounts []proxy.Account
	for _, name := range []string{"a", "b", "c"} {
		// Back in an hour: past the hold, so the 429 comes at once.
		u := newUpstream(t, status(429, `{"error":{"message":"rate limited","code":"rate_limit_exceeded"}}`, "Retry-After", "3600"))
		ups = append(ups, u)
		accounts = append(accounts, openaiAccount(name, u))
	}
	r := newRelay(t, proxy.Options{}, accounts...)
	var wg sync.WaitGroup
	codes := make([]int, 40)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp := r.post(t, "/v1/responses", smallBody)
			e := decodeErr(t, resp)
			codes[i] = resp.StatusCode
			if e.Error.Code != "usage_limit_reached" || e.Error.ResetsAt == 0 || resp.Header.Get("Retry-After") == "" {
				t.Errorf("request %d: %+v", i, e.Error)
			}
		}()
	}
	wg.Wait()
	for i, c := range codes {
		if c != 429 {
			t.Fatalf("request %d: status %d", i, c)
		}
	}
	// Once cooling, accounts are not called again: at most one call per account per request
	// that raced the first 429.
	total := 0
	for _, u := range ups {
		total += len(u.requests())
	}
	if total > len(codes)*len(ups) || total < len(ups) {
		t.Fatalf("%d upstream calls", total)
	}
	for _, a := range r.Stats().Accounts {
		if a.State != "cooldown" {
			t.Fatalf("account %+v", a)
		}
	}
}

func TestNoGoroutineOutlivesItsRequest(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n%2 == 0 {
			answerText("ok")(w, r, n)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte(textEvents("resp_1", "m", "hi")[2]))
		w.(http.Flusher).Flush()
		<-r.Context().Done() // held until the client goes away
	})
	r := newRelay(t, proxy.Options{}, openaiAccount("a", up))
	http.DefaultClient.CloseIdleConnections()
	before := runtime.NumGoroutine()
	for i := 0; i < 20; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "POST", r.URL+"/v1/responses", strings.NewReader(smallBody))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			buf := make([]byte, 64)
			resp.Body.Read(buf)
			if i%2 == 0 {
				readAll(t, resp)
			}
		}
		cancel()
		if err == nil {
			resp.Body.Close()
		}
	}
	eventually(t, "requests to end", func() bool { return r.Stats().Requests.InFlight == 0 })
	http.DefaultClient.CloseIdleConnections()
	eventually(t, "goroutines back to their idle count", func() bool {
		return runtime.NumGoroutine() <= before+2 // the test servers' idle connection readers
	})
}

func TestHostileRequestsGet4xxAndNothingGoesUpstream(t *testing.T) {
	up := newUpstream(t, answerText("never"))
	r := newRelay(t, proxy.Options{MaxBodyBytes: 8 << 20}, openaiAccount("a", up))
	deep := `{"model":"m","input":[` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `]}`
	cases := map[string]string{
		"deep nesting":             deep,
		"model is a huge string":   `{"model":"` + strings.Repeat("m", 1<<20) + `","input":"x"}`,
		"model is a number":        `{"model":1e400,"input":"x"}`,
		"model is an object":       `{"model":{"$ne":null},"input":"x"}`,
		"input is a number":        `{"model":"m","input":12}`,
		"input is null":            `{"model":"m","input":null}`,
		"duplicate input":          `{"model":"m","input":"a","input":"b"}`,
		"invalid escape":           `{"model":"m\x","input":"x"}`,
		"lone control char":        "{\"model\":\"m\x01\",\"input\":\"x\"}",
		"invalid UTF-8 in input":   "{\"model\":\"m\",\"input\":\"\xc3\x28\"}",
		"trailing garbage":         `{"model":"m","input":"x"} {"model":"n"}`,
		"empty body":               ``,
		"stream is a string":       `{"model":"m","input":"x","stream":"true"}`,
		"messages on chat missing": `{"model":"m"}`,
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			path := "/v1/responses"
			if strings.Contains(name, "chat") {
				path = "/v1/chat/completions"
			}
			resp := r.post(t, path, body)
			if resp.StatusCode < 400 || resp.StatusCode >= 500 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			decodeErr(t, resp)
		})
	}
	if n := len(up.requests()); n != 0 {
		t.Fatalf("%d hostile bodies went upstream", n)
	}
}
