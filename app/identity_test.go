package app

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestSignInAndRefreshCarryTheCodexIdentity: the token exchange and the refresh go out with
// the user agent and originator of the relay's other upstream calls.
func TestSignInAndRefreshCarryTheCodexIdentity(t *testing.T) {
	iss := newFakeIssuer(t)
	var mu sync.Mutex
	var agents, originators []string
	inner := iss.Config.Handler
	iss.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/oauth/token" {
			mu.Lock()
			agents = append(agents, r.Header.Get("User-Agent"))
			originators = append(originators, r.Header.Get("originator"))
			mu.Unlock()
		}
		inner.ServeHTTP(w, r)
	})
	backend := newCodexBackend(t, func(string) bool { return true })
	a, _ := oauthApp(t, iss, backend.URL)
	iss.accessLife = 2 * time.Minute // inside the refresh margin: the first use refreshes
	m, err := a.SignInChatGPT(context.Background(), "", iss.browser(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.credsFor(m.ID).Credential(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(agents) != 2 { // the code exchange and the refresh
		t.Fatalf("%d token requests", len(agents))
	}
	for i, ua := range agents {
		if ua != a.Proxy.UserAgent() || !strings.HasPrefix(ua, "codex_cli_rs/") || originators[i] != "codex_cli_rs" {
			t.Errorf("token request %d: User-Agent %q, originator %q", i, ua, originators[i])
		}
	}
}
