package app

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// memberLogin is the Codex CLI's auth.json of a member of the Team workspace ws-team: user is
// its chatgpt_user_id ("" leaves the user out of the id token, as older tokens do).
func memberLogin(user, email, access string) string {
	auth := map[string]any{"chatgpt_account_id": "ws-team", "chatgpt_plan_type": "team"}
	claims := map[string]any{"email": email, "https://api.openai.com/auth": auth}
	if user != "" {
		auth["chatgpt_user_id"] = user
		claims["sub"] = "auth0|" + user
	}
	return `{"OPENAI_API_KEY":null,"tokens":{"id_token":"` + jwt(claims) + `","access_token":"` + access +
		`","refresh_token":"rt-` + user + `","account_id":"ws-team"}}`
}

// Two members of one Team workspace (one chatgpt_account_id, two users and e-mails) are two
// accounts: importing the second adds it beside the first, and the relay serves both, each
// with its own token and the workspace's id (so that a limit of the workspace rests both).
// Importing a member again with a new sign-in renews that member's account in place, and the
// first run finds which account holds the login Codex has now.
func TestTwoMembersOfOneWorkspaceAreTwoAccounts(t *testing.T) {
	k := testKeychain(t)
	cleanKeychain(t, k)
	codexHome := t.TempDir()
	opt := testOptions(t, k)
	opt.Getenv = func(name string) string {
		if name == "CODEX_HOME" {
			return codexHome
		}
		return ""
	}
	a, err := OpenRelay(opt)
	if err != nil {
		t.Fatal(err)
	}
	exp := time.Now().Add(time.Hour).Unix()
	access := func(n string) string { return jwt(map[string]any{"exp": exp, "n": n}) }
	login := func(name, content string) string {
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}

	ann, outcome, err := a.ImportCodex(login("ann.json", memberLogin("user-ann", "ann@team.example", access("ann-1"))))
	if err != nil || outcome != Added {
		t.Fatalf("ann: %v %v", outcome, err)
	}
	bob, outcome, err := a.ImportCodex(login("bob.json", memberLogin("user-bob", "bob@team.example", access("bob-1"))))
	if err != nil || outcome != Added || bob.ID == ann.ID || bob.Name != "bob@team.example" || len(a.Accounts()) != 2 {
		t.Fatalf("bob, of the same workspace: %v %v %+v; accounts %v", outcome, err, bob, names(a.Accounts()))
	}
	if got := a.Proxy.Stats().Accounts; len(got) != 2 {
		t.Fatalf("the relay serves %d accounts", len(got))
	}
	for m, token := range map[string]string{ann.ID: access("ann-1"), bob.ID: access("bob-1")} {
		if c, err := a.credsFor(m).Credential(t.Context()); err != nil || c.Token != token || c.AccountID != "ws-team" {
			t.Fatalf("credential of %s: %+v %v", m, c, err)
		}
	}

	// Ann signs in again: her account takes the new sign-in; Bob's is untouched.
	again, outcome, err := a.ImportCodex(login("ann2.json", memberLogin("user-ann", "ann@team.example", access("ann-2"))))
	if err != nil || outcome != Renewed || again.ID != ann.ID || again.SecretRev != ann.SecretRev+1 || len(a.Accounts()) != 2 {
		t.Fatalf("ann again: %v %v %+v; accounts %v", outcome, err, again, names(a.Accounts()))
	}
	if c, _ := a.credsFor(ann.ID).Credential(t.Context()); c.Token != access("ann-2") {
		t.Fatalf("ann's account kept the old sign-in")
	}
	if c, _ := a.credsFor(bob.ID).Credential(t.Context()); c.Token != access("bob-1") {
		t.Fatalf("bob's account changed with ann's sign-in")
	}

	// Codex is signed in as Bob now: the first run says his account holds that login.
	if err := os.WriteFile(filepath.Join(codexHome, "auth.json"), []byte(memberLogin("user-bob", "bob@team.example", access("bob-2"))), 0o600); err != nil {
		t.Fatal(err)
	}
	if l := a.FindCodexLogin(); !l.Found || l.Account != bob.Name {
		t.Fatalf("FindCodexLogin: %+v, want %s", l, bob.Name)
	}
}

// Who a ChatGPT sign-in is: the workspace and the user in it (the id token's user, else the
// e-mail); a sign-in that names neither is its workspace's one login, as before.
func TestSameChatGPTLogin(t *testing.T) {
	tok := func(workspace, user, email string) Secret {
		auth := map[string]any{"chatgpt_account_id": workspace}
		if user != "" {
			auth["chatgpt_user_id"] = user
		}
		return Secret{AccountID: workspace, IDToken: jwt(map[string]any{"email": email, "https://api.openai.com/auth": auth})}
	}
	legacy := func(user string) Secret { // user_id and sub only, as older tokens
		return Secret{AccountID: "ws", IDToken: jwt(map[string]any{"sub": "auth0|x", "https://api.openai.com/auth": map[string]any{"user_id": user}})}
	}
	for _, c := range []struct {
		what   string
		a, b   Secret
		ea, eb string
		same   bool
	}{
		{"one user, one workspace", tok("ws", "u1", "a@x"), tok("ws", "u1", "a@x"), "", "", true},
		{"one user whose e-mail changed", tok("ws", "u1", "a@x"), tok("ws", "u1", "new@x"), "", "", true},
		{"two members of one workspace", tok("ws", "u1", "a@x"), tok("ws", "u2", "b@x"), "", "", false},
		{"one user in two workspaces", tok("ws", "u1", "a@x"), tok("ws2", "u1", "a@x"), "", "", false},
		{"no user in the tokens: the e-mails differ", tok("ws", "", "a@x"), tok("ws", "", "b@x"), "", "", false},
		{"no user in the tokens: one e-mail, written two ways", tok("ws", "", "A@x"), tok("ws", "", "a@x"), "", "", true},
		{"no user, the e-mail kept with the account", Secret{AccountID: "ws"}, tok("ws", "", "b@x"), "a@x", "", false},
		{"older tokens' user_id", legacy("u1"), legacy("u2"), "", "", false},
		{"nothing says who: the workspace's one login", Secret{AccountID: "ws"}, Secret{AccountID: "ws"}, "", "", true},
		{"no workspace", Secret{}, Secret{}, "", "", false},
	} {
		if got := sameChatGPTLogin(c.a, c.ea, c.b, c.eb); got != c.same {
			t.Errorf("%s: same %v, want %v", c.what, got, c.same)
		}
	}
}
