package ui

import (
	"errors"
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"

	"github.com/codexrelay/codexrelay/app"
)

func TestAddAccountRejectsBadInput(t *testing.T) {
	u, relay := newTestUI(t, nil)
	u.showAccounts()
	a := u.accounts
	mustContain(t, a.win.Content(), "No accounts yet")

	// Everything empty: one message next to each field.
	test.Tap(a.add)
	for _, c := range []struct {
		field string
		msg   string
		got   string
		shown bool
	}{
		{"name", "enter a name", a.nameErr.Text, a.nameErr.Visible()},
		{"base URL", "enter the endpoint's base URL", a.urlErr.Text, a.urlErr.Visible()},
		{"key", "enter the API key", a.keyErr.Text, a.keyErr.Visible()},
	} {
		if !c.shown || !strings.Contains(c.got, c.msg) {
			t.Errorf("%s: message %q (visible %v), want %q", c.field, c.got, c.shown, c.msg)
		}
	}

	// A bad name and a bad URL, with a key.
	a.name.SetText("bad/name")
	a.baseURL.SetText("ftp://example.com")
	a.key.SetText("sk-test")
	test.Tap(a.add)
	if !strings.Contains(a.nameErr.Text, "not valid") || !strings.Contains(a.urlErr.Text, "not valid") {
		t.Errorf("messages %q / %q", a.nameErr.Text, a.urlErr.Text)
	}
	if a.keyErr.Visible() {
		t.Errorf("key message %q although a key was typed", a.keyErr.Text)
	}
	mustContain(t, a.win.Content(), "account name \"bad/name\" is not valid", "base URL \"ftp://example.com\" is not valid")

	// A good name and URL but a blank key.
	a.name.SetText("work")
	a.baseURL.SetText("https://api.example.com/v1")
	a.key.SetText("   ")
	test.Tap(a.add)
	if a.nameErr.Visible() || a.urlErr.Visible() || !a.keyErr.Visible() {
		t.Errorf("only the key should be wrong: %q %q %q", a.nameErr.Text, a.urlErr.Text, a.keyErr.Text)
	}
	if n := len(relay.Accounts()); n != 0 {
		t.Fatalf("%d accounts added from a bad form", n)
	}
}

func TestKeychainErrorShowsAdvice(t *testing.T) {
	u, _ := newTestUI(t, nil)
	u.showAccounts()
	w := u.accounts.win
	u.showError(w, errors.Join(errors.New("adding"), &app.KeychainError{
		Err: errors.New("The name org.freedesktop.secrets was not provided"), Advice: "install gnome-keyring"}))
	got := overlayTexts(t, w)
	if !strings.Contains(got, "install gnome-keyring") || !strings.Contains(got, "org.freedesktop.secrets") {
		t.Errorf("dialog says %q", got)
	}
}

func TestImportCodexReportsItsError(t *testing.T) {
	u, _ := newTestUI(t, nil)
	u.showAccounts()
	a := u.accounts
	test.Tap(a.importCodexBtn) // CODEX_HOME is an empty folder: no auth.json
	if got := overlayTexts(t, a.win); !strings.Contains(got, "ould not import the Codex login: no Codex login at") {
		t.Errorf("import: %q", got)
	}
	if a.importCodexBtn.Disabled() {
		t.Error("the import button stays disabled")
	}
}

func TestAccountsAddOrderEnableRemove(t *testing.T) {
	needKeyring(t)
	u, relay := newTestUI(t, nil)
	u.showAccounts()
	a := u.accounts
	add := func(name string) {
		a.name.SetText(name)
		a.baseURL.SetText("https://api.example.com/v1/")
		a.api.SetSelected("chat")
		a.key.SetText("sk-" + name)
		test.Tap(a.add)
		if a.addErr.Text != `Added "`+name+`".` {
			t.Fatalf("add %s: %q", name, a.addErr.Text)
		}
	}
	add("first")
	add("second")
	accts := relay.Accounts()
	if len(accts) != 2 || accts[0].BaseURL != "https://api.example.com/v1" || accts[0].API != "chat" {
		t.Fatalf("accounts %+v", accts)
	}
	if a.key.Text != "" {
		t.Error("the key stays in the form after adding")
	}
	if len(a.rows) != 2 || a.none.Visible() {
		t.Fatalf("the list shows %d rows", len(a.rows))
	}
	mustShow(t, a.win.Content(), "first", "second")

	// Move "second" up, disable it, then remove it after confirming.
	a.move("second", 1)
	if relay.Accounts()[0].Name != "second" || a.rows[0].meta.Name != "second" {
		t.Fatal("move up did not reorder")
	}
	a.setEnabled("second", false)
	if !relay.Accounts()[0].Disabled || a.rows[0].state != "disabled" {
		t.Fatal("disable did not stick")
	}
	a.confirmRemove("second")
	tapButton(t, a.win.Canvas().Overlays().Top(), "Yes")
	if accts := relay.Accounts(); len(accts) != 1 || accts[0].Name != "first" {
		t.Fatalf("after remove: %+v", accts)
	}
}
