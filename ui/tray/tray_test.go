package tray

import (
	"bytes"
	"encoding/binary"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/app/relay"
	"github.com/codexrelay/codexrelay/proxy"
	"github.com/codexrelay/codexrelay/ui/look"
	"github.com/codexrelay/codexrelay/ui/source"
	"github.com/codexrelay/codexrelay/ui/uitest"
)

func TestTrayState(t *testing.T) {
	acct := func(state string) proxy.AccountStats { return proxy.AccountStats{Name: state, State: state} }
	snap := func(states ...string) proxy.Snapshot {
		s := proxy.Snapshot{}
		for _, st := range states {
			s.Accounts = append(s.Accounts, acct(st))
		}
		return s
	}
	taken := errors.New("cannot listen on 127.0.0.1:7455: the port is taken")
	for _, c := range []struct {
		name  string
		snap  proxy.Snapshot
		svc   app.ServiceStatus
		state look.State
		label string
	}{
		{"serving", snap("ready", "ready", "disabled"), uitest.Running(), look.Serving, "Listening on http://127.0.0.1:7455/v1"},
		{"degraded: cooldown", snap("ready", "cooldown"), uitest.Running(), look.Degraded, "Listening on http://127.0.0.1:7455/v1 · 1 of 2 accounts ready"},
		{"degraded: needs login", snap("needs_login", "ready", "ready"), uitest.Running(), look.Degraded, "Listening on http://127.0.0.1:7455/v1 · 2 of 3 accounts ready"},
		// Counted over every configured account, as the dashboard's summary counts them.
		{"degraded: some disabled", snap("ready", "cooldown", "disabled", "disabled"), uitest.Running(), look.Degraded,
			"Listening on http://127.0.0.1:7455/v1 · 1 of 4 accounts ready (2 disabled)"},
		{"stopped: no account", snap(), uitest.Running(), look.Stopped, "Listening on http://127.0.0.1:7455/v1 · no account yet"},
		{"stopped: none usable", snap("cooldown", "needs_login", "disabled"), uitest.Running(), look.Stopped, "Listening on http://127.0.0.1:7455/v1 · no usable account"},
		{"stopped: port taken", snap("ready"), app.ServiceStatus{Addr: "127.0.0.1:7455", Err: taken}, look.Stopped, "Stopped: " + taken.Error()},
		{"stopped: not started", snap("ready"), app.ServiceStatus{}, look.Stopped, "Not running"},
		{"paused", snap("ready"), app.ServiceStatus{Addr: "127.0.0.1:7455", Paused: true}, look.Paused, "Paused"},
		{"stopped: the local key cannot be read", snap("ready"), app.ServiceStatus{Addr: "127.0.0.1:7455", Running: true, Refusing: "the local API key is on but cannot be read"},
			look.Stopped, "Refusing every client: the local key cannot be read"},
	} {
		s, label := look.StateOf(c.snap, c.svc)
		if s != c.state || label != c.label {
			t.Errorf("%s: got %v %q, want %v %q", c.name, s, label, c.state, c.label)
		}
	}
	// Four states, four different icons.
	seen := map[string]bool{}
	for _, s := range []look.State{look.Serving, look.Degraded, look.Stopped, look.Paused} {
		seen[string(stateIcon(s).png)] = true
	}
	if len(seen) != 4 {
		t.Errorf("%d distinct tray icons, want 4", len(seen))
	}
}

// newTestTray is the tray process over a real app in a temporary config folder, with a tray
// that records what it is handed; windows asked for are recorded in opened. Slow actions run
// inline.
func newTestTray(t *testing.T, env map[string]string) (tr *TrayApp, relay *relay.Relay, tray *fakeTray, opened *[]string) {
	t.Helper()
	relay = uitest.Relay(t, env) // the same app set-up as the windows' tests
	tr = NewTray(relay, slog.New(slog.DiscardHandler))
	t.Cleanup(tr.svc.Stop)
	tray = &fakeTray{}
	tr.tray.backend = tray
	tr.async = func(f func()) { f() }
	opened = new([]string)
	tr.open = func(name string) { *opened = append(*opened, name) }
	tr.copyText = func(string) error { return errNoClipboardTool }
	tr.notes.send = func(title, body string) {}
	return tr, relay, tray, opened
}

// fakeTray records what the tray hands the desktop, and fails the test (by panicking, as
// systray did on a closed D-Bus connection) if anything comes after ended.
type fakeTray struct {
	mu                 sync.Mutex
	menus, icons, tips int
	lastTip            string
	ended              bool
}

func (f *fakeTray) touch() {
	if f.ended {
		panic("the tray was touched after it ended")
	}
}
func (f *fakeTray) SetMenu([]*menuItem) { f.mu.Lock(); defer f.mu.Unlock(); f.touch(); f.menus++ }
func (f *fakeTray) SetIcon(*trayIcon)   { f.mu.Lock(); defer f.mu.Unlock(); f.touch(); f.icons++ }
func (f *fakeTray) SetTooltip(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.touch()
	f.tips++
	f.lastTip = s
}
func (f *fakeTray) end() { f.mu.Lock(); f.ended = true; f.mu.Unlock() }

// trayItem is the item of the tray menu shown now labelled label; it fails the test when
// there is none.
func trayItem(t *testing.T, tr *TrayApp, label string) *menuItem {
	t.Helper()
	for _, it := range tr.Menu() {
		if it.Label == label {
			return it
		}
	}
	t.Fatalf("no menu item %q in %q", label, labels(tr.Menu()))
	return nil
}

// labels are the labels of menu items ("" for a separator).
func labels(items []*menuItem) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.Label)
	}
	return out
}

func TestTrayMenuFollowsTheProxy(t *testing.T) {
	tr, relay, _, opened := newTestTray(t, map[string]string{"CODEXRELAY_LISTEN": "127.0.0.1:0"})
	if err := tr.svc.Start(); err != nil {
		t.Fatal(err)
	}
	tr.refresh()
	items := tr.Menu()
	addr := tr.svc.Status().Addr
	if got := items[0].Label; got != "Listening on http://"+addr+"/v1 · no account yet" || !items[0].Disabled {
		t.Fatalf("status line %q", got)
	}
	if tr.tray.state != look.Stopped || tr.tray.icon != iconStopped {
		t.Errorf("state %v without an account", tr.tray.state)
	}

	// One request (no account: a 503) shows in the count.
	srv := httptest.NewServer(relay.Proxy)
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/v1/responses", "application/json", strings.NewReader(`{"model":"m","input":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	tr.refresh()
	if got := tr.Menu()[1].Label; got != "1 request · 1 error" {
		t.Errorf("requests line %q", got)
	}
	// Each window item asks the window process for its window.
	for label, window := range map[string]string{"Open Dashboard": "dashboard", "Usage…": "usage", "Accounts…": "accounts",
		"Settings…": "settings", "Configure Codex…": "configure-codex"} {
		*opened = nil
		trayItem(t, tr, label).Action()
		if !slices.Equal(*opened, []string{window}) {
			t.Errorf("%s asked for %q, want %q", label, *opened, window)
		}
	}
	// Stale-while-revalidate moved to the Settings window.
	for _, it := range tr.Menu() {
		if strings.Contains(it.Label, "Stale") {
			t.Errorf("the tray still has %q", it.Label)
		}
	}

	// Pause and resume through the menu.
	trayItem(t, tr, "Pause proxy").Action()
	tr.refresh()
	if st := tr.svc.Status(); !st.Paused || st.Running {
		t.Fatalf("after Pause: %+v", st)
	}
	if tr.Menu()[0].Label != "Paused" || tr.tray.state != look.Paused {
		t.Errorf("paused menu %q, state %v", tr.Menu()[0].Label, tr.tray.state)
	}
	trayItem(t, tr, "Resume proxy").Action()
	tr.refresh()
	if st := tr.svc.Status(); !st.Running {
		t.Fatalf("after Resume: %+v", st)
	}

	// Quit is last, and stops the listener before the tray ends.
	last := tr.Menu()[len(tr.Menu())-1]
	if !last.Quit || last.Label != "Quit" {
		t.Fatalf("last item %q (Quit %v)", last.Label, last.Quit)
	}
	exited := false
	tr.exit = func() {
		if tr.svc.Status().Running {
			t.Error("the tray ended before the listener stopped")
		}
		exited = true
	}
	last.Action()
	if tr.svc.Status().Running || !exited {
		t.Errorf("Quit: running %v, tray ended %v", tr.svc.Status().Running, exited)
	}
}

// Quit panicked in 2 of 4 tries: a tick updated the tray icon while systray closed its D-Bus
// connection. Once Quit has begun to leave, no tick, however late, touches the tray.
func TestTrayQuitNeverTouchesTheTrayAfterwards(t *testing.T) {
	tr, _, tray, _ := newTestTray(t, nil)
	tr.src = &movingSource{}
	tr.refresh()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 { // ticks racing with the Quit, each with something new to show
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				tr.refresh()
			}
		}()
	}
	tr.async = func(f func()) { go f() } // as in the app
	done := make(chan struct{})
	tr.exit = func() { tray.end(); close(done) } // from here on, a touch panics
	tr.quit()
	uitest.Receive(t, done, "the tray's exit")
	for range 100 {
		tr.refresh()
	}
	close(stop)
	wg.Wait()
	if got := tr.Menu()[0].Label; got != "Stopping: letting requests finish…" {
		t.Errorf("while quitting the tray said %q", got)
	}
}

// movingSource has one more request at each look, so that each tick has a new menu to show.
type movingSource struct{ n atomic.Int64 }

func (m *movingSource) Stats() proxy.Snapshot {
	return proxy.Snapshot{Requests: proxy.RequestStats{Total: m.n.Add(1)}}
}
func (m *movingSource) Traces(int) []proxy.Trace           { return nil }
func (m *movingSource) Changes() (uint64, <-chan struct{}) { return source.Never() }

// A left click on the icon asks the window process for the dashboard; the tray process itself
// has no window to open.
func TestTrayLeftClickOpensTheDashboard(t *testing.T) {
	tr, _, _, opened := newTestTray(t, nil)
	tr.tapped()
	if !slices.Equal(*opened, []string{"dashboard"}) {
		t.Errorf("a left click asked for %q", *opened)
	}
}

func TestTrayCopiesCodexConfig(t *testing.T) {
	tr, _, _, opened := newTestTray(t, map[string]string{"CODEXRELAY_LISTEN": "127.0.0.1:7999"})
	var got string
	notes := make(chan string, 4)
	tr.copyText = func(s string) error { got = s; return nil }
	tr.notes.send = func(title, _ string) { notes <- title }
	tr.refresh()
	trayItem(t, tr, "Copy Codex config").Action()
	if !strings.Contains(got, `base_url = "http://127.0.0.1:7999/v1"`) || len(*opened) != 0 {
		t.Errorf("clipboard:\n%s (windows asked for: %q)", got, *opened)
	}
	select {
	case n := <-notes:
		if n != "Codex config copied" {
			t.Errorf("notification %q", n)
		}
	case <-time.After(5 * time.Second):
		t.Error("no notification said it was copied")
	}
	// Without a clipboard tool, the window process copies it.
	tr.copyText = func(string) error { return errNoClipboardTool }
	trayItem(t, tr, "Copy Codex config").Action()
	if !slices.Equal(*opened, []string{"copy-codex-config"}) {
		t.Errorf("without a clipboard tool it asked for %q", *opened)
	}
}

// The tray lists each account: a dot in its state's colour, its name, its usage or the clock
// time its rest ends, and which account served last and serves next.
func TestTrayMenuAccountLines(t *testing.T) {
	tr, _, _, opened := newTestTray(t, nil)
	src := uitest.Sample()
	src.Snapshot.Accounts[0].Quota.PrimaryResetsAt = uitest.Now.Add(time.Hour)
	src.Snapshot.Next = "personal"
	src.Snapshot.LastServed = "team"
	st := uitest.Running()
	tr.src, tr.fixed, tr.now = src, &st, func() time.Time { return uitest.Now }
	tr.refresh()
	items := tr.Menu()
	want := []struct {
		label string
		dot   look.Tone
	}{
		{"personal · 5 h 37% · week 62% · serving next", look.Good},
		{"team · limit until 14:36 · served last", look.Warn},
		{"api · key rejected", look.Bad},
	}
	for i, w := range want {
		it := items[3+i]
		if it.Label != w.label || it.Icon != dotIcons()[w.dot] || it.Disabled {
			t.Errorf("line %d: %q (icon %v), want %q with the %v dot", i, it.Label, it.Icon, w.label, w.dot)
		}
	}
	if !items[6].Separator {
		t.Errorf("no separator after the accounts: %q", labels(items))
	}
	// A line opens the accounts window.
	items[3].Action()
	if !slices.Equal(*opened, []string{"accounts"}) {
		t.Errorf("an account's line asked for %q", *opened)
	}
	// A failing account rests (over by 14:33: never "until" the minute it is); a disabled one
	// says so.
	until := uitest.Now.Add(30 * time.Second)
	src.Snapshot.Accounts[1].CooldownReason, src.Snapshot.Accounts[1].CooldownUntil = proxy.CooldownFailing, &until
	src.Snapshot.Accounts[2].State = proxy.StateDisabled
	tr.refresh()
	items = tr.Menu()
	if items[4].Label != "team · resting until 14:33 · served last" || items[5].Label != "api · disabled" ||
		items[5].Icon != dotIcons()[look.Dim] {
		t.Errorf("lines %q", labels(items[3:6]))
	}
}

// An unchanged view rebuilds nothing: the desktop gets the menu, the icon and the tooltip
// once, and again only when what they show changed.
func TestTrayRebuildsOnlyWhatChanged(t *testing.T) {
	tr, _, desk, _ := newTestTray(t, nil)
	src := uitest.Sample()
	st := uitest.Running()
	tr.src, tr.fixed, tr.now = src, &st, func() time.Time { return uitest.Now }
	tr.refresh()
	first := tr.Menu()[0]
	tr.refresh()
	tr.refresh()
	if desk.menus != 1 || desk.icons != 1 || desk.tips != 1 {
		t.Fatalf("three identical views: %d menus, %d icons, %d tooltips", desk.menus, desk.icons, desk.tips)
	}
	if tr.Menu()[0] != first {
		t.Error("an unchanged menu was rebuilt")
	}
	if desk.lastTip != "Codex Relay: Degraded · Listening on http://127.0.0.1:7455/v1 · 1 of 3 accounts ready" {
		t.Errorf("tooltip %q", desk.lastTip)
	}
	// The clock moves, nothing else: still nothing.
	tr.now = func() time.Time { return uitest.Now.Add(40 * time.Second) }
	tr.refresh()
	if desk.menus != 1 {
		t.Errorf("the clock alone rebuilt the menu")
	}
	// Requests start and finish: the menu leaves the requests in flight out.
	for _, n := range []int64{3, 0, 1} {
		src.Snapshot.Requests.InFlight = n
		tr.refresh()
	}
	if desk.menus != 1 || desk.icons != 1 || desk.tips != 1 {
		t.Errorf("requests in flight: %d menus, %d icons, %d tooltips", desk.menus, desk.icons, desk.tips)
	}
	for _, it := range tr.Menu() {
		if strings.Contains(it.Label, "in flight") {
			t.Errorf("the menu says %q", it.Label)
		}
	}
	// A new request changes the second line: one new menu, same icon and tooltip.
	src.Snapshot.Requests.Total++
	tr.refresh()
	if desk.menus != 2 || desk.icons != 1 || desk.tips != 1 {
		t.Errorf("after a request: %d menus, %d icons, %d tooltips", desk.menus, desk.icons, desk.tips)
	}
	// Every account ready: a new icon and tooltip.
	for i := range src.Snapshot.Accounts {
		src.Snapshot.Accounts[i].State = proxy.StateReady
	}
	tr.refresh()
	if desk.icons != 2 || desk.tips != 2 || tr.tray.state != look.Serving {
		t.Errorf("all ready: %d icons, %d tooltips, state %v", desk.icons, desk.tips, tr.tray.state)
	}
}

// On Windows the tray takes ICO files: the PNG goes in one, whole, with its size.
func TestPNGInICO(t *testing.T) {
	png := iconServing.png
	ico := pngICO(png)
	if !bytes.Equal(ico[:6], []byte{0, 0, 1, 0, 1, 0}) || !bytes.Equal(ico[22:], png) {
		t.Fatalf("ico header % x", ico[:22])
	}
	if size := binary.LittleEndian.Uint32(ico[14:18]); size != uint32(len(png)) {
		t.Errorf("size %d, want %d", size, len(png))
	}
}
