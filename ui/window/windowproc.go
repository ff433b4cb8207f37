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
)

// RunWindows is the window process (`codexrelay window NAME`, started by the tray process):
// the Fyne app with the windows, reading the relay's live state from the tray process through
// the window API named on the first line of in, and changing the settings and the keychain
// through relay's methods (the tray's relay follows, as it does for the CLI). It opens first,
// then each "open NAME" line of in, answering "shown NAME" on out; it returns when its last
// window closes or in ends (the tray left).
func RunWindows(fa fyne.App, relay *app.App, log *slog.Logger, first string, in io.Reader, out io.Writer) error {
	r := bufio.NewReader(in)
	line, err := r.ReadString('\n')
	f := strings.Fields(line)
	if err != nil || len(f) != 3 || f[0] != "api" {
		return errors.New("the window process is started by the tray app (run codexrelay without arguments)")
	}
	c := newWindowClient(f[1], f[2])
	u := newWindowsUI(fa, relay, log, c)
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
		// The windows sleep until something they show changes: the tray's relay (c.follow), this
		// folder's settings (OnReload) or the Codex home's files (Watch).
		go c.follow(ctx)
		go u.poll(ctx)
		relay.OnReload(u.changed)
		go relay.Watch(ctx)
		go u.codex.Watch(ctx, u.changed)
		u.async(u.checkOrphans)
		show(first)
		go func() {
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					fyne.Do(fa.Quit) // the tray left
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

// newWindowsUI is the UI of a window process: the windows over the tray process's state (c),
// ending the Fyne app when the last window closes.
func newWindowsUI(fa fyne.App, relay *app.App, log *slog.Logger, c *windowClient) *UI {
	u := New(fa, relay, log)
	u.src, u.ctl = c, c
	u.dash.src = c
	u.usage = c
	u.lastClosed = fa.Quit
	fa.SetIcon(iconApp)
	return u
}
