package window

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/ui/look"
	"github.com/codexrelay/codexrelay/ui/uitest"
)

// codexLogin writes a Codex CLI login for email into the Codex folder home.
func codexLogin(t *testing.T, home, email string) {
	t.Helper()
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	id := enc(map[string]string{"alg": "none"}) + "." + enc(map[string]any{"email": email,
		"https://api.openai.com/auth": map[string]any{"chatgpt_account_id": "acct-1"}}) + ".sig"
	auth := fmt.Sprintf(`{"tokens":{"id_token":%q,"access_token":"at","refresh_token":"rt","account_id":"acct-1"}}`, id)
	if err := os.WriteFile(filepath.Join(home, "auth.json"), []byte(auth), 0o600); err != nil {
		t.Fatal(err)
	}
}

// noTray fails if any visible text mentions the tray (the first run may have none).
func noTray(t *testing.T, texts []string) {
	t.Helper()
	for _, s := range texts {
		if strings.Contains(strings.ToLower(s), "tray") {
			t.Errorf("%q mentions the tray", s)
		}
	}
}

func TestFirstRunOffersTheCodexLoginInOneAction(t *testing.T) {
	home := t.TempDir()
	codexLogin(t, home, "dev@example.com")
	u, _ := newTestUI(t, map[string]string{"CODEX_HOME": home})
	u.ShowDashboard()
	c := u.dashWin.Content()
	const use = "Use your Codex login (dev@example.com) and point Codex at the relay"
	mustShow(t, c, "Welcome to Codex Relay", use, "Sign in with ChatGPT…", "Add an API key…")
	noTray(t, texts(c))
	if u.dash.accountsSection.Visible() || u.dash.requestsSection.Visible() {
		t.Error("empty tables show beside the first-run card")
	}

	// The action runs (here against a fake) and says what each step did.
	calls := withFakeFirstRun(u, app.FirstRun{
		Account:  app.AccountMeta{Name: "dev@example.com"},
		Imported: app.Added,
		Config:   app.CodexConfigWrite{Path: "/h/.codex/config.toml", Backup: "/h/.codex/config.toml.bak-1", Change: app.ConfigUpdated},
		Test:     app.RelayTest{Model: "gpt-5-codex", Account: "dev@example.com", Status: 200, Elapsed: 1234 * time.Millisecond},
	}, nil)
	tapButton(t, c, use)
	if *calls != 1 {
		t.Fatalf("the action ran %d times", *calls)
	}
	mustShow(t, c,
		"Imported your Codex login as account “dev@example.com”.",
		"Updated /h/.codex/config.toml (the previous version is saved as /h/.codex/config.toml.bak-1).",
		"Test request answered by dev@example.com with model gpt-5-codex in 1.2 s.",
		"Show the dashboard")
	noTray(t, texts(c))
	// The results stay until the user moves on, although the fake added no account.
	u.refresh()
	mustShow(t, c, "Test request answered by dev@example.com with model gpt-5-codex in 1.2 s.")
	tapButton(t, c, "Show the dashboard")
	if u.dash.first.active() {
		t.Error("the results stay after Show the dashboard")
	}
}

// When the import fails, the card says why and offers the action again.
func TestFirstRunFailureOffersItAgain(t *testing.T) {
	home := t.TempDir()
	codexLogin(t, home, "dev@example.com")
	u, _ := newTestUI(t, map[string]string{"CODEX_HOME": home})
	u.ShowDashboard()
	c := u.dashWin.Content()
	const use = "Use your Codex login (dev@example.com) and point Codex at the relay"
	withFakeFirstRun(u, app.FirstRun{}, &app.KeychainError{Err: errors.New("the keychain is locked"), Advice: "unlock it"})
	tapButton(t, c, use)
	u.refresh()
	mustShow(t, c, use)
	mustContain(t, c, "Could not import the Codex login: keychain unavailable: the keychain is locked")
	if u.dash.first.active() || u.dash.first.done.Visible() {
		t.Error("a failed run keeps the card busy")
	}
}

// A test request that failed (the relay had not yet applied the import, an account needed a
// moment) can be sent again from the card, which then says how it went.
func TestFirstRunTestRequestCanBeSentAgain(t *testing.T) {
	home := t.TempDir()
	codexLogin(t, home, "dev@example.com")
	u, _ := newTestUI(t, map[string]string{"CODEX_HOME": home})
	u.ShowDashboard()
	c := u.dashWin.Content()
	withFakeFirstRun(u, app.FirstRun{Account: app.AccountMeta{Name: "dev@example.com"}, Imported: app.Added,
		Config:  app.CodexConfigWrite{Path: "/h/.codex/config.toml", Change: app.ConfigCreated},
		TestErr: errors.New("the relay has no model to offer: none of its accounts listed one")}, nil)
	tests := 0
	u.dash.opt.TestRelay = func(context.Context) (app.RelayTest, error) {
		tests++
		return app.RelayTest{Model: "gpt-5-codex", Account: "dev@example.com", Status: 200, Elapsed: time.Second}, nil
	}
	tapButton(t, c, "Use your Codex login (dev@example.com) and point Codex at the relay")
	mustShow(t, c, "The test request failed: the relay has no model to offer: none of its accounts listed one.", "Send the test request again")
	tapButton(t, c, "Send the test request again")
	if tests != 1 {
		t.Fatalf("the test request was sent %d times", tests)
	}
	mustShow(t, c, "Imported your Codex login as account “dev@example.com”.", "Test request answered by dev@example.com with model gpt-5-codex in 1.0 s.")
	for _, s := range texts(c) {
		if strings.Contains(s, "failed") || s == "Send the test request again" {
			t.Errorf("%q still shows after the test request passed", s)
		}
	}
}

func TestFirstRunWithoutCodexLogin(t *testing.T) {
	u, _ := newTestUI(t, nil)
	u.ShowDashboard()
	c := u.dashWin.Content()
	mustShow(t, c, "Welcome to Codex Relay", "Sign in with ChatGPT…", "Add an API key…", "From a terminal")
	for _, s := range texts(c) {
		if strings.HasPrefix(s, "Use your Codex login") {
			t.Errorf("offers %q without a Codex login", s)
		}
	}
	noTray(t, texts(c))
	// Add an API key… opens the accounts window's Add dialog on the API-key form.
	tapButton(t, c, "Add an API key…")
	if u.accounts == nil || u.accounts.add == nil || u.accounts.add.tabs.SelectedIndex() != addAPIKey {
		t.Fatal("Add an API key… did not open the API-key form")
	}
}

func TestFirstRunLines(t *testing.T) {
	ok := app.FirstRun{Account: app.AccountMeta{Name: "me"}, Imported: app.Unchanged,
		Config: app.CodexConfigWrite{Path: "/c/config.toml", Change: app.Unchanged}}
	for _, c := range []struct {
		name string
		fr   app.FirstRun
		err  error
		want []resultLine
	}{
		{"import failed", app.FirstRun{}, errors.New("no Codex login at /c/auth.json"),
			[]resultLine{{look.Bad, "Could not import the Codex login: no Codex login at /c/auth.json"}}},
		{"config failed", app.FirstRun{Account: app.AccountMeta{Name: "me"}, Imported: app.Renewed},
			fmt.Errorf("the Codex login was imported as %q, but Codex could not be configured: %w", "me", errors.New("permission denied")),
			[]resultLine{{look.Good, "Account “me” now has your Codex login's new sign-in."},
				{look.Bad, "Could not point Codex at the relay: permission denied"}}},
		{"not serving", ok, nil, []resultLine{{look.Good, "Your Codex login is already account “me”."},
			{look.Good, "/c/config.toml already points Codex at the relay."},
			{look.Dim, "No test request: the relay is not serving."}}},
		{"test failed", func() app.FirstRun {
			fr := ok
			fr.Config.Change = app.ConfigCreated
			fr.TestErr = errors.New("the relay answered HTTP 429: usage limit reached")
			return fr
		}(), nil, []resultLine{{look.Good, "Your Codex login is already account “me”."},
			{look.Good, "Created /c/config.toml: Codex sends its requests through the relay."},
			{look.Bad, "The test request failed: the relay answered HTTP 429: usage limit reached."}}},
	} {
		got := firstRunLines(c.fr, c.err)
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s:\n got %v\nwant %v", c.name, got, c.want)
		}
	}
}

// Once the one action really added an account, the card keeps its intro and its results, and
// leaves out the other ways in, until the user moves on to the dashboard.
func TestFirstRunResultsAfterARealImport(t *testing.T) {
	uitest.NeedKeyring(t)
	home := t.TempDir()
	codexLogin(t, home, "dev@example.com")
	u, relay := newTestUI(t, map[string]string{"CODEX_HOME": home})
	u.ShowDashboard()
	c := u.dashWin.Content()
	card := u.dash.first
	intro := card.intro.String()
	if !strings.Contains(intro, "The Codex CLI is signed in on this computer") {
		t.Fatalf("intro %q", intro)
	}
	u.dash.opt.UseCodexLogin = func(context.Context) (app.FirstRun, error) {
		meta, err := relay.AddAccount(app.NewAccount{Name: "dev@example.com", Kind: "chatgpt", Email: "dev@example.com"},
			app.Secret{AccessToken: "at", RefreshToken: "rt", AccountID: "acct-1"})
		if err != nil {
			return app.FirstRun{}, err
		}
		return app.FirstRun{Account: meta, Imported: app.Added,
			Config: app.CodexConfigWrite{Path: filepath.Join(home, "config.toml"), Change: app.ConfigCreated}}, nil
	}
	tapButton(t, c, "Use your Codex login (dev@example.com) and point Codex at the relay")
	if n := len(relay.Accounts()); n != 1 {
		t.Fatalf("%d accounts after the import", n)
	}
	for range 2 { // ticks with the account in place: the login is no longer read
		u.refresh()
	}
	if got := card.intro.String(); got != intro {
		t.Errorf("the intro changed to %q", got)
	}
	mustShow(t, c, "Imported your Codex login as account “dev@example.com”.", "Show the dashboard")
	for _, s := range texts(c) {
		for _, gone := range []string{"Sign in with ChatGPT…", "Add an API key…", "From a terminal", "Add your first account"} {
			if strings.Contains(s, gone) {
				t.Errorf("%q shows beside the results", s)
			}
		}
	}
	if u.dash.accountsSection.Visible() {
		t.Error("the tables show before the user moved on")
	}
	tapButton(t, c, "Show the dashboard")
	if u.dash.firstBox.Visible() || !u.dash.accountsSection.Visible() {
		t.Error("Show the dashboard did not show the tables")
	}
	mustShow(t, c, "dev@example.com")
}

// While there is no account the poller asks for the Codex login every second: auth.json is
// read and parsed again only when it (or the settings) changed.
func TestCodexLoginIsReadOnlyWhenItChanged(t *testing.T) {
	home := t.TempDir()
	codexLogin(t, home, "dev@example.com")
	u, _ := newTestUI(t, map[string]string{"CODEX_HOME": home})
	path := filepath.Join(home, "auth.json")
	if l := u.codexLogin(); l.Email != "dev@example.com" {
		t.Fatalf("login %+v", l)
	}
	// Another login of the same size, with the same modification time: the cached one stays.
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	codexLogin(t, home, "xyz@example.com")
	if err := os.Chtimes(path, st.ModTime(), st.ModTime()); err != nil {
		t.Fatal(err)
	}
	if l := u.codexLogin(); l.Email != "dev@example.com" {
		t.Errorf("an unchanged auth.json was parsed again: %+v", l)
	}
	// A real change (another size or time) is read.
	codexLogin(t, home, "someone.else@example.com")
	if l := u.codexLogin(); l.Email != "someone.else@example.com" {
		t.Errorf("a changed auth.json was not read: %+v", l)
	}
	os.Remove(path)
	if l := u.codexLogin(); l.Found {
		t.Errorf("a removed auth.json still shows: %+v", l)
	}
}

// After an account came of the card's other ways in (here an API key) while Codex does not use
// the relay, the card stays and offers the rest of the first run: point Codex at the relay and
// send the test request, saying what each file got; or move on to the dashboard.
func TestFirstRunOffersToPointCodexAfterAnAPIKey(t *testing.T) {
	uitest.NeedKeyring(t)
	u, relay := newTestUI(t, nil)
	u.ShowDashboard()
	c := u.dashWin.Content()
	mustShow(t, c, "Welcome to Codex Relay", "Add an API key…")
	if _, err := relay.AddAccount(app.NewAccount{Name: "work", Kind: "openai", BaseURL: "https://api.example.com/v1"},
		app.Secret{APIKey: "sk-work"}); err != nil {
		t.Fatal(err)
	}
	u.refresh()
	const point = "Point Codex at the relay and send a test request"
	mustShow(t, c, point, "Not now: show the dashboard")
	mustContain(t, c, "Account “work” is added. Codex does not send its requests through the relay yet")
	mustContain(t, c, "SSL_CERT_FILE")
	if u.dash.accountsSection.Visible() {
		t.Fatal("the card went before Codex was offered the relay")
	}
	points := 0
	u.dash.opt.PointCodex = func(context.Context) (app.FirstRun, error) {
		points++
		return app.FirstRun{
			Config: app.CodexConfigWrite{Path: "/h/.codex/config.toml", Change: app.ConfigCreated,
				Env: app.CodexEnvWrite{Path: "/h/.codex/.env", Change: app.ConfigCreated, CertFile: "/c/codex-ca-bundle.pem"}},
			Test: app.RelayTest{Model: "gpt-5.5", Account: "work", Status: 200, Elapsed: 800 * time.Millisecond},
		}, nil
	}
	tapButton(t, c, point)
	if points != 1 {
		t.Fatalf("pointed %d times", points)
	}
	mustShow(t, c, "Created /h/.codex/config.toml: Codex sends its requests through the relay.",
		"Test request answered by work with model gpt-5.5 in 800 ms.", "Show the dashboard")
	mustContain(t, c, "Created /h/.codex/.env: SSL_CERT_FILE names the relay's bundle")
	tapButton(t, c, "Show the dashboard")
	if u.dash.first.active() || !u.dash.accountsSection.Visible() {
		t.Fatal("the dashboard does not show after the first run")
	}
}
