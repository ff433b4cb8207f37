package app

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestUseCodexLoginInOneAction: a new user with a Codex CLI login gets, in one action, the
// login imported, Codex pointed at the relay (with a backup of its config) and a real test
// request answered through the relay. Doing it again finds the login already there.
func TestUseCodexLoginInOneAction(t *testing.T) {
	k := testKeychain(t)
	cleanKeychain(t, k)
	backend := newCodexBackend(t, func(string) bool { return true })
	codexHome := t.TempDir()
	env := map[string]string{"CODEX_HOME": codexHome, "CODEXRELAY_CHATGPT_BASE_URL": backend.URL + "/backend-api/codex"}
	opt := Options{ConfigDir: t.TempDir(), Keychain: k, Getenv: func(k string) string { return env[k] }}
	access := jwt(map[string]any{"exp": time.Now().Add(time.Hour).Unix()})
	os.WriteFile(filepath.Join(codexHome, "auth.json"), []byte(`{"tokens":{"id_token":"`+idToken("dev@example.com", "acct-9")+
		`","access_token":"`+access+`","refresh_token":"rt-1","account_id":"acct-9"}}`), 0o600)
	os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte("model = \"gpt-5-codex\"\n"), 0o600)

	a, svc := runningRelay(t, opt)
	if l := a.FindCodexLogin(); !l.Found || l.Kind != "chatgpt" || l.Email != "dev@example.com" || l.Account != "" {
		t.Fatalf("login before: %+v", l)
	}
	if st := a.CodexConfigured(); st.Configured || !strings.Contains(st.Why, `provider "openai"`) {
		t.Fatalf("setup before: %+v", st)
	}
	fr, err := a.UseCodexLogin(context.Background(), svc.Status().Addr)
	if err != nil {
		t.Fatal(err)
	}
	if fr.Account.Name != "dev@example.com" || fr.Imported != Added || fr.Config.Change != ConfigUpdated || fr.Config.Backup == "" {
		t.Fatalf("first run: %+v", fr)
	}
	if fr.TestErr != nil || fr.Test.Status != 200 || fr.Test.Model != "gpt-5-codex" || fr.Test.Account != "dev@example.com" {
		t.Fatalf("test request: %+v %v", fr.Test, fr.TestErr)
	}
	if st := a.CodexConfigured(); !st.Configured {
		t.Fatalf("setup after: %+v", st)
	}
	if l := a.FindCodexLogin(); l.Account != "dev@example.com" {
		t.Fatalf("login after: %+v", l)
	}
	again, err := a.UseCodexLogin(context.Background(), "")
	if err != nil || again.Imported != Unchanged || again.Config.Change != Unchanged {
		t.Fatalf("second time: %+v %v", again, err)
	}
	// A new local key is written into the configuration that selects the relay's block.
	code, out, _ := runCLI(t, opt, "", "local-key", "on")
	a.Reload()
	if st := a.CodexConfigured(); code != 0 || !st.Configured || !strings.Contains(out, "Codex now sends the new local key") {
		t.Fatalf("a new local key: %+v\n%s", st, out)
	}
}

// The first run's test request waits for the relay (another process's, following the settings
// file) to apply the account the window process just imported, as the command line waits: here
// the relay reloads only once it was asked for its generation, so a test request sent at once
// would find no account.
func TestTheTestRequestWaitsForTheRelayToApplyTheImport(t *testing.T) {
	k := testKeychain(t)
	cleanKeychain(t, k)
	codexHome := t.TempDir()
	os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte("model = \"gpt-5\"\n"), 0o600)
	env := map[string]string{"CODEX_HOME": codexHome}
	opt := Options{ConfigDir: keyOffFolder(t), Keychain: k, Getenv: func(k string) string { return env[k] }}
	relay, err := OpenRelay(opt)
	if err != nil {
		t.Fatal(err)
	}
	var asked sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			asked.Do(func() { go relay.Reload() })
		}
		relay.Proxy.ServeHTTP(w, r)
	}))
	defer srv.Close()
	window, err := OpenRelay(opt)
	if err != nil {
		t.Fatal(err)
	}
	up := newFakeUpstream(t)
	if _, err := window.AddAccount(NewAccount{Name: "new", Kind: "openai", BaseURL: up.URL}, Secret{APIKey: "sk-new"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := window.TestRelay(ctx, strings.TrimPrefix(srv.URL, "http://"))
	if err != nil || res.Status != 200 || res.Account != "new" {
		t.Fatalf("test request: %+v, %v", res, err)
	}
}
