package app

import (
	"bytes"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// fixture reads a regression input from testdata/settings.
func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "settings", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// onSettle replaces the wait before a second read of a file that did not parse.
func onSettle(t *testing.T, f func()) {
	old := settle.Swap(&f)
	t.Cleanup(func() { settle.Store(old) })
}

// The attack of issue 24: settings.json away for a moment (an editor's rename-style save) with
// the local key on. The relay keeps its accounts and its key, says why, and every request
// without the key is refused.
func TestAMissingSettingsFileLeavesTheRelayAsItWas(t *testing.T) {
	k := testKeychain(t)
	cleanKeychain(t, k)
	opt := testOptions(t, k)
	up := newFakeUpstream(t)
	a, svc := runningRelay(t, opt)
	if _, err := a.AddAccount(NewAccount{Name: "one", Kind: "openai", BaseURL: up.URL + "/v1"}, Secret{APIKey: "sk-one"}); err != nil {
		t.Fatal(err)
	}
	key, err := a.SetLocalKey(true)
	if err != nil {
		t.Fatal(err)
	}
	path := a.SettingsPath()
	if err := os.Rename(path, path+".saving"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return a.ReloadError() != nil })
	if err := a.ReloadError(); !strings.Contains(err.Error(), "is missing") || !strings.Contains(err.Error(), "keeps the settings it last read") {
		t.Fatalf("the reason given: %v", err)
	}
	for i := range 90 {
		if code, _ := send(t, svc.Status().Addr, ""); code != http.StatusUnauthorized {
			t.Fatalf("request %d without the key while the file was away: %d", i, code)
		}
	}
	if code, _ := send(t, svc.Status().Addr, key); code != http.StatusOK {
		t.Fatalf("a request with the key while the file was away: %d", code)
	}
	if n := len(a.Settings().Accounts); n != 1 {
		t.Fatalf("%d accounts in force while the file was away", n)
	}
	if err := os.Rename(path+".saving", path); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return a.ReloadError() == nil })
}

// Only a file that parses changes the relay: one that is half-written, or too large, leaves
// the last good settings in force and says so.
func TestARunningRelayIgnoresFilesThatDoNotParse(t *testing.T) {
	opt := testOptions(t, Keychain{})
	a, _ := runningRelay(t, opt)
	if err := a.Set(SettingStrategy, "round-robin"); err != nil {
		t.Fatal(err)
	}
	path := a.SettingsPath()
	for _, bad := range [][]byte{
		fixture(t, "half-written.json"),
		append([]byte(`{"strategy": "priority", "accounts": []}`), bytes.Repeat([]byte(" "), maxSettingsBytes)...),
		[]byte("null"),
		[]byte(`{"strategy": "priority"} {"strategy": "priority"}`),
	} {
		// Whole at once (written, then renamed in): a relay that read the 4 MiB file while it
		// was being written would see a prefix that parses, which is not what this tests.
		if err := os.WriteFile(path+".next", bad, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".next", path); err != nil {
			t.Fatal(err)
		}
		waitFor(t, func() bool { return a.ReloadError() != nil })
		if a.Settings().Strategy != "round-robin" {
			t.Fatalf("%.40q changed the settings in force", bad)
		}
		os.WriteFile(path, []byte(`{"strategy": "round-robin", "accounts": []}`), 0o600)
		waitFor(t, func() bool { return a.ReloadError() == nil })
	}
}

// A half-written file is read again a moment later before it is judged corrupt: the finished
// save is what counts.
func TestAFileIsJudgedCorruptOnlyAfterASecondRead(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, settingsName)
	os.WriteFile(path, fixture(t, "half-written.json"), 0o600)
	second := 0
	onSettle(t, func() {
		second++
		os.WriteFile(path, []byte(`{"strategy": "round-robin", "accounts": []}`), 0o600) // the save ends
	})
	s, err := readSettings(path)
	if err != nil || s.Strategy != "round-robin" || second != 1 {
		t.Fatalf("after a save that ended in between: %+v %v (second reads: %d)", s, err, second)
	}
	os.WriteFile(path, fixture(t, "half-written.json"), 0o600)
	onSettle(t, func() { second++ })
	if _, err := readSettings(path); !errors.Is(err, ErrCorruptSettings) || second != 2 {
		t.Fatalf("a file that stays broken: %v (second reads: %d)", err, second)
	}
}

// The attack of issue 24: `accounts list` during an in-place save moved the half-written file
// aside, and the editor's finished write went to the moved file.
func TestAReadOnlyCommandNeverMovesTheSettingsFile(t *testing.T) {
	opt := testOptions(t, Keychain{})
	path := filepath.Join(opt.ConfigDir, settingsName)
	half := fixture(t, "half-written.json")
	os.WriteFile(path, half, 0o600)
	code, _, errs := runCLI(t, opt, "", "accounts", "list")
	if code != 1 || !strings.Contains(errs, "is not valid JSON") || !strings.Contains(errs, "left as it is") || !strings.Contains(errs, "cannot be listed") {
		t.Fatalf("accounts list over a broken file: %d %q", code, errs)
	}
	if b, _ := os.ReadFile(path); !bytes.Equal(b, half) {
		t.Fatal("the file was changed")
	}
	if m, _ := filepath.Glob(path + ".corrupt-*"); len(m) != 0 {
		t.Fatalf("a read-only command moved the file aside: %v", m)
	}
	// A change refuses to write over it.
	code, _, errs = runCLI(t, opt, "", "settings", "set", "strategy", "round-robin")
	if code != 1 || !strings.Contains(errs, "does not overwrite it") {
		t.Fatalf("a change over a broken file: %d %q", code, errs)
	}
	if b, _ := os.ReadFile(path); !bytes.Equal(b, half) {
		t.Fatal("the file was overwritten")
	}
}

// The relay's own start (the process holding the folder's claim) keeps a corrupt file aside,
// in the settings folder, and starts afresh.
func TestTheRelaysStartKeepsACorruptFileAside(t *testing.T) {
	opt := testOptions(t, Keychain{})
	inst, _, err := ClaimInstance(opt.ConfigDir, "serve")
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Release()
	path := filepath.Join(opt.ConfigDir, settingsName)
	half := fixture(t, "half-written.json")
	os.WriteFile(path, half, 0o600)
	a, err := OpenRelay(opt)
	if err != nil || !errors.Is(a.LoadWarning, ErrCorruptSettings) || !strings.Contains(a.LoadWarning.Error(), "kept as") {
		t.Fatalf("open: %v %v", err, a.LoadWarning)
	}
	m, _ := filepath.Glob(path + ".corrupt-*")
	if len(m) != 1 || filepath.Dir(m[0]) != opt.ConfigDir {
		t.Fatalf("kept aside as %v", m)
	}
	if b, _ := os.ReadFile(m[0]); !bytes.Equal(b, half) {
		t.Fatal("the file kept aside is not the corrupt one")
	}
}

// The attack of issue 24: a settings.json linked to a file that is not settings (a passwd
// file's copy here; a dotfile by mistake in real life). Nothing reads it as settings, writes
// through it, moves it or replaces it: not a read-only command, not a change, not the relay's
// start, not a running relay.
func TestALinkToAFileThatIsNotSettingsIsRefused(t *testing.T) {
	for _, name := range []string{"not-settings-passwd-copy", "other-json.json", "half-written.json"} {
		t.Run(name, func(t *testing.T) {
			opt := newInstallOptions(t, Keychain{})
			elsewhere := t.TempDir()
			target := filepath.Join(elsewhere, "passwd")
			content := fixture(t, name)
			os.WriteFile(target, content, 0o644)
			link := filepath.Join(opt.ConfigDir, settingsName)
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
			beforeDir, beforeTarget := snapshotDir(t, opt.ConfigDir), snapshotDir(t, elsewhere)
			onSettle(t, func() {})

			code, _, errs := runCLI(t, opt, "", "accounts", "list")
			if code != 1 || !strings.Contains(errs, "is a symbolic link to "+target+", which is not a Codex Relay settings file") {
				t.Fatalf("accounts list: %d %q", code, errs)
			}
			code, _, errs = runCLI(t, opt, "", "settings", "set", "strategy", "round-robin")
			if code != 1 || !strings.Contains(errs, "neither reads it nor writes through it") {
				t.Fatalf("a change: %d %q", code, errs)
			}
			inst, _, err := ClaimInstance(opt.ConfigDir, "serve")
			if err != nil {
				t.Fatal(err)
			}
			_, err = OpenRelay(opt)
			inst.Release()
			if !errors.Is(err, ErrSettingsLink) {
				t.Fatalf("the relay's start: %v", err)
			}
			if b, _ := os.ReadFile(target); !bytes.Equal(b, content) {
				t.Fatal("the link's target was changed")
			}
			if after := snapshotDir(t, elsewhere); after != beforeTarget {
				t.Fatalf("the target's folder changed:\n%s\n---\n%s", beforeTarget, after)
			}
			if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
				t.Fatal("the link was replaced")
			}
			if after := snapshotDir(t, opt.ConfigDir); strings.Contains(after, ".corrupt-") {
				t.Fatalf("something was moved aside:\n%s\n---\n%s", beforeDir, after)
			}
		})
	}
}

// A running relay whose settings link is turned to a file that is not settings keeps its
// settings, and a change writes nothing through the link.
func TestARunningRelayRefusesALinkTurnedElsewhere(t *testing.T) {
	opt := testOptions(t, Keychain{})
	a, _ := runningRelay(t, opt)
	if err := a.Set(SettingStrategy, "round-robin"); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "dotfile")
	content := fixture(t, "not-settings-passwd-copy")
	os.WriteFile(target, content, 0o644)
	path := a.SettingsPath()
	tmp := path + ".link"
	os.Symlink(target, tmp)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return errors.Is(a.ReloadError(), ErrSettingsLink) })
	if a.Settings().Strategy != "round-robin" {
		t.Fatal("the settings in force changed")
	}
	if err := a.Set(SettingStrategy, "priority"); !errors.Is(err, ErrSettingsLink) {
		t.Fatalf("a change through the link: %v", err)
	}
	// A link to nowhere creates nothing outside the folder either.
	missing := filepath.Join(t.TempDir(), "nowhere", "settings.json")
	os.Remove(path)
	os.Symlink(missing, path)
	if err := a.Set(SettingStrategy, "priority"); !errors.Is(err, ErrSettingsLink) || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("a change through a dangling link: %v", err)
	}
	if _, err := os.Lstat(missing); !os.IsNotExist(err) {
		t.Fatal("a file was created where the dangling link points")
	}
	if b, _ := os.ReadFile(target); !bytes.Equal(b, content) {
		t.Fatal("the first target was changed")
	}
}

// The attack of issue 24: a 300 MB settings.json took the relay to 1.05 GB. Beyond the limit
// the file is refused unread; at the limit it is read.
func TestTheSettingsFileIsReadOnlyUpToItsLimit(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, settingsName)
	body := []byte(`{"strategy": "round-robin", "accounts": []}`)
	os.WriteFile(path, append(body, bytes.Repeat([]byte(" "), maxSettingsBytes-len(body))...), 0o600)
	if s, err := readSettings(path); err != nil || s.Strategy != "round-robin" {
		t.Fatalf("a file of exactly the limit: %v", err)
	}
	os.WriteFile(path, append(body, bytes.Repeat([]byte(" "), maxSettingsBytes-len(body)+1)...), 0o600)
	if _, err := readSettings(path); !errors.Is(err, ErrCorruptSettings) || !strings.Contains(err.Error(), "larger than the 4 MiB") {
		t.Fatalf("one byte over the limit: %v", err)
	}
	// 300 MB (sparse): refused without reading it. An unbounded read would allocate its size.
	f, _ := os.Create(path)
	f.WriteString(string(body))
	f.Truncate(300 << 20)
	f.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := readSettings(path)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrCorruptSettings) {
		t.Fatalf("a 300 MB file: %v", err)
	}
	n := after.TotalAlloc - before.TotalAlloc
	if n > maxSettingsBytes {
		t.Fatalf("reading a 300 MB settings file allocated %d bytes", n)
	}
	t.Logf("reading a 300 MB settings file allocated %d bytes and was refused: %v", n, err)
	// Not a regular file (a pipe would block the reader forever): refused before it is opened.
	os.Remove(path)
	os.Mkdir(path, 0o700)
	if _, err := readSettings(path); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("a folder in its place: %v", err)
	}
}
