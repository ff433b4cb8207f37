package window

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"fyne.io/fyne/v2"
	fyneapp "fyne.io/fyne/v2/app"

	"github.com/codexrelay/codexrelay/ui/look"
)

// The window process's Fyne app keeps no preferences file (issue 32 Low, "Preferences load
// error"): it reads none another process left, and writes none when a preference changes or
// when it ends; it still has Codex Relay's ID.
func TestNewAppKeepsNoPreferencesFile(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the preferences' path is Fyne's for Linux here")
	}
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	file := filepath.Join(cfg, "fyne", look.AppID, "preferences.json")
	left := `{"left":"by another window process"}` + "\n"
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(left), 0o600); err != nil {
		t.Fatal(err)
	}
	prev := fyne.CurrentApp()
	t.Cleanup(func() {
		fyne.SetCurrentApp(prev)
		fyneapp.SetMetadata(fyne.AppMetadata{})
	})

	fa := NewApp("test")
	if fa.UniqueID() != look.AppID || fa.Metadata().Name != "Codex Relay" {
		t.Errorf("the app is %q, %q", fa.UniqueID(), fa.Metadata().Name)
	}
	if got := fa.Preferences().String("left"); got != "" {
		t.Errorf("it read another process's preferences: %q", got)
	}
	fa.Preferences().SetString("fyne:fileDialogLastFolder", "file:///tmp") // as the file picker does
	if got := fa.Preferences().String("fyne:fileDialogLastFolder"); got != "file:///tmp" {
		t.Errorf("the preference was not kept in memory: %q", got)
	}
	if stopped := fa.Lifecycle().(interface{ OnStopped() func() }).OnStopped(); stopped != nil {
		stopped() // as the app does when it ends
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != left {
		t.Errorf("the preferences file was written: %q (%v)", b, err)
	}
}
