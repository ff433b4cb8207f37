package source

// The windows the tray asks the window process to open, by name: the tray writes one a line to
// the window process's standard input (and passes the first as its argument), and the window
// process opens it (ui/window's OpenWindow). The names are that pipe's protocol: both sides
// use these constants, and a value must not change.
const (
	WindowDashboard = "dashboard"
	WindowUsage     = "usage"
	WindowAccounts  = "accounts"
	WindowSettings  = "settings"
	// WindowConfigureCodex is the dashboard with Configure Codex's confirmation open.
	WindowConfigureCodex = "configure-codex"
	// WindowCopyCodexConfig is the dashboard, having copied the provider block.
	WindowCopyCodexConfig = "copy-codex-config"
)
