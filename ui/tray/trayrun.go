// Package tray is Codex Relay's tray process (`codexrelay` with no arguments: RunTray): the
// relay in-process, its tray icon and menu through fyne.io/systray, and the desktop
// notifications. It has no Fyne app and no GL loop, so it costs nothing at idle, and imports no
// Fyne package: the menu is its own small model (menu.go; trayMenu builds it, systrayBackend
// draws it), and TestTrayImportsNoFyne keeps it so. Every window lives in a window process
// (ui/window), which it starts on demand (windowLauncher) and which reads the relay's live
// state from it over loopback (the window API, windowapi.go); it never imports the window
// process's package. What both processes show is ui/look's, what both read of the relay
// ui/source's.
package tray

import (
	"bytes"
	"context"
	"encoding/binary"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"fyne.io/systray"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/app/relay"
	"github.com/codexrelay/codexrelay/ui/source"
)

// RunTray is the tray process (`codexrelay` with no arguments): it starts the relay, shows the
// tray through fyne.io/systray and blocks until Quit (or SIGINT/SIGTERM), which drains the
// requests in flight first. Windows open in a window process (exe window NAME) it starts on
// demand. inst is this process's claim to be the running Codex Relay: a second launch brings
// the dashboard up through it. It must run on the main goroutine (systray needs the main
// thread on macOS and Windows).
func RunTray(relay *relay.Relay, log *slog.Logger, inst *app.Instance, exe string) {
	t := NewTray(relay, log)
	t.svc.Instance = inst
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	api := &windowAPI{src: relay.Proxy, ctl: t.svc, usage: func() source.UsageSource { return t.usage }, token: newToken()}
	base, err := serveWindowAPI(ctx, api)
	if err != nil {
		log.Error("no window API: the windows cannot open", "error", err)
	}
	hostOK, why := trayHost()
	windows := &windowLauncher{
		command:  func(name string) *exec.Cmd { return exec.Command(exe, "window", name) },
		base:     base,
		token:    api.token,
		log:      log,
		patience: 20 * time.Second,
	}
	if !hostOK {
		// Without a tray icon the dashboard stands for the app: closing it quits, as before.
		log.Warn("showing the dashboard window instead of a tray icon", "reason", why)
		windows.ended = func() {
			if !windows.running() {
				t.quit()
			}
		}
	}
	t.open = windows.Open
	t.exit = systray.Quit
	if inst != nil {
		if err := inst.OnShow(func() { t.open(source.WindowDashboard) }); err != nil {
			log.Warn("a second launch cannot reach this one", "error", err)
		}
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-sig
		t.quit() // the session ends us: drain, then leave (exit 0)
	}()

	runSystray(trayTitle, iconBytes(iconStopped.png), t.tapped, func() {
		t.mu.Lock()
		t.tray.backend = &systrayBackend{}
		t.tray.shown, t.tray.state, t.tray.tooltip = "", -1, "" // push the first menu, icon and tooltip
		t.mu.Unlock()
		// The listener's status changes reach the loop as the relay's changes (Service touches
		// the proxy), as the windows see them.
		if err := t.svc.Start(); err != nil {
			log.Error("proxy not started", "error", err) // the tray and the dashboard show it too
		}
		t.refresh()
		go t.loop(ctx)
		// Follow the settings file: changes made by the CLI or the windows apply within a moment.
		go relay.Watch(ctx)
		// Keep the bundle of authorities Codex trusts as current as the system's.
		go relay.FollowTrust(ctx)
		if err := relay.LoadWarning; err != nil {
			t.notes.add("Codex Relay: the settings file was corrupt", err.Error())
		}
		// First run, a port taken, a corrupt file, a local key that cannot be read or no tray
		// icon: say so in a window, even where the tray is hard to find.
		if !hostOK || len(relay.Accounts()) == 0 || !t.status().Running || relay.LoadWarning != nil || relay.LocalKeyError() != nil {
			t.open(source.WindowDashboard)
		}
	}, func() {
		windows.Close()
		cancel()
	})
}

// trayTitle is the tray item's title, which some hosts show beside or instead of the icon.
const trayTitle = "Codex Relay"

// runSystray runs fyne.io/systray's loop (blocking, on the main goroutine) with the item's
// title, first icon and left-click handler set before the item is exported. On Linux systray
// starts onReady on a goroutine of its own and exports the StatusNotifierItem meanwhile, its
// ItemIsMenu computed once from whether a click handler is set: set in onReady, the handler
// could come after, and the item went out with ItemIsMenu true and no title (1 start in 23
// under load), so that the host showed the menu on a left click instead of asking for the
// dashboard. TestTheTrayItemTakesLeftClicks reads both from the bus.
//
// The click handler is a variable, safe to set first everywhere. The title and the icon are set
// first where systray only stores them until the export (over D-Bus: not on Windows or macOS,
// whose native calls need the loop), and again once it runs.
func runSystray(title string, icon []byte, tapped func(), onReady, onExit func()) {
	systray.SetOnTapped(tapped)
	if runtime.GOOS != "windows" && runtime.GOOS != "darwin" {
		systray.SetTitle(title)
		systray.SetIcon(icon)
	}
	systray.Run(func() {
		systray.SetTitle(title)
		onReady()
	}, onExit)
}

// systrayBackend is the tray on fyne.io/systray. Each new menu replaces the whole native one;
// one goroutine per item waits for its clicks until the next menu.
type systrayBackend struct {
	done chan struct{} // closed when the items it belongs to are replaced
}

func (b *systrayBackend) SetMenu(items []*menuItem) {
	if b.done != nil {
		close(b.done)
	}
	done := make(chan struct{})
	b.done = done
	systray.ResetMenu()
	for _, it := range items {
		if it.Separator {
			systray.AddSeparator()
			continue
		}
		mi := systray.AddMenuItem(it.Label, "")
		if it.Icon != nil {
			mi.SetIcon(iconBytes(it.Icon.png))
		}
		if it.Disabled {
			mi.Disable()
		}
		if act := it.Action; act != nil {
			go func(clicked chan struct{}) {
				for {
					select {
					case <-clicked:
						act()
					case <-done:
						return
					}
				}
			}(mi.ClickedCh)
		}
	}
}

func (b *systrayBackend) SetIcon(icon *trayIcon) { systray.SetIcon(iconBytes(icon.png)) }

func (b *systrayBackend) SetTooltip(text string) { systray.SetTooltip(text) }

// iconBytes is an icon as systray takes it: PNG, or on Windows an ICO that holds the PNG.
func iconBytes(png []byte) []byte {
	if runtime.GOOS != "windows" {
		return png
	}
	return pngICO(png)
}

// pngICO wraps a PNG in an ICO file of one image (Windows reads PNG-compressed icons).
func pngICO(png []byte) []byte {
	var b bytes.Buffer
	le := func(v any) { binary.Write(&b, binary.LittleEndian, v) }
	le([3]uint16{0, 1, 1})   // reserved, type icon, one image
	w, h := byte(0), byte(0) // 0 means 256 or more
	if len(png) > 24 {
		if x := binary.BigEndian.Uint32(png[16:20]); x < 256 {
			w = byte(x)
		}
		if y := binary.BigEndian.Uint32(png[20:24]); y < 256 {
			h = byte(y)
		}
	}
	b.Write([]byte{w, h, 0, 0})
	le([2]uint16{1, 32})                    // planes, bits per pixel
	le([2]uint32{uint32(len(png)), 6 + 16}) // size, offset
	b.Write(png)
	return b.Bytes()
}
