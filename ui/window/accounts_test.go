package window

import (
	"errors"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/app/relay"
	"github.com/codexrelay/codexrelay/proxy"
	"github.com/codexrelay/codexrelay/ui/uitest"
)

// The API-key form shows each problem next to its field, in app's words (only an empty field
// gets the UI's own "enter …"), and Return submits it.
func TestAddAccountShowsAppsMessagesNextToFields(t *testing.T) {
	u, relay := newTestUI(t, nil)
	u.showAccounts()
	a := u.accounts
	mustContain(t, a.win.Content(), "No account yet")
	a.showAdd(addAPIKey)
	f := a.add.form

	// Everything empty: one message next to each field.
	test.Tap(f.submit)
	for field, want := range map[string]string{
		app.FieldName: "Enter a name for the account", app.FieldBaseURL: "Enter the endpoint's base URL",
		app.FieldKey: "Enter the API key",
	} {
		if l := f.errs[field]; !l.Visible() || l.Text != want {
			t.Errorf("%s: message %q (visible %v), want %q", field, l.Text, l.Visible(), want)
		}
	}

	// A bad name, a bad URL and a key with a space, submitted with Return in the key field.
	f.name.SetText("bad/name")
	f.baseURL.SetText("ftp://example.com")
	f.key.SetText("sk-test more")
	f.key.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
	for field, e := range map[string]error{
		app.FieldName:    app.ValidateName("bad/name"),
		app.FieldBaseURL: func() error { _, err := app.ValidateBaseURL("ftp://example.com"); return err }(),
		app.FieldKey:     app.ValidateKey("sk-test more"),
	} {
		if l := f.errs[field]; !l.Visible() || l.Text != sentence(e.Error()) {
			t.Errorf("%s: message %q, want app's %q", field, l.Text, e.Error())
		}
	}
	mustContain(t, a.add.tabs, `Account name "bad/name" is not valid`, `Base URL "ftp://example.com" is not valid`,
		"API key contains whitespace")

	// Only the key wrong now.
	f.name.SetText("work")
	f.baseURL.SetText("https://api.example.com/v1")
	f.key.SetText("   ")
	test.Tap(f.submit)
	if f.errs[app.FieldName].Visible() || f.errs[app.FieldBaseURL].Visible() || !f.errs[app.FieldKey].Visible() {
		t.Errorf("only the key should be wrong: %q %q %q", f.errs[app.FieldName].Text, f.errs[app.FieldBaseURL].Text,
			f.errs[app.FieldKey].Text)
	}
	if n := len(relay.Accounts()); n != 0 {
		t.Fatalf("%d accounts added from a bad form", n)
	}
}

func TestFieldOfMapsAppErrors(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{app.ValidateName("a b"), app.FieldName},
		{app.ErrNameTaken("work"), app.FieldName},
		{app.ValidateKey(""), app.FieldKey},
		{errors.Join(errors.New("while adding"), app.ValidateKey("")), app.FieldKey},
		{errors.New("keychain locked"), ""},
	} {
		if got := fieldOf(c.err); got != c.want {
			t.Errorf("fieldOf(%v) = %q, want %q", c.err, got, c.want)
		}
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

func TestAddDialogSaysWhenThereIsNoCodexLogin(t *testing.T) {
	u, _ := newTestUI(t, nil)
	u.showAccounts()
	a := u.accounts
	a.showAdd(addCodexLogin)
	if got := a.add.codexInfo.Text; !strings.Contains(got, "There is no Codex login in") {
		t.Errorf("Codex tab says %q", got)
	}
	if !a.add.importBtn.Disabled() {
		t.Error("Import is enabled without a login to import")
	}
}

// menuAction runs the item labelled label of row i's "…" menu.
func menuAction(t *testing.T, a *accountsWindow, i int, label string) {
	t.Helper()
	for _, it := range a.rowMenu(i).Items {
		if it.Label == label {
			if it.Disabled {
				t.Fatalf("%q is disabled in row %d", label, i)
			}
			it.Action()
			return
		}
	}
	t.Fatalf("row %d's menu has no %q: %q", i, label, uitest.Labels(a.rowMenu(i).Items))
}

func TestAccountsListActions(t *testing.T) {
	uitest.NeedKeyring(t)
	u, relay := newTestUI(t, nil)
	u.showAccounts()
	a := u.accounts
	addTwoAPIKeys(t, a, relay)

	// A taken name comes back from app and shows next to the name.
	a.showAdd(addAPIKey)
	f := a.add.form
	f.name.SetText("first")
	f.baseURL.SetText("https://api.example.com/v1")
	f.key.SetText("sk-x")
	test.Tap(f.submit)
	if got := f.errs[app.FieldName].Text; got != sentence(app.ErrNameTaken("first").Error()) {
		t.Errorf("taken name: %q", got)
	}
	a.add.d.Hide()

	// The menu of an API-key account, first in the list.
	if got := uitest.Labels(a.rowMenu(0).Items); strings.Join(got, "|") != "Replace key…|Rename…|Reserve…|Disable|Move up|Move down||Remove…" {
		t.Errorf("menu %q", got)
	}
	if !a.rowMenu(0).Items[4].Disabled || !a.rowMenu(1).Items[5].Disabled {
		t.Error("Move up on the first row, or Move down on the last, is enabled")
	}

	renameAndReplaceKey(t, a, relay)
	moveDisableAndRemove(t, a, relay)
}

// addTwoAPIKeys adds "first" and "second" through the add dialog, and the list shows them.
func addTwoAPIKeys(t *testing.T, a *accountsWindow, relay *relay.Relay) {
	t.Helper()
	add := func(name string) {
		a.showAdd(addAPIKey)
		f := a.add.form
		f.name.SetText(name)
		f.baseURL.SetText("https://api.example.com/v1/")
		f.api.SetSelectedIndex(1)
		f.key.SetText("sk-" + name)
		test.Tap(f.submit)
		if want := "Added “" + name + "”."; a.status.Text != want {
			t.Fatalf("add %s: %q (form: %q)", name, a.status.Text, f.other.Text)
		}
	}
	add("first")
	add("second")
	accts := relay.Accounts()
	if len(accts) != 2 || accts[0].BaseURL != "https://api.example.com/v1" || accts[0].API != "chat" {
		t.Fatalf("accounts %+v", accts)
	}
	if len(a.rows) != 2 || a.none.Visible() {
		t.Fatalf("the list shows %d rows", len(a.rows))
	}
	mustShow(t, a.win.Content(), "first", "second", "1.", "2.")
}

// renameAndReplaceKey renames the second account to "backup" and replaces the first's key, each
// after app's verdict on a bad entry shows under the field.
func renameAndReplaceKey(t *testing.T, a *accountsWindow, relay *relay.Relay) {
	t.Helper()
	// Rename: app's verdict on a bad name shows under the field; a good one renames.
	menuAction(t, a, 1, "Rename…")
	a.ask.entry.SetText("sec ond")
	a.ask.entry.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
	if want := sentence(app.ValidateName("sec ond").Error()); !a.ask.err.Visible() || a.ask.err.Text != want {
		t.Errorf("rename message %q, want %q", a.ask.err.Text, want)
	}
	a.ask.entry.SetText("backup")
	test.Tap(a.ask.ok)
	if relay.Accounts()[1].Name != "backup" || a.status.Text != "Renamed “second” to “backup”." {
		t.Fatalf("after rename: %+v, %q", relay.Accounts(), a.status.Text)
	}

	// Reserve: a share out of range is refused next to the field, a good one is kept and shown.
	menuAction(t, a, 0, "Reserve…")
	a.ask.entry.SetText("150")
	test.Tap(a.ask.ok)
	if !a.ask.err.Visible() || !strings.Contains(a.ask.err.Text, "150% is out of range") {
		t.Errorf("reserve message %q", a.ask.err.Text)
	}
	a.ask.entry.SetText("20")
	test.Tap(a.ask.ok)
	if relay.Accounts()[0].Reserve != 20 || a.status.Text != "“first” keeps 20% in reserve." {
		t.Fatalf("after reserve: %+v, %q", relay.Accounts(), a.status.Text)
	}
	mustContain(t, a.win.Content(), "20% in reserve")

	// Replace the key: whitespace is refused next to the field, a clean key is stored.
	menuAction(t, a, 0, "Replace key…")
	a.ask.entry.SetText("sk new")
	test.Tap(a.ask.ok)
	if !strings.Contains(a.ask.err.Text, "API key contains whitespace") {
		t.Errorf("replace key message %q", a.ask.err.Text)
	}
	rev := relay.Accounts()[0].SecretRev
	a.ask.entry.SetText("sk-new")
	test.Tap(a.ask.ok)
	if relay.Accounts()[0].SecretRev != rev+1 || !strings.HasPrefix(a.status.Text, "Replaced the key of “first”") {
		t.Errorf("key not replaced: rev %d, %q", relay.Accounts()[0].SecretRev, a.status.Text)
	}
}

// moveDisableAndRemove moves "backup" up, disables and enables it, then removes it once the
// confirmation's Return and Escape have cancelled.
func moveDisableAndRemove(t *testing.T, a *accountsWindow, relay *relay.Relay) {
	t.Helper()
	// Move "backup" up, disable it, enable it again.
	menuAction(t, a, 1, "Move up")
	if relay.Accounts()[0].Name != "backup" || a.rows[0].meta.Name != "backup" {
		t.Fatal("Move up did not reorder")
	}
	menuAction(t, a, 0, "Disable")
	if !relay.Accounts()[0].Disabled || a.rows[0].live.State != proxy.StateDisabled {
		t.Fatal("Disable did not stick")
	}
	mustShow(t, a.win.Content(), "Disabled")
	menuAction(t, a, 0, "Enable")
	if relay.Accounts()[0].Disabled {
		t.Fatal("Enable did not stick")
	}

	// Remove asks first; Return and Escape answer Cancel; only Remove removes.
	menuAction(t, a, 0, "Remove…")
	got := overlayTexts(t, a.win)
	if !strings.Contains(got, "Remove “backup”?") || !strings.Contains(got, "Cancel") || !strings.Contains(got, "Remove") {
		t.Fatalf("confirmation %q", got)
	}
	pressKey(a.win, fyne.KeyReturn)
	if len(relay.Accounts()) != 2 || a.win.Canvas().Overlays().Top() != nil {
		t.Fatal("Return did not cancel the removal")
	}
	menuAction(t, a, 0, "Remove…")
	pressKey(a.win, fyne.KeyEscape)
	if len(relay.Accounts()) != 2 {
		t.Fatal("Escape removed the account")
	}
	menuAction(t, a, 0, "Remove…")
	tapButton(t, a.win.Canvas().Overlays().Top(), "Remove")
	if accts := relay.Accounts(); len(accts) != 1 || accts[0].Name != "first" {
		t.Fatalf("after remove: %+v", accts)
	}
	if a.win.Canvas().OnTypedKey() != nil {
		t.Error("the removal's key handler stays on the window")
	}
}

// A ChatGPT account offers Sign in again instead of a key.
func TestChatGPTAccountMenu(t *testing.T) {
	uitest.NeedKeyring(t)
	u, relay := newTestUI(t, nil)
	if _, err := relay.AddAccount(app.NewAccount{Name: "me", Kind: "chatgpt", Email: "me@example.com"},
		app.Secret{AccessToken: "at", RefreshToken: "rt", AccountID: "acct"}); err != nil {
		t.Fatal(err)
	}
	u.showAccounts()
	a := u.accounts
	if got := uitest.Labels(a.rowMenu(0).Items); got[0] != "Sign in again…" {
		t.Errorf("menu %q", got)
	}
	mustShow(t, a.win.Content(), "me", "ChatGPT · me@example.com", "Ready")
}

// Seven accounts fit in the window at its default size, without scrolling.
func TestSevenAccountsFitTheWindow(t *testing.T) {
	a := sevenAccounts(t)
	item := newAccountItem()
	test.NewTempWindow(t, container.NewThemeOverride(item, compact))
	need := 7 * (item.MinSize().Height + compact.Size(theme.SizeNamePadding))
	if got := a.list.Size().Height; got < need {
		t.Errorf("the list is %v high, seven rows need %v", got, need)
	}
	mustShow(t, a.win.Content(), "a1", "a7", "7.")
}

// Importing the Codex login a second time through the Add dialog says that it is there
// already, and adds nothing.
func TestImportingTheCodexLoginTwice(t *testing.T) {
	uitest.NeedKeyring(t)
	home := t.TempDir()
	codexLogin(t, home, "dev@example.com")
	u, relay := newTestUI(t, map[string]string{"CODEX_HOME": home})
	u.showAccounts()
	a := u.accounts
	a.showAdd(addCodexLogin)
	if got := a.add.codexInfo.Text; !strings.HasSuffix(got, "holds a ChatGPT sign-in (dev@example.com).") {
		t.Errorf("Codex tab says %q", got)
	}
	test.Tap(a.add.importBtn)
	if got := a.status.Text; got != "Added “dev@example.com” from the Codex login." {
		t.Fatalf("first import: %q", got)
	}
	a.showAdd(addCodexLogin)
	if got := a.add.codexInfo.Text; !strings.HasSuffix(got, "which is account “dev@example.com” already.") {
		t.Errorf("Codex tab says %q", got)
	}
	test.Tap(a.add.importBtn)
	if got := a.status.Text; got != "The Codex login is account “dev@example.com” already." {
		t.Errorf("second import: %q", got)
	}
	if n := len(relay.Accounts()); n != 1 {
		t.Errorf("%d accounts after importing one login twice", n)
	}
}

// "Sign in again…" in a ChatGPT account's menu starts a sign-in for that account; a second
// sign-in while one runs (it holds the callback port) brings the first to the front instead.
func TestSignInAgainFromARow(t *testing.T) {
	uitest.NeedKeyring(t)
	u, relay := newTestUI(t, nil)
	if _, err := relay.AddAccount(app.NewAccount{Name: "me", Kind: "chatgpt", Email: "me@example.com"},
		app.Secret{AccessToken: "at", RefreshToken: "rt", AccountID: "acct"}); err != nil {
		t.Fatal(err)
	}
	var flows []func()
	u.async = func(f func()) { flows = append(flows, f) } // the flow would wait for a browser
	u.showAccounts()
	a := u.accounts
	menuAction(t, a, 0, "Sign in again…")
	if a.signin == nil || a.signin.name != "me" || len(flows) != 1 {
		t.Fatalf("no sign-in for “me” started (%d flows)", len(flows))
	}
	if got := overlayTexts(t, a.win); !strings.Contains(got, "Sign in again: me") {
		t.Errorf("the dialog says %q", got)
	}
	first := a.signin
	a.signIn("")
	menuAction(t, a, 0, "Sign in again…")
	if a.signin != first || len(flows) != 1 {
		t.Errorf("a second sign-in started while the first was open (%d flows)", len(flows))
	}
	first.d.Hide() // Cancel
	a.signIn("")
	if a.signin == first || len(flows) != 2 || a.signin.name != "" {
		t.Errorf("no new sign-in after the first closed (%d flows)", len(flows))
	}
}

// Enable, Disable and the moves save off the UI thread.
func TestAccountChangesRunOffTheUIThread(t *testing.T) {
	uitest.NeedKeyring(t)
	u, relay := newTestUI(t, nil)
	for _, name := range []string{"one", "two"} {
		if _, err := relay.AddAccount(app.NewAccount{Name: name, Kind: "openai", BaseURL: "https://api.example.com/v1"},
			app.Secret{APIKey: "sk-" + name}); err != nil {
			t.Fatal(err)
		}
	}
	u.showAccounts()
	a := u.accounts
	var queued []func()
	u.async = func(f func()) { queued = append(queued, f) }
	run := func(what string, done func() bool) {
		t.Helper()
		if done() || len(queued) != 1 {
			t.Fatalf("%s: ran on the UI thread (%d queued)", what, len(queued))
		}
		f := queued[0]
		queued = nil
		f()
		if !done() {
			t.Errorf("%s: not done once its call ran", what)
		}
	}
	menuAction(t, a, 0, "Disable")
	run("Disable", func() bool { return relay.Accounts()[0].Disabled })
	menuAction(t, a, 0, "Enable")
	run("Enable", func() bool { return !relay.Accounts()[0].Disabled })
	menuAction(t, a, 0, "Move down")
	run("Move down", func() bool { return relay.Accounts()[0].Name == "two" })
	if a.status.Text != "Moved “one” to position 2 of 2." || a.rows[1].meta.Name != "one" {
		t.Errorf("after the move: %q, rows %q %q", a.status.Text, a.rows[0].meta.Name, a.rows[1].meta.Name)
	}
}

// What a ChatGPT account's usage carries beside its two windows (a feature's own limit, the
// credits balance) is shown in its row's detail, in words.
func TestAccountDetailShowsQuotaBesideTheWindows(t *testing.T) {
	r := accountRow{meta: app.AccountMeta{Name: "plus", Kind: string(proxy.KindChatGPT)},
		live: proxy.AccountStats{Quota: &proxy.Quota{PrimaryUsedPercent: 10,
			Credits:    &proxy.QuotaCredits{HasCredits: true, Balance: "12.50"},
			Additional: []proxy.AdditionalQuota{{Name: "GPT-6 Sol", PrimaryUsedPercent: 80, SecondaryUsedPercent: 12}}}}}
	got := accountDetail(r, time.Now())
	if !strings.Contains(got, "GPT-6 Sol 80% five-hour, 12% weekly") || !strings.Contains(got, "credits 12.50") {
		t.Fatalf("detail %q", got)
	}
	r.live.Quota = &proxy.Quota{PrimaryUsedPercent: 10}
	if got := accountDetail(r, time.Now()); strings.Contains(got, "credits") || strings.Contains(got, "weekly") {
		t.Fatalf("an account with only its windows: %q", got)
	}
}

// The "…" menu of the last row pops up inside the window, above its button when there is no
// room under it, and never past the right edge (issue 32 Low: clipped at the window's edges).
func TestRowMenuPopsUpInsideTheWindow(t *testing.T) {
	a := sevenAccounts(t)
	var last *accountItem
	visit(a.win.Content(), func(o fyne.CanvasObject) {
		if it, ok := o.(*accountItem); ok && it.Visible() && (last == nil ||
			fyne.CurrentApp().Driver().AbsolutePositionForObject(it).Y > fyne.CurrentApp().Driver().AbsolutePositionForObject(last).Y) {
			last = it
		}
	})
	if last == nil {
		t.Fatal("no account row")
	}
	test.Tap(last.menu)
	top := a.win.Canvas().Overlays().Top()
	if top == nil {
		t.Fatal("no menu popped up")
	}
	var menu fyne.CanvasObject
	visit(top, func(o fyne.CanvasObject) {
		if m, ok := o.(*widget.PopUpMenu); ok {
			menu = m
		}
	})
	if menu == nil {
		t.Fatal("the overlay holds no pop-up menu")
	}
	win := a.win.Canvas().Size()
	p, s := menu.Position(), menu.MinSize()
	if p.X < 0 || p.Y < 0 || p.X+s.Width > win.Width || p.Y+s.Height > win.Height {
		t.Errorf("the menu from %v, %v big, leaves the window's %v", p, s, win)
	}
	button := fyne.CurrentApp().Driver().AbsolutePositionForObject(last.menu)
	if p.Y+s.Height > button.Y && p.Y < button.Y+last.menu.Size().Height {
		t.Errorf("the menu from y %v to %v covers its button at y %v", p.Y, p.Y+s.Height, button.Y)
	}
}

// The Add account dialog is as tall as the tab it shows: the ChatGPT tab's one button is not
// framed by the API-key form's height (issue 32 Low), and switching tabs resizes it.
func TestAddDialogFitsItsTab(t *testing.T) {
	u, _ := newTestUI(t, nil)
	u.showAccounts()
	a := u.accounts
	a.win.Resize(accountsWindowSize)
	a.showAdd(addChatGPT)
	top := a.win.Canvas().Overlays().Top()
	if top == nil {
		t.Fatal("no dialog")
	}
	height := func() float32 {
		var h float32
		visit(top, func(o fyne.CanvasObject) {
			if p, ok := o.(*widget.PopUp); ok {
				h = p.Content.Size().Height
			}
		})
		return h
	}
	chatgpt := height()
	a.add.tabs.SelectIndex(addAPIKey)
	key := height()
	if chatgpt <= 0 || key-chatgpt < 100 {
		t.Errorf("the dialog is %v high on the ChatGPT tab and %v on the API-key form's: it should fit each", chatgpt, key)
	}
	a.add.tabs.SelectIndex(addChatGPT)
	if got := height(); got != chatgpt {
		t.Errorf("back on the ChatGPT tab the dialog is %v high, was %v", got, chatgpt)
	}
}

// sevenAccounts opens the Accounts window, at its default size, on seven API-key accounts.
func sevenAccounts(t *testing.T) *accountsWindow {
	t.Helper()
	uitest.NeedKeyring(t)
	u, relay := newTestUI(t, nil)
	for _, name := range []string{"a1", "a2", "a3", "a4", "a5", "a6", "a7"} {
		if _, err := relay.AddAccount(app.NewAccount{Name: name, Kind: "openai", BaseURL: "https://api.example.com/v1"},
			app.Secret{APIKey: "sk-" + name}); err != nil {
			t.Fatal(err)
		}
	}
	u.showAccounts()
	a := u.accounts
	a.win.Resize(accountsWindowSize)
	return a
}
