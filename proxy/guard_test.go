package proxy_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/codexrelay/codexrelay/proxy"
	"github.com/codexrelay/codexrelay/proxy/internal/testkit"
	"github.com/codexrelay/codexrelay/proxy/payload"
)

func TestLoopbackGuards(t *testing.T) {
	up := newUpstream(t, answerText("ok"))
	r := newRelay(t, proxy.Options{}, openaiAccount("a", up))
	for _, c := range []struct {
		name, host, origin string
		status             int
	}{
		{"rebinding host", "evil.example.com", "", 403},
		{"rebinding host with port", "evil.example.com:7455", "", 403},
		{"private address", "192.168.1.10:7455", "", 403},
		{"web page origin", "", "https://evil.example.com", 403},
		{"null origin", "", "null", 403},
		{"localhost", "localhost:7455", "", 200},
		{"ipv6 loopback", "[::1]:7455", "", 200},
		{"127.0.0.2", "127.0.0.2", "", 200},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", r.URL+"/v1/responses", strings.NewReader(`{"model":"m","input":"x"}`))
			req.Header.Set("Content-Type", "application/json")
			if c.host != "" {
				req.Host = c.host
			}
			if c.origin != "" {
				req.Header.Set("Origin", c.origin)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, c.status)
			}
			if resp.Header.Get("Access-Control-Allow-Origin") != "" {
				t.Fatal("a CORS allowance was sent")
			}
			if c.status == 403 {
				decodeErr(t, resp)
			}
		})
	}
	if n := len(up.requests()); n != 3 {
		t.Fatalf("%d requests reached the upstream, want the 3 allowed ones", n)
	}
}

func TestLocalAPIKey(t *testing.T) {
	up := newUpstream(t, answerText("ok"))
	r := newRelay(t, proxy.Options{LocalAPIKey: "crk-secret"}, openaiAccount("a", up))
	body := `{"model":"m","input":"x"}`
	for _, c := range []struct {
		name   string
		header []string
		status int
	}{
		{"missing", nil, 401},
		{"wrong", []string{"Authorization", "Bearer crk-wrong"}, 401},
		{"prefix of the key", []string{"Authorization", "Bearer crk-secre"}, 401},
		{"bearer", []string{"Authorization", "Bearer crk-secret"}, 200},
		{"x-api-key", []string{"X-Api-Key", "crk-secret"}, 200},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp := r.post(t, "/v1/responses", body, c.header...)
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, c.status)
			}
			if c.status == 401 {
				if e := decodeErr(t, resp); strings.Contains(e.Error.Message, "crk-secret") {
					t.Fatal("the error message reveals the key")
				}
			}
		})
	}
	// The client's local key is never sent upstream: the account's own key is.
	for _, got := range up.requests() {
		if got.Header.Get("Authorization") != "Bearer sk-test-a" || got.Header.Get("X-Api-Key") != "" {
			t.Fatalf("upstream headers %v", got.Header)
		}
	}
	// The key can be removed at runtime.
	r.SetLocalAPIKey("")
	if resp := r.post(t, "/v1/responses", body); resp.StatusCode != 200 {
		t.Fatalf("without a key: status %d", resp.StatusCode)
	}
}

func TestBodyLimitAndEncodings(t *testing.T) {
	up := newUpstream(t, answerText("ok"))
	r := newRelay(t, proxy.Options{MaxBodyBytes: 4096}, openaiAccount("a", up))
	small := `{"model":"m","input":"hello"}`
	big := `{"model":"m","input":"` + strings.Repeat("a", 5000) + `"}`
	gz := func(s string) []byte {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		w.Write([]byte(s))
		w.Close()
		return b.Bytes()
	}
	zs := func(s string) []byte {
		enc, _ := zstd.NewWriter(nil)
		return enc.EncodeAll([]byte(s), nil)
	}
	send := func(body []byte, enc string) *http.Response {
		req, _ := http.NewRequest("POST", r.URL+"/v1/responses", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if enc != "" {
			req.Header.Set("Content-Encoding", enc)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	for _, c := range []struct {
		name   string
		body   []byte
		enc    string
		status int
		code   string
	}{
		{"plain", []byte(small), "", 200, ""},
		{"gzip", gz(small), "gzip", 200, ""},
		{"zstd", zs(small), "zstd", 200, ""},
		{"too large", []byte(big), "", 413, "request_too_large"},
		{"gzip bomb past the limit", gz(big), "gzip", 413, "request_too_large"},
		{"zstd bomb past the limit", zs(big), "zstd", 413, "request_too_large"},
		{"truncated gzip", gz(small)[:20], "gzip", 400, "invalid_body"},
		{"truncated zstd", zs(small)[:12], "zstd", 400, "invalid_body"},
		{"gzip header but plain body", []byte(small), "gzip", 400, "invalid_body"},
		{"unknown encoding", []byte(small), "br", 415, "unsupported_encoding"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := len(up.requests())
			resp := send(c.body, c.enc)
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.status, readAll(t, resp))
			}
			if c.status != 200 {
				if e := decodeErr(t, resp); e.Error.Code != c.code {
					t.Fatalf("code %q, want %q", e.Error.Code, c.code)
				}
				if len(up.requests()) != before {
					t.Fatal("a rejected body reached the upstream")
				}
				return
			}
			if got := up.requests()[len(up.requests())-1].Body; string(got) != small {
				t.Fatalf("upstream got %q", got)
			}
		})
	}
}

func TestClientDisconnectCancelsUpstream(t *testing.T) {
	canceled := make(chan struct{})
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, textEvents("resp_1", "m", "hello")[2]) // output_item.added: real output
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		close(canceled)
	})
	r := newRelay(t, proxy.Options{}, openaiAccount("a", up))
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", r.URL+"/v1/responses", strings.NewReader(`{"model":"m","input":"x","stream":true}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(resp.Body).ReadString('\n')
	if !strings.HasPrefix(line, "event: response.output_item.added") {
		t.Fatalf("first line %q", line)
	}
	cancel()
	resp.Body.Close()
	select {
	case <-canceled:
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream request was not cancelled when the client went away")
	}
	eventually(t, "the trace", func() bool { return len(r.Traces(1)) == 1 && r.Stats().Requests.InFlight == 0 })
	if tr := r.Traces(1)[0]; tr.Outcome != "canceled" {
		t.Fatalf("trace outcome %q", tr.Outcome)
	}
}

func TestGracefulDrain(t *testing.T) {
	var release, started chan struct{}
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		evs := textEvents("resp_d", "m", "drained")
		w.Header().Set("Content-Type", "text/event-stream")
		for i, e := range evs {
			io.WriteString(w, e)
			w.(http.Flusher).Flush()
			if i == 2 {
				started <- struct{}{}
				select {
				case <-release:
				case <-r.Context().Done():
					return
				}
			}
		}
	})
	serve := func(drain time.Duration) (addr string, stop context.CancelFunc, done chan error) {
		s := proxy.New(proxy.Options{})
		s.SetAccounts([]proxy.Account{openaiAccount("a", up)})
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done = make(chan error, 1)
		go func() { done <- s.Serve(ctx, ln, drain) }()
		return ln.Addr().String(), cancel, done
	}
	stream := func(addr string) (*http.Response, error) {
		req, _ := http.NewRequest("POST", "http://"+addr+"/v1/responses", strings.NewReader(`{"model":"m","input":"x","stream":true}`))
		req.Header.Set("Content-Type", "application/json")
		return http.DefaultClient.Do(req)
	}

	t.Run("in-flight stream finishes", func(t *testing.T) {
		release, started = make(chan struct{}), make(chan struct{}, 1)
		addr, stop, done := serve(time.Minute)
		resp, err := stream(addr)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		<-started
		stop()
		// New connections are refused while the stream drains.
		eventually(t, "the listener to close", func() bool {
			c, err := net.Dial("tcp", addr)
			if err == nil {
				c.Close()
			}
			return err != nil
		})
		close(release)
		body, err := io.ReadAll(resp.Body)
		if err != nil || !bytes.Contains(body, []byte("response.completed")) {
			t.Fatalf("drained stream: %v %q", err, body)
		}
		if err := <-done; err != nil {
			t.Fatalf("Serve: %v", err)
		}
	})

	t.Run("stream still running at the deadline is cut", func(t *testing.T) {
		release, started = make(chan struct{}), make(chan struct{}, 1)
		defer close(release)
		addr, stop, done := serve(50 * time.Millisecond)
		resp, err := stream(addr)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		<-started
		stop()
		if err := <-done; err != nil {
			t.Fatalf("Serve: %v", err)
		}
		body, _ := io.ReadAll(resp.Body)
		if bytes.Contains(body, []byte("response.completed")) {
			t.Fatal("the stream completed although it was cut")
		}
	})
}

func TestStatsTracesHealthMetrics(t *testing.T) {
	up := newUpstream(t, answerText("ok"))
	r := newRelay(t, proxy.Options{}, openaiAccount("a", up))
	readAll(t, r.post(t, "/v1/responses", `{"model":"gpt-5","input":"x","stream":true}`))
	eventually(t, "the first trace", func() bool { return len(r.Traces(10)) == 1 })
	readAll(t, r.post(t, "/v1/responses", `{"model":"gpt-5","input":"x"}`))
	eventually(t, "the second trace", func() bool { return len(r.Traces(10)) == 2 })
	readAll(t, r.post(t, "/v1/responses", `{"model":5}`))

	get := func(path string) []byte {
		resp, err := http.Get(r.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: status %d", path, resp.StatusCode)
		}
		return readAll(t, resp)
	}
	eventually(t, "three traces", func() bool { return len(r.Traces(10)) == 3 })
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(get("/relay/stats"), &raw); err != nil {
		t.Fatal(err)
	}
	stats := map[string]map[string]any{}
	for _, k := range []string{"catalog", "serialization", "requests"} {
		var m map[string]any
		if err := json.Unmarshal(raw[k], &m); err != nil {
			t.Fatalf("stats.%s: %v", k, err)
		}
		stats[k] = m
	}
	var accounts []map[string]any
	json.Unmarshal(raw["accounts"], &accounts)
	if len(accounts) != 1 || accounts[0]["name"] != "a" || accounts[0]["state"] != "ready" || accounts[0]["requests"] != 2.0 {
		t.Errorf("stats.accounts %v", accounts)
	}
	for _, k := range []string{"name", "kind", "state", "cooldown_until", "requests", "last_error"} {
		if _, ok := accounts[0][k]; !ok {
			t.Errorf("stats.accounts[0].%s missing", k)
		}
	}
	for _, k := range []string{"age_ms", "models", "swr_enabled", "stale_max_age_ms", "ttl_ms", "last_error", "refresh"} {
		if _, ok := stats["catalog"][k]; !ok {
			t.Errorf("stats.catalog.%s missing", k)
		}
	}
	for _, k := range []string{"hits", "misses", "direct"} {
		if _, ok := stats["serialization"][k]; !ok {
			t.Errorf("stats.serialization.%s missing", k)
		}
	}
	if stats["requests"]["total"] != 3.0 || stats["requests"]["errors"] != 1.0 || stats["requests"]["in_flight"] != 0.0 {
		t.Errorf("stats.requests %v", stats["requests"])
	}
	var traces []map[string]any
	if err := json.Unmarshal(get("/relay/traces?limit=2"), &traces); err != nil || len(traces) != 2 {
		t.Fatalf("traces: %v %d", err, len(traces))
	}
	newest := traces[0]
	if newest["status"] != 400.0 {
		t.Errorf("newest first: got status %v", newest["status"])
	}
	ok := traces[1]
	lb, _ := ok["latencyBreakdown"].(map[string]any)
	for _, k := range []string{"preparationMs", "upstreamHeadersMs", "totalMs"} {
		if _, has := lb[k]; !has {
			t.Errorf("latencyBreakdown.%s missing", k)
		}
	}
	for _, k := range []string{"modelCatalogRefresh", "attempts", "model", "resolvedModel", "status", "stream", "serialization"} {
		if _, has := ok[k]; !has {
			t.Errorf("trace.%s missing", k)
		}
	}
	if a, _ := ok["attempts"].([]any); len(a) != 1 || a[0].(map[string]any)["account"] != "a" {
		t.Errorf("attempts %v", ok["attempts"])
	}
	if !bytes.Contains(get("/health"), []byte(`"status":"ok"`)) {
		t.Error("health")
	}
	m := string(get("/metrics"))
	if !strings.Contains(m, "codexrelay_requests_total 3\n") || !strings.Contains(m, `codexrelay_account_state{account="a",state="ready"} 1`) {
		t.Errorf("metrics:\n%s", m)
	}
	for _, path := range []string{"/relay/stats", "/relay/traces?limit=50", "/metrics"} {
		if bytes.Contains(get(path), []byte("sk-test-a")) {
			t.Errorf("%s reveals the account key", path)
		}
	}
}

// slowReader hands out its bytes a few at a time, so that a body arrives in many reads.
type slowReader struct {
	b []byte
	n int
}

func (r *slowReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), r.n)], r.b)
	r.b = r.b[k:]
	return k, nil
}

func TestLargeBodiesArrivingInPieces(t *testing.T) {
	// Bodies are validated while they arrive. Whether the length is announced (the buffer is
	// filled in place) or not (chunked or compressed: the buffer grows and moves), in reads of
	// any size, the upstream gets exactly the bytes sent, and a bad body is refused with the
	// error a one-shot parse gives, and never forwarded.
	up := newUpstream(t, answerText("ok"))
	r := newRelay(t, proxy.Options{}, openaiAccount("a", up))
	good := testkit.SyntheticResponsesBody(3000) // about 350 KB
	bad := bytes.Clone(good)
	bad[len(bad)*2/3] = 0x01 // a control character inside a string, far into the input
	_, want := payload.Parse(bad)
	if want == nil {
		t.Fatal("the bad body parses")
	}
	gz := func(b []byte) []byte {
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		w.Write(b)
		w.Close()
		return buf.Bytes()
	}
	for _, c := range []struct {
		name    string
		body    []byte
		enc     string
		chunked bool
		piece   int
	}{
		{"announced length, small reads", good, "", false, 1000},
		{"chunked, small reads", good, "", true, 777},
		{"chunked, large reads", good, "", true, 100 << 10},
		{"gzip", gz(good), "gzip", true, 4096},
		{"bad, announced length", bad, "", false, 1000},
		{"bad, chunked", bad, "", true, 777},
		{"bad, gzip", gz(bad), "gzip", true, 4096},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := len(up.requests())
			req, _ := http.NewRequest("POST", r.URL+"/v1/responses", &slowReader{b: c.body, n: c.piece})
			if !c.chunked {
				req.ContentLength = int64(len(c.body))
			}
			req.Header.Set("Content-Type", "application/json")
			if c.enc != "" {
				req.Header.Set("Content-Encoding", c.enc)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if strings.HasPrefix(c.name, "bad") {
				if resp.StatusCode != 400 {
					t.Fatalf("status %d", resp.StatusCode)
				}
				if e := decodeErr(t, resp); e.Error.Code != "invalid_json" || !strings.HasSuffix(e.Error.Message, want.Error()) {
					t.Fatalf("error %+v, want one ending in %q", e.Error, want)
				}
				if len(up.requests()) != before {
					t.Fatal("a rejected body reached the upstream")
				}
				return
			}
			readAll(t, resp)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			if got := up.requests()[len(up.requests())-1].Body; !bytes.Equal(got, good) {
				t.Fatalf("upstream got %d bytes, not the %d sent", len(got), len(good))
			}
		})
	}
}

// A request another site started (an <img>, a <script>: no Origin, but Sec-Fetch-Site) is
// refused on every route, and no answer may be sniffed as another type.
func TestCrossSiteFetchesRefused(t *testing.T) {
	up := newUpstream(t, answerText("ok"))
	r := newRelay(t, proxy.Options{}, openaiAccount("a", up))
	for _, path := range []string{"/relay/stats", "/relay/traces", "/metrics", "/v1/models"} {
		for _, site := range []string{"cross-site", "same-site"} {
			req, _ := http.NewRequest(http.MethodGet, r.URL+path, nil)
			req.Header.Set("Sec-Fetch-Site", site)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			if e := decodeErr(t, resp); resp.StatusCode != 403 || e.Error.Code != "forbidden_origin" {
				t.Errorf("%s from %s: %d %+v", path, site, resp.StatusCode, e)
			}
			resp.Body.Close()
		}
	}
	req, _ := http.NewRequest(http.MethodGet, r.URL+"/relay/stats", nil)
	req.Header.Set("Sec-Fetch-Site", "none") // typed in the address bar, or a tool
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("stats: %d, nosniff %q", resp.StatusCode, resp.Header.Get("X-Content-Type-Options"))
	}
}

// Paused, the relay keeps its port: requests to accounts get 503 relay_paused saying how to
// resume (over a WebSocket too), while health, stats and metrics answer.
func TestPausedAnswersRelayPaused(t *testing.T) {
	up := newUpstream(t, answerText("ok"))
	r := newRelay(t, proxy.Options{}, openaiAccount("a", up))
	r.SetPaused(true)
	resp := r.post(t, "/v1/responses", smallBody)
	if e := decodeErr(t, resp); resp.StatusCode != 503 || e.Error.Code != "relay_paused" || !strings.Contains(e.Error.Message, "Resume") {
		t.Fatalf("paused: %d %+v", resp.StatusCode, e)
	}
	for _, path := range []string{"/health", "/relay/stats", "/metrics"} {
		resp, err := http.Get(r.URL + path)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s while paused: %v %v", path, resp, err)
		}
		resp.Body.Close()
	}
	r.SetPaused(false)
	if resp := r.post(t, "/v1/responses", smallBody); resp.StatusCode != 200 || len(up.requests()) != 1 {
		t.Fatalf("resumed: %d, upstream got %d", resp.StatusCode, len(up.requests()))
	}
}
