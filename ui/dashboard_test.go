package ui

import (
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/codexrelay/codexrelay/app"
)

func newTestDashboard(t *testing.T, src Source) (*Dashboard, fyne.Window) {
	t.Helper()
	test.NewTempApp(t)
	d := NewDashboard(src, DashboardOptions{
		Status:       running,
		Now:          func() time.Time { return testNow },
		OpenAccounts: func() {},
		OpenSettings: func() {},
	})
	w := test.NewTempWindow(t, d.Content())
	w.Resize(DashboardSize)
	return d, w
}

func TestDashboardShowsTheSnapshot(t *testing.T) {
	src := sample()
	d, w := newTestDashboard(t, src)
	d.Refresh()
	c := w.Content()

	mustShow(t, c,
		"Degraded", // header state: one of three accounts is ready
		"·  Listening on http://127.0.0.1:7455/v1 · 1 of 3 accounts ready",
		// catalog
		"4 min", "14", "10 min", "On", "30 min", "17", "1", "6", "19",
		// serialization: hits, misses, direct, hit rate 1912/3158
		"1,912", "1,246", "58", "60.5%",
		// requests
		"1,284", "7", "23", "2", "0.41 ms",
		// accounts table
		"personal", "team", "api", "Ready", "Cooling down", "Needs sign-in", "4 min 32 s",
		"ChatGPT", "API key", "912", "341", "429 usage_limit_reached", "401 invalid_api_key",
		// recent requests table
		"codex → gpt-5.1-codex", "team → personal", "200", "0.38 ms", "4.2 s",
		"gpt-5.1", "503 error", "2.5 ms", "96 ms",
	)
	if got := d.status.Text; !strings.Contains(got, "1 of 3 accounts ready") {
		t.Errorf("status %q", got)
	}
	// The five-hour and weekly bars of the one ChatGPT account with a quota, and their figures.
	var bars []float64
	visit(c, func(o fyne.CanvasObject) {
		if b, ok := o.(*widget.ProgressBar); ok {
			bars = append(bars, b.Value)
		}
	})
	if len(bars) != 2 || bars[0] != 0.37 || bars[1] != 0.62 {
		t.Errorf("quota bars %v, want [0.37 0.62]", bars)
	}
	mustShow(t, c, "37%", "62%")
	if d.empty.Visible() {
		t.Error("the no-account help shows although there are accounts")
	}
}

func TestDashboardFollowsTheSnapshot(t *testing.T) {
	src := sample()
	d, w := newTestDashboard(t, src)
	d.Refresh()
	if got := d.reqTotal.value.Text; got != "1,284" {
		t.Fatalf("total %q", got)
	}

	src.Snapshot.Requests.Total = 1300
	src.Snapshot.Requests.InFlight = 0
	src.Snapshot.Catalog.AgeMs = 12_000
	src.Snapshot.Catalog.SWREnabled = false
	src.Snapshot.Accounts[1].State = "ready"
	src.Snapshot.Accounts[1].CooldownUntil = nil
	src.Snapshot.Accounts = src.Snapshot.Accounts[:2]
	src.Recent = src.Recent[1:]
	d.Refresh()

	c := w.Content()
	mustShow(t, c, "1,300", "12 s", "Off", "Serving", "·  Listening on http://127.0.0.1:7455/v1")
	for _, gone := range []string{"1,284", "4 min", "Cooling down", "4 min 32 s", "Needs sign-in", "codex → gpt-5.1-codex"} {
		for _, s := range texts(c) {
			if s == gone {
				t.Errorf("%q still shows after the update", gone)
			}
		}
	}
	if got := d.requestsSummary.Text; got != "the last one" {
		t.Errorf("requests summary %q", got)
	}
}

func TestDashboardHeaderShowsWhyTheProxyStopped(t *testing.T) {
	test.NewTempApp(t)
	st := app.ServiceStatus{Addr: "127.0.0.1:7455", Err: errString("cannot listen on 127.0.0.1:7455: the port is taken")}
	d := NewDashboard(sample(), DashboardOptions{Status: func() app.ServiceStatus { return st }})
	test.NewTempWindow(t, d.Content()).Resize(DashboardSize)
	d.Refresh()
	if d.stateText.Text != "Stopped" || !strings.Contains(d.status.Text, "the port is taken") {
		t.Fatalf("header %q %q", d.stateText.Text, d.status.Text)
	}
}

type errString string

func (e errString) Error() string { return string(e) }

func TestDashboardWithoutAccountsSaysHowToStart(t *testing.T) {
	u, _ := newTestUI(t, nil)
	u.refresh()
	w := u.dashboardWindow()
	w.Resize(DashboardSize)
	u.showDashboard()
	c := w.Content()

	mustShow(t, c, "Add your first account", "Point Codex at the relay", "Accounts…", "Copy")
	mustContain(t, c,
		"codexrelay accounts add --name me --kind chatgpt",
		"codexrelay accounts import-codex",
		`model_provider = "codexrelay"`,
		`base_url = "http://127.0.0.1:7455/v1"`,
		`model_catalog_url = "http://127.0.0.1:7455/v1/models"`,
	)
	if u.dash.accountsSection.Visible() || u.dash.requestsSection.Visible() {
		t.Error("empty tables show instead of the help")
	}

	// The help's Copy button copies the provider block; its Accounts… button opens that window.
	tapButton(t, u.dash.empty, "Copy")
	if got := u.fa.Clipboard().Content(); !strings.Contains(got, "[model_providers.codexrelay]") {
		t.Errorf("clipboard %q", got)
	}
	tapButton(t, u.dash.empty, "Accounts…")
	if u.accounts == nil {
		t.Fatal("Accounts… did not open the accounts window")
	}
}

func TestFormats(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{count(0), "0"}, {count(999), "999"}, {count(1000), "1,000"}, {count(1234567), "1,234,567"},
		{age(-1), "never fetched"}, {age(12_400), "12 s"}, {age(4*60_000 + 59_000), "4 min"}, {age(3 * 3600_000), "3 h"},
		{countdown(testNow.Add(272*time.Second), testNow), "4 min 32 s"},
		{countdown(testNow.Add(-time.Second), testNow), "now"},
		{millis(0.412), "0.41 ms"}, {millis(1432), "1.4 s"},
		{percent(1, 3), "33.3%"}, {percent(0, 0), "–"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
