package ui

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/proxy"
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
		state state
		label string
	}{
		{"serving", snap("ready", "ready", "disabled"), running(), stateServing, "Listening on http://127.0.0.1:7455/v1"},
		{"degraded: cooldown", snap("ready", "cooldown"), running(), stateDegraded, "Listening on http://127.0.0.1:7455/v1 · 1 of 2 accounts ready"},
		{"degraded: needs login", snap("needs_login", "ready", "ready"), running(), stateDegraded, "Listening on http://127.0.0.1:7455/v1 · 2 of 3 accounts ready"},
		{"stopped: no account", snap(), running(), stateStopped, "Listening on http://127.0.0.1:7455/v1 · no account yet"},
		{"stopped: none usable", snap("cooldown", "needs_login", "disabled"), running(), stateStopped, "Listening on http://127.0.0.1:7455/v1 · no usable account"},
		{"stopped: port taken", snap("ready"), app.ServiceStatus{Addr: "127.0.0.1:7455", Err: taken}, stateStopped, "Stopped: " + taken.Error()},
		{"stopped: not started", snap("ready"), app.ServiceStatus{}, stateStopped, "Not running"},
		{"paused", snap("ready"), app.ServiceStatus{Addr: "127.0.0.1:7455", Paused: true}, statePaused, "Paused"},
	} {
		s, label := trayState(c.snap, c.svc)
		if s != c.state || label != c.label {
			t.Errorf("%s: got %v %q, want %v %q", c.name, s, label, c.state, c.label)
		}
	}
	// Four states, four different icons.
	seen := map[string]bool{}
	for _, s := range []state{stateServing, stateDegraded, stateStopped, statePaused} {
		seen[string(s.icon().Content())] = true
	}
	if len(seen) != 4 {
		t.Errorf("%d distinct tray icons, want 4", len(seen))
	}
}

func TestTrayMenuFollowsTheProxy(t *testing.T) {
	u, relay := newTestUI(t, map[string]string{"CODEXRELAY_LISTEN": "127.0.0.1:0"})
	if err := u.svc.Start(); err != nil {
		t.Fatal(err)
	}
	u.refresh()
	m := u.tray.Menu()
	addr := u.svc.Status().Addr
	if got := m.Items[0].Label; got != "Listening on http://"+addr+"/v1 · no account yet" || !m.Items[0].Disabled {
		t.Fatalf("status line %q", got)
	}
	if u.tray.state != stateStopped || u.tray.icon != iconStopped {
		t.Errorf("state %v without an account", u.tray.state)
	}
	u.showDashboard()
	if got := u.dash.stateText.Text; got != "Not serving" {
		t.Errorf("dashboard header says %q while listening without an account", got)
	}

	// One request (no account: a 503) shows in the count.
	srv := httptest.NewServer(relay.Proxy)
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/v1/responses", "application/json", strings.NewReader(`{"model":"m","input":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	u.refresh()
	if got := m.Items[1].Label; got != "1 request · 1 error" {
		t.Errorf("requests line %q", got)
	}
	for _, want := range []string{"Open Dashboard", "Accounts…", "Settings…", "Stale-while-revalidate",
		"Copy Codex config", "Configure Codex…", "Pause proxy", "Quit"} {
		menuItem(t, m, want)
	}

	// Pause and resume through the menu.
	menuItem(t, m, "Pause proxy").Action()
	u.refresh()
	if st := u.svc.Status(); !st.Paused || st.Running {
		t.Fatalf("after Pause: %+v", st)
	}
	if m.Items[0].Label != "Paused" || u.tray.state != statePaused {
		t.Errorf("paused menu %q, state %v", m.Items[0].Label, u.tray.state)
	}
	menuItem(t, m, "Resume proxy").Action()
	u.refresh()
	if st := u.svc.Status(); !st.Running {
		t.Fatalf("after Resume: %+v", st)
	}

	// Quit is ours (Fyne adds none) and stops the listener before leaving.
	last := m.Items[len(m.Items)-1]
	if !last.IsQuit || last.Label != "Quit" {
		t.Fatalf("last item %q (IsQuit %v)", last.Label, last.IsQuit)
	}
	last.Action()
	if u.svc.Status().Running {
		t.Error("Quit left the proxy running")
	}
}

func TestTrayTogglesStaleWhileRevalidate(t *testing.T) {
	u, relay := newTestUI(t, nil)
	u.refresh()
	item := menuItem(t, u.tray.Menu(), "Stale-while-revalidate")
	if !item.Checked || !relay.Proxy.Stats().Catalog.SWREnabled {
		t.Fatal("stale-while-revalidate should start on")
	}
	item.Action()
	if relay.Proxy.Stats().Catalog.SWREnabled {
		t.Fatal("the tray item did not turn stale-while-revalidate off")
	}
	if s := relay.Settings().Catalog.StaleWhileRevalidate; s == nil || *s {
		t.Error("the change was not saved")
	}
	item = menuItem(t, u.tray.Menu(), "Stale-while-revalidate")
	if item.Checked {
		t.Error("the menu still shows it checked")
	}
	item.Action()
	if !relay.Proxy.Stats().Catalog.SWREnabled || !menuItem(t, u.tray.Menu(), "Stale-while-revalidate").Checked {
		t.Error("the tray item did not turn stale-while-revalidate on again")
	}
}

func TestTrayCopiesCodexConfig(t *testing.T) {
	u, _ := newTestUI(t, map[string]string{"CODEXRELAY_LISTEN": "127.0.0.1:7999"})
	u.refresh()
	menuItem(t, u.tray.Menu(), "Copy Codex config").Action()
	got := u.fa.Clipboard().Content()
	if !strings.Contains(got, `base_url = "http://127.0.0.1:7999/v1"`) {
		t.Errorf("clipboard:\n%s", got)
	}
}

func TestTrayConfigureCodexAsksFirst(t *testing.T) {
	home := t.TempDir()
	u, _ := newTestUI(t, map[string]string{"CODEX_HOME": home})
	old := "model = \"gpt-5.1-codex\"\n"
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	u.refresh()
	menuItem(t, u.tray.Menu(), "Configure Codex…").Action()
	w := u.dashWin
	if w == nil {
		t.Fatal("no window for the confirmation")
	}
	if got := overlayTexts(t, w); !strings.Contains(got, "~/.codex/config.toml") {
		t.Fatalf("confirmation says %q", got)
	}
	tapButton(t, w.Canvas().Overlays().Top(), "Configure")
	got := overlayTexts(t, w)
	if !strings.Contains(got, "Codex now sends") || !strings.Contains(got, filepath.Join(home, "config.toml.bak-")) {
		t.Errorf("after Configure the dialog says %q", got)
	}
	b, err := os.ReadFile(filepath.Join(home, "config.toml"))
	if err != nil || !strings.Contains(string(b), `model_provider = "codexrelay"`) {
		t.Errorf("config.toml now:\n%s (%v)", b, err)
	}
}

// The tray lists each account: a dot in its state's colour, its name, its usage or the clock
// time its rest ends, and which account served last and serves next.
func TestTrayMenuAccountLines(t *testing.T) {
	u, _ := newTestUI(t, nil)
	src := sample()
	src.Snapshot.Accounts[0].Quota.PrimaryResetsAt = testNow.Add(time.Hour)
	src.Snapshot.Next = "personal"
	src.Snapshot.LastServed = "team"
	u.ShowFixed(src, running(), testNow)
	items := u.tray.Menu().Items
	want := []struct {
		label string
		dot   tone
	}{
		{"personal · 5 h 37% · week 62% · serving next", toneGood},
		{"team · limit until 14:36 · served last", toneWarn},
		{"api · key rejected", toneBad},
	}
	for i, w := range want {
		it := items[3+i]
		if it.Label != w.label || it.Icon != dotIcons[w.dot] || it.Disabled {
			t.Errorf("line %d: %q (icon %v), want %q with the %v dot", i, it.Label, it.Icon, w.label, w.dot)
		}
	}
	if !items[6].IsSeparator {
		t.Errorf("no separator after the accounts: %q", labels(items))
	}
	// A line opens the accounts window.
	items[3].Action()
	if u.accounts == nil || !u.accounts.shown {
		t.Error("an account's line did not open the accounts window")
	}
	// A failing account rests; a disabled one says so.
	until := testNow.Add(30 * time.Second)
	src.Snapshot.Accounts[1].CooldownReason, src.Snapshot.Accounts[1].CooldownUntil = proxy.CooldownFailing, &until
	src.Snapshot.Accounts[2].State = proxy.StateDisabled
	u.refresh()
	items = u.tray.Menu().Items
	if items[4].Label != "team · resting until 14:32 · served last" || items[5].Label != "api · disabled" ||
		items[5].Icon != dotIcons[toneDim] {
		t.Errorf("lines %q", labels(items[3:6]))
	}
}

// An unchanged view rebuilds nothing: the desktop gets the menu, the icon and the tooltip
// once, and again only when what they show changed.
func TestTrayRebuildsOnlyWhatChanged(t *testing.T) {
	u, _ := newTestUI(t, nil)
	src := sample()
	u.ShowFixed(src, running(), testNow)
	desk := &fakeDesk{}
	var tips []string
	u.tray.desk, u.tray.setTooltip = desk, func(s string) { tips = append(tips, s) }
	u.tray.shown, u.tray.state, u.tray.tooltip = "", -1, ""
	u.refresh()
	first := u.tray.Menu().Items[0]
	u.refresh()
	u.refresh()
	if desk.menus != 1 || desk.icons != 1 || len(tips) != 1 {
		t.Fatalf("three identical views: %d menus, %d icons, %d tooltips", desk.menus, desk.icons, len(tips))
	}
	if u.tray.Menu().Items[0] != first {
		t.Error("an unchanged menu was rebuilt")
	}
	if tips[0] != "Codex Relay: Degraded · Listening on http://127.0.0.1:7455/v1 · 1 of 3 accounts ready" {
		t.Errorf("tooltip %q", tips[0])
	}
	// The clock moves, nothing else: still nothing.
	u.now = func() time.Time { return testNow.Add(40 * time.Second) }
	u.refresh()
	if desk.menus != 1 {
		t.Errorf("the clock alone rebuilt the menu")
	}
	// Requests start and finish: the menu leaves the requests in flight out.
	for _, n := range []int64{3, 0, 1} {
		src.Snapshot.Requests.InFlight = n
		u.refresh()
	}
	if desk.menus != 1 || desk.icons != 1 || len(tips) != 1 {
		t.Errorf("requests in flight: %d menus, %d icons, %d tooltips", desk.menus, desk.icons, len(tips))
	}
	for _, it := range u.tray.Menu().Items {
		if strings.Contains(it.Label, "in flight") {
			t.Errorf("the menu says %q", it.Label)
		}
	}
	// A new request changes the second line: one new menu, same icon and tooltip.
	src.Snapshot.Requests.Total++
	u.refresh()
	if desk.menus != 2 || desk.icons != 1 || len(tips) != 1 {
		t.Errorf("after a request: %d menus, %d icons, %d tooltips", desk.menus, desk.icons, len(tips))
	}
	// Every account ready: a new icon and tooltip.
	for i := range src.Snapshot.Accounts {
		src.Snapshot.Accounts[i].State = proxy.StateReady
	}
	u.refresh()
	if desk.icons != 2 || len(tips) != 2 || u.tray.state != stateServing {
		t.Errorf("all ready: %d icons, %d tooltips, state %v", desk.icons, len(tips), u.tray.state)
	}
}
