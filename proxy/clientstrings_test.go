package proxy_test

import (
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/codexrelay/codexrelay/proxy"
)

// The strings a client chooses and the relay keeps after the request (the trace ring, the
// affinity map, the sealed-session table) are bounded: long prompt_cache_keys, distinct each
// time, leave the heap where it was, the traces stay small, and two keys that differ only
// past the bound stay two sessions. The attack of issue 30: 150 requests with 16 MiB keys held
// 2.44 GB.
func TestLongSessionKeysAreNotKeptWhole(t *testing.T) {
	const (
		requests = 24
		keyBytes = 1 << 20
	)
	var up *upstream
	up = newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		up.mu.Lock()
		up.got = nil // the fake upstream keeps no body: what stays is the relay's
		up.mu.Unlock()
		answerText("hi")(w, r, n)
	})
	up.setModels(listing(nil, "gpt-5-codex"))
	r := newRelay(t, proxy.Options{}, openaiAccount("a", up))
	long := strings.Repeat("k", keyBytes)
	body := func(model string, i int) string {
		return `{"model":"` + model + `","input":"hi","prompt_cache_key":"` + long + fmt.Sprint(i) + `"}`
	}
	// (Not r.post: its cleanup would keep every request, body and all, until the test ends.)
	send := func(b string, header ...string) int {
		req, _ := http.NewRequest(http.MethodPost, r.URL+"/v1/responses", strings.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	// One of each first, so that the floor has every table and pool already made.
	send(body("nobody-serves-this", -1))
	send(body("gpt-5-codex", -1))
	before := heapInUse()
	for i := range requests {
		if got := send(body("nobody-serves-this", i)); got != http.StatusNotFound {
			t.Fatalf("unserved model: status %d", got)
		}
		if got := send(body("gpt-5-codex", i)); got != http.StatusOK {
			t.Fatalf("served model: status %d", got)
		}
		// The same through the session header, which is the key when the body names none.
		if got := send(`{"model":"gpt-5-codex","input":"hi"}`, "Session-Id", long+fmt.Sprint(i)); got != http.StatusOK {
			t.Fatalf("session header: status %d", got)
		}
	}
	grown := heapInUse() - before
	runtime.KeepAlive(long)
	t.Logf("%d requests with %d KiB keys: the heap grew %.2f MiB", 3*requests, keyBytes>>10, float64(grown)/(1<<20))
	if grown > 4<<20 {
		t.Fatalf("%d requests with %d KiB session keys left %d MiB on the heap", 3*requests, keyBytes>>10, grown>>20)
	}
	traces := r.Traces(50)
	seen := map[string]bool{}
	for _, tr := range traces {
		if len(tr.Session) > 200 {
			t.Fatalf("a trace keeps a session key of %d bytes", len(tr.Session))
		}
		if !strings.HasPrefix(tr.Session, "kkkk") {
			t.Fatalf("the trace's session %q no longer says which key it was", tr.Session)
		}
		seen[tr.Session] = true
	}
	// Keys that differ only in their last bytes stay distinct sessions.
	if len(seen) < 16 {
		t.Fatalf("%d traces name only %d distinct sessions", len(traces), len(seen))
	}
	resp, err := http.Get(r.URL + "/relay/traces?limit=50")
	if err != nil {
		t.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if n > 256<<10 {
		t.Fatalf("/relay/traces?limit=50 answered %d KiB", n>>10)
	}
}

// A socket turn's prompt_cache_key is bounded the same way, and the trace still says which key
// it was.
func TestLongSessionKeyOverASocket(t *testing.T) {
	up := newWSUpstream(t)
	r := newRelay(t, proxy.Options{}, up.account("a"))
	c := r.dial(t)
	key := strings.Repeat("s", 1<<20)
	frame := strings.Replace(createFrame("", userItem("hi")), `"store":false`, `"store":false,"prompt_cache_key":"`+key+`"`, 1)
	responseID(t, turn(t, c, frame))
	eventually(t, "the turn's trace", func() bool { return len(r.Traces(1)) == 1 && r.Traces(1)[0].Transport == proxy.TransportWebSocket })
	if s := r.Traces(1)[0].Session; len(s) > 200 || !strings.HasPrefix(s, "ssss") {
		t.Fatalf("the socket turn's trace keeps a session of %d bytes (%.20q)", len(s), s)
	}
}
