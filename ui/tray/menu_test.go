package tray

import (
	"os/exec"
	"strings"
	"testing"
)

// The tray process has no Fyne app: ui/tray builds its menu with its own model (menu.go) and
// imports no Fyne package, directly or through another one (fyne.io/systray is the tray).
func TestTrayImportsNoFyne(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool to list the imports with")
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if p == "fyne.io/fyne/v2" || strings.HasPrefix(p, "fyne.io/fyne/v2/") {
			t.Errorf("ui/tray imports %s", p)
		}
	}
}
