// Package ui is Codex Relay's desktop face: the tray menu, the dashboard, the settings and
// the accounts windows. It is a thin client: it reads the proxy's state only as a snapshot
// (Stats and Traces, polled once a second off the UI thread) and acts only through app methods.
package ui

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/url"
	"sync"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/widget"

	"github.com/codexrelay/codexrelay/app"
)

// UI ties the tray and the windows to one app and its listener.
type UI struct {
	fa    fyne.App
	relay *app.App
	svc   *app.Service
	log   *slog.Logger
	src   Source
	now   func() time.Time
	// async runs a slow app call (keychain, listener restart, drain) off the UI thread; its
	// result comes back with fyne.Do. Tests run it inline.
	async func(func())
	// poke asks the poller for an early tick after an action.
	poke chan struct{}

	last     view
	quitting bool
	// orphans are the keychain entries no account names, read at start and after a prune.
	orphansMu sync.Mutex
	orphans   []string
	tray      *Tray

	dash     *Dashboard
	dashWin  fyne.Window
	settings *settingsWindow
	accounts *accountsWindow
}

// New builds the UI for relay on the Fyne app fa without starting anything.
func New(fa fyne.App, relay *app.App, log *slog.Logger) *UI {
	u := &UI{
		fa: fa, relay: relay, svc: relay.NewService(), log: log, src: relay.Proxy,
		now:   time.Now,
		async: func(f func()) { go f() },
		poke:  make(chan struct{}, 1),
		tray:  newTray(),
	}
	u.dash = NewDashboard(u.src, DashboardOptions{
		Status:       u.svc.Status,
		CodexConfig:  u.codexConfig,
		OpenAccounts: u.showAccounts,
		OpenSettings: u.showSettings,
		CopyText:     u.copyText,
		Now:          func() time.Time { return u.now() },
		PruneSecrets: u.pruneSecrets,
	})
	return u
}

// Run starts the proxy, the tray (or, without a tray host, the dashboard window) and the
// poller, and blocks in the Fyne event loop. Quitting stops the proxy and lets in-flight
// requests drain first. inst is this process's claim to be the running Codex Relay: a second
// launch brings the dashboard to the front through it.
func Run(fa fyne.App, relay *app.App, log *slog.Logger, inst *app.Instance) {
	u := New(fa, relay, log)
	u.svc.Instance = inst
	if inst != nil {
		if err := inst.OnShow(func() { fyne.Do(u.ShowDashboard) }); err != nil {
			log.Warn("a second launch cannot reach this one", "error", err)
		}
	}
	u.Run()
}

// Run starts the proxy, the tray and the poller for a UI built with New, and blocks in the
// Fyne event loop until Quit.
func (u *UI) Run() {
	u.fa.SetIcon(iconApp)
	u.svc.OnChange = func(app.ServiceStatus) { u.changed() }
	if err := u.svc.Start(); err != nil {
		u.log.Error("proxy not started", "error", err) // the tray and the dashboard show it too
	}
	u.refresh()
	ctx, cancel := context.WithCancel(context.Background())
	go u.poll(ctx)
	// Follow the settings file: changes made by the CLI (or by hand) apply within a moment.
	go u.relay.Watch(ctx)
	u.async(u.checkOrphans)

	if desk, ok := u.fa.(desktop.App); ok {
		u.tray.desk = desk
		u.tray.shown, u.tray.state = "", -1 // push the first menu and icon
		u.tray.show(u.trayMenu(u.last), u.tray.stateFor(u.last))
		desk.SetSystemTrayWindow(u.dashboardWindow()) // a left click on the icon opens it
		if ok, why := trayHost(); !ok {
			// The menu is set anyway (a host may come later), but nothing would be visible now.
			u.log.Warn("showing the dashboard window instead of a tray icon", "reason", why)
			w := u.dashboardWindow()
			w.SetMaster()
			w.SetCloseIntercept(u.quit)
			u.showDashboard()
		} else if len(u.relay.Accounts()) == 0 || !u.last.svc.Running {
			// First run, or the port is taken: say so in a window, even where the tray is hard to find.
			u.showDashboard()
		}
	} else {
		u.log.Warn("this Fyne driver has no system tray (not a desktop.App): showing the dashboard window instead")
		w := u.dashboardWindow()
		w.SetMaster()
		w.SetCloseIntercept(u.quit) // closing it quits, after the drain
		u.showDashboard()
	}
	if err := u.relay.LoadWarning; err != nil {
		u.showDashboard()
		dialog.ShowError(err, u.dashWin)
	}
	u.fa.Lifecycle().SetOnStopped(func() {
		cancel()
		u.svc.Stop() // a no-op after our Quit; drains when the session ends us (SIGTERM)
	})
	u.fa.Run()
}

// poll reads a view once a second (or when poked) and applies it on the UI thread.
func (u *UI) poll(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-u.poke:
		}
		v := u.fetch()
		fyne.Do(func() { u.apply(v) })
	}
}

// fetch reads the proxy's state; it may run on any goroutine.
func (u *UI) fetch() view {
	v := view{snap: u.src.Stats(), traces: u.src.Traces(recentTraces), svc: u.svc.Status()}
	if err := u.relay.ReloadError(); err != nil {
		v.notice = "The settings file cannot be followed, so the last good settings stay in force: " + err.Error()
	} else if v.svc.Warning != "" {
		v.notice = "Listen address: " + v.svc.Warning
	}
	u.orphansMu.Lock()
	v.orphans = u.orphans
	u.orphansMu.Unlock()
	return v
}

// checkOrphans reads which keychain entries belong to no account (off the UI thread).
func (u *UI) checkOrphans() {
	orphans, err := u.relay.OrphanSecrets()
	if err != nil {
		u.log.Debug("cannot list the keychain entries", "error", err)
		return
	}
	u.orphansMu.Lock()
	u.orphans = orphans
	u.orphansMu.Unlock()
	u.changed()
}

// pruneSecrets removes the keychain entries no account names.
func (u *UI) pruneSecrets() {
	u.async(func() {
		_, err := u.relay.PruneSecrets()
		fyne.Do(func() {
			if err != nil {
				u.showError(u.parent(), err)
			}
		})
		u.checkOrphans()
	})
}

// apply shows v everywhere (UI thread).
func (u *UI) apply(v view) {
	u.last = v
	u.tray.show(u.trayMenu(v), u.tray.stateFor(v))
	u.dash.show(v)
	if u.accounts != nil {
		u.accounts.show(v)
	}
	if u.settings != nil {
		u.settings.sync(v)
	}
}

// refresh fetches and applies at once (UI thread; used at start and by tests).
func (u *UI) refresh() { u.apply(u.fetch()) }

// changed asks for an early tick; it never blocks.
func (u *UI) changed() {
	select {
	case u.poke <- struct{}{}:
	default:
	}
}

func (t *Tray) stateFor(v view) state {
	s, _ := trayState(v.snap, v.svc)
	return s
}

// dashboardWindow returns the dashboard's window, creating it hidden the first time.
func (u *UI) dashboardWindow() fyne.Window {
	if u.dashWin == nil {
		w := u.fa.NewWindow("Codex Relay")
		w.SetIcon(iconApp)
		w.SetContent(u.dash.Content())
		w.Resize(DashboardSize)
		w.SetCloseIntercept(w.Hide) // the tray keeps running; replaced by SetMaster without one
		u.dashWin = w
	}
	return u.dashWin
}

// toolWindow makes a secondary window that hides on close (the app keeps running in the tray).
func (u *UI) toolWindow(title string, content fyne.CanvasObject, size fyne.Size) fyne.Window {
	w := u.fa.NewWindow(title)
	w.SetIcon(iconApp)
	w.SetCloseIntercept(w.Hide)
	w.SetContent(content)
	w.Resize(size)
	return w
}

func (u *UI) showDashboard() {
	u.dash.show(u.last)
	w := u.dashboardWindow()
	w.Show()
	w.RequestFocus()
}

// ShowDashboard opens the dashboard window.
func (u *UI) ShowDashboard() { u.refresh(); u.showDashboard() }

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
	u.accounts.show(u.last)
	u.accounts.win.Show()
	u.accounts.win.RequestFocus()
}

// parent is the window a dialog opened from the tray belongs to: the dashboard, shown.
func (u *UI) parent() fyne.Window {
	u.showDashboard()
	return u.dashWin
}

// setStaleWhileRevalidate changes the live catalog setting (tray item and settings check).
func (u *UI) setStaleWhileRevalidate(on bool) {
	if err := u.relay.SetStaleWhileRevalidate(on); err != nil {
		u.showError(u.parent(), err)
	}
	u.refresh()
}

func (u *UI) pause() {
	u.async(func() {
		u.svc.Pause() // waits for in-flight requests to drain
		u.changed()
	})
}

func (u *UI) resume() {
	u.async(func() {
		err := u.svc.Resume()
		fyne.Do(func() {
			if err != nil {
				u.showError(u.parent(), err)
			}
		})
		u.changed()
	})
}

// quit stops the proxy (letting in-flight requests finish) and then leaves the event loop.
func (u *UI) quit() {
	u.quitting = true
	u.tray.show(u.trayMenu(u.last), u.tray.state)
	u.async(func() {
		u.svc.Stop()
		fyne.Do(u.fa.Quit)
	})
}

// codexConfig is the provider block for ~/.codex/config.toml: the app's, or one made here
// from the listen address while the app has none.
func (u *UI) codexConfig() string {
	if s := u.relay.CodexConfig(); s != "" {
		return s
	}
	return fallbackCodexConfig(u.relay.ListenAddr())
}

// fallbackCodexConfig is the provider block for a relay on addr.
func fallbackCodexConfig(addr string) string {
	if host, port, err := net.SplitHostPort(addr); err == nil && (host == "" || host == "0.0.0.0" || host == "::") {
		addr = net.JoinHostPort("127.0.0.1", port)
	}
	base := "http://" + addr + "/v1"
	return `model_provider = "codexrelay"

[model_providers.codexrelay]
name = "Codex Relay"
base_url = "` + base + `"
wire_api = "responses"
model_catalog_url = "` + base + `/models"
`
}

func (u *UI) copyText(s string) { u.fa.Clipboard().SetContent(s) }

func (u *UI) copyCodexConfig() {
	u.copyText(u.codexConfig())
	u.fa.SendNotification(fyne.NewNotification("Codex config copied",
		"Paste the provider block into ~/.codex/config.toml, or use Configure Codex… to merge it with a backup."))
}

// configureCodex asks, then merges the provider block into ~/.codex/config.toml (with a backup).
func (u *UI) configureCodex() {
	w := u.parent()
	msg := widget.NewLabel("Codex Relay will add its provider block to ~/.codex/config.toml and make it\n" +
		"Codex's default provider. The current file is copied to a backup first.")
	dialog.ShowCustomConfirm("Configure Codex?", "Configure", "Cancel", msg, func(ok bool) {
		if !ok {
			return
		}
		u.async(func() {
			res, err := u.relay.WriteCodexConfig("")
			fyne.Do(func() {
				if err != nil {
					u.showError(w, err)
					return
				}
				text := "Codex now sends its requests through Codex Relay (" + res.Path + ")."
				switch res.Change {
				case app.Unchanged:
					text = "Codex already sends its requests through Codex Relay; " + res.Path + " is unchanged."
				case app.ConfigUpdated:
					text += "\n\nThe previous config was saved as:\n" + res.Backup
				}
				dialog.ShowInformation("Codex configured", text, w)
			})
		})
	}, w)
}

// openURL opens a web page in the browser (for the ChatGPT sign-in); safe from any goroutine.
func (u *UI) openURL(raw string) error {
	target, err := url.Parse(raw)
	if err != nil {
		return err
	}
	var openErr error
	fyne.DoAndWait(func() { openErr = u.fa.OpenURL(target) })
	return openErr
}

// showError shows err in a dialog on w. A keychain failure says what to install or unlock.
func (u *UI) showError(w fyne.Window, err error) {
	if err == nil {
		return
	}
	u.log.Warn("ui action failed", "error", err)
	var ke *app.KeychainError
	if errors.As(err, &ke) {
		msg := widget.NewLabel("Codex Relay could not use the system keychain:\n" + ke.Err.Error())
		msg.Wrapping = fyne.TextWrapWord
		advice := widget.NewLabel(ke.Advice)
		advice.Wrapping = fyne.TextWrapWord
		advice.TextStyle.Bold = true
		dialog.ShowCustom("Keychain unavailable", "Close", widthBox(460, msg, advice), w)
		return
	}
	dialog.ShowError(err, w)
}
