package window

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/ui/uitest"
)

// backupEnv makes the exports of a test cheap to derive (scrypt 2^10 instead of 2^18).
var backupEnv = map[string]string{"CODEXRELAY_EXPORT_SCRYPT_LOG_N": "10"}

// TestExportThenImportThroughTheDialogs: Export checks the passphrase twice, writes a 0600
// file, says which accounts are ChatGPT sign-ins and disables them here on request; Import on
// another settings folder says a wrong passphrase and a damaged file next to their fields,
// imports nothing for them, then lists what it added and, the second time, what it skipped.
func TestExportThenImportThroughTheDialogs(t *testing.T) {
	uitest.NeedKeyring(t)
	u, relay := newTestUI(t, backupEnv)
	if _, err := relay.AddAccount(app.NewAccount{Name: "key", Kind: "openai", BaseURL: "https://api.example.com/v1"},
		app.Secret{APIKey: "sk-ui-backup-secret"}); err != nil {
		t.Fatal(err)
	}
	if _, err := relay.AddAccount(app.NewAccount{Name: "chat", Kind: "chatgpt"},
		app.Secret{AccessToken: "ui-access-secret", RefreshToken: "ui-refresh-secret", AccountID: "acct-ui"}); err != nil {
		t.Fatal(err)
	}
	u.showAccounts()
	a := u.accounts
	path := filepath.Join(t.TempDir(), "pool.age")

	b := exportChecksThePassphrase(t, a, path)
	exportOverAFileAsksFirst(t, a, path)
	test.Tap(b.result.disable)
	if accts := relay.Accounts(); accts[0].Disabled || !accts[1].Disabled {
		t.Fatalf("after Disable them here: %+v", accts)
	}
	if !strings.HasPrefix(a.status.Text, "Disabled “chat” here") {
		t.Errorf("status %q", a.status.Text)
	}

	importSaysWhatItDid(t, path)
}

// exportChecksThePassphrase exports a's accounts to path through the Export dialog, after it
// refused an empty, a short and a mistyped passphrase; the file is 0600 and holds no secret in
// clear, and the result names the ChatGPT sign-ins. It returns the dialog, its result open.
func exportChecksThePassphrase(t *testing.T, a *accountsWindow, path string) *backupDialog {
	t.Helper()
	b := a.showExport()
	if !strings.HasSuffix(b.path.Text, ".age") {
		t.Errorf("default path %q", b.path.Text)
	}
	b.path.SetText(path)
	test.Tap(b.ok)
	if !b.passErr.Visible() || !strings.HasPrefix(b.passErr.Text, "Enter a passphrase") {
		t.Errorf("empty passphrase: %q", b.passErr.Text)
	}
	b.pass.SetText("short")
	b.confirm.SetText("short")
	b.confirm.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
	if !strings.Contains(b.passErr.Text, "at least 8 characters") {
		t.Errorf("a short passphrase: %q", b.passErr.Text)
	}
	b.pass.SetText("two words")
	b.confirm.SetText("two word")
	b.confirm.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
	if b.passErr.Text != "The two passphrases differ" {
		t.Errorf("passphrases differ: %q", b.passErr.Text)
	}
	if _, err := os.Stat(path); err == nil {
		t.Fatal("an export was written with passphrases that differ")
	}
	b.confirm.SetText("two words")
	b.confirm.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
	if b.result == nil {
		t.Fatalf("no result: path error %q, passphrase error %q", b.pathErr.Text, b.passErr.Text)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("export file: %v %v", err, st)
	}
	if raw, _ := os.ReadFile(path); strings.Contains(string(raw), "secret") {
		t.Fatal("the export holds a secret in clear")
	}
	got := overlayTexts(t, a.win)
	for _, want := range []string{"Wrote 2 accounts to " + path + ": “key”, “chat”.", "“chat”: a ChatGPT sign-in's refresh token works once",
		"Disable them here", "Keep them here"} {
		if !strings.Contains(got, want) {
			t.Errorf("the export's result does not say %q:\n%s", want, got)
		}
	}
	if !strings.HasPrefix(a.status.Text, "Exported 2 accounts to ") {
		t.Errorf("status %q", a.status.Text)
	}
	return b
}

// exportOverAFileAsksFirst exports over the file at path: the first Export names it, the second
// replaces it.
func exportOverAFileAsksFirst(t *testing.T, a *accountsWindow, path string) {
	t.Helper()
	before, _ := os.ReadFile(path)
	over := a.showExport()
	over.path.SetText(path)
	over.pass.SetText("two words")
	over.confirm.SetText("two words")
	test.Tap(over.ok)
	if after, _ := os.ReadFile(path); !strings.Contains(over.pathErr.Text, "already exists: Export again to replace it") || string(after) != string(before) || over.result != nil {
		t.Fatalf("an export over a file: %q", over.pathErr.Text)
	}
	test.Tap(over.ok)
	if after, _ := os.ReadFile(path); over.result == nil || string(after) == string(before) {
		t.Fatalf("the second Export did not replace the file: %q", over.pathErr.Text)
	}
	over.result.d.Hide()
}

// importSaysWhatItDid imports the export at path on another settings folder (another machine):
// a wrong passphrase and a damaged file are said next to their fields and import nothing; then
// it lists what it added and, the second time, what it skipped.
func importSaysWhatItDid(t *testing.T, path string) {
	t.Helper()
	u2, relay2 := newTestUI(t, backupEnv)
	u2.showAccounts()
	a2 := u2.accounts
	in := a2.showImport()
	in.path.SetText(path)
	in.pass.SetText("not it")
	test.Tap(in.ok)
	if !in.passErr.Visible() || !strings.HasPrefix(in.passErr.Text, "Wrong passphrase") || in.result != nil {
		t.Errorf("wrong passphrase: %q (result %v)", in.passErr.Text, in.result)
	}
	raw, _ := os.ReadFile(path)
	cut := filepath.Join(t.TempDir(), "cut.age")
	os.WriteFile(cut, raw[:len(raw)-3], 0o600)
	in.path.SetText(cut)
	in.pass.SetText("two words")
	in.pass.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
	if !in.pathErr.Visible() || !strings.Contains(in.pathErr.Text, "damaged") || in.result != nil {
		t.Errorf("truncated file: %q", in.pathErr.Text)
	}
	if n := len(relay2.Accounts()); n != 0 {
		t.Fatalf("a bad file imported %d accounts", n)
	}
	in.path.SetText(path)
	in.pass.SetText("two words")
	test.Tap(in.ok)
	if in.result == nil {
		t.Fatalf("no result: %q %q", in.pathErr.Text, in.passErr.Text)
	}
	if !strings.Contains(in.result.text, "Added 2 accounts: “key”, “chat”.") || !strings.Contains(in.result.text, "refresh token works once") {
		t.Errorf("import result:\n%s", in.result.text)
	}
	if accts := relay2.Accounts(); len(accts) != 2 || accts[1].Disabled || len(a2.rows) != 2 {
		t.Fatalf("imported %+v, %d rows", accts, len(a2.rows))
	}
	test.Tap(in.result.keep)

	again := a2.showImport()
	again.path.SetText(path)
	again.pass.SetText("two words")
	test.Tap(again.ok)
	if again.result == nil || !strings.Contains(again.result.text, "No account was added.") ||
		!strings.Contains(again.result.text, "Skipped “key”: an account of that name exists here.") {
		t.Fatalf("second import: %+v", again.result)
	}
}

// TestExportRunsOffTheUIThread: the key derivation and the keychain reads run through async.
func TestExportRunsOffTheUIThread(t *testing.T) {
	uitest.NeedKeyring(t)
	u, relay := newTestUI(t, backupEnv)
	if _, err := relay.AddAccount(app.NewAccount{Name: "one", Kind: "openai", BaseURL: "https://api.example.com/v1"},
		app.Secret{APIKey: "sk-one"}); err != nil {
		t.Fatal(err)
	}
	u.showAccounts()
	var queued []func()
	u.async = func(f func()) { queued = append(queued, f) }
	b := u.accounts.showExport()
	path := filepath.Join(t.TempDir(), "x.age")
	b.path.SetText(path)
	b.pass.SetText("pw-long-enough")
	b.confirm.SetText("pw-long-enough")
	test.Tap(b.ok)
	if _, err := os.Stat(path); err == nil || len(queued) != 1 || !b.ok.Disabled() {
		t.Fatalf("the export ran on the UI thread (%d queued)", len(queued))
	}
	test.Tap(b.ok) // a second tap while it runs does nothing
	queued[0]()
	if _, err := os.Stat(path); err != nil || len(queued) != 1 || b.result == nil {
		t.Fatalf("after the queued call: %v, %d queued", err, len(queued))
	}
}

func TestBackupResultTexts(t *testing.T) {
	got := exportResultText("/tmp/p.age", app.ExportResult{Accounts: []string{"a", "b"},
		Skipped: []app.SkippedAccount{{Name: "c", Reason: "the keychain has no secret for it"}}})
	if got != "Wrote 2 accounts to /tmp/p.age: “a”, “b”.\nNot written: “c” (the keychain has no secret for it)." {
		t.Errorf("export text %q", got)
	}
	got = importResultText(app.ImportResult{Imported: []string{"x"}, ChatGPT: []string{"x"}})
	if !strings.HasPrefix(got, "Added 1 account: “x”.\n\n“x”: a ChatGPT sign-in's refresh token works once. Make sure the machine it came from no longer uses it (disable it there)") {
		t.Errorf("import text %q", got)
	}
}

// TestBackupDialogsOfferAFilePicker: Choose… opens the file picker (a save dialog for Export,
// an open dialog for Import) over the accounts window.
func TestBackupDialogsOfferAFilePicker(t *testing.T) {
	u, _ := newTestUI(t, backupEnv)
	u.showAccounts()
	for _, b := range []*backupDialog{u.accounts.showExport(), u.accounts.showImport()} {
		b.path.SetText(filepath.Join(t.TempDir(), "pool.age"))
		test.Tap(b.choose)
		if b.chooser == nil || u.accounts.win.Canvas().Overlays().Top() == nil {
			t.Fatal("Choose… opened no file picker")
		}
		b.chooser.Hide()
		b.d.Hide()
	}
}

// TestAccountsWindowOffersExportAndImport: the accounts window's toolbar opens both dialogs.
func TestAccountsWindowOffersExportAndImport(t *testing.T) {
	u, _ := newTestUI(t, backupEnv)
	u.showAccounts()
	w := u.accounts.win
	for button, title := range map[string]string{"Export…": "Export accounts", "Import…": "Import accounts"} {
		tapButton(t, w.Content(), button)
		if got := overlayTexts(t, w); !strings.Contains(got, title) {
			t.Errorf("%s opened %q", button, got)
		}
		w.Canvas().Overlays().Top().Hide()
	}
}
