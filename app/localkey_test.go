package app

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Two settings folders on one keyring (a second profile, a service with its own
// XDG_CONFIG_HOME) each keep their own local key: turning it off in one, or a new install
// turning it on in the other, leaves the first folder's key and its commands working.
func TestEachSettingsFolderKeepsItsOwnLocalKey(t *testing.T) {
	k := testKeychain(t)
	cleanKeychain(t, k)
	p1, p2 := newInstallOptions(t, k), newInstallOptions(t, k)
	code, out, errs := runCLI(t, p1, "", "local-key", "on")
	if code != 0 {
		t.Fatalf("local-key on: %d %s", code, errs)
	}
	key1 := strings.Fields(strings.SplitN(out, "\n", 3)[1])[0]
	// The second folder's first command creates its settings file: a new install, with a key
	// of its own; then it turns its key off.
	if code, _, errs := runCLI(t, p2, "", "settings", "set", "strategy", "round-robin"); code != 0 || !strings.Contains(errs, "new install") {
		t.Fatalf("a new install's first change: %d %s", code, errs)
	}
	_, key2, _ := runCLI(t, p2, "", "local-key", "show")
	if strings.TrimSpace(key2) == key1 || !strings.HasPrefix(key2, "crk-") {
		t.Fatalf("the second folder's key %q, the first's %q", key2, key1)
	}
	if code, _, errs := runCLI(t, p2, "", "local-key", "off"); code != 0 {
		t.Fatalf("local-key off: %s", errs)
	}
	code, got, errs := runCLI(t, p1, "", "local-key", "show")
	if code != 0 || strings.TrimSpace(got) != key1 {
		t.Fatalf("the first folder's key after the second's changes: %d %q %s", code, got, errs)
	}
	if code, _, errs := runCLI(t, p1, "", "accounts", "list"); code != 0 {
		t.Fatalf("accounts list in the first folder: %d %s", code, errs)
	}
	a, _ := runningRelay(t, p1)
	if c, _ := send(t, a.Proxy.Stats().Listen, key1); c == http.StatusUnauthorized {
		t.Fatal("the first folder's relay refuses its own key")
	}
	// Each entry names its folder: neither folder counts the other's as a leftover.
	for _, opt := range []Options{p1, p2} {
		b, _ := OpenRelay(opt)
		if own, _, err := b.KeychainLeftovers(); err != nil || len(own) != 0 {
			t.Fatalf("leftovers of %s: %v %v", opt.ConfigDir, own, err)
		}
	}
}

// A local key that is on but cannot be read (its entry removed, as an older version's
// `local-key off` in another folder did) stops no command: the repairs run, the others say
// what is wrong where it matters, and the relay refuses clients until it is repaired.
func TestAnUnreadableLocalKeyCanBeRepaired(t *testing.T) {
	k := testKeychain(t)
	cleanKeychain(t, k)
	opt := testOptions(t, k)
	a, err := OpenRelay(opt)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.SetLocalKey(true); err != nil {
		t.Fatal(err)
	}
	k.Delete(localKeyUser(a.Settings().LocalKeyID))

	b, err := OpenRelay(opt)
	if err != nil {
		t.Fatalf("Open with an unreadable key: %v", err)
	}
	if err := b.LocalKeyError(); !errors.Is(err, ErrLocalKeyUnreadable) || !strings.Contains(err.Error(), "local-key on") {
		t.Fatalf("LocalKeyError: %v", err)
	}
	if code, _, errs := runCLI(t, opt, "", "accounts", "list"); code != 0 {
		t.Fatalf("accounts list: %d %s", code, errs)
	}
	if code, _, errs := runCLI(t, opt, "", "local-key", "show"); code != 1 || !strings.Contains(errs, "cannot be read") {
		t.Fatalf("local-key show: %d %s", code, errs)
	}
	// `settings set local-api-key true` repairs it: the key that is on cannot be kept.
	code, out, errs := runCLI(t, opt, "", "settings", "set", "local-api-key", "true")
	if code != 0 || !strings.Contains(out, "new local key") {
		t.Fatalf("settings set local-api-key true: %d %q %s", code, out, errs)
	}
	c, err := OpenRelay(opt)
	if err != nil || c.LocalKeyError() != nil {
		t.Fatalf("after the repair: %v %v", err, c.LocalKeyError())
	}
	// And off works too, from the broken state.
	k.Delete(localKeyUser(c.Settings().LocalKeyID))
	if code, _, errs := runCLI(t, opt, "", "local-key", "off"); code != 0 {
		t.Fatalf("local-key off: %d %s", code, errs)
	}
	if d, _ := OpenRelay(opt); d.LocalKeyError() != nil || d.Settings().LocalAPIKey {
		t.Fatalf("after off: %v", d.LocalKeyError())
	}
}

// Re-applying what `settings` printed (local-api-key true while it is on) keeps the key that
// Codex was given; `local-key on`, which makes a new key, rewrites a configuration that
// selects the relay's block, and says so when there is none.
func TestTurningTheLocalKeyOnAgainKeepsOrGivesCodexTheKey(t *testing.T) {
	k := testKeychain(t)
	cleanKeychain(t, k)
	codexHome := t.TempDir()
	env := map[string]string{"CODEX_HOME": codexHome}
	opt := Options{ConfigDir: keyOffFolder(t), Keychain: k, Getenv: func(k string) string { return env[k] }}
	code, out, _ := runCLI(t, opt, "", "local-key", "on")
	if code != 0 || !strings.Contains(out, "codex-config --write") {
		t.Fatalf("local-key on without a Codex configuration: %d %q", code, out)
	}
	_, key, _ := runCLI(t, opt, "", "local-key", "show")
	code, out, _ = runCLI(t, opt, "", "settings", "set", "local-api-key", "true")
	if _, again, _ := runCLI(t, opt, "", "local-key", "show"); code != 0 || again != key || !strings.Contains(out, "unchanged") {
		t.Fatalf("set true while on: %d %q; key %q -> %q", code, out, key, again)
	}
	if code, _, errs := runCLI(t, opt, "", "codex-config", "--write"); code != 0 {
		t.Fatal(errs)
	}
	code, out, _ = runCLI(t, opt, "", "local-key", "on")
	_, newKey, _ := runCLI(t, opt, "", "local-key", "show")
	b, _ := os.ReadFile(filepath.Join(codexHome, "config.toml"))
	if code != 0 || newKey == key || !strings.Contains(string(b), strings.TrimSpace(newKey)) || !strings.Contains(out, "Codex now sends the new local key") {
		t.Fatalf("local-key on with Codex configured: %d %q\n%s", code, out, b)
	}
}

// Whichever command creates the settings file turns the local key on (accounts add first, as
// the README orders it, or settings set), and says so; an existing folder is left alone.
func TestTheFirstWriteOfANewInstallTurnsTheKeyOn(t *testing.T) {
	k := testKeychain(t)
	cleanKeychain(t, k)
	up := newFakeUpstream(t)
	opt := newInstallOptions(t, k)
	code, _, errs := runCLI(t, opt, "sk-1\n", "accounts", "add", "--name", "one", "--kind", "openai", "--base-url", up.URL)
	if code != 0 || !strings.Contains(errs, "new install") {
		t.Fatalf("accounts add first: %d %s", code, errs)
	}
	a, _ := OpenRelay(opt)
	if key, err := a.LocalKey(); key == "" || err != nil {
		t.Fatalf("after accounts add in a new install: %q %v", key, err)
	}
	keychainMatchesFile(t, opt)
	gen := a.Settings().Generation
	if made, err := a.LocalKeyForNewInstall(); made || err != nil {
		t.Fatalf("an existing folder: %v %v", made, err)
	}
	if b, _ := OpenRelay(opt); b.Settings().Generation != gen {
		t.Fatal("a start rewrote an existing settings file")
	}
	// An existing folder whose key is off stays so.
	old := testOptions(t, k)
	if code, _, errs := runCLI(t, old, "", "settings", "set", "strategy", "round-robin"); code != 0 || strings.Contains(errs, "new install") {
		t.Fatalf("an existing folder: %d %s", code, errs)
	}
	if b, _ := OpenRelay(old); b.Settings().LocalAPIKey {
		t.Fatal("a change to an existing folder turned the key on")
	}
}
