package proxy_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3/responses"

	"github.com/codexrelay/codexrelay/proxy"
	"github.com/codexrelay/codexrelay/proxy/internal/testkit"
)

const smallBody = `{"model":"gpt-5","input":"hi","stream":true}`

func TestRateLimitedStreamIsServedByTheNextAccountWithIdenticalBytes(t *testing.T) {
	clk := newClock()
	limited := newUpstream(t, status(429, `{"error":{"message":"Rate limit reached","type":"rate_limit_error","code":"rate_limit_exceeded"}}`, "Retry-After", "30"))
	healthy := newUpstream(t, answerText("served by b"))
	r := newRelay(t, proxy.Options{Now: clk.Now}, openaiAccount("a", limited), openaiAccount("b", healthy))

	// A compact Codex-sized body that routing leaves as it is goes to both accounts exactly as
	// it arrived, without being serialized ("direct").
	body := testkit.SyntheticResponsesBody(1000)
	resp := r.post(t, "/v1/responses", string(body))
	got := readAll(t, resp)
	if resp.StatusCode != 200 || !bytes.Contains(got, []byte("served by b")) {
		t.Fatalf("status %d: %.200s", resp.StatusCode, got)
	}
	a, b := limited.requests(), healthy.requests()
	if len(a) != 1 || len(b) != 1 {
		t.Fatalf("requests: a %d, b %d", len(a), len(b))
	}
	if !bytes.Equal(a[0].Body, b[0].Body) || !bytes.Equal(a[0].Body, body) {
		t.Fatal("the two accounts got different bodies")
	}
	tr := r.lastTrace(t, 1)
	if len(tr.Attempts) != 2 || tr.Attempts[0].Account != "a" || tr.Attempts[0].Status != 429 ||
		tr.Attempts[1].Account != "b" || tr.Attempts[1].Status != 200 {
		t.Fatalf("attempts %+v", tr.Attempts)
	}
	if tr.Serialization != (proxy.Serialization{Direct: 2}) {
		t.Fatalf("serialization %+v", tr.Serialization)
	}
	st := r.Stats()
	if st.Requests.Rotations != 1 || st.Serialization.Direct != 2 {
		t.Fatalf("stats %+v %+v", st.Requests, st.Serialization)
	}
	acct := r.account(t, "a")
	if acct.State != "cooldown" || !acct.CooldownUntil.Equal(clk.Now().Add(30*time.Second)) || !strings.Contains(acct.LastError, "429") {
		t.Fatalf("account a: %+v", acct)
	}
	// While a cools down the next request goes straight to b; once it is over, a is back.
	readAll(t, r.post(t, "/v1/responses", smallBody))
	if len(limited.requests()) != 1 {
		t.Fatal("a cooling account was tried")
	}
	clk.Advance(31 * time.Second)
	if r.account(t, "a").State != "ready" {
		t.Fatal("the cooldown did not end")
	}
}

func TestRotationReusesTheBuiltBody(t *testing.T) {
	limited := newUpstream(t, status(429, `{"error":{"message":"Rate limit reached","code":"rate_limit_exceeded"}}`))
	healthy := newUpstream(t, answerText("served by b"))
	r := newRelay(t, proxy.Options{}, openaiAccount("a", limited), openaiAccount("b", healthy))

	// Spaces between the members make the upstream body differ from the client's: it is built
	// once (a miss), and the second account gets the same bytes from the cache (a hit).
	compact := testkit.SyntheticResponsesBody(1000)
	body := append([]byte("{ "), compact[1:]...)
	resp := r.post(t, "/v1/responses", string(body))
	if got := readAll(t, resp); resp.StatusCode != 200 || !bytes.Contains(got, []byte("served by b")) {
		t.Fatalf("status %d: %.200s", resp.StatusCode, got)
	}
	a, b := limited.requests(), healthy.requests()
	if len(a) != 1 || len(b) != 1 || !bytes.Equal(a[0].Body, compact) || !bytes.Equal(b[0].Body, compact) {
		t.Fatal("the accounts did not both get the body without the space")
	}
	if tr := r.lastTrace(t, 1); tr.Serialization != (proxy.Serialization{Hits: 1, Misses: 1}) {
		t.Fatalf("serialization %+v", tr.Serialization)
	}
	if st := r.Stats(); st.Serialization.Hits != 1 || st.Serialization.Misses != 1 {
		t.Fatalf("stats %+v", st.Serialization)
	}
}

func TestSmallBodiesTakeTheDirectPath(t *testing.T) {
	limited := newUpstream(t, status(429, `{}`))
	healthy := newUpstream(t, answerText("ok"))
	r := newRelay(t, proxy.Options{}, openaiAccount("a", limited), openaiAccount("b", healthy))
	readAll(t, r.post(t, "/v1/responses", smallBody))
	if tr := r.lastTrace(t, 1); tr.Serialization != (proxy.Serialization{Direct: 2}) {
		t.Fatalf("serialization %+v", tr.Serialization)
	}
	if !bytes.Equal(limited.requests()[0].Body, healthy.requests()[0].Body) {
		t.Fatal("bodies differ")
	}
}

func TestCooldownDefaultsAndResetTimes(t *testing.T) {
	clk := newClock()
	resets := clk.Now().Add(2 * time.Hour).Unix()
	cases := []struct {
		name    string
		handler func(w http.ResponseWriter, r *http.Request, n int)
		until   time.Time
	}{
		{"no hint: 60 s", status(429, `{"error":{"message":"slow down"}}`), clk.Now().Add(60 * time.Second)},
		{"Retry-After date", status(429, `{}`, "Retry-After", clk.Now().Add(90*time.Second).Format(http.TimeFormat)), clk.Now().Add(90 * time.Second)},
		{"usage limit with resets_at", status(429, fmt.Sprintf(`{"error":{"type":"usage_limit_reached","message":"The usage limit has been reached","resets_at":%d}}`, resets)), time.Unix(resets, 0)},
		{"402 payment required", status(402, `{"error":{"code":"insufficient_quota","message":"quota"}}`), clk.Now().Add(60 * time.Second)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			up := newUpstream(t, c.handler)
			ok := newUpstream(t, answerText("ok"))
			r := newRelay(t, proxy.Options{Now: clk.Now}, openaiAccount("a", up), openaiAccount("b", ok))
			readAll(t, r.post(t, "/v1/responses", smallBody))
			if a := r.account(t, "a"); a.State != "cooldown" || !a.CooldownUntil.Equal(c.until) {
				t.Fatalf("account a: %s until %v, want %v", a.State, a.CooldownUntil, c.until)
			}
		})
	}
}

// failingFirstEvent answers 200 and then a failure as the first real event.
func failingFirstEvent(code string) func(w http.ResponseWriter, r *http.Request, n int) {
	return func(w http.ResponseWriter, r *http.Request, n int) {
		writeEvents(w, []string{
			textEvents("resp_f", "gpt-5", "x")[0], // response.created
			`event: response.failed` + "\n" + `data: {"type":"response.failed","sequence_number":1,"response":{"id":"resp_f","status":"failed","error":{"code":"` + code + `","message":"failed at once"}}}` + "\n\n",
		})
	}
}

func TestFailureAsFirstEventOfA200StreamRotates(t *testing.T) {
	for _, code := range []string{"rate_limit_exceeded", "usage_limit_reached", "insufficient_quota"} {
		t.Run(code, func(t *testing.T) {
			bad := newUpstream(t, failingFirstEvent(code))
			good := newUpstream(t, answerText("second account"))
			r := newRelay(t, proxy.Options{}, openaiAccount("a", bad), openaiAccount("b", good))
			client := r.sdk()
			stream := client.Responses.NewStreaming(context.Background(), params("gpt-5", "hi"))
			var text strings.Builder
			var ids []string
			for stream.Next() {
				ev := stream.Current()
				if ev.Type == "response.output_text.delta" {
					text.WriteString(ev.Delta)
				}
				if ev.Type == "response.created" {
					ids = append(ids, ev.Response.ID)
				}
			}
			if err := stream.Err(); err != nil || text.String() != "second account" {
				t.Fatalf("stream: %v %q", err, text.String())
			}
			// Nothing of the failed attempt reached the client, not even its response.created.
			if len(ids) != 1 || ids[0] != "resp_0" {
				t.Fatalf("response.created events %v", ids)
			}
			if r.account(t, "a").State != "cooldown" {
				t.Fatalf("account a %+v", r.account(t, "a"))
			}
		})
	}
	t.Run("a client error in the first event is relayed", func(t *testing.T) {
		bad := newUpstream(t, failingFirstEvent("context_length_exceeded"))
		good := newUpstream(t, answerText("never"))
		r := newRelay(t, proxy.Options{}, openaiAccount("a", bad), openaiAccount("b", good))
		body := readAll(t, r.post(t, "/v1/responses", smallBody))
		if !bytes.Contains(body, []byte("context_length_exceeded")) || len(good.requests()) != 0 {
			t.Fatalf("body %s, b got %d requests", body, len(good.requests()))
		}
		if r.account(t, "a").State != "ready" {
			t.Fatal("a client error cooled the account down")
		}
	})
}

// An API key refused with 401/403 is key_rejected (a ChatGPT sign-in would be needs_login).
func TestUnauthorizedMarksTheKeyRejected(t *testing.T) {
	for _, code := range []int{401, 403} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			bad := newUpstream(t, status(code, `{"error":{"message":"invalid token","code":"invalid_api_key"}}`))
			good := newUpstream(t, answerText("ok"))
			r := newRelay(t, proxy.Options{}, openaiAccount("a", bad), openaiAccount("b", good))
			if resp := r.post(t, "/v1/responses", smallBody); resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			a := r.account(t, "a")
			if a.State != proxy.StateKeyRejected || !strings.Contains(a.LastError, "invalid token") {
				t.Fatalf("account a %+v", a)
			}
			// It stays out of rotation until the user signs in again.
			readAll(t, r.post(t, "/v1/responses", smallBody))
			if len(bad.requests()) != 1 {
				t.Fatal("a needs-login account was tried again")
			}
			r.ResetAccount("a")
			if r.account(t, "a").State != "ready" {
				t.Fatal("reset did not clear key_rejected")
			}
		})
	}
}

func TestTransientFailuresRetryOnceThenRotate(t *testing.T) {
	t.Run("5xx twice then the next account", func(t *testing.T) {
		bad := newUpstream(t, status(502, `{"error":{"message":"bad gateway"}}`))
		good := newUpstream(t, answerText("ok"))
		r := newRelay(t, proxy.Options{RetryBackoff: time.Millisecond}, openaiAccount("a", bad), openaiAccount("b", good))
		if resp := r.post(t, "/v1/responses", smallBody); resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		if len(bad.requests()) != 2 || !bytes.Equal(bad.requests()[0].Body, bad.requests()[1].Body) {
			t.Fatalf("a got %d requests", len(bad.requests()))
		}
		tr := r.lastTrace(t, 1)
		if len(tr.Attempts) != 3 || tr.Attempts[2].Account != "b" {
			t.Fatalf("attempts %+v", tr.Attempts)
		}
		if tr.Serialization != (proxy.Serialization{Direct: 2}) {
			t.Fatalf("the retry rebuilt the body: %+v", tr.Serialization)
		}
		if r.account(t, "a").State != "ready" {
			t.Fatal("a transient failure took the account out of rotation")
		}
	})
	t.Run("5xx once then success on the same account", func(t *testing.T) {
		flaky := newUpstream(t, sequence(status(503, `{}`), answerText("second try")))
		other := newUpstream(t, answerText("never"))
		r := newRelay(t, proxy.Options{RetryBackoff: time.Millisecond}, openaiAccount("a", flaky), openaiAccount("b", other))
		body := readAll(t, r.post(t, "/v1/responses", smallBody))
		if !bytes.Contains(body, []byte("second try")) || len(other.requests()) != 0 {
			t.Fatalf("body %.100s, b got %d", body, len(other.requests()))
		}
	})
	t.Run("connection refused", func(t *testing.T) {
		ln, _ := net.Listen("tcp", "127.0.0.1:0")
		dead := "http://" + ln.Addr().String()
		ln.Close()
		good := newUpstream(t, answerText("ok"))
		r := newRelay(t, proxy.Options{RetryBackoff: time.Millisecond},
			proxy.Account{Name: "dead", Kind: proxy.KindOpenAI, BaseURL: dead, Credentials: proxy.Static{Token: "k"}},
			openaiAccount("b", good))
		if resp := r.post(t, "/v1/responses", smallBody); resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		tr := r.lastTrace(t, 1)
		if len(tr.Attempts) != 3 || !strings.Contains(tr.Attempts[0].Error, "refused") {
			t.Fatalf("attempts %+v", tr.Attempts)
		}
	})
	t.Run("no headers within the timeout", func(t *testing.T) {
		silent := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) { <-r.Context().Done() })
		good := newUpstream(t, answerText("ok"))
		r := newRelay(t, proxy.Options{Timeouts: proxy.Timeouts{Header: 50 * time.Millisecond}, RetryBackoff: time.Millisecond},
			openaiAccount("a", silent), openaiAccount("b", good))
		if resp := r.post(t, "/v1/responses", smallBody); resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		// A timeout is not retried on the same account: the next one serves at once, and the
		// hung account rests.
		tr := r.lastTrace(t, 1)
		if len(tr.Attempts) != 2 || !strings.Contains(tr.Attempts[0].Error, "no response headers") || tr.Attempts[1].Account != "b" {
			t.Fatalf("attempts %+v", tr.Attempts)
		}
		if a := r.account(t, "a"); a.State != proxy.StateCooldown || a.CooldownReason != proxy.CooldownFailing {
			t.Fatalf("the hung account: %+v", a)
		}
	})
}

func TestModelNotFoundBlocksThatModelOnThatAccount(t *testing.T) {
	clk := newClock()
	noModel := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if bytes.Contains(readRecorded(r), []byte(`"gpt-5"`)) {
			status(404, `{"error":{"message":"The model gpt-5 does not exist","code":"model_not_found"}}`)(w, r, n)
			return
		}
		answerText("a serves other models")(w, r, n)
	})
	good := newUpstream(t, answerText("b"))
	r := newRelay(t, proxy.Options{Now: clk.Now}, openaiAccount("a", noModel), openaiAccount("b", good))
	readAll(t, r.post(t, "/v1/responses", smallBody))
	readAll(t, r.post(t, "/v1/responses", smallBody))
	if len(noModel.requests()) != 1 {
		t.Fatalf("a was asked for gpt-5 %d times", len(noModel.requests()))
	}
	body := readAll(t, r.post(t, "/v1/responses", `{"model":"gpt-4.1","input":"x","stream":true}`))
	if !bytes.Contains(body, []byte("a serves other models")) {
		t.Fatal("a was blocked for every model")
	}
	clk.Advance(61 * time.Minute)
	readAll(t, r.post(t, "/v1/responses", smallBody))
	if len(noModel.requests()) != 3 {
		t.Fatal("the block did not expire after an hour")
	}
}

func TestFailureAfterTheFirstByteEndsTheStreamWellFormed(t *testing.T) {
	evs := textEvents("resp_m", "gpt-5", "partial answer")
	cases := map[string]func(w http.ResponseWriter, r *http.Request, n int){
		"connection cut mid-stream": func(w http.ResponseWriter, r *http.Request, n int) {
			w.Header().Set("Content-Type", "text/event-stream")
			for _, e := range evs[:5] {
				io.WriteString(w, e)
			}
			io.WriteString(w, "event: response.output_text.delta\ndata: {\"type\":") // half an event
			w.(http.Flusher).Flush()
			conn, buf, _ := http.NewResponseController(w).Hijack()
			buf.Flush()
			conn.Close()
		},
		"clean end without response.completed": func(w http.ResponseWriter, r *http.Request, n int) {
			writeEvents(w, evs[:6])
		},
	}
	for name, h := range cases {
		t.Run(name, func(t *testing.T) {
			up := newUpstream(t, h)
			spare := newUpstream(t, answerText("never"))
			r := newRelay(t, proxy.Options{}, openaiAccount("a", up), openaiAccount("b", spare))
			client := r.sdk()
			stream := client.Responses.NewStreaming(context.Background(), params("gpt-5", "hi"))
			var last responses.ResponseStreamEventUnion
			n := 0
			for stream.Next() {
				last = stream.Current()
				n++
			}
			if err := stream.Err(); err != nil {
				t.Fatalf("the stream was not well formed: %v", err)
			}
			if last.Type != "response.failed" || last.Response.Error.Code != "server_error" || last.Response.ID != "resp_m" {
				t.Fatalf("last event %s %s", last.Type, last.RawJSON())
			}
			if len(spare.requests()) != 0 {
				t.Fatal("rotated after bytes reached the client")
			}
			if tr := r.lastTrace(t, 1); tr.Outcome != "interrupted" {
				t.Fatalf("trace outcome %q", tr.Outcome)
			}
		})
	}
}

func TestNoAccountLeftAnswers429WithTheEarliestReset(t *testing.T) {
	clk := newClock()
	a := newUpstream(t, status(429, `{}`, "Retry-After", "120"))
	b := newUpstream(t, status(429, `{}`, "Retry-After", "45"))
	r := newRelay(t, proxy.Options{Now: clk.Now}, openaiAccount("a", a), openaiAccount("b", b))
	check := func(resp *http.Response) {
		t.Helper()
		if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "45" {
			t.Fatalf("status %d Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
		}
		e := decodeErr(t, resp)
		if e.Error.Code != "usage_limit_reached" || e.Error.ResetsAt != clk.Now().Add(45*time.Second).Unix() ||
			!strings.Contains(e.Error.Message, "a: cooldown until") || !strings.Contains(e.Error.Message, "b: cooldown until") {
			t.Fatalf("error %+v", e.Error)
		}
	}
	check(r.post(t, "/v1/responses", smallBody)) // both fail during the request
	check(r.post(t, "/v1/responses", smallBody)) // both known to be cooling: no upstream call
	if len(a.requests())+len(b.requests()) != 2 {
		t.Fatal("cooling accounts were called")
	}
}

func TestEveryAccountFailingTransientlyIs502(t *testing.T) {
	bad := newUpstream(t, status(500, `{"error":{"message":"boom"}}`))
	r := newRelay(t, proxy.Options{RetryBackoff: time.Millisecond}, openaiAccount("a", bad), openaiAccount("b", bad))
	resp := r.post(t, "/v1/responses", smallBody)
	if resp.StatusCode != 502 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if e := decodeErr(t, resp); !strings.Contains(e.Error.Message, "a: HTTP 500") || !strings.Contains(e.Error.Message, "b: HTTP 500") {
		t.Fatalf("message %q", e.Error.Message)
	}
}

func TestAffinityAndStrategies(t *testing.T) {
	served := func(body []byte) string {
		sc := bufio.NewScanner(bytes.NewReader(body))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, "data: ") && strings.Contains(line, "output_text.done") {
				var v struct{ Text string }
				json.Unmarshal([]byte(line[6:]), &v)
				return v.Text
			}
		}
		return ""
	}
	ua, ub := newUpstream(t, answerText("a")), newUpstream(t, answerText("b"))
	body := func(key string) string {
		return `{"model":"gpt-5","input":"x","stream":true,"prompt_cache_key":"` + key + `"}`
	}

	t.Run("priority fills the first account", func(t *testing.T) {
		r := newRelay(t, proxy.Options{}, openaiAccount("a", ua), openaiAccount("b", ub))
		for i := 0; i < 3; i++ {
			if got := served(readAll(t, r.post(t, "/v1/responses", smallBody))); got != "a" {
				t.Fatalf("request %d served by %q", i, got)
			}
		}
	})
	t.Run("round-robin takes turns", func(t *testing.T) {
		r := newRelay(t, proxy.Options{Strategy: proxy.StrategyRoundRobin}, openaiAccount("a", ua), openaiAccount("b", ub))
		var got []string
		for i := 0; i < 4; i++ {
			got = append(got, served(readAll(t, r.post(t, "/v1/responses", smallBody))))
		}
		if strings.Join(got, "") != "abab" {
			t.Fatalf("served by %v", got)
		}
	})
	t.Run("a session keeps its account while it is healthy", func(t *testing.T) {
		clk := newClock()
		flaky := newUpstream(t, answerText("a"))
		r := newRelay(t, proxy.Options{Strategy: proxy.StrategyRoundRobin, Now: clk.Now}, openaiAccount("a", flaky), openaiAccount("b", ub))
		first := served(readAll(t, r.post(t, "/v1/responses", body("sess-1"))))
		for i := 0; i < 4; i++ {
			if got := served(readAll(t, r.post(t, "/v1/responses", body("sess-1")))); got != first {
				t.Fatalf("session moved from %s to %s", first, got)
			}
			// Other sessions still take turns around it.
			readAll(t, r.post(t, "/v1/responses", body(fmt.Sprint("other-", i))))
		}
		// The session header is a key too.
		h := served(readAll(t, r.post(t, "/v1/responses", smallBody, "session_id", "hdr-1")))
		for i := 0; i < 3; i++ {
			if got := served(readAll(t, r.post(t, "/v1/responses", smallBody, "session_id", "hdr-1"))); got != h {
				t.Fatalf("header session moved from %s to %s", h, got)
			}
		}
		// After an hour of silence the binding is gone (the next request may land anywhere),
		// and a binding to an account that went away is ignored.
		clk.Advance(2 * time.Hour)
		r.SetAccounts([]proxy.Account{openaiAccount("b", ub)})
		if got := served(readAll(t, r.post(t, "/v1/responses", body("sess-1")))); got != "b" {
			t.Fatalf("served by %s", got)
		}
	})
}

func TestHTTP2UpstreamsRateLimitingBeforeReadingTheBody(t *testing.T) {
	// Real upstreams speak HTTP/2 over TLS. The first one refuses a Codex-sized request at once,
	// without reading its body, so its transport abandons the upload (and closes the body from
	// its own goroutine) while the relay rotates the same bytes to the second.
	h2 := func(handle http.HandlerFunc) *httptest.Server {
		s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet { // no model list: the account may take any model
				http.NotFound(w, r)
				return
			}
			handle(w, r)
		}))
		s.EnableHTTP2 = true
		s.StartTLS()
		t.Cleanup(s.Close)
		return s
	}
	var mu sync.Mutex
	var got [][]byte
	var protos []string
	limited := h2(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		protos = append(protos, r.Proto)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(429)
		io.WriteString(w, `{"error":{"message":"Rate limit reached","code":"rate_limit_exceeded"}}`)
	})
	healthy := h2(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got, protos = append(got, b), append(protos, r.Proto)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		writeEvents(w, textEvents("resp_h2", "gpt-5-codex", "over h2"))
	})
	tr := limited.Client().Transport.(*http.Transport).Clone()
	tr.ForceAttemptHTTP2 = true
	account := func(name string, s *httptest.Server) proxy.Account {
		return proxy.Account{Name: name, Kind: proxy.KindOpenAI, BaseURL: s.URL + "/v1", Credentials: proxy.Static{Token: "sk-" + name}}
	}
	r := newRelay(t, proxy.Options{Transport: tr}, account("a", limited), account("b", healthy))
	body := testkit.SyntheticResponsesBody(10000)
	for i := range 5 { // each request finds a cooling down; make it ready again
		r.ResetAccount("a")
		resp := r.post(t, "/v1/responses", string(body))
		if out := readAll(t, resp); resp.StatusCode != 200 || !bytes.Contains(out, []byte("over h2")) {
			t.Fatalf("request %d: status %d: %.200s", i, resp.StatusCode, out)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 5 {
		t.Fatalf("the healthy account got %d requests", len(got))
	}
	for _, b := range got {
		if !bytes.Equal(b, body) {
			t.Fatal("the second account did not get the client's bytes")
		}
	}
	for _, p := range protos {
		if p != "HTTP/2.0" {
			t.Fatalf("an upstream was reached over %s", p)
		}
	}
}
