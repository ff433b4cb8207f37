package app

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The attack of issue 24: after the settings folder was deleted, a second relay started beside
// the first, which no longer followed the file. The running relay recreates the folder and its
// instance lock, and follows the new folder's settings file.
func TestARunningRelayTakesBackItsDeletedFolder(t *testing.T) {
	opt := testOptions(t, Keychain{})
	a, svc := runningRelay(t, opt)
	if err := a.Set(SettingStrategy, "round-robin"); err != nil {
		t.Fatal(err)
	}
	for round := range 3 { // deleted again after it was taken back
		// The relay may put the folder back between RemoveAll's listing and its rmdir
		// ("directory not empty"): that is what is tested, so delete again.
		var err error
		for range 100 {
			if err = os.RemoveAll(opt.ConfigDir); err == nil {
				break
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, func() bool {
			in := claimOf(opt.ConfigDir)
			return in != nil && in.holdsFolder()
		})
		other := RunningInstance(opt.ConfigDir)
		if other == nil || other.Listen != svc.Status().Addr {
			t.Fatalf("round %d: the recreated folder describes %+v", round, other)
		}
		inst, running, err := ClaimInstance(opt.ConfigDir, "serve")
		if err != nil || inst != nil || running == nil {
			if inst != nil {
				inst.Release()
			}
			t.Fatalf("round %d: a second relay claimed the recreated folder (%v)", round, err)
		}
		if a.Settings().Strategy != "round-robin" {
			t.Fatalf("round %d: the settings in force were dropped", round)
		}
		if st, err := os.Stat(opt.ConfigDir); err != nil || st.Mode().Perm() != 0o700 {
			t.Fatalf("round %d: the folder: %v %v", round, st, err)
		}
	}
	// The new folder's file is followed.
	os.WriteFile(filepath.Join(opt.ConfigDir, settingsName), []byte(`{"strategy": "priority", "accounts": []}`), 0o600)
	waitFor(t, func() bool { return a.Settings().Strategy == "priority" && a.ReloadError() == nil })
}

// A folder moved away is taken back the same way: the relay's lock is in the moved folder.
func TestARunningRelayTakesBackItsFolderMovedAway(t *testing.T) {
	opt := testOptions(t, Keychain{})
	runningRelay(t, opt)
	moved := filepath.Join(t.TempDir(), "moved")
	if err := os.Rename(opt.ConfigDir, moved); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Rename(moved, opt.ConfigDir+"-moved") })
	waitFor(t, func() bool { return RunningInstance(opt.ConfigDir) != nil })
	if inst, _, _ := ClaimInstance(opt.ConfigDir, "serve"); inst != nil {
		inst.Release()
		t.Fatal("a second relay claimed the folder after it was moved away")
	}
}

// The relay's own description is written in its folder, never through a link planted there.
func TestTheInstanceDescriptionIsNeverWrittenThroughALink(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "dotfile")
	content := fixture(t, "not-settings-passwd-copy")
	os.WriteFile(victim, content, 0o644)
	if err := os.Symlink(victim, filepath.Join(dir, instanceInfoName)); err != nil {
		t.Fatal(err)
	}
	inst, _, err := ClaimInstance(dir, "serve")
	if err != nil {
		t.Fatal(err)
	}
	inst.Serving("127.0.0.1:1", false)
	inst.Release()
	if b, _ := os.ReadFile(victim); !bytes.Equal(b, content) {
		t.Fatal("the link's target was replaced")
	}
	if st, err := os.Stat(victim); err != nil || st.Mode().Perm() != 0o644 {
		t.Fatalf("the link's target: %v %v", st, err)
	}
}

// Where the system cannot notify, the poll says so when the file goes away, keeps the
// settings in force, and recreates a deleted folder.
func TestThePollKeepsTheSettingsWhenTheFileGoesAway(t *testing.T) {
	opt := testOptions(t, Keychain{})
	a, err := OpenRelay(opt)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Set(SettingStrategy, "round-robin"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.poll(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	os.RemoveAll(opt.ConfigDir)
	waitFor(t, func() bool { return a.ReloadError() != nil })
	if a.Settings().Strategy != "round-robin" {
		t.Fatal("the settings in force were dropped")
	}
	waitFor(t, func() bool { _, err := os.Stat(opt.ConfigDir); return err == nil })
	os.WriteFile(filepath.Join(opt.ConfigDir, settingsName), []byte(`{"strategy": "priority", "accounts": []}`), 0o600)
	waitFor(t, func() bool { return a.ReloadError() == nil && a.Settings().Strategy == "priority" })
}

// When another relay claimed the recreated folder first, taking it back fails, and says so
// once (the watch tries again at each folderCheck).
func TestAFolderAnotherRelayTookIsNotTakenFromIt(t *testing.T) {
	dir := t.TempDir()
	first, _, err := ClaimInstance(dir, "tray")
	if err != nil {
		t.Fatal(err)
	}
	defer first.Release()
	os.RemoveAll(dir)
	second, other, err := ClaimInstance(dir, "serve") // in the moment before the first noticed
	if err != nil || second == nil || other != nil {
		t.Fatalf("the second claim: %v %v", other, err)
	}
	defer second.Release()
	fresh, err := first.retake()
	if err == nil || !fresh || !strings.Contains(err.Error(), "another Codex Relay claimed") {
		t.Fatalf("taking it back: %v (fresh %v)", err, fresh)
	}
	if fresh, err := first.retake(); err == nil || fresh {
		t.Fatalf("the same failure again: %v (fresh %v)", err, fresh)
	}
	if info := RunningInstance(dir); info == nil || info.Mode != "serve" {
		t.Fatalf("the folder describes %+v", info)
	}
}
