package app

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
)

// The secrets of the pool the backup tests export: none of them may appear in clear in an
// export file, an error or a settings file.
const (
	backupKey     = "sk-backup-very-secret-key-0001"
	backupAccess  = "eyJbackup-access-token-secret-0002"
	backupRefresh = "rt_backup-refresh-token-secret-0003"
	backupIDTok   = "eyJbackup-id-token-secret-0004"
)

var backupSecrets = []string{backupKey, backupAccess, backupRefresh, backupIDTok}

// backupApp opens an App on a settings folder of its own over k, with a cheap scrypt cost.
func backupApp(t *testing.T, k Keychain) *Relay {
	t.Helper()
	old := scryptWorkFactor
	scryptWorkFactor = 10
	t.Cleanup(func() { scryptWorkFactor = old })
	a, err := OpenRelay(testOptions(t, k))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, m := range a.Accounts() {
			k.Delete(accountUser(m.ID))
		}
	})
	return a
}

// backupPool fills a with three accounts: an API key (chat API, custom base URL), a ChatGPT
// sign-in, and a disabled API key, in the order chatgpt, key, off.
func backupPool(t *testing.T, a *Relay) {
	t.Helper()
	if _, err := a.AddAccount(NewAccount{Name: "key", Kind: "openai", BaseURL: "https://api.example.com/v1", API: "chat"}, Secret{APIKey: backupKey}); err != nil {
		t.Fatal(err)
	}
	exp := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	if _, err := a.AddAccount(NewAccount{Name: "chat", Kind: "chatgpt", Email: "dev@example.com"},
		Secret{AccessToken: backupAccess, RefreshToken: backupRefresh, IDToken: backupIDTok, AccountID: "acct-1", ExpiresAt: exp}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.AddAccount(NewAccount{Name: "off", Kind: "openai", BaseURL: "http://127.0.0.1:9/v1"}, Secret{APIKey: "sk-off-0005"}); err != nil {
		t.Fatal(err)
	}
	if err := a.SetAccountEnabled("off", false); err != nil {
		t.Fatal(err)
	}
	if _, err := a.MoveAccount("chat", 1); err != nil {
		t.Fatal(err)
	}
	if err := a.SetAccountReserve("chat", 20); err != nil { // shared with its owner: travels with it
		t.Fatal(err)
	}
}

func noSecretIn(t *testing.T, what string, b []byte) {
	t.Helper()
	for _, s := range append(slices.Clone(backupSecrets), "sk-off-0005") {
		if bytes.Contains(b, []byte(s)) {
			t.Fatalf("%s holds the secret %q in clear", what, s)
		}
	}
}

func names(ms []AccountMeta) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Name)
	}
	return out
}

func TestBackupRoundTripThroughTheKeychain(t *testing.T) {
	k := testKeychain(t)
	src := backupApp(t, k)
	backupPool(t, src)
	dir := t.TempDir()
	path := filepath.Join(dir, "pool.age")
	res, err := src.ExportAccountsFile(path, "correct horse battery staple", false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Accounts, []string{"chat", "key", "off"}) || !slices.Equal(res.ChatGPT, []string{"chat"}) || len(res.Skipped) != 0 {
		t.Fatalf("export result %+v", res)
	}
	st, err := os.Lstat(path)
	if err != nil || st.Mode().Perm() != 0o600 || !st.Mode().IsRegular() {
		t.Fatalf("export file: %v %v", err, st.Mode())
	}
	b, _ := os.ReadFile(path)
	noSecretIn(t, "the export file", b)
	if bytes.Contains(b, []byte("dev@example.com")) || !bytes.HasPrefix(b, []byte("age-encryption.org/v1\n-> scrypt ")) {
		t.Fatalf("the export is not one age file encrypted with a passphrase:\n%.200q", b)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}

	// Another settings folder on the same keyring: another machine, as far as the store goes.
	dst := backupApp(t, k)
	if _, err := dst.AddAccount(NewAccount{Name: "mine", Kind: "openai", BaseURL: "https://other.example/v1"}, Secret{APIKey: "sk-mine"}); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(path)
	ires, err := dst.ImportAccounts(f, "correct horse battery staple")
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ires.Imported, []string{"chat", "key", "off"}) || !slices.Equal(ires.ChatGPT, []string{"chat"}) || len(ires.Skipped) != 0 {
		t.Fatalf("import result %+v", ires)
	}
	got := dst.Accounts()
	if !slices.Equal(names(got), []string{"mine", "chat", "key", "off"}) {
		t.Fatalf("accounts after import: %v", names(got))
	}
	want := src.Accounts()
	for i, w := range want {
		g := got[i+1]
		if g.ID == w.ID || g.ID == "" {
			t.Errorf("%s: ID %q (the exporting folder's was %q): an import takes IDs of its own", g.Name, g.ID, w.ID)
		}
		if g.Kind != w.Kind || g.BaseURL != w.BaseURL || g.API != w.API || g.Disabled != w.Disabled || g.Email != w.Email || !g.Added.Equal(w.Added) || g.Reserve != w.Reserve {
			t.Errorf("%s: imported %+v, exported %+v", g.Name, g, w)
		}
		v, err := k.Get(accountUser(g.ID))
		if err != nil {
			t.Fatalf("%s: keychain: %v", g.Name, err)
		}
		if entryFolder(v) != dst.opt.Keychain.Folder {
			t.Errorf("%s: the keychain entry names folder %q, not the importing one's", g.Name, entryFolder(v))
		}
		gs, _ := decodeSecret(v)
		wv, _ := k.Get(accountUser(w.ID))
		ws, _ := decodeSecret(wv)
		if gs != ws {
			t.Errorf("%s: secret not restored as it was", g.Name)
		}
	}
	// The running relay serves the imported accounts with their restored secrets.
	c := dst.credsFor(got[2].ID)
	if c == nil {
		t.Fatal("the relay did not take the imported accounts")
	}
	if s, err := c.secret(); err != nil || s.APIKey != backupKey {
		t.Fatalf("imported key: %v", err)
	}
	settings, _ := os.ReadFile(dst.SettingsPath())
	noSecretIn(t, "the settings file", settings)

	// Importing again skips every account, and names each with its reason.
	ires, err = dst.ImportAccountsFile(path, "correct horse battery staple")
	if err != nil {
		t.Fatal(err)
	}
	if len(ires.Imported) != 0 || len(ires.Skipped) != 3 || ires.Skipped[0].Name != "chat" || !strings.Contains(ires.Skipped[0].Reason, "exists") {
		t.Fatalf("second import %+v", ires)
	}
	if len(dst.Accounts()) != 4 {
		t.Fatalf("second import changed the accounts: %v", names(dst.Accounts()))
	}
}

// TestBackupSkipsTheSameLoginUnderAnotherName: a ChatGPT login that is here under another
// name (the same ChatGPT account id), and an API key that is, are skipped and named.
func TestBackupSkipsTheSameLoginUnderAnotherName(t *testing.T) {
	k := testKeychain(t)
	src := backupApp(t, k)
	backupPool(t, src)
	var buf bytes.Buffer
	if _, err := src.ExportAccounts(&buf, "pw-long-enough"); err != nil {
		t.Fatal(err)
	}
	dst := backupApp(t, k)
	if _, err := dst.AddAccount(NewAccount{Name: "work", Kind: "chatgpt"}, Secret{AccessToken: "other-access", AccountID: "acct-1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := dst.AddAccount(NewAccount{Name: "same-key", Kind: "openai", BaseURL: "https://api.example.com/v1"}, Secret{APIKey: backupKey}); err != nil {
		t.Fatal(err)
	}
	res, err := dst.ImportAccounts(bytes.NewReader(buf.Bytes()), "pw-long-enough")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Imported, []string{"off"}) || len(res.Skipped) != 2 {
		t.Fatalf("import %+v", res)
	}
	if s := res.Skipped[0]; s.Name != "chat" || !strings.Contains(s.Reason, `ChatGPT login is here as "work"`) {
		t.Errorf("skipped %+v", s)
	}
	if s := res.Skipped[1]; s.Name != "key" || !strings.Contains(s.Reason, `API key is here as "same-key"`) {
		t.Errorf("skipped %+v", s)
	}
	if !slices.Equal(names(dst.Accounts()), []string{"work", "same-key", "off"}) || !dst.Accounts()[2].Disabled {
		t.Fatalf("accounts %+v", dst.Accounts())
	}
}

// TestBackupBadFilesImportNothing: a wrong passphrase, a truncated file, a damaged byte, a
// file of another version and an empty passphrase each fail with an error that says so, and
// leave the settings and the keychain as they were.
func TestBackupBadFilesImportNothing(t *testing.T) {
	k := testKeychain(t)
	src := backupApp(t, k)
	backupPool(t, src)
	var buf bytes.Buffer
	if _, err := src.ExportAccounts(&buf, "the passphrase"); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	dst := backupApp(t, k)
	before, err := k.List()
	if err != nil {
		t.Fatal(err)
	}
	settingsBefore, _ := os.ReadFile(dst.SettingsPath())
	flip := func(i int) []byte {
		b := slices.Clone(good)
		b[i] ^= 0x01
		return b
	}
	hdr := bytes.Index(good, []byte("\n--- ")) + 1
	cases := []struct {
		name, pass string
		file       []byte
		want       error
	}{
		{"wrong passphrase", "not the passphrase", good, ErrWrongPassphrase},
		{"empty passphrase", "", good, ErrEmptyPassphrase},
		{"truncated by one byte", "the passphrase", good[:len(good)-1], ErrDamagedExport},
		{"truncated in the middle", "the passphrase", good[:len(good)/2+hdr/2], ErrDamagedExport},
		{"truncated after the header", "the passphrase", good[:hdr+70], ErrDamagedExport},
		{"truncated in the header", "the passphrase", good[:hdr/2], ErrDamagedExport},
		{"empty file", "the passphrase", nil, ErrDamagedExport},
		{"a damaged byte in the last chunk", "the passphrase", flip(len(good) - 20), ErrDamagedExport},
		{"a damaged byte in the header MAC", "the passphrase", flip(hdr + 10), ErrDamagedExport},
		{"a byte added", "the passphrase", append(slices.Clone(good), 0), ErrDamagedExport},
		{"version 2", "the passphrase", encryptPlain(t, "the passphrase", `{"format":"codexrelay-accounts","version":2,"accounts":[]}`), ErrExportVersion},
		{"another age file", "the passphrase", encryptPlain(t, "the passphrase", `hello`), ErrDamagedExport},
		{"an account without its key", "the passphrase", encryptPlain(t, "the passphrase",
			`{"format":"codexrelay-accounts","version":1,"accounts":[{"position":1,"account":{"name":"x","kind":"openai","base_url":"https://a.example/v1"},"secret":{}}]}`), ErrDamagedExport},
		{"a reserve out of range", "the passphrase", encryptPlain(t, "the passphrase",
			`{"format":"codexrelay-accounts","version":1,"accounts":[{"position":1,"account":{"name":"x","kind":"openai","base_url":"https://a.example/v1","reserve":500},"secret":{"api_key":"sk-0123456789abcdef"}}]}`), ErrDamagedExport},
	}
	for _, c := range cases {
		res, err := dst.ImportAccounts(bytes.NewReader(c.file), c.pass)
		t.Logf("%s: %v", c.name, err)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
			continue
		}
		if c.want != ErrEmptyPassphrase && !strings.Contains(err.Error(), "nothing was imported") {
			t.Errorf("%s: the error does not say that nothing was imported: %v", c.name, err)
		}
		noSecretIn(t, c.name+"'s error", []byte(err.Error()))
		if len(res.Imported) != 0 || len(dst.Accounts()) != 0 {
			t.Fatalf("%s imported %+v", c.name, res)
		}
	}
	after, _ := k.List()
	slices.Sort(before)
	slices.Sort(after)
	if !slices.Equal(before, after) {
		t.Fatalf("the keychain changed: %v -> %v", before, after)
	}
	if b, _ := os.ReadFile(dst.SettingsPath()); string(b) != string(settingsBefore) {
		t.Fatalf("a failed import wrote the settings:\n%s", b)
	}
	if _, err := src.ExportAccounts(&bytes.Buffer{}, "1234567"); !errors.Is(err, ErrShortPassphrase) {
		t.Fatalf("export with a 7-character passphrase: %v", err)
	}
	if _, err := src.ExportAccounts(&bytes.Buffer{}, ""); !errors.Is(err, ErrEmptyPassphrase) {
		t.Fatalf("export without a passphrase: %v", err)
	}
}

func encryptPlain(t *testing.T, pass, plain string) []byte {
	t.Helper()
	return encryptPlainAt(t, pass, plain, 10)
}

// encryptPlainAt is encryptPlain at the scrypt work factor given.
func encryptPlainAt(t *testing.T, pass, plain string, factor int) []byte {
	t.Helper()
	r, err := age.NewScryptRecipient(pass)
	if err != nil {
		t.Fatal(err)
	}
	r.SetWorkFactor(factor)
	var buf bytes.Buffer
	w, err := age.Encrypt(&buf, r)
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte(plain))
	w.Close()
	return buf.Bytes()
}

// TestBackupFileRefusesLinksAndReplacesAFile: a symbolic link at the export's path is refused
// (its target untouched), an existing file is replaced with mode 0600 only when asked, an
// export to a folder that does not exist names no temporary file, and a failed export leaves
// nothing behind.
func TestBackupFileRefusesLinksAndReplacesAFile(t *testing.T) {
	k := testKeychain(t)
	a := backupApp(t, k)
	backupPool(t, a)
	dir := t.TempDir()
	target := filepath.Join(dir, "target.txt")
	if err := os.WriteFile(target, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "pool.age")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := a.ExportAccountsFile(link, "pw-long-enough", true); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("export through a link: %v", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep me" {
		t.Fatalf("the link's target was written: %q", b)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatal("the link was replaced")
	}
	if _, err := a.ExportAccountsFile(dir, "pw-long-enough", true); err == nil {
		t.Fatal("an export over a folder was accepted")
	}
	if _, err := a.ExportAccountsFile(target, "pw-long-enough", false); !errors.Is(err, ErrExportExists) {
		t.Fatalf("an existing file replaced unasked: %v", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep me" {
		t.Fatalf("the refused export wrote %q", b)
	}
	if _, err := a.ExportAccountsFile(target, "pw-long-enough", true); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(target); st.Mode().Perm() != 0o600 {
		t.Fatalf("replaced file mode %v", st.Mode())
	}
	if _, err := a.ExportAccountsFile(filepath.Join(dir, "x.age"), "pw-long-enough", false, "nobody"); !errors.As(err, new(ErrNoAccount)) {
		t.Fatalf("export of an unknown account: %v", err)
	}
	missing := filepath.Join(dir, "no-such-folder", "x.age")
	if _, err := a.ExportAccountsFile(missing, "pw-long-enough", false); err == nil || strings.Contains(err.Error(), ".tmp") || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("export to a missing folder: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 2 {
		t.Fatalf("files left: %v", left)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

// TestBackupDisablesTheExportedSignIns: the caller disables the ChatGPT sign-ins it exported,
// so that two machines do not refresh one login; an export of some accounts writes only those.
func TestBackupDisablesTheExportedSignIns(t *testing.T) {
	k := testKeychain(t)
	a := backupApp(t, k)
	backupPool(t, a)
	var buf bytes.Buffer
	res, err := a.ExportAccounts(&buf, "pw-long-enough", "chat")
	if err != nil || !slices.Equal(res.Accounts, []string{"chat"}) {
		t.Fatalf("%+v %v", res, err)
	}
	if err := a.DisableAccounts(res.ChatGPT); err != nil {
		t.Fatal(err)
	}
	if m := a.Accounts()[0]; m.Name != "chat" || !m.Disabled {
		t.Fatalf("%+v", m)
	}
	if err := a.DisableAccounts([]string{"key", "nobody"}); !errors.As(err, new(ErrNoAccount)) || a.Accounts()[1].Disabled {
		t.Fatalf("a missing name: %v, key disabled %v", err, a.Accounts()[1].Disabled)
	}
	// The export holds the account as it was when exported: enabled on the new machine.
	dst := backupApp(t, k)
	ires, err := dst.ImportAccounts(&buf, "pw-long-enough")
	if err != nil || !slices.Equal(ires.Imported, []string{"chat"}) || dst.Accounts()[0].Disabled {
		t.Fatalf("%+v %v %+v", ires, err, dst.Accounts())
	}
	// The plaintext format: versioned, positions kept.
	var f backupFile
	plain, _, err := a.exportPlaintext(nil)
	if err != nil || json.Unmarshal(plain, &f) != nil || f.Version != BackupVersion || f.Format != backupFormat ||
		len(f.Accounts) != 3 || f.Accounts[2].Position != 3 || f.Accounts[0].Account.ID != "" {
		t.Fatalf("plaintext: %v %+v", err, f)
	}
}
