package app

import (
	"os"
	"path/filepath"
	"testing"
)

// The attack of issue 24: after the settings folder was deleted, a second relay started beside
// the first, which no longer followed the file. The running relay recreates the folder and its
// instance lock, and follows the new folder's settings file.
func TestARunningRelayTakesBackItsDeletedFolder(t *testing.T) {
	opt := testOptions(t, Keychain{})
	a, svc := runningRelay(t, opt)
	if err := a.SetStrategy("round-robin"); err != nil {
		t.Fatal(err)
	}
	for round := range 3 { // deleted again after it was taken back
		if err := os.RemoveAll(opt.ConfigDir); err != nil {
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
