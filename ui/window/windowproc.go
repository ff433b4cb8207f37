package window

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"

	"fyne.io/fyne/v2"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/ui/source"
)

// RunWindows is the window process (`codexrelay window NAME`, started by the tray process):
// the Fyne app with the windows, reading the relay's live state from the tray process through
// the window API named on the first line of in, and changing the settings and the keychain
// through store's methods (the tray's relay follows, as it does for the CLI). It opens first,
// then each "open NAME" line of in, answering "shown NAME" on out; it returns when its last
// window closes or in ends (the tray left).
func RunWindows(fa fyne.App, store *app.App, log *slog.Logger, first string, in io.Reader, out io.Writer) error {
	r := bufio.NewReader(in)
	line, err := r.ReadString('\n')
	f := strings.Fields(line)
	if err != nil || len(f) != 3 || f[0] != "api" {
		return errors.New("the window process is started by the tray app (run codexrelay without arguments)")
	}
	c := newWindowClient(f[1], f[2])
	// The windows are built, and their first view read from the tray, on a goroutine while the
	// driver starts and makes the first window's GL context: one after the other they took
	// 0.14 s and 0.25 s (Xvfb's software GL), and a click opened the dashboard in 0.65 s. The
	// build makes widgets that no window shows yet; the dashboard window itself is made on the
	// UI thread (warmDashboard).
	fa.Settings().SetTheme(newTheme())
	type built struct {
		u *UI
		v view
	}
	ready := make(chan built, 1)
	go func() {
		u := newWindowsUI(fa, store, log, c)
		ready <- built{u, u.fetch()}
	}()
	var u *UI
	var outMu sync.Mutex
	show := func(name string) {
		u.OpenWindow(name)
		outMu.Lock()
		fmt.Fprintf(out, "shown %s\n", name)
		outMu.Unlock()
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fa.Lifecycle().SetOnStarted(func() {
		var warm fyne.Window
		if first == source.WindowDashboard {
			warm = warmDashboard(fa)
		}
		b := <-ready
		u = b.u
		u.apply(b.v)
		if warm != nil {
			u.adoptDashboard(warm)
		}
		// The windows sleep until something they show changes: the tray's relay (c.follow), this
		// folder's settings (OnReload) or the Codex home's files (Watch).
		go c.follow(ctx)
		go u.poll(ctx)
		store.OnReload(u.changed)
		go store.Watch(ctx)
		go u.codex.Watch(ctx, u.changed)
		u.async(u.checkOrphans)
		show(first)
		go func() {
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					// The tray left (Quit): the windows go with it.
					if TrayLeft != nil {
						TrayLeft()
					}
					fyne.Do(fa.Quit)
					return
				}
				if name, ok := strings.CutPrefix(strings.TrimSpace(line), "open "); ok {
					fyne.Do(func() { show(name) })
				}
			}
		}()
	})
	fa.Run()
	return nil
}

// TrayLeft, when set, is called when the tray process left (its end of the pipe closed) before
// the Fyne app quits. The window process (main.go) exits there and then: it holds nothing to
// save (every file it writes is replaced whole, at once), and the windows' teardown (each
// window's GL context, GLFW's, the lifecycle's queue) is what the tray's Quit would otherwise
// wait on, while the windows stay on screen.
var TrayLeft func()

// warmDashboard makes and shows the dashboard's window, empty, while the windows are built:
// its GL context is the process's first, the costly one. The content follows within the same
// turn of the UI thread once the build is done, so the empty window is seldom painted at all.
func warmDashboard(fa fyne.App) fyne.Window {
	w := fa.NewWindow("Codex Relay")
	w.SetIcon(iconApp)
	w.Resize(DashboardSize)
	w.CenterOnScreen()
	w.Show()
	return w
}

// newWindowsUI is the UI of a window process: the windows over the tray process's state (c),
// ending the Fyne app when the last window closes.
func newWindowsUI(fa fyne.App, store *app.App, log *slog.Logger, c *windowClient) *UI {
	u := New(fa, store, log)
	u.src, u.ctl = c, c
	u.dash.src = c
	u.usage = c
	u.lastClosed = fa.Quit
	fa.SetIcon(iconApp)
	return u
}
