package source

import "testing"

// The window names are what the tray writes to the window process's pipe: an older or newer
// build on the other end must read them the same.
func TestWindowNamesAreTheProtocol(t *testing.T) {
	for got, want := range map[string]string{
		WindowDashboard: "dashboard", WindowUsage: "usage", WindowAccounts: "accounts",
		WindowSettings: "settings", WindowConfigureCodex: "configure-codex",
		WindowCopyCodexConfig: "copy-codex-config",
	} {
		if got != want {
			t.Errorf("window %q, want %q", got, want)
		}
	}
}
