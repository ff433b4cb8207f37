package window

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/dialog"

	"github.com/codexrelay/codexrelay/ui/source"
)

// The windows of the window process: each opens through showWindow and closes through
// hideWindow, so that the process knows which are open and ends after the last.

// dashboardWindow returns the dashboard's window, creating it hidden the first time.
func (u *UI) dashboardWindow() fyne.Window {
	if u.dashWin == nil {
		w := u.fa.NewWindow("Codex Relay")
		w.SetIcon(iconApp)
		w.Resize(DashboardSize)
		u.adoptDashboard(w)
	}
	return u.dashWin
}

// adoptDashboard makes w, a window titled and sized for it, the dashboard's window.
func (u *UI) adoptDashboard(w fyne.Window) {
	w.SetContent(u.dash.Content())
	w.SetCloseIntercept(func() { u.dashShown = false; u.hideWindow(w) })
	u.dashWin = w
}

// toolWindow makes a secondary window that hides on close.
func (u *UI) toolWindow(title string, content fyne.CanvasObject, size fyne.Size) fyne.Window {
	w := u.fa.NewWindow(title)
	w.SetIcon(iconApp)
	w.SetCloseIntercept(func() { u.hideWindow(w) })
	w.SetContent(content)
	w.Resize(size)
	return w
}

func (u *UI) showDashboard() {
	u.dashShown = true
	u.dash.show(u.last)
	w := u.dashboardWindow()
	u.showWindow(w)
}

// showWindow shows w in front (every window opens through it, so that the process knows
// which are open).
func (u *UI) showWindow(w fyne.Window) {
	u.shown[w] = true
	if !u.placed[w] {
		u.placed[w] = true
		u.center(w)
	}
	w.Show()
	w.RequestFocus()
}

// hideWindow hides w (every window closes through it); after the last one, lastClosed.
func (u *UI) hideWindow(w fyne.Window) {
	w.Hide()
	if !u.shown[w] {
		return
	}
	delete(u.shown, w)
	if len(u.shown) == 0 && u.lastClosed != nil {
		u.lastClosed()
	}
}

// OpenWindow opens the window a tray action asked for, one of source's Window names: the
// dashboard, usage, accounts, settings, configure-codex (the dashboard with the confirmation)
// or copy-codex-config (the dashboard, having copied the provider block). Anything else opens
// the dashboard.
func (u *UI) OpenWindow(name string) {
	switch name {
	case source.WindowUsage:
		u.showUsage()
	case source.WindowAccounts:
		u.showAccounts()
	case source.WindowSettings:
		u.showSettings()
	case source.WindowConfigureCodex:
		u.refresh()
		u.configureCodex()
	case source.WindowCopyCodexConfig:
		u.ShowDashboard()
		u.copyText(u.codexConfig())
		dialog.ShowInformation("Codex config copied", "The provider block is on the clipboard while this window is open:\n"+
			"paste it into ~/.codex/config.toml, or use Configure Codex… to merge it with a backup.", u.dashWin)
	default:
		u.ShowDashboard()
	}
}

// ShowDashboard opens the dashboard window.
func (u *UI) ShowDashboard() { u.refresh(); u.showDashboard() }

// ShowDiagnostics opens the dashboard's Diagnostics section (for screenshots).
func (u *UI) ShowDiagnostics() { u.dash.ShowDiagnostics() }

// ShowSettings opens the settings window.
func (u *UI) ShowSettings() { u.showSettings() }

// ShowAccounts opens the accounts window.
func (u *UI) ShowAccounts() { u.showAccounts() }

func (u *UI) showSettings() {
	if u.settings == nil {
		u.settings = newSettingsWindow(u)
	}
	u.settings.open()
}

func (u *UI) showAccounts() {
	if u.accounts == nil {
		u.accounts = newAccountsWindow(u)
	}
	u.accounts.shown = true
	u.accounts.show(u.last)
	u.showWindow(u.accounts.win)
}

// parent is the window a dialog opened from the tray belongs to: the dashboard, shown.
func (u *UI) parent() fyne.Window {
	u.showDashboard()
	return u.dashWin
}
