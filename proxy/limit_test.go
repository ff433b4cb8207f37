package proxy_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/codexrelay/codexrelay/proxy"
)

// limitShapes are the ways an upstream says "usage limit" in a 200 stream before any output
// (issue 30, 6): each must rotate to the next account and rest this one.
var limitShapes = map[string][]string{
	"failed at once": {
		`response.created`, `{"type":"response.created","response":{"id":"resp_l","status":"in_progress","output":[]}}`,
		`response.failed`, `{"type":"response.failed","response":{"id":"resp_l","status":"failed","output":[],"error":{"code":"usage_limit_reached","message":"The usage limit has been reached"}}}`,
	},
	"a bare error event": {
		`error`, `{"type":"error","error":{"type":"usage_limit_reached","code":"usage_limit_reached","message":"The usage limit has been reached","resets_in_seconds":600}}`,
	},
	"incomplete with the error": {
		`response.created`, `{"type":"response.created","response":{"id":"resp_l","status":"in_progress","output":[]}}`,
		`response.incomplete`, `{"type":"response.incomplete","response":{"id":"resp_l","status":"incomplete","output":[],"error":{"code":"usage_limit_reached","message":"The usage limit has been reached"}}}`,
	},
	"incomplete for the limit": {
		`response.created`, `{"type":"response.created","response":{"id":"resp_l","status":"in_progress","output":[]}}`,
		`response.incomplete`, `{"type":"response.incomplete","response":{"id":"resp_l","status":"incomplete","output":[],"incomplete_details":{"reason":"usage_limit_reached"}}}`,
	},
	"completed with status failed": {
		`response.created`, `{"type":"response.created","response":{"id":"resp_l","status":"in_progress","output":[]}}`,
		`response.completed`, `{"type":"response.completed","response":{"id":"resp_l","status":"failed","output":[],"error":{"code":"usage_limit_reached","message":"The usage limit has been reached"}}}`,
	},
	"an empty reasoning item first": {
		`response.created`, `{"type":"response.created","response":{"id":"resp_l","status":"in_progress","output":[]}}`,
		`response.in_progress`, `{"type":"response.in_progress","response":{"id":"resp_l","status":"in_progress","output":[]}}`,
		`response.output_item.added`, `{"type":"response.output_item.added","output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[]}}`,
		`response.failed`, `{"type":"response.failed","response":{"id":"resp_l","status":"failed","output":[],"error":{"code":"usage_limit_reached","message":"The usage limit has been reached"}}}`,
	},
	"data-only events": {
		``, `{"type":"response.created","response":{"id":"resp_l","status":"in_progress","output":[]}}`,
		``, `{"type":"response.in_progress","response":{"id":"resp_l","status":"in_progress","output":[]}}`,
		``, `{"type":"response.failed","response":{"id":"resp_l","status":"failed","output":[],"error":{"code":"usage_limit_reached","message":"The usage limit has been reached"}}}`,
	},
}

// sseShape writes name/data pairs as an SSE stream (a pair with no name: a data-only event).
func sseShape(pairs []string) func(w http.ResponseWriter, r *http.Request, n int) {
	return func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 0; i+1 < len(pairs); i += 2 {
			if pairs[i] != "" {
				fmt.Fprintf(w, "event: %s\n", pairs[i])
			}
			fmt.Fprintf(w, "data: %s\n\n", pairs[i+1])
		}
	}
}

func TestAUsageLimitBeforeAnyOutputRotatesAndRests(t *testing.T) {
	for name, shape := range limitShapes {
		for _, stream := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/stream=%v", name, stream), func(t *testing.T) {
				limited := newUpstream(t, sseShape(shape))
				good := newUpstream(t, answerText("second account"))
				r := newRelay(t, proxy.Options{}, chatgptAccount("a", limited), openaiAccount("b", good))
				client := r.sdk()
				if stream {
					s := client.Responses.NewStreaming(context.Background(), params("gpt-5", "hi"))
					var text strings.Builder
					for s.Next() {
						if ev := s.Current(); ev.Type == "response.output_text.delta" {
							text.WriteString(ev.Delta)
						}
					}
					if err := s.Err(); err != nil || text.String() != "second account" {
						t.Fatalf("stream: %v %q", err, text.String())
					}
				} else {
					resp, err := client.Responses.New(context.Background(), params("gpt-5", "hi"))
					if err != nil || resp.OutputText() != "second account" {
						status := ""
						if resp != nil {
							status = string(resp.Status) + " " + resp.OutputText()
						}
						t.Fatalf("answer: %v %s", err, status)
					}
				}
				if len(good.requests()) != 1 {
					t.Fatalf("the healthy account got %d requests", len(good.requests()))
				}
				if st := r.account(t, "a"); st.State != "cooldown" {
					t.Fatalf("the limited account is %s, want cooldown (%+v)", st.State, st)
				}
			})
		}
	}
}

// A limit that comes after output reached the client cannot rotate (the answer has begun), but
// the account said it is at its limit: it rests, and the next request goes to another account.
func TestAUsageLimitAfterOutputRestsTheAccount(t *testing.T) {
	evs := textEvents("resp_m", "gpt-5", "partial answer")
	limited := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range evs[:5] {
			io.WriteString(w, e)
		}
		io.WriteString(w, "event: response.failed\ndata: "+`{"type":"response.failed","response":{"id":"resp_m","status":"failed","output":[],"error":{"code":"usage_limit_reached","message":"The usage limit has been reached","resets_in_seconds":3600}}}`+"\n\n")
	})
	good := newUpstream(t, answerText("second account"))
	r := newRelay(t, proxy.Options{}, chatgptAccount("a", limited), openaiAccount("b", good))
	body := string(readAll(t, r.post(t, "/v1/responses", smallBody)))
	if !strings.Contains(body, "usage_limit_reached") || len(good.requests()) != 0 {
		t.Fatalf("the failure after output was not relayed as it came (b got %d requests): %.300s", len(good.requests()), body)
	}
	if st := r.account(t, "a"); st.State != "cooldown" {
		t.Fatalf("the account that said it is at its limit is %s (%+v)", st.State, st)
	}
	if body := string(readAll(t, r.post(t, "/v1/responses", smallBody))); !strings.Contains(body, "second account") {
		t.Fatalf("the next request: %.300s", body)
	}
}

// A response.incomplete for another reason (max_output_tokens) and a completed response are
// answers, relayed as they are.
func TestAnIncompleteAnswerIsNotALimit(t *testing.T) {
	incomplete := []string{
		`response.created`, `{"type":"response.created","response":{"id":"resp_i","status":"in_progress","output":[]}}`,
		`response.incomplete`, `{"type":"response.incomplete","response":{"id":"resp_i","status":"incomplete","output":[],"incomplete_details":{"reason":"max_output_tokens"}}}`,
	}
	up := newUpstream(t, sseShape(incomplete))
	spare := newUpstream(t, answerText("never"))
	r := newRelay(t, proxy.Options{}, chatgptAccount("a", up), openaiAccount("b", spare))
	body := string(readAll(t, r.post(t, "/v1/responses", smallBody)))
	if !strings.Contains(body, "max_output_tokens") || len(spare.requests()) != 0 || r.account(t, "a").State != "ready" {
		t.Fatalf("body %.300s; spare got %d; a is %s", body, len(spare.requests()), r.account(t, "a").State)
	}
}
