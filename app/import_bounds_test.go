package app

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"unicode/utf8"
)

// An import bounds and cleans every field it keeps (issue 30, 7): an export whose account has
// a 5 MiB e-mail made settings.json 5.2 MB, and the app's own 4 MiB limit then refused every
// change, accounts remove included. The e-mail is kept bounded and clean, the folder stays
// usable; a field that cannot be cleaned (a huge base URL, a huge secret) refuses the file.
func TestAnImportCannotBrickItsFolder(t *testing.T) {
	k := testKeychain(t)
	a := backupApp(t, k)
	huge := strings.Repeat("x", 5<<20)
	email := "me\x1b[31m@example.com" + huge
	plain := `{"format":"codexrelay-accounts","version":1,"accounts":[{"position":1,"account":{"name":"big","kind":"openai","base_url":"https://a.example/v1","email":` +
		jsonString(email) + `},"secret":{"api_key":"sk-import-bounds-0001"}}]}`
	res, err := a.ImportAccounts(bytes.NewReader(encryptPlain(t, "pass", plain)), "pass")
	if err != nil || len(res.Imported) != 1 {
		t.Fatalf("import: %+v %v", res, err)
	}
	st, err := os.Stat(a.SettingsPath())
	if err != nil || st.Size() > 64<<10 {
		t.Fatalf("settings.json after the import: %v, %d bytes", err, st.Size())
	}
	m := a.Accounts()[0]
	if len(m.Email) > maxEmailBytes || strings.ContainsAny(m.Email, "\x1b") || !utf8.ValidString(m.Email) {
		t.Fatalf("the imported e-mail is kept as %d bytes: %.40q", len(m.Email), m.Email)
	}
	if err := a.RemoveAccount("big"); err != nil {
		t.Fatalf("removing the imported account: %v", err)
	}
	for name, acct := range map[string]string{
		"a huge base URL": `{"name":"u","kind":"openai","base_url":"https://a.example/` + huge[:1<<20] + `"}`,
		"a huge key":      `{"name":"k","kind":"openai","base_url":"https://a.example/v1"}`,
	} {
		secret := `{"api_key":"sk-` + huge[:1<<20] + `"}`
		if name == "a huge base URL" {
			secret = `{"api_key":"sk-import-bounds-0002"}`
		}
		plain := `{"format":"codexrelay-accounts","version":1,"accounts":[{"position":1,"account":` + acct + `,"secret":` + secret + `}]}`
		if _, err := a.ImportAccounts(bytes.NewReader(encryptPlain(t, "pass", plain)), "pass"); !errors.Is(err, ErrDamagedExport) {
			t.Errorf("%s: %v, want ErrDamagedExport", name, err)
		}
	}
	if len(a.Accounts()) != 0 {
		t.Fatalf("accounts %v", names(a.Accounts()))
	}
}

// A settings file the reader would refuse is never written: the change fails and the file
// stays as it was.
func TestSettingsTheReaderWouldRefuseAreNotWritten(t *testing.T) {
	dir := t.TempDir()
	if err := saveSettings(dir, Settings{Listen: "127.0.0.1:7455"}); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(dir + "/" + settingsName)
	big := Settings{Listen: "127.0.0.1:7455", Accounts: []AccountMeta{{ID: "x", Name: "x", Kind: "openai", Email: strings.Repeat("y", maxSettingsBytes)}}}
	if err := saveSettings(dir, big); err == nil {
		t.Fatal("settings over the reader's limit were written")
	}
	after, _ := os.ReadFile(dir + "/" + settingsName)
	if !bytes.Equal(before, after) {
		t.Fatal("the settings file changed")
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// An export whose header claims a scrypt cost above what Codex Relay writes is refused before
// any scrypt runs (issue 30, 12: a claimed 2^22 cost 4.2 GB and 10-14 s before "wrong
// passphrase"). The tests write at 2^10, so the cap is 2^11 and a 2^13 file is over it.
func TestAnImportRefusesAScryptCostAboveWhatTheAppWrites(t *testing.T) {
	a := backupApp(t, testKeychain(t))
	plain := `{"format":"codexrelay-accounts","version":1,"accounts":[{"position":1,"account":{"name":"k","kind":"openai","base_url":"https://a.example/v1"},"secret":{"api_key":"sk-scrypt-cap-0001"}}]}`
	_, err := a.ImportAccounts(bytes.NewReader(encryptPlainAt(t, "pass", plain, 13)), "pass")
	if !errors.Is(err, ErrDamagedExport) || !strings.Contains(err.Error(), "2^11") {
		t.Fatalf("a 2^13 export: %v", err)
	}
	// The cost it writes, and one step above, are read.
	if _, err := a.ImportAccounts(bytes.NewReader(encryptPlain(t, "pass", plain)), "pass"); err != nil {
		t.Fatalf("a 2^10 export: %v", err)
	}
}
