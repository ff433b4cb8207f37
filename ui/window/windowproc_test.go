package window

import (
	"log/slog"
	"sync/atomic"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/ui/source"
	"github.com/codexrelay/codexrelay/ui/uitest"
)

// The windows of a window process show the tray process's relay: its accounts, its listener,
// its pause and its catalog figures, read through the window API (the window process builds
// no relay); and the process ends when its last window closes, not before.
func TestWindowProcessShowsTheTraysRelay(t *testing.T) {
	uitest.NeedKeyring(t)
	// The tray's relay serves a catalog without stale-while-revalidate (its environment says
	// so); the window process's own environment and settings say nothing of it.
	tray, relay := newTestUI(t, map[string]string{"CODEXRELAY_LISTEN": "127.0.0.1:0", "MODELS_STALE_WHILE_REVALIDATE": "false"})
	if _, err := relay.AddAccount(app.NewAccount{Name: "work", Kind: "openai", BaseURL: "http://127.0.0.1:9/v1"}, app.Secret{APIKey: "sk-test-1"}); err != nil {
		t.Fatal(err)
	}
	if err := tray.svc.Start(); err != nil {
		t.Fatal(err)
	}
	c := serveAPI(t, relay.Proxy, tray.svc, source.RelayUsage(relay))

	// The window process has its own app over the same settings folder, as the CLI would,
	// without a relay.
	other, err := app.Open(app.Options{ConfigDir: relay.ConfigDir(), Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatalf("the window process's app: %v", err)
	}
	fa := test.NewTempApp(t)
	u := newWindowsUI(fa, other, slog.New(slog.DiscardHandler), c)
	u.async = func(f func()) { f() }
	var ended atomic.Int32
	u.lastClosed = func() { ended.Add(1) }

	u.OpenWindow("dashboard")
	content := u.dashWin.Content()
	mustShow(t, content, "work")
	mustContain(t, content, "Listening on http://"+tray.svc.Status().Addr+"/v1")

	// Paused in the tray: the dashboard says so and its Resume reaches the tray's listener.
	tray.svc.Pause()
	u.refresh()
	mustContain(t, content, "Paused")
	tapButton(t, content, "Resume")
	if !tray.svc.Status().Running {
		t.Fatal("Resume in the window did not resume the tray's listener")
	}

	u.OpenWindow("settings")
	if u.settings.fields[app.SettingSWR].check.Checked {
		t.Error("the settings window shows a catalog figure that is not the tray relay's")
	}

	// (Fyne's test windows have no close button: the intercepts call hideWindow, as a close does
	// under a window manager; the end-to-end run in ui/cmd/screenshot/split.sh closes real ones.)
	u.hideWindow(u.settings.win)
	u.OpenWindow("accounts")
	u.hideWindow(u.accounts.win)
	if ended.Load() != 0 {
		t.Fatal("the process would end with the dashboard still open")
	}
	u.hideWindow(u.dashWin)
	if ended.Load() != 1 {
		t.Errorf("after the last window closed: ended %d times", ended.Load())
	}
}

// Each window is centred the first time it shows (Accounts and Settings opened at the screen's
// corner, partly off it), and left where the user put it after that.
func TestWindowsOpenCentred(t *testing.T) {
	u, _ := newTestUI(t, nil)
	centred := map[string]int{}
	u.center = func(w fyne.Window) { centred[w.Title()]++ }
	for range 2 {
		for _, name := range []string{"dashboard", "accounts", "settings", "usage"} {
			u.OpenWindow(name)
		}
	}
	for _, title := range []string{"Codex Relay", "Accounts – Codex Relay", "Settings – Codex Relay", "Usage – Codex Relay"} {
		if centred[title] != 1 {
			t.Errorf("%s centred %d times, want once", title, centred[title])
		}
	}
}
