package proxy_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codexrelay/codexrelay/proxy"
)

// Upstreams that misbehave: each handler below does one thing a broken or hostile upstream
// does. Timeouts are set short; no test waits for a real one.

// cutAfter writes the first n events of a good stream, then closes the connection.
func cutAfter(n int) func(w http.ResponseWriter, r *http.Request, _ int) {
	return func(w http.ResponseWriter, r *http.Request, _ int) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		for _, e := range textEvents("resp_cut", "gpt-5", "never whole")[:n] {
			io.WriteString(w, e)
		}
		w.(http.Flusher).Flush()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	}
}

// silentAfter writes the first n events of a good stream, then says nothing until the relay
// gives up.
func silentAfter(n int) func(w http.ResponseWriter, r *http.Request, _ int) {
	return func(w http.ResponseWriter, r *http.Request, _ int) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		for _, e := range textEvents("resp_silent", "gpt-5", "stuck")[:n] {
			io.WriteString(w, e)
		}
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}
}

const sessionBody = `{"model":"gpt-5","input":"hi","stream":true,"prompt_cache_key":"sess-1"}`

func TestFailuresBeforeTheFirstByteRotate(t *testing.T) {
	short := proxy.Timeouts{Header: 2 * time.Second, FirstEvent: 150 * time.Millisecond, StreamIdle: 2 * time.Second}
	for _, c := range []struct {
		name    string
		handle  func(w http.ResponseWriter, r *http.Request, n int)
		retried bool   // tried twice on the broken account (flaky), else once (a timeout)
		error   string // in the broken attempt's error
	}{
		{"cut after the held events", cutAfter(2), true, "ended after response.in_progress, before its first output"},
		{"an event stream with no events", cutAfter(0), true, "ended before its first event"},
		{"silence after the headers", silentAfter(0), false, "no event from the upstream within the first-event timeout"},
		{"silence after response.created", silentAfter(1), false, "no event from the upstream within the first-event timeout"},
		{"keep-alive comments only", func(w http.ResponseWriter, r *http.Request, _ int) {
			w.Header().Set("Content-Type", "text/event-stream")
			for {
				if _, err := io.WriteString(w, ": keep-alive\n\n"); err != nil {
					return
				}
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
					return
				case <-time.After(10 * time.Millisecond):
				}
			}
		}, false, "first-event timeout"},
	} {
		t.Run(c.name, func(t *testing.T) {
			broken := newUpstream(t, c.handle)
			good := newUpstream(t, answerText("whole answer"))
			r := newRelay(t, proxy.Options{Timeouts: short, RetryBackoff: time.Millisecond},
				openaiAccount("broken", broken), openaiAccount("good", good))
			body := readAll(t, r.post(t, "/v1/responses", sessionBody))
			if !bytes.Contains(body, []byte("whole answer")) || bytes.Contains(body, []byte("response.failed")) || bytes.Contains(body, []byte("resp_cut")) {
				t.Fatalf("the client saw:\n%s", body)
			}
			tr := r.lastTrace(t, 1)
			want := 1
			if c.retried {
				want = 2
			}
			if len(broken.requests()) != want || len(tr.Attempts) != want+1 || !strings.Contains(tr.Attempts[0].Error, c.error) {
				t.Fatalf("broken got %d requests; attempts %+v", len(broken.requests()), tr.Attempts)
			}
			st := r.account(t, "broken")
			if st.Failures != int64(want) {
				t.Fatalf("broken: %+v", st)
			}
			if !c.retried && (st.State != proxy.StateCooldown || st.CooldownReason != proxy.CooldownFailing) {
				t.Fatalf("a timed-out account does not rest: %+v", st)
			}
			// The session went to the account that answered, not to the broken one.
			readAll(t, r.post(t, "/v1/responses", sessionBody))
			if len(broken.requests()) != want || len(good.requests()) != 2 {
				t.Fatalf("the session's next request: broken %d, good %d", len(broken.requests()), len(good.requests()))
			}
		})
	}
}

func TestAChatUpstreamThatBreaksBeforeItsFirstChunkRotates(t *testing.T) {
	chat := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, ": hello\n\n")
		w.(http.Flusher).Flush()
		if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
			c.Close()
		}
	})
	good := newUpstream(t, answerText("from responses"))
	a := openaiAccount("chat", chat)
	a.API = proxy.APIChat
	r := newRelay(t, proxy.Options{RetryBackoff: time.Millisecond}, a, openaiAccount("good", good))
	body := readAll(t, r.post(t, "/v1/responses", smallBody))
	if !bytes.Contains(body, []byte("from responses")) || bytes.Contains(body, []byte("response.failed")) {
		t.Fatalf("client saw:\n%s", body)
	}
}

func TestANonStreamedAnswerThatBreaksMidwayRotates(t *testing.T) {
	// A ChatGPT account always streams; a client that asked for JSON gets nothing until the
	// stream completed, so a break anywhere in it moves on.
	broken := newUpstream(t, cutAfter(6))
	good := newUpstream(t, answerText("assembled"))
	r := newRelay(t, proxy.Options{RetryBackoff: time.Millisecond}, chatgptAccount("cg", broken), chatgptAccount("cg2", good))
	resp := r.post(t, "/v1/responses", `{"model":"gpt-5","input":"hi"}`)
	body := readAll(t, resp)
	if resp.StatusCode != 200 || !bytes.Contains(body, []byte("assembled")) {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
}

func TestSilenceMidStreamEndsWithAWellFormedFailure(t *testing.T) {
	stuck := newUpstream(t, silentAfter(5)) // a delta went out, then nothing
	r := newRelay(t, proxy.Options{Timeouts: proxy.Timeouts{StreamIdle: 150 * time.Millisecond}}, openaiAccount("stuck", stuck))
	body := readAll(t, r.post(t, "/v1/responses", smallBody))
	if !bytes.Contains(body, []byte("response.output_text.delta")) || !bytes.HasSuffix(body, []byte("\n\n")) {
		t.Fatalf("client saw:\n%s", body)
	}
	last := body[bytes.LastIndex(body, []byte("event: ")):]
	if !bytes.HasPrefix(last, []byte("event: response.failed")) || !bytes.Contains(last, []byte(`"code":"server_error"`)) ||
		!bytes.Contains(last, []byte("went silent")) || !bytes.Contains(last, []byte(`"id":"resp_silent"`)) {
		t.Fatalf("last event: %s", last)
	}
	if tr := r.lastTrace(t, 1); tr.Outcome != "interrupted" || !strings.Contains(tr.Error, "stream idle timeout") {
		t.Fatalf("trace %+v", tr)
	}
}

func TestAHungAccountCostsOneTimeoutPerRest(t *testing.T) {
	clk := newClock()
	var hung sync.WaitGroup
	silent := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		hung.Add(1)
		defer hung.Done()
		<-r.Context().Done()
	})
	good := newUpstream(t, answerText("fine"))
	r := newRelay(t, proxy.Options{Now: clk.Now, Timeouts: proxy.Timeouts{Header: 100 * time.Millisecond}, RetryBackoff: time.Millisecond},
		openaiAccount("hung", silent), openaiAccount("good", good))
	for i := range 4 {
		if resp := r.post(t, "/v1/responses", smallBody); resp.StatusCode != 200 {
			t.Fatalf("request %d: %d", i, resp.StatusCode)
		}
	}
	if n := len(silent.requests()); n != 1 {
		t.Fatalf("the hung account got %d requests during its rest", n)
	}
	st := r.account(t, "hung")
	if st.State != proxy.StateCooldown || st.CooldownReason != proxy.CooldownFailing || !strings.Contains(st.LastError, "resting for 30s after a timeout") ||
		st.CooldownUntil == nil || !st.CooldownUntil.Equal(clk.Now().Add(30*time.Second)) {
		t.Fatalf("hung: %+v", st)
	}
	// After the rest it gets one more chance; failing again doubles the rest.
	clk.Advance(31 * time.Second)
	readAll(t, r.post(t, "/v1/responses", smallBody))
	if st := r.account(t, "hung"); len(silent.requests()) != 2 || !st.CooldownUntil.Equal(clk.Now().Add(60*time.Second)) {
		t.Fatalf("second rest: %d requests, %+v", len(silent.requests()), st)
	}
}

func TestTransientFailuresInARowMakeAnAccountRestUntilItServes(t *testing.T) {
	clk := newClock()
	flaky := newUpstream(t, sequence(status(502, `{}`), status(502, `{}`), status(502, `{}`), answerText("back")))
	spare := newUpstream(t, answerText("spare"))
	r := newRelay(t, proxy.Options{Now: clk.Now, RetryBackoff: time.Millisecond}, openaiAccount("flaky", flaky), openaiAccount("spare", spare))
	readAll(t, r.post(t, "/v1/responses", smallBody)) // 502, 502: rotated, streak 2
	if st := r.account(t, "flaky"); st.State != proxy.StateReady {
		t.Fatalf("two failures: %+v", st)
	}
	readAll(t, r.post(t, "/v1/responses", smallBody)) // 502: the third in a row
	if st := r.account(t, "flaky"); st.State != proxy.StateCooldown || !strings.Contains(st.LastError, "3 failures in a row") {
		t.Fatalf("three failures: %+v", st)
	}
	clk.Advance(31 * time.Second)
	if body := readAll(t, r.post(t, "/v1/responses", smallBody)); !bytes.Contains(body, []byte("back")) {
		t.Fatalf("after the rest: %s", body)
	}
	if st := r.account(t, "flaky"); st.State != proxy.StateReady {
		t.Fatalf("after a success: %+v", st)
	}
}

func TestRedirectsAreTheAccountsFailure(t *testing.T) {
	var followed sync.Mutex
	hits := 0
	elsewhere := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		followed.Lock()
		hits++
		followed.Unlock()
		answerText("stolen")(w, r, n)
	})
	moved := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		http.Redirect(w, r, elsewhere.URL+"/v1/responses", http.StatusTemporaryRedirect)
	})
	good := newUpstream(t, answerText("served"))
	r := newRelay(t, proxy.Options{}, openaiAccount("moved", moved), openaiAccount("good", good))
	resp := r.post(t, "/v1/responses", smallBody)
	body := readAll(t, resp)
	if resp.StatusCode != 200 || !bytes.Contains(body, []byte("served")) || hits != 0 {
		t.Fatalf("%d %s (redirect followed %d times)", resp.StatusCode, body, hits)
	}
	if st := r.account(t, "moved"); st.Failures != 1 || !strings.Contains(st.LastError, "redirects to 127.0.0.1") {
		t.Fatalf("moved: %+v", st)
	}
}

func TestSecretsEchoedByAnUpstreamGoNowhere(t *testing.T) {
	const key = "sk-echo-SECRETSECRETSECRET1234"
	jwt := "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJlc2lnbmF0dXJl"
	echo := func(code int) func(w http.ResponseWriter, r *http.Request, n int) {
		return func(w http.ResponseWriter, r *http.Request, n int) {
			got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
			msg := fmt.Sprintf("Incorrect API key provided: %s. Debug: Authorization: Bearer %s, other token %s", got, got, jwt)
			b, _ := json.Marshal(map[string]any{"error": map[string]string{"message": msg, "code": "invalid_api_key"}})
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			w.Write(b)
		}
	}
	var logs bytes.Buffer
	var logMu sync.Mutex
	logger := slog.New(slog.NewTextHandler(lockedWriter{&logs, &logMu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	for _, code := range []int{401, 400, 500} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			up := newUpstream(t, echo(code))
			a := proxy.Account{Name: "echo", Kind: proxy.KindOpenAI, BaseURL: up.URL + "/v1", Credentials: proxy.Static{Token: key}}
			r := newRelay(t, proxy.Options{Logger: logger, RetryBackoff: time.Millisecond}, a)
			resp := r.post(t, "/v1/responses", smallBody)
			client := string(readAll(t, resp))
			if code == 400 && (resp.StatusCode != 400 || !strings.Contains(client, "Incorrect API key provided: ****1234")) {
				t.Fatalf("the client's own error should reach it, redacted: %d %s", resp.StatusCode, client)
			}
			stats, _ := json.Marshal(r.Stats())
			traces, _ := json.Marshal(r.Traces(0))
			metrics := readAll(t, must(http.Get(r.URL+"/metrics")))
			logMu.Lock()
			logged := logs.String()
			logMu.Unlock()
			for where, text := range map[string]string{"client": client, "stats": string(stats), "traces": string(traces), "log": logged, "metrics": string(metrics)} {
				if strings.Contains(text, "SECRETSECRET") || strings.Contains(text, jwt) {
					t.Errorf("a secret reached the %s:\n%s", where, text)
				}
			}
			if !strings.Contains(string(stats)+string(traces), "****1234") {
				t.Errorf("the redacted error is not reported at all: %s %s", stats, traces)
			}
		})
	}
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func must(resp *http.Response, err error) *http.Response {
	if err != nil {
		panic(err)
	}
	return resp
}

// storeDown is a credential source whose keychain cannot be read.
type storeDown struct{}

func (storeDown) Credential(context.Context) (proxy.Credential, error) {
	return proxy.Credential{}, fmt.Errorf("keychain unavailable: the keychain is locked. Unlock your login keyring: %w", proxy.ErrSecretStoreUnavailable)
}

func TestAnUnavailableKeychainIs503KeychainUnavailable(t *testing.T) {
	up := newUpstream(t, answerText("never"))
	r := newRelay(t, proxy.Options{},
		proxy.Account{Name: "a", Kind: proxy.KindOpenAI, BaseURL: up.URL, Credentials: storeDown{}},
		proxy.Account{Name: "b", Kind: proxy.KindOpenAI, BaseURL: up.URL, Credentials: storeDown{}})
	resp := r.post(t, "/v1/responses", smallBody)
	e := decodeErr(t, resp)
	if resp.StatusCode != 503 || e.Error.Code != "keychain_unavailable" || !strings.Contains(e.Error.Message, "Unlock your login keyring") {
		t.Fatalf("%d %+v", resp.StatusCode, e.Error)
	}
	if len(up.requests()) != 0 {
		t.Fatal("an upstream was called without a credential")
	}
}

func TestAllowRemoteWithTheLocalKey(t *testing.T) {
	up := newUpstream(t, answerText("remote ok"))
	r := newRelay(t, proxy.Options{LocalAPIKey: "crk-local-key-123456"}, openaiAccount("a", up))
	remote := func(key string) int {
		req, _ := http.NewRequest(http.MethodPost, r.URL+"/v1/responses", strings.NewReader(smallBody))
		req.Host = "192.0.2.10:7455" // addressed to the machine's LAN name
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp := must(http.DefaultClient.Do(req))
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := remote("crk-local-key-123456"); c != 403 {
		t.Fatalf("without --allow-remote: %d", c)
	}
	r.SetAllowRemote(true)
	if c := remote("crk-local-key-123456"); c != 200 {
		t.Fatalf("with the key: %d", c)
	}
	if c := remote(""); c != 401 {
		t.Fatalf("without the key: %d", c)
	}
	r.SetLocalAPIKey("")
	if c := remote(""); c != 403 {
		t.Fatalf("allow-remote without a local key: %d", c)
	}
}

func TestAStalledRequestBodyIs408(t *testing.T) {
	up := newUpstream(t, answerText("never"))
	for _, c := range []struct {
		name  string
		opt   proxy.Options
		pause time.Duration // between bytes
	}{
		{"stalled", proxy.Options{BodyIdleTimeout: 150 * time.Millisecond}, time.Hour},
		{"trickling", proxy.Options{BodyIdleTimeout: time.Second, BodyTimeout: 300 * time.Millisecond}, 50 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRelay(t, c.opt, openaiAccount("a", up))
			conn, err := net.Dial("tcp", strings.TrimPrefix(r.URL, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			fmt.Fprintf(conn, "POST /v1/responses HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"model\":")
			done := make(chan struct{})
			go func() {
				defer close(done)
				for {
					if _, err := conn.Write([]byte(" ")); err != nil {
						return
					}
					select {
					case <-time.After(c.pause):
					case <-done:
						return
					}
				}
			}()
			conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			e := decodeErr(t, resp)
			if resp.StatusCode != 408 || e.Error.Code != "request_timeout" {
				t.Fatalf("%d %+v", resp.StatusCode, e.Error)
			}
			if len(up.requests()) != 0 {
				t.Fatal("a partial body went upstream")
			}
		})
	}
}
