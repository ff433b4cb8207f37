package tray

// The tray's own menu model: what trayMenu builds, Tray.show compares (menuSignature) and the
// desktop's tray draws (systrayBackend in trayrun.go, fakeTray in the tests). It is the tray's,
// not Fyne's: the tray process has no Fyne app, and this package imports no Fyne package.

// trayIcon is a PNG the tray shows: the tray's icon of a state (stateIcon) or an item's dot
// (dotIcons). name tells two icons apart without comparing their bytes.
type trayIcon struct {
	name string
	png  []byte
}

// menuItem is one line of the tray menu, or a separator.
type menuItem struct {
	Label string
	// Icon is drawn before the label (nil: none).
	Icon *trayIcon
	// Disabled lines are shown greyed out and do nothing.
	Disabled bool
	// Separator is a rule between groups of lines; it has no label.
	Separator bool
	// Quit marks the Quit line (it drains the proxy first).
	Quit bool
	// Action runs on a click (nil: none).
	Action func()
}

// item is a menu line labelled label that runs action on a click.
func item(label string, action func()) *menuItem {
	return &menuItem{Label: label, Action: action}
}

// separator is a rule between groups of menu lines.
func separator() *menuItem { return &menuItem{Separator: true} }
