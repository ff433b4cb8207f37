package relay

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/codexrelay/codexrelay/app"
)

// Every route of docs/http-routes.md's table is served on the relay's port: asked with its
// method (any method for *), and without the /v1 prefix too, it gets an answer of its own,
// never 404 unknown_route nor 405 method_not_allowed. Codex's ChatGPT origin goes to a fake
// backend, so nothing leaves the machine.
func TestEveryRouteOfTheRoutesPageIsServed(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, "{}")
	}))
	defer backend.Close()
	store := openStore(t, app.Keychain{Service: "codexrelay-test-unused"},
		map[string]string{"CODEXRELAY_CHATGPT_BASE_URL": backend.URL + "/backend-api/codex"})
	r := New(store)
	defer r.Close()
	port := httptest.NewServer(r.Proxy)
	defer port.Close()

	b, err := os.ReadFile("../../docs/http-routes.md")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		route := strings.TrimPrefix(line, "| `")
		method, path, _ := strings.Cut(strings.ReplaceAll(route[:strings.Index(route, "`")], `\|`, "|"), " ")
		path = strings.NewReplacer("{id}", "gpt-5", "{path...}", "codex/settings").Replace(path)
		methods := strings.Split(method, "|")
		paths := []string{path}
		if p, ok := strings.CutPrefix(path, "/v1/"); ok {
			paths = append(paths, "/"+p)
		}
		for _, m := range methods {
			for _, p := range paths {
				n++
				if status, code := ask(t, port.URL, m, p); code == "unknown_route" || code == "method_not_allowed" {
					t.Errorf("%s %s, on docs/http-routes.md: %d %s", m, p, status, code)
				}
			}
		}
	}
	if n < 10 {
		t.Fatalf("docs/http-routes.md: %d routes found in its table", n)
	}
}

// ask sends one request to the relay's port and returns the status and the error code, if the
// answer is an error. A GET of /responses asks for a WebSocket, as Codex does.
func ask(t *testing.T, base, method, path string) (int, string) {
	t.Helper()
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader("{}")
	}
	req, _ := http.NewRequest(method, base+path, body)
	req.Header.Set("Content-Type", "application/json")
	if method == http.MethodGet && strings.HasSuffix(path, "/responses") {
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", "websocket")
		req.Header.Set("Sec-WebSocket-Version", "13")
		req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	}
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if resp.StatusCode >= 400 {
		json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&e)
	}
	return resp.StatusCode, e.Error.Code
}
