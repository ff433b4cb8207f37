package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The desktop review's finding in issue 24: "Remove them" and `accounts prune` deleted the
// keychain entries of every other settings folder on the same keyring (a second profile, a
// service with another XDG_CONFIG_HOME): their live keys. Each entry now names its folder;
// a folder prunes only its own, lists them first, and leaves entries of unknown owner alone
// unless asked.
func TestPruningOneFolderNeverTouchesAnothersEntries(t *testing.T) {
	k := testKeychain(t)
	cleanKeychain(t, k)
	up := newFakeUpstream(t)
	optA, optB := testOptions(t, k), testOptions(t, k) // two profiles, one keyring and service
	for _, o := range []struct {
		opt  Options
		name string
	}{{optA, "alpha"}, {optB, "beta"}} {
		if code, out, errs := runCLI(t, o.opt, "sk-"+o.name+"\n", "accounts", "add", "--name", o.name, "--kind", "openai", "--base-url", up.URL); code != 0 {
			t.Fatalf("add %s: %s %s", o.name, out, errs)
		}
	}
	a, err := OpenRelay(optA)
	if err != nil {
		t.Fatal(err)
	}
	b, err := OpenRelay(optB)
	if err != nil {
		t.Fatal(err)
	}
	// Each account's entry names the folder that added it.
	for _, app := range []*Relay{a, b} {
		v, err := k.Get(accountUser(app.Accounts()[0].ID))
		if err != nil || entryFolder(v) != folderKey(app.ConfigDir()) {
			t.Fatalf("the entry of %s names %q (%v)", app.Accounts()[0].Name, entryFolder(v), err)
		}
		if sec, err := decodeSecret(v); err != nil || !strings.HasPrefix(sec.APIKey, "sk-") {
			t.Fatal("the entry no longer decodes as a secret")
		}
	}
	// Leftovers: one of each folder, and one an older version wrote (no folder).
	Keychain{Service: k.Service, Folder: folderKey(optA.ConfigDir)}.Set(accountUser("aaaaaaaaaaaaaaaa"), Secret{APIKey: "sk-left-a"}.encode())
	Keychain{Service: k.Service, Folder: folderKey(optB.ConfigDir)}.Set(accountUser("bbbbbbbbbbbbbbbb"), Secret{APIKey: "sk-left-b"}.encode())
	k.Set(accountUser("0123456789abcdef"), Secret{APIKey: "sk-legacy"}.encode())

	if orphans, err := a.OrphanSecrets(); err != nil || len(orphans) != 1 || orphans[0] != accountUser("aaaaaaaaaaaaaaaa") {
		t.Fatalf("folder A counts %v (%v)", orphans, err)
	}
	// The dashboard's "Remove them".
	removed, err := a.PruneSecrets()
	if err != nil || len(removed) != 1 || removed[0] != accountUser("aaaaaaaaaaaaaaaa") {
		t.Fatalf("folder A removed %v (%v)", removed, err)
	}
	code, out, _ := runCLI(t, optA, "", "accounts", "prune")
	if code != 0 || !strings.Contains(out, "nothing to remove") || !strings.Contains(out, "Left alone 1 keychain entry of unknown owner") ||
		!strings.Contains(out, accountUser("0123456789abcdef")) || strings.Contains(out, "bbbbbbbbbbbbbbbb") {
		t.Fatalf("accounts prune in folder A: %q", out)
	}
	code, out, _ = runCLI(t, optA, "", "accounts", "prune", "--include-unknown")
	if code != 0 || !strings.Contains(out, "Removing 1 keychain entry that no account names: "+accountUser("0123456789abcdef")) {
		t.Fatalf("accounts prune --include-unknown in folder A: %q", out)
	}
	// Folder B's live key and its own leftover are still there; A's account too.
	for _, id := range []string{b.Accounts()[0].ID, "bbbbbbbbbbbbbbbb", a.Accounts()[0].ID} {
		if _, err := k.Get(accountUser(id)); err != nil {
			t.Fatalf("entry %s was removed: %v", id, err)
		}
	}
	if orphans, err := b.OrphanSecrets(); err != nil || len(orphans) != 1 || orphans[0] != accountUser("bbbbbbbbbbbbbbbb") {
		t.Fatalf("folder B counts %v (%v)", orphans, err)
	}
}

// While the settings file is missing (a rename-style save, a deleted folder), every entry
// would look left over: pruning refuses and removes nothing.
func TestPruningRefusesWhileTheSettingsFileIsMissing(t *testing.T) {
	k := testKeychain(t)
	cleanKeychain(t, k)
	opt := testOptions(t, k)
	up := newFakeUpstream(t)
	if code, out, errs := runCLI(t, opt, "sk-one\n", "accounts", "add", "--name", "one", "--kind", "openai", "--base-url", up.URL); code != 0 {
		t.Fatalf("add: %s %s", out, errs)
	}
	a, err := OpenRelay(opt)
	if err != nil {
		t.Fatal(err)
	}
	id := a.Accounts()[0].ID
	path := filepath.Join(opt.ConfigDir, settingsName)
	os.Rename(path, path+".saving")
	if removed, err := a.PruneSecrets(); err == nil || !strings.Contains(err.Error(), "does not exist") || len(removed) != 0 {
		t.Fatalf("prune without a settings file: %v %v", removed, err)
	}
	if code, _, errs := runCLI(t, opt, "", "accounts", "prune", "--include-unknown"); code != 1 || !strings.Contains(errs, "nothing is counted or removed") {
		t.Fatalf("accounts prune without a settings file: %d %q", code, errs)
	}
	if _, err := k.Get(accountUser(id)); err != nil {
		t.Fatalf("the account's entry was removed: %v", err)
	}
}
