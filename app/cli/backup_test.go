package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codexrelay/codexrelay/app"
)

// The pool moves to a new machine: export with a passphrase on stdin, import it into another
// settings folder; a second import skips what exists and names it; a wrong passphrase imports
// nothing and exits 1.
func TestExportAndImportThroughTheCommandLine(t *testing.T) {
	k := testKeychain(t)
	env := func(k string) string {
		if k == "CODEXRELAY_EXPORT_SCRYPT_LOG_N" {
			return "10" // a cheap key derivation: the default costs seconds under -race
		}
		return ""
	}
	from := app.Options{ConfigDir: t.TempDir(), Keychain: k, Getenv: env}
	to := app.Options{ConfigDir: t.TempDir(), Keychain: k, Getenv: env}
	for _, n := range []string{"work", "home"} {
		if code, _, errs := runCLI(t, from, "sk-"+n+"-secret\n", "accounts", "add", "--name", n, "--kind", "openai", "--base-url", "https://"+n+".test/v1"); code != 0 {
			t.Fatal(errs)
		}
	}
	file := filepath.Join(t.TempDir(), "pool.age")
	code, out, errs := runCLI(t, from, "correct horse\n", "accounts", "export", file)
	if code != 0 || !strings.Contains(out, "Exported 2 accounts to "+file) || !strings.Contains(out, "work, home") {
		t.Fatalf("export: %d %q %q", code, out, errs)
	}
	b, _ := os.ReadFile(file)
	if st, _ := os.Stat(file); st.Mode().Perm() != 0o600 || strings.Contains(string(b), "secret") {
		t.Fatalf("the export is mode %v or holds a secret in clear", st.Mode())
	}
	// An existing file is replaced only with --force, and a missing folder is found, both
	// before the passphrase is read (stdin is empty here); a short passphrase is refused.
	code, _, errs = runCLI(t, from, "", "accounts", "export", file)
	if code != 1 || !strings.Contains(errs, "already exists: add --force") {
		t.Fatalf("export over a file: %d %q", code, errs)
	}
	if again, _ := os.ReadFile(file); string(again) != string(b) {
		t.Fatal("the refused export replaced the file")
	}
	code, _, errs = runCLI(t, from, "", "accounts", "export", filepath.Join(t.TempDir(), "gone", "x.age"))
	if code != 1 || !strings.Contains(errs, "does not exist") || strings.Contains(errs, ".tmp") || strings.Contains(errs, "passphrase") {
		t.Fatalf("export to a missing folder: %d %q", code, errs)
	}
	code, _, errs = runCLI(t, from, "x\n", "accounts", "export", "--force", file)
	if code != 1 || !strings.Contains(errs, "too short") {
		t.Fatalf("a one-character passphrase: %d %q", code, errs)
	}
	if code, _, errs := runCLI(t, from, "correct horse\n", "accounts", "export", "--force", file); code != 0 {
		t.Fatalf("export --force: %s", errs)
	}
	code, out, errs = runCLI(t, to, "wrong horse\n", "accounts", "import", file)
	if code != 1 || out != "" || !strings.Contains(errs, "nothing was imported") {
		t.Fatalf("wrong passphrase: %d %q %q", code, out, errs)
	}
	code, out, errs = runCLI(t, to, "", "accounts", "import", file)
	if code != 1 || !strings.Contains(errs, "no passphrase on stdin") {
		t.Fatalf("no passphrase: %d %q %q", code, out, errs)
	}
	code, out, errs = runCLI(t, to, "correct horse\n", "accounts", "import", file)
	if code != 0 || !strings.Contains(out, "Imported 2 accounts: work, home") {
		t.Fatalf("import: %d %q %q", code, out, errs)
	}
	code, out, _ = runCLI(t, to, "correct horse\n", "accounts", "import", file)
	if code != 0 || !strings.Contains(out, "Imported no account.") || !strings.Contains(out, `Skipped "work"`) {
		t.Fatalf("again: %d %q", code, out)
	}
	_, list, _ := runCLI(t, to, "", "accounts", "list")
	if !strings.Contains(list, "https://work.test/v1") || !strings.Contains(list, "RESETS") {
		t.Fatalf("accounts list:\n%s", list)
	}
}

// Redeeming needs a ChatGPT account: the command says so and fails (exit 1).
func TestRedeemNeedsAChatGPTAccount(t *testing.T) {
	k := testKeychain(t)
	opt := app.Options{ConfigDir: t.TempDir(), Keychain: k, Getenv: func(string) string { return "" }}
	if code, _, errs := runCLI(t, opt, "sk-x\n", "accounts", "add", "--name", "key", "--kind", "openai", "--base-url", "https://x.test/v1"); code != 0 {
		t.Fatal(errs)
	}
	for name, want := range map[string]string{"key": "only ChatGPT sign-ins hold banked resets", "ghost": "ghost"} {
		code, out, errs := runCLI(t, opt, "", "accounts", "redeem", name)
		if code != 1 || out != "" || !strings.Contains(errs, want) {
			t.Errorf("redeem %s: %d %q %q", name, code, out, errs)
		}
	}
}

// `accounts set-reserve` keeps a share of the account's binding window unspent (the store's
// one setter), `accounts list` shows it as a column and in its JSON, and 0 clears it.
func TestSetReserveIsShownByTheList(t *testing.T) {
	k := testKeychain(t)
	opt := app.Options{ConfigDir: t.TempDir(), Keychain: k, Getenv: func(string) string { return "" }}
	if code, _, errs := runCLI(t, opt, "sk-x\n", "accounts", "add", "--name", "work", "--kind", "openai", "--base-url", "https://x.test/v1"); code != 0 {
		t.Fatal(errs)
	}
	code, out, errs := runCLI(t, opt, "", "accounts", "set-reserve", "work", "20")
	if code != 0 || !strings.Contains(out, `Account "work" keeps 20% in reserve`) {
		t.Fatalf("set-reserve: %d %q %q", code, out, errs)
	}
	_, list, _ := runCLI(t, opt, "", "accounts", "list")
	if !strings.Contains(list, "RESERVE") || !strings.Contains(list, " 20% ") {
		t.Fatalf("accounts list:\n%s", list)
	}
	_, js, _ := runCLI(t, opt, "", "accounts", "list", "--json")
	if !strings.Contains(js, `"reserve": 20`) {
		t.Fatalf("accounts list --json:\n%s", js)
	}
	if code, out, _ := runCLI(t, opt, "", "accounts", "set-reserve", "work", "0"); code != 0 || !strings.Contains(out, "keeps no reserve") {
		t.Fatalf("set-reserve 0: %d %q", code, out)
	}
	if got := mustOpen(t, opt).Accounts()[0].Reserve; got != 0 {
		t.Errorf("0 left the reserve at %d", got)
	}
	if code, _, errs := runCLI(t, opt, "", "accounts", "set-reserve", "ghost", "10"); code != 1 || !strings.Contains(errs, `no account named "ghost"`) {
		t.Errorf("an unknown account: %d %q", code, errs)
	}
}

func mustOpen(t *testing.T, opt app.Options) *app.App {
	t.Helper()
	a, err := app.Open(opt)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
