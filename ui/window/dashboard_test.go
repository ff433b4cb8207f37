package window

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/proxy"
	"github.com/codexrelay/codexrelay/ui/look"
	"github.com/codexrelay/codexrelay/ui/source"
	"github.com/codexrelay/codexrelay/ui/uitest"
)

func newTestDashboard(t *testing.T, src source.Source) (*Dashboard, fyne.Window) {
	t.Helper()
	test.NewTempApp(t)
	d := NewDashboard(src, DashboardOptions{
		Status:       uitest.Running,
		Now:          func() time.Time { return uitest.Now },
		OpenAccounts: func() {},
		OpenSettings: func() {},
	})
	w := test.NewTempWindow(t, d.Content())
	w.Resize(DashboardSize)
	return d, w
}

// accountRowCells are an accounts-table row's cells, by column.
type accountRowCells struct {
	name                        *nameCell
	kind                        *textCell
	state                       *stateCell
	fiveHour, weekly            *quotaCell
	resets, requests, lastError *textCell
}

// cellOfColumn is row r's cell in the column titled title.
func cellOfColumn[R any](t *testing.T, r *tableRow[R], title string) fyne.CanvasObject {
	t.Helper()
	for i, c := range r.t.spec {
		if c.title == title {
			return r.cells[i]
		}
	}
	t.Fatalf("no column %q", title)
	return nil
}

// accountCells are the accounts table's rows on screen.
func accountCells(t *testing.T, c fyne.CanvasObject) []accountRowCells {
	t.Helper()
	var rows []accountRowCells
	visit(c, func(o fyne.CanvasObject) {
		if r, ok := o.(*tableRow[dashAccount]); ok {
			rows = append(rows, accountRowCells{
				name:      cellOfColumn(t, r, "Account").(*nameCell),
				kind:      cellOfColumn(t, r, "Kind").(*textCell),
				state:     cellOfColumn(t, r, "State").(*stateCell),
				fiveHour:  cellOfColumn(t, r, "5-hour usage").(*quotaCell),
				weekly:    cellOfColumn(t, r, "Weekly usage").(*quotaCell),
				resets:    cellOfColumn(t, r, "Banked resets").(*textCell),
				requests:  cellOfColumn(t, r, "Requests").(*textCell),
				lastError: cellOfColumn(t, r, "Last error").(*textCell),
			})
		}
	})
	return rows
}

func TestDashboardShowsTheSnapshot(t *testing.T) {
	src := uitest.Sample()
	d, w := newTestDashboard(t, src)
	d.Refresh()
	c := w.Content()

	mustShow(t, c,
		"Degraded", // header state: one of three accounts is ready
		"·  Listening on http://127.0.0.1:7455/v1 · 1 of 3 accounts ready",
		// accounts table: names, the serving badge, kinds, states with the clock time a rest ends
		"personal", "team", "api", "ChatGPT", "API key", "Ready", "Limit until 14:36", "Key rejected",
		"912", "341", "429 usage_limit_reached", "401 invalid_api_key",
		// recent requests table
		"codex → gpt-5.1-codex", "team → personal", "200", "0.38 ms", "4.2 s",
		"gpt-5.1", "503 error", "2.5 ms", "96 ms",
	)
	if got := d.accountsSummary.Text; got != "3 configured · 1 ready · 1 resting · 1 needs sign-in" {
		t.Errorf("accounts summary %q", got)
	}
	rows := accountCells(t, c)
	if len(rows) != 3 {
		t.Fatalf("%d account rows", len(rows))
	}
	if got := rows[0].name.badge.text.Text; got != "in use" || !rows[0].name.badge.Visible() {
		t.Errorf("personal's badge %q", got)
	}
	if rows[1].name.badge.Visible() {
		t.Errorf("team has a badge %q", rows[1].name.badge.text.Text)
	}
	// The five-hour and weekly bars of the one ChatGPT account with a quota, and their figures.
	if u, ok := rows[0].fiveHour.Used(); !ok || u != 0.37 {
		t.Errorf("five-hour bar %v %v", u, ok)
	}
	if u, ok := rows[0].weekly.Used(); !ok || u != 0.62 {
		t.Errorf("weekly bar %v %v", u, ok)
	}
	if _, ok := rows[2].fiveHour.Used(); ok {
		t.Error("an API-key account shows a quota bar")
	}
	mustShow(t, c, "37%", "62%")

	// The internals are in the Diagnostics section, closed by default.
	if d.diag.open || d.diag.detail.Visible() {
		t.Error("Diagnostics is open at first")
	}
	for label, want := range map[string]string{
		"Age": "4 min", "Models": "14", "TTL": "10 min", "Stale-while-revalidate": "On", "Maximum stale age": "30 min",
		"Background": "17", "Blocking": "1", "Shared": "6", "Refreshes run": "19",
		"Hits": "1,912", "Misses": "1,246", "Direct": "58", "Hit rate": "60.5%",
		"Total": "1,284", "Errors": "7", "Rotations": "23", "In flight": "2", "WebSockets open": "3", "Median preparation": "0.41 ms",
	} {
		if got := d.diag.value(label); got != want {
			t.Errorf("diagnostics %s: %q, want %q", label, got, want)
		}
	}
	if d.firstBox.Visible() {
		t.Error("the first-run card shows although there are accounts")
	}
}

func TestDashboardFollowsTheSnapshot(t *testing.T) {
	src := uitest.Sample()
	d, w := newTestDashboard(t, src)
	d.Refresh()

	src.Snapshot.Requests.Total = 1300
	src.Snapshot.Catalog.AgeMs = 12_000
	src.Snapshot.Catalog.SWREnabled = false
	src.Snapshot.Accounts[1].State = proxy.StateReady
	src.Snapshot.Accounts[1].CooldownUntil = nil
	src.Snapshot.Accounts = src.Snapshot.Accounts[:2]
	src.Snapshot.LastServed, src.Snapshot.Next = "personal", "team"
	src.Recent = src.Recent[1:]
	d.Refresh()

	c := w.Content()
	mustShow(t, c, "Serving", "·  Listening on http://127.0.0.1:7455/v1")
	if got := d.diag.value("Total"); got != "1,300" {
		t.Errorf("total %q", got)
	}
	if got := d.diag.value("Age"); got != "under 1 min" {
		t.Errorf("catalog age %q", got)
	}
	for _, gone := range []string{"Limit until 14:36", "Key rejected", "codex → gpt-5.1-codex"} {
		for _, s := range texts(c) {
			if s == gone {
				t.Errorf("%q still shows after the update", gone)
			}
		}
	}
	rows := accountCells(t, c)
	if rows[0].name.badge.text.Text != "served last" || rows[1].name.badge.text.Text != "serving next" {
		t.Errorf("badges %q %q", rows[0].name.badge.text.Text, rows[1].name.badge.text.Text)
	}
	if got := d.requestsSummary.Text; got != "the last one" {
		t.Errorf("requests summary %q", got)
	}
}

// An unchanged view redraws nothing, and neither does the clock: the texts show clock times
// and the catalog's age in minutes, not countdowns.
func TestDashboardRedrawsOnlyWhatChanged(t *testing.T) {
	src := uitest.Sample()
	now := uitest.Now
	test.NewTempApp(t)
	d := NewDashboard(src, DashboardOptions{Status: uitest.Running, Now: func() time.Time { return now }})
	test.NewTempWindow(t, d.Content()).Resize(DashboardSize)
	d.Refresh()

	before := redraws.Load()
	d.Refresh()
	if n := redraws.Load() - before; n != 0 {
		t.Errorf("an unchanged view redrew %d widgets", n)
	}
	now = now.Add(20 * time.Second)
	src.Snapshot.Catalog.AgeMs += 20_000 // 4 min 32 s: still "4 min"
	src.Snapshot.UptimeMs += 20_000
	before = redraws.Load()
	d.Refresh()
	if n := redraws.Load() - before; n != 0 {
		t.Errorf("20 seconds later, %d widgets were redrawn", n)
	}
	src.Snapshot.Requests.Total++ // one figure changes: one label
	before = redraws.Load()
	d.Refresh()
	if n := redraws.Load() - before; n != 1 {
		t.Errorf("one new request redrew %d widgets, want 1", n)
	}
}

func TestDashboardHeaderShowsWhyTheProxyStopped(t *testing.T) {
	test.NewTempApp(t)
	st := app.ServiceStatus{Addr: "127.0.0.1:7455", Err: errString("cannot listen on 127.0.0.1:7455: the port is taken")}
	d := NewDashboard(uitest.Sample(), DashboardOptions{Status: func() app.ServiceStatus { return st }})
	test.NewTempWindow(t, d.Content()).Resize(DashboardSize)
	d.Refresh()
	if d.stateText.Text != "Stopped" || !strings.Contains(d.status.Text, "the port is taken") {
		t.Fatalf("header %q %q", d.stateText.Text, d.status.Text)
	}
}

type errString string

func (e errString) Error() string { return string(e) }

// At 800x500 nothing is clipped, with Diagnostics closed or open: the least important columns
// (the last error, the requests, the kind) go, the rest share the width, and an open
// Diagnostics scrolls with the recent requests instead of pushing the window taller.
func TestDashboardFitsInASmallWindow(t *testing.T) {
	for _, open := range []bool{false, true} {
		t.Run(map[bool]string{false: "diagnostics closed", true: "diagnostics open"}[open], func(t *testing.T) {
			d, w := newTestDashboard(t, uitest.Sample())
			d.Refresh()
			w.Resize(fyne.NewSize(800, 500))
			if open {
				test.Tap(d.diag.header)
				if !d.diag.open || !d.diag.detail.Visible() {
					t.Fatal("Diagnostics did not open")
				}
			}
			if m := w.Content().MinSize(); m.Width > 800 || m.Height > 500 {
				t.Fatalf("the dashboard needs %v", m)
			}
			win := w.Canvas().Size()
			drv := fyne.CurrentApp().Driver()
			// inside fails unless o shows entirely within the window's width.
			inside := func(what string, o fyne.CanvasObject) {
				t.Helper()
				p := drv.AbsolutePositionForObject(o)
				if !o.Visible() || p.X < 0 || p.X+o.Size().Width > win.Width || o.Size().Width <= 0 {
					t.Errorf("%s at x %v, %v wide (visible %v): not within the window's %v", what, p.X, o.Size().Width, o.Visible(), win.Width)
				}
			}
			rows := accountCells(t, w.Content())
			if len(rows) == 0 {
				t.Fatal("no account row")
			}
			r := rows[0]
			if r.kind.Visible() || r.requests.Visible() || r.lastError.Visible() {
				t.Error("Kind, Requests or Last error still show at 800 wide")
			}
			for name, cell := range map[string]fyne.CanvasObject{"name": r.name, "state": r.state, "5-hour": r.fiveHour, "weekly": r.weekly} {
				inside("the "+name+" cell", cell)
			}
			visit(w.Content(), func(o fyne.CanvasObject) {
				if b, ok := o.(*widget.Button); ok {
					inside("the button "+b.Text, b)
				}
			})
			// The scrolling part fits in the window's height; the requests keep a few rows.
			if p := drv.AbsolutePositionForObject(d.middle); p.Y+d.middle.Size().Height > win.Height {
				t.Errorf("the requests and Diagnostics end at %v, below the window's %v", p.Y+d.middle.Size().Height, win.Height)
			}
			if h, need := d.requests.list.Size().Height, 3*d.requests.newRow().MinSize().Height; h < need {
				t.Errorf("the requests list is %v high, three rows need %v", h, need)
			}
			if !open {
				return
			}
			// Every panel is within the width, below the requests, and within what scrolls.
			grid := d.diag.detail
			content := d.middle.Content
			bottom := drv.AbsolutePositionForObject(content).Y + content.Size().Height
			reqEnd := drv.AbsolutePositionForObject(d.requestsSection).Y + d.requestsSection.Size().Height
			for i, p := range grid.Objects {
				inside("Diagnostics panel "+strconv.Itoa(i), p)
				pos := drv.AbsolutePositionForObject(p)
				if pos.Y < reqEnd || pos.Y+p.Size().Height > bottom {
					t.Errorf("panel %d from y %v to %v: not between the requests' end %v and the scrolled content's end %v",
						i, pos.Y, pos.Y+p.Size().Height, reqEnd, bottom)
				}
			}
			if content.Size().Height <= d.middle.Size().Height {
				t.Errorf("nothing to scroll: content %v high in %v", content.Size().Height, d.middle.Size().Height)
			}
			// Opening it scrolled it into view: its header shows at the top of the scrolling part.
			top, head := drv.AbsolutePositionForObject(d.middle).Y, drv.AbsolutePositionForObject(d.diag.header).Y
			if d.middle.Offset.Y <= 0 || head < top || head+d.diag.header.Size().Height > top+d.middle.Size().Height {
				t.Errorf("Diagnostics' header at y %v, the view from %v to %v (offset %v)",
					head, top, top+d.middle.Size().Height, d.middle.Offset.Y)
			}
			w.Resize(DashboardSize)
			if !r.kind.Visible() || !r.requests.Visible() || !r.lastError.Visible() {
				t.Error("the columns left out do not come back in a wide window")
			}
		})
	}
}

// The accounts' heading names the routing strategy that orders them.
func TestDashboardNamesTheStrategy(t *testing.T) {
	u, relay := newTestUI(t, nil)
	u.ShowFixed(uitest.Sample(), uitest.Running(), uitest.Now)
	u.ShowDashboard()
	c := u.dashWin.Content()
	mustShow(t, c, "Accounts · priority order")
	for st, want := range map[string]string{
		proxy.StrategyRoundRobin:    "Accounts · round-robin",
		proxy.StrategyMostQuotaLeft: "Accounts · most quota left",
		proxy.StrategyPriority:      "Accounts · priority order",
	} {
		if err := relay.Set(app.SettingStrategy, st); err != nil {
			t.Fatal(err)
		}
		u.refresh()
		mustShow(t, c, want)
	}
}

func TestColumnsFlexAndDrop(t *testing.T) {
	c := newColumns(
		column{min: 100, weight: 1},
		column{min: 100, weight: 3, drop: 1},
		column{min: 100, weight: 0, drop: 2},
	)
	ws := c.widthsFor(100*3 + 2*columnGap + 40)
	if ws[0] != 110 || ws[1] != 130 || ws[2] != 100 {
		t.Errorf("widths %v, want the 40 spare shared 1:3", ws)
	}
	ws = c.widthsFor(250)
	if ws[0] != 100+(250-200-columnGap)/4 || ws[2] != 0 || ws[1] == 0 {
		t.Errorf("widths %v: the drop-2 column should go first", ws)
	}
	ws = c.widthsFor(150)
	if ws[0] != 150 || ws[1] != 0 || ws[2] != 0 {
		t.Errorf("widths %v", ws)
	}
	if m := c.minWidth(); m != 100 {
		t.Errorf("min width %v", m)
	}
}

// Configure, once there is an account, asks first, saying what it writes and how to undo it,
// then writes and says what it did.
func TestDashboardCodexRowConfigures(t *testing.T) {
	home := t.TempDir()
	u, relay := newTestUI(t, map[string]string{"CODEX_HOME": home})
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte("model = \"gpt-5-codex\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := relay.AddAccount(app.NewAccount{Name: "key", Kind: "openai", BaseURL: "http://127.0.0.1:9/v1"}, app.Secret{APIKey: "sk-test-0000"}); err != nil {
		t.Fatal(err)
	}
	u.ShowDashboard()
	c := u.dashWin.Content()
	mustShow(t, c, "Codex: not configured", `Codex uses the provider "openai"`, "Configure")
	tapButton(t, c, "Configure")
	asked := overlayTexts(t, u.dashWin)
	for _, want := range []string{"config.toml", ".env", "SSL_CERT_FILE", "NO_PROXY", "backup", "codexrelay codex-config --remove"} {
		if !strings.Contains(asked, want) {
			t.Errorf("Configure's question does not say %q:\n%s", want, asked)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(home, "config.toml")); strings.Contains(string(b), "codexrelay") {
		t.Fatal("Configure wrote before the user agreed")
	}
	tapButton(t, u.dashWin.Canvas().Overlays().Top(), "Configure")
	mustContain(t, c, "Updated "+filepath.Join(home, "config.toml"), "config.toml.bak-", "codexrelay codex-config --remove")
	b, err := os.ReadFile(filepath.Join(home, "config.toml"))
	if err != nil || !strings.Contains(string(b), `model_provider = "codexrelay"`) {
		t.Fatalf("config.toml now:\n%s (%v)", b, err)
	}
	u.refresh()
	mustShow(t, c, "Codex: configured")
	if u.dash.codex.configure.Visible() {
		t.Error("Configure still shows once Codex is configured")
	}
}

func TestFormats(t *testing.T) {
	today := uitest.Now.Add(2*time.Hour + 48*time.Minute)
	far := time.Date(2026, 3, 15, 19, 32, 0, 0, time.Local) // a Sunday
	cool := uitest.Now.Add(4 * time.Minute)
	for _, c := range []struct{ got, want string }{
		{look.Count(0), "0"}, {look.Count(999), "999"}, {look.Count(1000), "1,000"}, {look.Count(1234567), "1,234,567"},
		{age(-1), "never fetched"}, {age(12_400), "under 1 min"}, {age(4*60_000 + 59_000), "4 min"}, {age(3 * 3600_000), "3 h"},
		{look.Clock(today, uitest.Now), "17:20"}, {look.Clock(far, uitest.Now), "Sun 19:32"},
		// A rest that ends later in this very minute is over by the next one: never "until" the
		// minute it is now.
		{look.Clock(uitest.Now.Add(30*time.Second), uitest.Now), "14:33"}, {look.Clock(uitest.Now.Add(-5*time.Second), uitest.Now), "14:32"},
		{quotaText(37, today, uitest.Now), "37% · resets 17:20"}, {quotaText(62, far, uitest.Now), "62% · resets Sun 19:32"},
		{quotaText(80, uitest.Now.Add(-time.Minute), uitest.Now), "80% · reset 14:31"}, {quotaText(5, time.Time{}, uitest.Now), "5%"},
		{accountState(proxy.AccountStats{State: proxy.StateCooldown, CooldownReason: proxy.CooldownFailing, CooldownUntil: &cool}, uitest.Now).text, "Resting until 14:36"},
		{accountState(proxy.AccountStats{State: proxy.StateCooldown, CooldownReason: proxy.CooldownRateLimit, CooldownUntil: &cool}, uitest.Now).text, "Limit until 14:36"},
		{accountState(proxy.AccountStats{State: proxy.StateNeedsLogin, Kind: proxy.KindChatGPT}, uitest.Now).text, "Needs sign-in"},
		{accountState(proxy.AccountStats{State: proxy.StateNeedsLogin, Kind: proxy.KindOpenAI}, uitest.Now).text, "Key rejected"},
		{millis(0.412), "0.41 ms"}, {millis(1432), "1.4 s"}, {seconds(1200 * time.Millisecond), "1.2 s"},
		{percent(1, 3), "33.3%"}, {percent(0, 0), "–"},
		{sentence(`account name "x" is not valid`), `Account name "x" is not valid`},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

// A request that waited for a resting pool says so in the recent-requests table.
func TestRequestRowSaysHeld(t *testing.T) {
	v := requestStatus(proxy.Trace{Status: 200, Outcome: proxy.OutcomeCompleted, HeldMs: 2140})
	if v.text != "200 · held 2.1 s" {
		t.Fatalf("status %q", v.text)
	}
	if v := requestStatus(proxy.Trace{Status: 429, Outcome: proxy.OutcomeError}); v.text != "429 error" {
		t.Fatalf("status %q", v.text)
	}
}

// A request whose compaction another account sealed says what became of it: re-made on the
// serving account, or left out (the conversation's memory before it lost).
func TestRequestRowSaysWhatBecameOfTheCompaction(t *testing.T) {
	if v := requestStatus(proxy.Trace{Status: 200, CompactionRemade: 1}); v.text != "200 · compaction re-made" {
		t.Fatalf("status %q", v.text)
	}
	left := proxy.Trace{Status: 200, SealedOmitted: 2, SealedOmittedParts: map[string]int{"compaction": 1, "reasoning": 1}}
	if v := requestStatus(left); v.text != "200 · compaction left out" {
		t.Fatalf("status %q", v.text)
	}
}

// A banner that appears pushes what is under it down instead of covering its first rows, and
// the accounts table is as tall as its accounts (a floor of three rows left an empty band).
func TestDashboardMakesRoomForBanners(t *testing.T) {
	u, _ := newTestUI(t, nil)
	src := uitest.Sample()
	st := uitest.Running()
	u.ShowFixed(src, st, uitest.Now)
	u.ShowDashboard()
	u.dashWin.Resize(DashboardSize)
	d := u.dash
	d.relayout()
	before := d.middle.Position().Y

	st.Warning = "the settings say listen on 127.0.0.1:7460, but this relay's address is fixed by CODEXRELAY_LISTEN"
	u.ShowFixed(src, st, uitest.Now)
	if !d.notice.Visible() {
		t.Fatal("no banner")
	}
	if got, want := d.middle.Position().Y, before+d.notice.MinSize().Height; got < want-1 {
		t.Errorf("with the banner the requests start at %.0f, want at least %.0f: the top covers them", got, want)
	}
	st.Warning = ""
	u.ShowFixed(src, st, uitest.Now)
	if got := d.middle.Position().Y; got != before {
		t.Errorf("after the banner went the requests start at %.0f, not %.0f", got, before)
	}

	one := uitest.Sample()
	one.Snapshot.Accounts = one.Snapshot.Accounts[:1]
	u.ShowFixed(one, st, uitest.Now)
	if h, row := d.accounts.size.min.Height, d.accounts.rowH; h > 2*row {
		t.Errorf("one account takes %.0f, %.1f rows", h, h/row)
	}
}

// "Remove them" lists the leftover keychain entries by name and removes them only once the
// removal is confirmed.
func TestRemoveLeftoversListsThemFirst(t *testing.T) {
	uitest.NeedKeyring(t)
	u, relay := newTestUI(t, nil)
	m, err := relay.AddAccount(app.NewAccount{Name: "gone", Kind: "openai", BaseURL: "http://127.0.0.1:9/v1"}, app.Secret{APIKey: "sk-left-over-0000"})
	if err != nil {
		t.Fatal(err)
	}
	// The settings lose the account behind the relay's back (an interrupted add, a hand edit).
	if err := os.WriteFile(relay.SettingsPath(), []byte(`{"generation":9,"accounts":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	relay.Reload()
	u.checkOrphans()
	if len(u.orphans) != 1 || !strings.HasSuffix(u.orphans[0], m.ID) {
		t.Fatalf("orphans %v, want [%s]", u.orphans, m.ID)
	}
	u.pruneSecrets()
	if got := overlayTexts(t, u.dashWin); !strings.Contains(got, m.ID) || !strings.Contains(got, "Remove") {
		t.Fatalf("the confirmation does not name the entry:\n%s", got)
	}
	if left, _ := relay.OrphanSecrets(); len(left) != 1 {
		t.Fatal("removed before the confirmation")
	}
	tapButton(t, u.dashWin.Canvas().Overlays().Top(), "Remove")
	if left, _ := relay.OrphanSecrets(); len(left) != 0 {
		t.Fatalf("left after the removal: %v", left)
	}
}

// The dashboard's own relayouts measure in its compact theme, as the window's do: laid out in
// the app's theme, the top took 6 px more and the rows under it sat off their place.
func TestDashboardLaysOutInItsTheme(t *testing.T) {
	u, _ := newTestUI(t, nil)
	u.ShowFixed(uitest.Sample(), uitest.Running(), uitest.Now)
	u.ShowDashboard()
	u.dashWin.Resize(DashboardSize)
	d := u.dash
	top, mid := d.top.Size().Height, d.middle.Position().Y
	d.relayout()
	if d.top.Size().Height != top || d.middle.Position().Y != mid {
		t.Errorf("a relayout moved the top from %.1f to %.1f high and the requests from y %.1f to %.1f",
			top, d.top.Size().Height, mid, d.middle.Position().Y)
	}
	// The same after a change that lays the dashboard out again (an account more).
	src := uitest.Sample()
	src.Snapshot.Accounts = append(src.Snapshot.Accounts, src.Snapshot.Accounts[0])
	src.Snapshot.Accounts[3].Name = "fourth"
	u.ShowFixed(src, uitest.Running(), uitest.Now)
	top, mid = d.top.Size().Height, d.middle.Position().Y
	u.dashWin.Resize(DashboardSize.AddWidthHeight(0, 2))
	u.dashWin.Resize(DashboardSize)
	if d.top.Size().Height != top || d.middle.Position().Y != mid {
		t.Errorf("the window lays out the top %.1f high and the requests at y %.1f; the dashboard had %.1f and %.1f",
			d.top.Size().Height, d.middle.Position().Y, top, mid)
	}
}

// A short list of recent requests leaves no gap above Diagnostics: the section under the
// list starts where its rows end, and the window's spare height stays below everything.
func TestNoGapUnderAShortRequestList(t *testing.T) {
	u, _ := newTestUI(t, nil)
	src := uitest.Sample()
	src.Recent = src.Recent[:2]
	u.ShowFixed(src, uitest.Running(), uitest.Now)
	u.ShowDashboard()
	u.dashWin.Resize(fyne.NewSize(DashboardSize.Width, 1000))
	d := u.dash
	d.relayout()
	rowsEnd := d.requestsSection.Position().Y + d.requestsSection.Size().Height
	if gap := d.diag.box.Position().Y - rowsEnd; gap > 2*fillGap {
		t.Fatalf("%.0f px between the requests and Diagnostics", gap)
	}
	if want := d.requests.headH + 3*d.requests.rowH + 2; d.requests.box.Size().Height > want+1 {
		t.Fatalf("the table takes %.0f px for 2 rows (want at most %.0f)", d.requests.box.Size().Height, want)
	}
}

// An account the relay still counts ready but whose five-hour (or weekly) window is used up is
// not green "Ready": its next request meets the limit (issue 32 Low).
func TestDashboardAccountAtItsLimitIsNotReady(t *testing.T) {
	src := uitest.Sample()
	src.Snapshot.Accounts[0].Quota.PrimaryUsedPercent = 100
	d, w := newTestDashboard(t, src)
	d.Refresh()
	rows := accountCells(t, w.Content())
	if got := rows[0].state.text.shown; got != (textView{"At 5-hour limit", look.Warn}) {
		t.Errorf("an account at 100%% of its five-hour window shows %+v", got)
	}
	if rows[0].state.dot.color != toneColorName(look.Warn) {
		t.Errorf("its dot is %v, want the warning tone", rows[0].state.dot.color)
	}
	weekly := proxy.AccountStats{Kind: proxy.KindChatGPT, State: proxy.StateReady,
		Quota: &proxy.Quota{PrimaryUsedPercent: 40, SecondaryUsedPercent: 100}}
	if got := accountState(weekly, uitest.Now); got != (textView{"At weekly limit", look.Warn}) {
		t.Errorf("at its weekly limit: %+v", got)
	}
	weekly.Quota.SecondaryUsedPercent = 99
	if got := accountState(weekly, uitest.Now); got != (textView{"Ready", look.Good}) {
		t.Errorf("below both limits: %+v", got)
	}
}

// The header's count and the accounts' summary count the same accounts, the disabled ones
// named (issue 32 Low: "3 of 4 accounts ready" beside "6 configured").
func TestDashboardCountsAgree(t *testing.T) {
	src := uitest.Sample()
	src.Snapshot.Accounts = append(src.Snapshot.Accounts,
		proxy.AccountStats{Name: "old", Kind: proxy.KindOpenAI, State: proxy.StateDisabled},
		proxy.AccountStats{Name: "older", Kind: proxy.KindOpenAI, State: proxy.StateDisabled})
	d, w := newTestDashboard(t, src)
	d.Refresh()
	mustShow(t, w.Content(), "·  Listening on http://127.0.0.1:7455/v1 · 1 of 5 accounts ready (2 disabled)")
	if got := d.accountsSummary.Text; got != "5 configured · 1 ready · 1 resting · 1 needs sign-in · 2 disabled" {
		t.Errorf("accounts summary %q", got)
	}
}

// uncut fails when a text cell that shows is narrower than its text and padding.
func uncut(t *testing.T, what string, c *textCell) {
	t.Helper()
	if !c.Visible() || c.Text() == "" {
		return
	}
	need := fyne.MeasureText(c.Text(), theme.TextSize(), c.seg.Style.TextStyle).Width + 2*compact.Size(theme.SizeNameInnerPadding)
	if c.Size().Width < need {
		t.Errorf("%s %q is cut: %v wide, its text needs %v", what, c.Text(), c.Size().Width, need)
	}
}

// At the default size every account cell but Last error shows its whole text: the names with
// their badges, "ChatGPT", the states, the banked resets (issue 32 Low: "ChatGP…", names cut).
func TestDashboardColumnsFitTheirContent(t *testing.T) {
	src := uitest.Sample()
	exp := uitest.Now.Add(26 * time.Hour)
	src.Snapshot.LastServed, src.Snapshot.Next = "dev@example.com", "team@example.com"
	src.Snapshot.Accounts[0].Name = "dev@example.com"
	src.Snapshot.Accounts[0].ResetCredits = &proxy.ResetCredits{Available: 2, NextExpiresAt: &exp}
	src.Snapshot.Accounts[1].Name = "team@example.com"
	src.Snapshot.Accounts[1].Quota = &proxy.Quota{PrimaryUsedPercent: 100, SecondaryUsedPercent: 81,
		PrimaryResetsAt: uitest.Now.Add(4 * time.Minute), SecondaryResetsAt: uitest.Now.Add(100 * time.Hour)}
	d, w := newTestDashboard(t, src)
	d.Refresh()
	rows := accountCells(t, w.Content())
	if len(rows) != 3 {
		t.Fatalf("%d rows", len(rows))
	}
	for _, r := range rows {
		name := r.name.name.Text()
		uncut(t, "the name", r.name.name)
		if r.name.badge.Visible() && r.name.name.Size().Width+r.name.badge.MinSize().Width > r.name.Size().Width {
			t.Errorf("%s's badge runs past its cell", name)
		}
		uncut(t, name+"'s kind", r.kind)
		uncut(t, name+"'s state", r.state.text)
		uncut(t, name+"'s 5-hour usage", r.fiveHour.figure)
		uncut(t, name+"'s weekly usage", r.weekly.figure)
		uncut(t, name+"'s banked resets", r.resets)
		uncut(t, name+"'s requests", r.requests)
	}
	if got := rows[0].resets.Text(); got != "2 · expires Fri 16:32" || !rows[0].resets.Visible() {
		t.Errorf("the banked resets of the first account read %q (shown %v)", got, rows[0].resets.Visible())
	}
	// At 800 wide the columns that go are the least important ones, and what stays is uncut.
	w.Resize(fyne.NewSize(800, 500))
	for _, r := range accountCells(t, w.Content()) {
		name := r.name.name.Text()
		uncut(t, "at 800 wide, the name", r.name.name)
		uncut(t, "at 800 wide, "+name+"'s state", r.state.text)
		uncut(t, "at 800 wide, "+name+"'s 5-hour usage", r.fiveHour.figure)
		uncut(t, "at 800 wide, "+name+"'s weekly usage", r.weekly.figure)
		uncut(t, "at 800 wide, "+name+"'s banked resets", r.resets)
	}
	visit(d.accounts.header, func(o fyne.CanvasObject) {
		if c, ok := o.(*textCell); ok && c.Text() != "Last error" {
			uncut(t, "the title", c)
		}
	})
}

// A closed section's caret points right and an open one's down, Diagnostics and the first-run
// card's "From a terminal" alike (issue 32 Low: both closed sections showed a down caret).
func TestCollapsedSectionsPointRight(t *testing.T) {
	d, _ := newTestDashboard(t, uitest.Sample())
	d.Refresh()
	first := NewDashboard(&source.Fixed{}, DashboardOptions{Status: uitest.Running, Now: func() time.Time { return uitest.Now }})
	first.Refresh()
	var terminal *widget.Button
	visit(first.Content(), func(o fyne.CanvasObject) {
		if b, ok := o.(*widget.Button); ok && b.Text == "From a terminal" {
			terminal = b
		}
	})
	if terminal == nil {
		t.Fatal("no “From a terminal” header on the first-run card")
	}
	for name, b := range map[string]*widget.Button{"Diagnostics": d.diag.header, "From a terminal": terminal} {
		if b.Icon.Name() != theme.MenuExpandIcon().Name() {
			t.Errorf("%s closed shows %s, want the right-pointing caret", name, b.Icon.Name())
		}
		test.Tap(b)
		if b.Icon.Name() != theme.MenuDropDownIcon().Name() {
			t.Errorf("%s open shows %s, want the down caret", name, b.Icon.Name())
		}
	}
}

// Codex's own background calls to ChatGPT (its plugins, its usage once a minute, analytics)
// are no request of the user's: they fold into one line under the recent requests, counted by
// path, which opens into their own table; the requests keep every turn, newest first by the
// time the Time column shows (their start), though the relay lists them as they end.
func TestBackgroundCallsFoldIntoOneLine(t *testing.T) {
	src := uitest.Sample()
	turns := len(src.Recent)
	var calls []proxy.Trace
	for i := range 45 {
		path := "wham/usage"
		switch {
		case i < 11:
			path = "ps/plugins/installed"
		case i < 13:
			path = "ps/mcp"
		case i < 15:
			path = "analytics-events"
		}
		calls = append(calls, proxy.Trace{ID: "call_" + strconv.Itoa(i), Route: proxy.RouteChatGPT, Path: path, Status: 200,
			Time: uitest.Now.Add(-time.Duration(i) * time.Minute), Outcome: proxy.OutcomeCompleted})
	}
	// A long turn that started first and ended last, listed first by the relay.
	long := proxy.Trace{ID: "long", Route: "responses", Model: "gpt-5.5", Status: 200, Time: uitest.Now.Add(-2 * time.Hour)}
	src.Recent = append(append([]proxy.Trace{long}, calls...), src.Recent...)
	d, w := newTestDashboard(t, src)
	d.Refresh()
	if n := len(d.requests.rows); n != turns+1 {
		t.Fatalf("%d requests listed, want the %d turns", n, turns+1)
	}
	requests, _ := splitTraces(src.Recent)
	if requests[len(requests)-1].ID != "long" || !slices.IsSortedFunc(requests, func(a, b proxy.Trace) int { return b.Time.Compare(a.Time) }) {
		t.Fatalf("the requests are not newest first by their start: %v", requests[0].ID)
	}
	if got := d.calls.header.Text; got != "Codex's background calls to ChatGPT: 45 · wham/usage ×30, ps/plugins/installed ×11, analytics-events ×2, …" {
		t.Fatalf("the folded line: %q", got)
	}
	if !d.calls.box.Visible() || d.calls.content.Visible() {
		t.Fatal("the calls are not one folded line")
	}
	test.Tap(d.calls.header)
	if !d.calls.content.Visible() || len(d.calls.table.rows) != 45 {
		t.Fatalf("opened: %d rows", len(d.calls.table.rows))
	}
	mustShow(t, w.Content(), "ps/plugins/installed")
	// Without calls the line goes.
	src.Recent = src.Recent[46:]
	d.Refresh()
	if d.calls.box.Visible() {
		t.Fatal("the folded line shows with no call")
	}
}

// With no account there is no Configure beside the first-run card: a Codex pointed at a relay
// with no account has no model, and loses the provider it had. The line says why, with the
// path as the user knows it.
func TestDashboardOffersNoConfigureWithoutAnAccount(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home) // the paths shown under ~ are those under it
	codexHome := filepath.Join(home, ".codex")
	u, relay := newTestUI(t, map[string]string{"CODEX_HOME": codexHome})
	u.ShowDashboard()
	c := u.dashWin.Content()
	if u.dash.codex.configure.Visible() {
		t.Fatal("Configure shows with no account")
	}
	shown := "~" + strings.TrimPrefix(filepath.Join(codexHome, "config.toml"), home)
	mustContain(t, c, "Codex: not configured", "There is no "+shown+" yet · Configure comes once there is an account")
	if strings.Contains(strings.Join(texts(c), "\n"), codexHome) {
		t.Errorf("the line shows the absolute path:\n%s", strings.Join(texts(c), "\n"))
	}
	if _, err := relay.AddAccount(app.NewAccount{Name: "key", Kind: "openai", BaseURL: "http://127.0.0.1:9/v1"}, app.Secret{APIKey: "sk-test-0000"}); err != nil {
		t.Fatal(err)
	}
	u.refresh()
	if !u.dash.codex.configure.Visible() {
		t.Fatal("Configure does not show once there is an account")
	}
}

// The labels that are the only sign of something show whole at the default size and wider
// (issue 50): a request's status ("200 · compaction re-made"), the accounts it tried, an
// account's last error. The columns that say less (Kind, Requests, Banked resets) go first.
func TestDashboardLabelsThatAreTheOnlySignShowWhole(t *testing.T) {
	u, _ := newTestUI(t, nil)
	src := uitest.Sample()
	src.Snapshot.Accounts[1].LastError = "429 usage_limit_reached: the 5-hour limit resets at 14:36"
	src.Snapshot.Accounts[1].ResetCredits = uitest.Credits(2, uitest.Now.Add(20*time.Hour))
	src.Recent[0].CompactionRemade = 1
	src.Recent[0].Attempts = append([]proxy.Attempt{{Account: "api", Status: 401}}, src.Recent[0].Attempts...)
	u.ShowFixed(src, uitest.Running(), uitest.Now)
	u.ShowDashboard()
	for _, size := range []fyne.Size{DashboardSize, fyne.NewSize(1400, 760)} {
		u.dashWin.Resize(size)
		u.dash.relayout()
		for _, want := range []string{"200 · compaction re-made", "api → team → personal", src.Snapshot.Accounts[1].LastError} {
			var cell *textCell
			visit(u.dashWin.Content(), func(o fyne.CanvasObject) {
				if c, ok := o.(*textCell); ok && c.Text() == want {
					cell = c
				}
			})
			if cell == nil {
				t.Errorf("at %v no cell shows %q", size, want)
				continue
			}
			if need := cellWidth(want, fyne.TextStyle{}) - 4; cell.Size().Width < need {
				t.Errorf("at %v %q is cut: its cell is %.0f wide, it needs %.0f", size, want, cell.Size().Width, need)
			}
		}
	}
}

// A dry pool's header says when it serves again.
func TestDashboardHeaderSaysWhenADryPoolIsBack(t *testing.T) {
	u, _ := newTestUI(t, nil)
	src := uitest.Sample()
	src.Snapshot.Accounts[0].State = proxy.StateCooldown
	back := uitest.Now.Add(9 * time.Minute)
	src.Snapshot.Accounts[0].CooldownUntil = &back
	u.ShowFixed(src, uitest.Running(), uitest.Now)
	u.ShowDashboard()
	first := *src.Snapshot.Accounts[1].CooldownUntil // team's rest ends first
	mustContain(t, u.dashWin.Content(), "Not serving", "no usable account · the first account is back at "+look.Clock(first, uitest.Now)+" (team)")
}

// An account kept in reserve says so, with its reserve in its column; a resting bucket shows in
// the state of the account that still serves the other models; the accounts' line says the
// pool's pace.
func TestDashboardShowsReservesRestingBucketsAndThePace(t *testing.T) {
	test.NewTempApp(t)
	src := uitest.Sample()
	src.Snapshot.Accounts[1].CooldownReason, src.Snapshot.Accounts[1].Reserve = app.CooldownReserve, 20
	src.Snapshot.Accounts[0].BucketRests = []proxy.BucketRest{{Bucket: "codex_bengalfox", Name: "GPT-5.3-Codex-Spark", Until: uitest.Now.Add(38 * time.Minute)}}
	src.Snapshot.Accounts[2].BucketRests = []proxy.BucketRest{{Bucket: "codex_other", Until: uitest.Now.Add(38 * time.Minute)}}
	d := NewDashboard(src, DashboardOptions{Status: uitest.Running, Now: func() time.Time { return uitest.Now }, Usage: uitest.SampleUsage()})
	w := test.NewTempWindow(t, d.Content())
	w.Resize(DashboardSize)
	d.Refresh()
	rows := accountCells(t, w.Content())
	if got := rows[0].state.text.shown; got != (textView{"Ready · GPT-5.3-Codex-Spark resting until 15:10", look.Warn}) {
		t.Errorf("a resting bucket: %+v", got)
	}
	if got := rows[1].state.text.shown; got != (textView{"Kept in reserve until 14:36", look.Warn}) {
		t.Errorf("kept in reserve: %+v", got)
	}
	if got := rows[2].state.text.shown.text; got != "Key rejected · codex_other resting until 15:10" {
		t.Errorf("a bucket without a name: %q", got)
	}
	var reserves []string
	visit(w.Content(), func(o fyne.CanvasObject) {
		if r, ok := o.(*tableRow[dashAccount]); ok {
			reserves = append(reserves, cellOfColumn(t, r, "Reserve").(*textCell).Text())
		}
	})
	if strings.Join(reserves, " ") != "– 20% –" {
		t.Errorf("the Reserve column: %q", reserves)
	}
	if got := d.accountsSummary.Text; got != "3 configured · 1 ready · 1 resting · 1 needs sign-in · 5-hour capacity lasts until 15:40 at this pace" {
		t.Errorf("accounts summary %q", got)
	}
}
