package ui

import (
	"fmt"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/driver/desktop"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/assets"
	"github.com/codexrelay/codexrelay/proxy"
)

// state is what the tray icon shows.
type state int

const (
	stateServing  state = iota // listening, every enabled account ready
	stateDegraded              // listening, some accounts cooling down or needing a sign-in
	stateStopped               // not serving requests: no usable account, or the listener failed
	statePaused                // paused by the user
)

func (s state) String() string {
	switch s {
	case stateServing:
		return "Serving"
	case stateDegraded:
		return "Degraded"
	case statePaused:
		return "Paused"
	}
	return "Stopped"
}

var (
	iconApp      = fyne.NewStaticResource("codexrelay.png", assets.Icon)
	iconServing  = fyne.NewStaticResource("tray-serving.png", assets.TrayServing)
	iconDegraded = fyne.NewStaticResource("tray-degraded.png", assets.TrayDegraded)
	iconStopped  = fyne.NewStaticResource("tray-stopped.png", assets.TrayStopped)
	iconPaused   = fyne.NewStaticResource("tray-paused.png", assets.TrayPaused)
)

func (s state) icon() fyne.Resource {
	switch s {
	case stateServing:
		return iconServing
	case stateDegraded:
		return iconDegraded
	case statePaused:
		return iconPaused
	}
	return iconStopped
}

// trayState derives the tray's state and status line from a snapshot and the listener's
// status. It is pure: the tray, the dashboard header and the tests all call it.
func trayState(snap proxy.Snapshot, st app.ServiceStatus) (state, string) {
	switch {
	case st.Paused:
		return statePaused, "Paused"
	case st.Err != nil:
		return stateStopped, "Stopped: " + st.Err.Error()
	case !st.Running:
		return stateStopped, "Not running"
	}
	where := "Listening on http://" + st.Addr + "/v1"
	var enabled, ready int
	for _, a := range snap.Accounts {
		switch a.State {
		case proxy.StateDisabled:
			continue
		case proxy.StateReady:
			ready++
		}
		enabled++
	}
	switch {
	case len(snap.Accounts) == 0:
		return stateStopped, where + " · no account yet"
	case ready == 0:
		return stateStopped, where + " · no usable account"
	case ready < enabled:
		return stateDegraded, fmt.Sprintf("%s · %d of %d accounts ready", where, ready, enabled)
	}
	return stateServing, where
}

// requestsLine is the tray's second line.
func requestsLine(r proxy.RequestStats) string {
	s := plural(r.Total, "request")
	if r.Errors > 0 {
		s += " · " + plural(r.Errors, "error")
	}
	return s + " · " + count(r.InFlight) + " in flight"
}

// trayMenu is the tray menu for one view: the whole menu is a function of the state, rebuilt
// each tick (Tailscale's systray client does the same), never patched item by item.
func (u *UI) trayMenu(v view) []*fyne.MenuItem {
	_, line := trayState(v.snap, v.svc)
	if u.quitting {
		line = "Stopping: letting requests finish…"
	}
	status := fyne.NewMenuItem(truncate(line, 90), nil)
	status.Disabled = true
	requests := fyne.NewMenuItem(requestsLine(v.snap.Requests), nil)
	requests.Disabled = true

	swr := fyne.NewMenuItem("Stale-while-revalidate", nil)
	swr.Checked = v.snap.Catalog.SWREnabled
	on := !swr.Checked
	swr.Action = func() { u.setStaleWhileRevalidate(on) }

	var pause *fyne.MenuItem
	switch {
	case v.svc.Paused:
		pause = fyne.NewMenuItem("Resume proxy", u.resume)
	case v.svc.Running:
		pause = fyne.NewMenuItem("Pause proxy", u.pause)
	default:
		pause = fyne.NewMenuItem("Start proxy", u.resume)
	}

	quit := fyne.NewMenuItem("Quit", u.quit)
	quit.IsQuit = true // Fyne adds no Quit of its own, and this one drains the proxy first

	return []*fyne.MenuItem{
		status,
		requests,
		fyne.NewMenuItemSeparator(),
		fyne.NewMenuItem("Open Dashboard", u.showDashboard),
		fyne.NewMenuItem("Accounts…", u.showAccounts),
		fyne.NewMenuItem("Settings…", u.showSettings),
		fyne.NewMenuItemSeparator(),
		swr,
		fyne.NewMenuItem("Copy Codex config", u.copyCodexConfig),
		fyne.NewMenuItem("Configure Codex…", u.configureCodex),
		fyne.NewMenuItemSeparator(),
		pause,
		fyne.NewMenuItemSeparator(),
		quit,
	}
}

// Tray is the system-tray presence: one menu and one icon, replaced when the view changes.
type Tray struct {
	menu  *fyne.Menu
	desk  desktop.App // nil without a tray host
	state state
	shown string // signature of the menu on screen
	icon  fyne.Resource
}

func newTray() *Tray {
	return &Tray{menu: fyne.NewMenu("Codex Relay"), state: -1}
}

// Menu is the current tray menu.
func (t *Tray) Menu() *fyne.Menu { return t.menu }

// show puts items on the tray, touching the system tray only when something visible changed
// (a rebuilt native menu closes itself on some desktops).
func (t *Tray) show(items []*fyne.MenuItem, s state) {
	// An unchanged menu keeps its items: the native menu holds their actions.
	if sig := menuSignature(items); sig != t.shown {
		t.shown = sig
		t.menu.Items = items
		if t.desk != nil {
			t.desk.SetSystemTrayMenu(t.menu)
		}
	}
	if s != t.state {
		t.state = s
		t.icon = s.icon()
		if t.desk != nil {
			t.desk.SetSystemTrayIcon(t.icon)
		}
	}
}

func menuSignature(items []*fyne.MenuItem) string {
	var b strings.Builder
	for _, it := range items {
		fmt.Fprintf(&b, "%s|%t|%t|%t\n", it.Label, it.Checked, it.Disabled, it.IsSeparator)
	}
	return b.String()
}
