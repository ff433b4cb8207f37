// Package look is what the tray process (ui/tray) and the window process (ui/window) both
// show of the relay, so that the tray menu and the windows say one thing in one way: the
// relay's state and its status line, an account's state with the clock time a rest ends, the
// counts, clock times, token counts and costs they print, the tones that colour a state, and
// the words of a redemption. It runs in either process and draws nothing: it has no Fyne
// inside, and each process puts these words and tones into its own widgets (the tray's menu
// items, the windows' cells). It also holds the app's identity on the desktop (AppID).
package look

// AppID is the application's identifier (FyneApp.toml's ID): the window process's Fyne app
// has it.
const AppID = "io.github.codexrelay"

// DesktopEntry is the name of the desktop entry the packages install (codexrelay.desktop, in
// the .deb and by packaging/README.md's steps), and IconName the icon it names (hicolor's
// codexrelay.png): the tray process's notifications name both, so that the desktop shows them
// as the app's, with its icon (GNOME could not link notifications that named AppID to an entry).
const (
	DesktopEntry = "codexrelay"
	IconName     = "codexrelay"
)
