package proxy_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/codexrelay/codexrelay/proxy"
)

const usageLimit = `{"error":{"type":"usage_limit_reached","code":"usage_limit_reached","message":"The usage limit has been reached"}}`

// A pool that rests for 2 s holds the request, with nothing sent, and serves it when the
// account is back: the client sees one answer, no 429.
func TestHoldServesWhenThePoolIsBack(t *testing.T) {
	up := newUpstream(t, sequence(status(429, usageLimit, "Retry-After", "2"), answerText("back")))
	r := newRelay(t, proxy.Options{RetryBackoff: time.Hour}, openaiAccount("a", up))
	done := make(chan []byte)
	go func() {
		resp := r.post(t, "/v1/responses", smallBody)
		if resp.StatusCode != 200 {
			t.Errorf("status %d", resp.StatusCode)
		}
		b, _ := io.ReadAll(resp.Body)
		done <- b
	}()
	eventually(t, "the request to be held", func() bool { return r.Stats().Requests.Held == 1 })
	body := <-done
	if !strings.Contains(string(body), "back") {
		t.Fatalf("answer: %s", body)
	}
	tr := r.lastTrace(t, 1)
	if tr.HeldMs <= 0 || len(tr.Attempts) != 2 || tr.Attempts[0].Status != 429 || tr.Attempts[1].Status != 200 {
		t.Fatalf("trace: held %v ms, attempts %+v", tr.HeldMs, tr.Attempts)
	}
	if r.Stats().Requests.Held != 0 {
		t.Errorf("still counted as held")
	}
}

// Past the bound the 429 comes at once, with resets_at; a negative bound never waits.
func TestHoldBound(t *testing.T) {
	for _, c := range []struct {
		name       string
		hold       time.Duration
		retryAfter string
	}{{"beyond the bound", time.Second, "5"}, {"hold off", -1, "1"}} {
		t.Run(c.name, func(t *testing.T) {
			up := newUpstream(t, status(429, usageLimit, "Retry-After", c.retryAfter))
			r := newRelay(t, proxy.Options{Hold: c.hold}, openaiAccount("a", up))
			resp := r.post(t, "/v1/responses", smallBody)
			e := decodeErr(t, resp)
			if resp.StatusCode != 429 || e.Error.Code != "usage_limit_reached" || e.Error.ResetsAt == 0 {
				t.Fatalf("status %d, %+v", resp.StatusCode, e.Error)
			}
			if tr := r.lastTrace(t, 1); tr.HeldMs != 0 {
				t.Errorf("held %v ms", tr.HeldMs)
			}
		})
	}
}

// A client that leaves while held cancels its wait: nothing stays held, nothing is sent.
func TestHoldClientLeaves(t *testing.T) {
	up := newUpstream(t, status(429, usageLimit, "Retry-After", "20"))
	r := newRelay(t, proxy.Options{}, openaiAccount("a", up))
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, r.URL+"/v1/responses", strings.NewReader(smallBody))
	req.Header.Set("Content-Type", "application/json")
	errc := make(chan error)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	eventually(t, "the request to be held", func() bool { return r.Stats().Requests.Held == 1 })
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("the client got an answer")
	}
	eventually(t, "the wait to end", func() bool { return r.Stats().Requests.Held == 0 && r.Stats().Requests.InFlight == 0 })
	if n := len(up.requests()); n != 1 {
		t.Errorf("%d upstream requests, want 1", n)
	}
	if tr := r.Traces(1)[0]; tr.Outcome != proxy.OutcomeCanceled {
		t.Errorf("outcome %q", tr.Outcome)
	}
}
