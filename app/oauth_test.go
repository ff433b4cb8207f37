package app

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"context"
)

// jwt makes an unsigned token with claims (the relay reads claims, it does not verify them).
func jwt(claims map[string]any) string {
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return enc(map[string]string{"alg": "none"}) + "." + enc(claims) + ".sig"
}

func idToken(email, accountID string) string {
	return jwt(map[string]any{"email": email, "https://api.openai.com/auth": map[string]any{"chatgpt_account_id": accountID, "chatgpt_plan_type": "plus"}})
}

// fakeIssuer is an OAuth server that behaves like auth.openai.com for the Codex client:
// authorization code with PKCE, single-use rotating refresh tokens, the device flow.
type fakeIssuer struct {
	*httptest.Server
	t           *testing.T
	mu          sync.Mutex
	codes       map[string]string
	live        map[string]bool // refresh tokens that may be used (once)
	refreshes   atomic.Int32
	refused     atomic.Int32
	polls       atomic.Int32
	gen         int
	accessLife  time.Duration
	refreshGate chan struct{} // when set, refreshes wait on it
}

func newFakeIssuer(t *testing.T) *fakeIssuer {
	f := &fakeIssuer{t: t, codes: map[string]string{}, live: map[string]bool{}, accessLife: time.Hour}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /oauth/token", f.token)
	mux.HandleFunc("POST /api/accounts/deviceauth/usercode", func(w http.ResponseWriter, r *http.Request) {
		var body map[string]string
		json.NewDecoder(r.Body).Decode(&body)
		if body["client_id"] != CodexClientID {
			http.Error(w, "bad client", 400)
			return
		}
		io.WriteString(w, `{"device_auth_id":"dev-1","user_code":"ABCD-1234","interval":"5"}`)
	})
	mux.HandleFunc("POST /api/accounts/deviceauth/token", func(w http.ResponseWriter, r *http.Request) {
		if f.polls.Add(1) < 3 {
			w.WriteHeader(403) // not entered yet
			return
		}
		verifier := "device-verifier-0123456789-0123456789-0123456789"
		f.mu.Lock()
		f.codes["dev-code"] = pkceChallenge(verifier)
		f.mu.Unlock()
		fmt.Fprintf(w, `{"authorization_code":"dev-code","code_verifier":%q}`, verifier)
	})
	f.Server = httptest.NewServer(mux)
	t.Cleanup(f.Close)
	return f
}

func pkceChallenge(verifier string) string {
	h := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(h[:])
}

func (f *fakeIssuer) tokens() string {
	f.gen++
	rt := fmt.Sprintf("rt-%d", f.gen)
	f.live[rt] = true
	access := jwt(map[string]any{"exp": time.Now().Add(f.accessLife).Unix(), "gen": f.gen})
	b, _ := json.Marshal(map[string]any{"access_token": access, "refresh_token": rt, "id_token": idToken("dev@example.com", "acct-42"),
		"token_type": "Bearer", "expires_in": int(f.accessLife.Seconds())})
	return string(b)
}

func (f *fakeIssuer) token(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	if r.Form.Get("client_id") != CodexClientID {
		http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch r.Form.Get("grant_type") {
	case "authorization_code":
		f.mu.Lock()
		defer f.mu.Unlock()
		want, ok := f.codes[r.Form.Get("code")]
		delete(f.codes, r.Form.Get("code"))
		if !ok || pkceChallenge(r.Form.Get("code_verifier")) != want {
			w.WriteHeader(400)
			io.WriteString(w, `{"error":"invalid_grant","error_description":"bad code or verifier"}`)
			return
		}
		io.WriteString(w, f.tokens())
	case "refresh_token":
		f.refreshes.Add(1)
		if g := f.refreshGate; g != nil {
			<-g
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		rt := r.Form.Get("refresh_token")
		if !f.live[rt] {
			f.refused.Add(1)
			w.WriteHeader(400)
			io.WriteString(w, `{"error":"invalid_grant","error_description":"refresh token already used"}`)
			return
		}
		delete(f.live, rt) // single use
		io.WriteString(w, f.tokens())
	default:
		http.Error(w, `{"error":"unsupported_grant_type"}`, 400)
	}
}

// browser plays the user's browser: it checks the authorize URL and follows the redirect.
func (f *fakeIssuer) browser(t *testing.T) func(string) error {
	return func(authURL string) error {
		u, err := url.Parse(authURL)
		if err != nil {
			return err
		}
		q := u.Query()
		if u.Path != "/oauth/authorize" || q.Get("client_id") != CodexClientID || q.Get("code_challenge_method") != "S256" ||
			q.Get("response_type") != "code" || q.Get("scope") != "openid profile email offline_access" ||
			!strings.HasSuffix(q.Get("redirect_uri"), "/auth/callback") || q.Get("state") == "" {
			t.Errorf("authorize URL %s", authURL)
		}
		f.mu.Lock()
		f.codes["code-1"] = q.Get("code_challenge")
		f.mu.Unlock()
		go func() {
			resp, err := http.Get(q.Get("redirect_uri") + "?code=code-1&state=" + url.QueryEscape(q.Get("state")))
			if err == nil {
				resp.Body.Close()
			}
		}()
		return nil
	}
}

// codexBackend is a fake ChatGPT backend that accepts only the current access token.
type codexBackend struct {
	*httptest.Server
	mu     sync.Mutex
	valid  func(token string) bool
	tokens []string
}

func newCodexBackend(t *testing.T, valid func(string) bool) *codexBackend {
	b := &codexBackend{valid: valid}
	b.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			http.NotFound(w, r)
			return
		}
		io.Copy(io.Discard, r.Body)
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		b.mu.Lock()
		b.tokens = append(b.tokens, tok)
		b.mu.Unlock()
		if !b.valid(tok) {
			http.Error(w, `{"error":{"message":"token expired","code":"token_expired"}}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"object\":\"response\",\"status\":\"completed\",\"output\":[]}}\n\n")
	}))
	t.Cleanup(b.Close)
	return b
}

func oauthApp(t *testing.T, iss *fakeIssuer, backend string) (*Relay, Options) {
	k := testKeychain(t)
	env := map[string]string{"CODEXRELAY_AUTH_ISSUER": iss.URL, "CODEXRELAY_CHATGPT_BASE_URL": backend + "/backend-api/codex",
		"CODEXRELAY_LOG_LEVEL": "debug"}
	logs := &lockedBuffer{}
	opt := Options{ConfigDir: keyOffFolder(t), Keychain: k, Getenv: func(k string) string { return env[k] },
		CallbackAddr: "127.0.0.1:0", PollInterval: time.Millisecond, Logger: Logger(logs, func(k string) string { return env[k] })}
	a, err := OpenRelay(opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, m := range a.Accounts() {
			k.Delete(accountUser(m.ID))
		}
		// No token ever reaches the logs, the settings file or the traces.
		settings, _ := os.ReadFile(filepath.Join(opt.ConfigDir, "settings.json"))
		traces, _ := json.Marshal(a.Proxy.Traces(0))
		for _, where := range []string{logs.String(), string(settings), string(traces)} {
			if strings.Contains(where, "rt-") || strings.Contains(where, "eyJ") || strings.Contains(where, ".sig") {
				t.Errorf("a token leaked:\n%s", where)
			}
		}
		if len(a.Proxy.Traces(0)) > 0 && !strings.Contains(logs.String(), "request") {
			t.Errorf("nothing was logged, so the check above proves nothing")
		}
	})
	return a, opt
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func post(t *testing.T, srv *httptest.Server) int {
	resp, err := http.Post(srv.URL+"/v1/responses", "application/json", strings.NewReader(`{"model":"gpt-5","input":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func TestBrowserSignInWithPKCE(t *testing.T) {
	iss := newFakeIssuer(t)
	backend := newCodexBackend(t, func(string) bool { return true })
	a, opt := oauthApp(t, iss, backend.URL)
	m, err := a.SignInChatGPT(context.Background(), "", iss.browser(t))
	if err != nil {
		t.Fatal(err)
	}
	if m.Name != "dev@example.com" || m.Kind != "chatgpt" || m.Email != "dev@example.com" {
		t.Fatalf("account %+v", m)
	}
	v, err := opt.Keychain.Get(accountUser(m.ID))
	if err != nil {
		t.Fatal(err)
	}
	sec, _ := decodeSecret(v)
	if sec.AccountID != "acct-42" || sec.RefreshToken != "rt-1" || sec.IDToken == "" || sec.ExpiresAt.IsZero() {
		t.Fatalf("stored secret %+v", sec)
	}
	// The proxy uses it with the account id header.
	srv := httptest.NewServer(a.Proxy)
	defer srv.Close()
	if code := post(t, srv); code != 200 {
		t.Fatalf("status %d", code)
	}
	// Signing in again with the same ChatGPT account renews that account rather than adding one.
	if _, err := a.SignInChatGPT(context.Background(), "", iss.browser(t)); err != nil {
		t.Fatal(err)
	}
	if n := len(a.Accounts()); n != 1 {
		t.Fatalf("%d accounts after a second sign-in", n)
	}
}

func TestDeviceCodeSignIn(t *testing.T) {
	iss := newFakeIssuer(t)
	a, _ := oauthApp(t, iss, "http://127.0.0.1:1")
	var shown DeviceCode
	m, err := a.SignInChatGPTDevice(context.Background(), "laptop", func(d DeviceCode) { shown = d })
	if err != nil {
		t.Fatal(err)
	}
	if shown.UserCode != "ABCD-1234" || shown.VerificationURL != iss.URL+"/codex/device" || iss.polls.Load() != 3 {
		t.Fatalf("shown %+v after %d polls", shown, iss.polls.Load())
	}
	if sec, _ := a.credsFor(m.ID).secret(); m.Name != "laptop" || sec.AccountID != "acct-42" {
		t.Fatalf("account %+v", m)
	}
}

func TestConcurrentRequestsShareOneRefreshAndTheNewPairIsStoredFirst(t *testing.T) {
	iss := newFakeIssuer(t)
	iss.accessLife = 2 * time.Minute // inside the 5-minute margin: every use wants a refresh
	var valid atomic.Int32           // the token generation the backend accepts
	backend := newCodexBackend(t, func(tok string) bool { return genOf(tok) == int(valid.Load()) })
	a, opt := oauthApp(t, iss, backend.URL)
	m, err := a.SignInChatGPT(context.Background(), "me", iss.browser(t))
	if err != nil {
		t.Fatal(err)
	}
	iss.accessLife = time.Hour
	// The backend accepts only the token of the next generation.
	valid.Store(-1)
	gate := make(chan struct{})
	iss.refreshGate = gate
	srv := httptest.NewServer(a.Proxy)
	defer srv.Close()
	var wg sync.WaitGroup
	codes := make([]int, 8)
	for i := range codes {
		wg.Add(1)
		go func() { defer wg.Done(); codes[i] = post(t, srv) }()
	}
	deadline := time.Now().Add(10 * time.Second)
	for iss.refreshes.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	// While the refresh is held, the token it will hand out becomes the valid one.
	valid.Store(2)
	close(gate)
	wg.Wait()
	for i, c := range codes {
		if c != 200 {
			t.Fatalf("request %d: %d", i, c)
		}
	}
	if n := iss.refreshes.Load(); n != 1 {
		t.Fatalf("%d refreshes for 8 concurrent requests", n)
	}
	v, _ := opt.Keychain.Get(accountUser(m.ID))
	sec, _ := decodeSecret(v)
	if sec.RefreshToken != "rt-2" || genOf(sec.AccessToken) != 2 {
		t.Fatalf("keychain holds %+v", sec)
	}
	// A restart reads the rotated pair from the keychain.
	b, _ := OpenRelay(opt)
	c, _ := b.credsFor(m.ID).Credential(context.Background())
	if c.Token != sec.AccessToken {
		t.Fatal("the refreshed token did not survive a restart")
	}
}

// genOf reads the generation the fake issuer wrote into an access token.
func genOf(tok string) int {
	var c struct {
		Gen int `json:"gen"`
	}
	if jwtClaims(tok, &c) != nil {
		return 0
	}
	return c.Gen
}

func TestUnauthorizedRefreshesOnceAndRetries(t *testing.T) {
	iss := newFakeIssuer(t)
	var valid atomic.Int32
	backend := newCodexBackend(t, func(tok string) bool { return genOf(tok) == int(valid.Load()) })
	a, _ := oauthApp(t, iss, backend.URL)
	if _, err := a.SignInChatGPT(context.Background(), "me", iss.browser(t)); err != nil {
		t.Fatal(err)
	}
	valid.Store(2) // the backend revoked the first token
	srv := httptest.NewServer(a.Proxy)
	defer srv.Close()
	if code := post(t, srv); code != 200 {
		t.Fatalf("status %d", code)
	}
	if iss.refreshes.Load() != 1 || len(backend.tokens) != 2 {
		t.Fatalf("%d refreshes, %d upstream attempts", iss.refreshes.Load(), len(backend.tokens))
	}
	if st := a.Proxy.Stats().Accounts[0]; st.State != "ready" {
		t.Fatalf("account %+v", st)
	}
}

func TestRefusedRefreshMarksNeedsLoginAndIsNeverRetried(t *testing.T) {
	iss := newFakeIssuer(t)
	backend := newCodexBackend(t, func(string) bool { return false }) // every token refused
	a, _ := oauthApp(t, iss, backend.URL)
	if _, err := a.SignInChatGPT(context.Background(), "me", iss.browser(t)); err != nil {
		t.Fatal(err)
	}
	iss.mu.Lock()
	iss.live = map[string]bool{} // the refresh token was used elsewhere
	iss.mu.Unlock()
	srv := httptest.NewServer(a.Proxy)
	defer srv.Close()
	if code := post(t, srv); code != 503 {
		t.Fatalf("status %d", code)
	}
	st := a.Proxy.Stats().Accounts[0]
	if st.State != "needs_login" || !strings.Contains(st.LastError, "refresh") || !strings.Contains(st.LastError, "invalid_grant") {
		t.Fatalf("account %+v", st)
	}
	post(t, srv)
	a.Proxy.ResetAccount("me") // even if the proxy tries it again, the spent token is not resent
	post(t, srv)
	if n := iss.refused.Load(); n != 1 {
		t.Fatalf("the refused refresh token was sent %d times", n)
	}
}
