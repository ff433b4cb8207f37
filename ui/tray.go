// Package ui is the Fyne tray menu over the app: a thin client that reads the proxy's stats
// snapshot and acts only through app methods.
package ui

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/driver/desktop"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/assets"
)

// Tray is the menu-bar presence of Codex Relay.
type Tray struct {
	fa    fyne.App
	relay *app.App
	log   *slog.Logger

	menu     *fyne.Menu
	status   *fyne.MenuItem
	requests *fyne.MenuItem

	mu      sync.Mutex
	serving string // listening address, or ""
	stopErr error  // why the proxy stopped
}

// New builds the tray for relay on the Fyne app fa.
func New(fa fyne.App, relay *app.App, log *slog.Logger) *Tray {
	t := &Tray{fa: fa, relay: relay, log: log}
	t.status = fyne.NewMenuItem("Starting…", nil)
	t.status.Disabled = true
	t.requests = fyne.NewMenuItem("Requests: 0", nil)
	t.requests.Disabled = true
	t.menu = fyne.NewMenu("Codex Relay", t.status, t.requests)
	return t
}

// Menu is the tray menu (Fyne appends Quit).
func (t *Tray) Menu() *fyne.Menu { return t.menu }

// StatusLine says where the proxy listens, or why it stopped.
func (t *Tray) StatusLine() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.stopErr != nil:
		return "Stopped: " + t.stopErr.Error()
	case t.serving != "":
		return "Listening on http://" + t.serving + "/v1"
	}
	return "Starting…"
}

// refresh rebuilds the menu labels from the current snapshot.
func (t *Tray) refresh() {
	t.status.Label = t.StatusLine()
	snap := t.relay.Proxy.Stats()
	t.requests.Label = fmt.Sprintf("Requests: %d (%d in flight)", snap.Requests.Total, snap.Requests.InFlight)
	t.menu.Refresh()
}

// Run starts the proxy and the tray, and blocks in the Fyne event loop until Quit. Quitting
// stops the proxy, letting in-flight requests drain.
func Run(fa fyne.App, relay *app.App, log *slog.Logger) {
	t := New(fa, relay, log)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	addr := relay.ListenAddr()
	go func() {
		defer close(done)
		t.mu.Lock()
		t.serving = addr
		t.mu.Unlock()
		err := relay.Serve(ctx, addr, false)
		t.mu.Lock()
		t.serving = ""
		if err != nil {
			t.stopErr = err
			log.Error("proxy stopped", "error", err)
		}
		t.mu.Unlock()
		fyne.Do(t.refresh)
	}()
	if desk, ok := fa.(desktop.App); ok {
		icon := fyne.NewStaticResource("codexrelay.png", assets.Icon)
		fa.SetIcon(icon)
		desk.SetSystemTrayIcon(icon)
		desk.SetSystemTrayMenu(t.menu)
	} else {
		log.Warn("this desktop has no system tray support")
	}
	go func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				fyne.Do(t.refresh)
			case <-done:
				return
			}
		}
	}()
	fa.Lifecycle().SetOnStopped(func() {
		cancel()
		<-done
	})
	fa.Run()
}
