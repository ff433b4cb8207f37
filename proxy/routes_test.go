package proxy_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/codexrelay/codexrelay/proxy"
)

// Every route that spends the pool takes the local key: each answers 401 without it.
func TestEveryRouteThatSpendsThePoolTakesTheLocalKey(t *testing.T) {
	up := newUpstream(t, answerText("x"))
	r := newRelay(t, proxy.Options{LocalAPIKey: "sk-local-key-123456"}, openaiAccount("a", up))
	n := 0
	for _, rt := range proxy.Routes() {
		if !rt.Spends {
			continue
		}
		if rt.Access != "local key" {
			t.Errorf("%v spends the pool, open to %s", rt.Paths, rt.Access)
		}
		for _, p := range rt.Paths {
			for _, m := range rt.Methods {
				req, _ := http.NewRequest(m, r.URL+p, strings.NewReader(`{"model":"gpt-5","input":"hi"}`))
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusUnauthorized {
					t.Errorf("%s %s without the local key: %d", m, p, resp.StatusCode)
				}
				n++
			}
		}
	}
	if n < 10 || len(up.requests()) != 0 {
		t.Fatalf("%d routes tried; the account got %d requests", n, len(up.requests()))
	}
}

// Codex's ChatGPT origin: the local key never goes on to chatgpt.com, a path that climbs out
// of /backend-api/ goes nowhere, and only the methods Codex uses pass.
func TestTheChatGPTPassthroughIsHardened(t *testing.T) {
	backend := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		status(200, `{"path":"`+r.URL.EscapedPath()+`"}`)(w, r, n)
	})
	r := newRelay(t, proxy.Options{LocalAPIKey: "sk-local-key-123456", ChatGPTBackend: backend.URL + "/backend-api"})
	get := func(method, path string, h ...string) int {
		t.Helper()
		req, _ := http.NewRequest(method, r.URL+path, nil)
		for i := 0; i+1 < len(h); i += 2 {
			req.Header.Set(h[i], h[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := get("GET", "/backend-api/ps/plugins", "X-Api-Key", "sk-local-key-123456", "Authorization", "Bearer codex-own-token"); c != 200 {
		t.Fatalf("status %d", c)
	}
	if c := get("GET", "/backend-api/ps/mcp", "Authorization", "Bearer sk-local-key-123456"); c != 200 {
		t.Fatalf("status %d", c)
	}
	for _, rec := range backend.requests() {
		if rec.Header.Get("X-Api-Key") != "" || strings.Contains(rec.Header.Get("Authorization"), "sk-local") {
			t.Fatalf("the local key went to the ChatGPT backend: %v", rec.Header)
		}
	}
	if got := backend.requests()[0].Header.Get("Authorization"); got != "Bearer codex-own-token" {
		t.Fatalf("Codex's own sign-in did not go on: %q", got)
	}
	before := len(backend.requests())
	for _, p := range []string{"/backend-api/%2e%2e/%2e%2e/admin", "/backend-api/x/%2E%2E/%2e%2e/%2e%2e/etc", "/backend-api/a%2fb/..%2f..%2fadmin"} {
		if c := get("GET", p); c != http.StatusBadRequest {
			t.Errorf("GET %s: %d, want 400", p, c)
		}
	}
	for _, m := range []string{"TRACE", "OPTIONS", "PROPFIND"} {
		if c := get(m, "/backend-api/ps/plugins"); c != http.StatusMethodNotAllowed {
			t.Errorf("%s: %d, want 405", m, c)
		}
	}
	if n := len(backend.requests()); n != before {
		t.Fatalf("the backend got %d more requests", n-before)
	}
	// CONNECT, written by hand: Go's client sends no CONNECT to a path.
	c, err := net.Dial("tcp", strings.TrimPrefix(r.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT /backend-api/ps/plugins HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode/100 == 2 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	if n := len(backend.requests()); n != before {
		t.Fatal("CONNECT reached the backend")
	}
}

// docs/http-routes.md lists every route of the table, with who may call it: a route added here
// and not there fails.
func TestTheRoutesPageListsEveryRoute(t *testing.T) {
	b, err := os.ReadFile("../docs/http-routes.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	for _, rt := range proxy.Routes() {
		if rt.Methods == nil {
			continue // the local API (its own page) and unknown routes
		}
		path := strings.Replace(rt.Paths[0], "{id...}", "{id}", 1)
		if strings.HasSuffix(path, "/") {
			path += "{path...}"
		}
		cell := "| `" + strings.Join(rt.Methods, `\|`) + " " + path + "` | " + rt.Access + " |"
		found := false
		for _, l := range lines {
			found = found || strings.HasPrefix(l, cell)
		}
		if !found {
			t.Errorf("docs/http-routes.md has no row %q", cell)
		}
	}
}
