package tray

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The tray process has no Fyne app: ui/tray builds its menu with its own model (menu.go) and
// imports no Fyne package, directly or through another one (fyne.io/systray is the tray).
func TestTrayImportsNoFyne(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool to list the imports with")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if p == "fyne.io/fyne/v2" || strings.HasPrefix(p, "fyne.io/fyne/v2/") {
			t.Errorf("ui/tray imports %s", p)
		}
	}
}
