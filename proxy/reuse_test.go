package proxy_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/codexrelay/codexrelay/proxy"
)

// Non-streamed requests to an upstream that speaks HTTP/1.1 reuse its connections: the relay
// reads each streamed answer to the body's end, not only to its terminal event (issue 30, 10:
// 577 of 2,000 requests opened a new connection, 500 of 500 over TLS).
func TestNonStreamedAnswersLeaveTheConnectionReusable(t *testing.T) {
	const requests = 300
	var conns atomic.Int32
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			http.NotFound(w, r)
			return
		}
		io.Copy(io.Discard, r.Body)
		writeEvents(w, textEvents("resp_r", "gpt-5", "whole"))
	}))
	up.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	up.Start()
	t.Cleanup(up.Close)
	r := newRelay(t, proxy.Options{}, proxy.Account{Name: "cg", Kind: proxy.KindChatGPT, BaseURL: up.URL + "/backend-api/codex",
		Credentials: proxy.Static{Token: "access-cg", AccountID: "acct-cg"}})
	client := r.sdk()
	for range requests {
		resp, err := client.Responses.New(context.Background(), params("gpt-5", "hi"))
		if err != nil || resp.OutputText() != "whole" {
			t.Fatalf("answer: %v", err)
		}
	}
	// The catalog's own reads may open one more; each request a new one is the bug.
	if got := conns.Load(); got > 2 {
		t.Fatalf("%d non-streamed requests opened %d upstream connections", requests, got)
	}
	t.Logf("%d non-streamed requests, %d upstream connections", requests, conns.Load())
}
