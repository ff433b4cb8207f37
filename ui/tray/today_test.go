package tray

import (
	errors "errors"
	slices "slices"
	strings "strings"
	testing "testing"
	time "time"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/app/ledger"
	"github.com/codexrelay/codexrelay/proxy"
	"github.com/codexrelay/codexrelay/ui/look"
	"github.com/codexrelay/codexrelay/ui/source"
	"github.com/codexrelay/codexrelay/ui/uitest"
)

// newUsageTray is the tray process showing uitest.Sample() and src, its elapsed clock moved by hand (*el).
func newUsageTray(t *testing.T, src source.UsageSource) (*TrayApp, *fakeTray, *[]string, *time.Time) {
	t.Helper()
	tr, _, desk, opened := newTestTray(t, nil)
	el := time.Unix(1_000_000, 0)
	st := uitest.Running()
	tr.elapsed = func() time.Time { return el }
	tr.src, tr.fixed, tr.now, tr.usage = uitest.Sample(), &st, func() time.Time { return uitest.Now }, src
	return tr, desk, opened, &el
}

// The tray's usage line: today's tokens and cost, read again only after the relay served
// requests, at most once a minute (never while it is idle), and a new menu only when its text
// changes.
func TestTrayUsageLine(t *testing.T) {
	fixed := uitest.SampleUsage()
	src := &uitest.CountingUsage{UsageSource: fixed}
	tr, desk, opened, el := newUsageTray(t, src)
	tr.refresh()
	items := tr.Menu()
	const want = "Today: 1.2 M tokens · $1.30 + $2.10 API-equiv."
	if items[2].Label != want || items[2].Disabled {
		t.Fatalf("line 3 %q, want %q", items[2].Label, want)
	}
	if !items[3].Separator {
		t.Errorf("no separator after the usage line: %q", labels(items))
	}
	reads, menus := src.Summaries, desk.menus
	for range 30 {
		*el = el.Add(time.Second)
		tr.refresh()
	}
	if src.Summaries != reads || desk.menus != menus {
		t.Errorf("within a minute: %d reads, %d menus", src.Summaries-reads, desk.menus-menus)
	}
	// A minute on, nothing served: no read.
	*el = el.Add(30 * time.Second)
	tr.refresh()
	if src.Summaries != reads || desk.menus != menus {
		t.Errorf("a minute later, idle: %d reads, %d menus", src.Summaries-reads, desk.menus-menus)
	}
	// A request served, with new usage: read a minute after the last read, not sooner.
	fixed.Rows = append(fixed.Rows, uitest.UsageRow(0, "api", "gpt-5.4-mini", "", 2_000_000, 0, 0, 2.10))
	tr.src.(*source.Fixed).Snapshot.Requests.Total++
	*el = el.Add(-30 * time.Second) // 30 s after the read
	tr.refresh()
	if got := tr.Menu()[2].Label; got != want || src.Summaries != reads {
		t.Errorf("read again within the minute: %q (%d reads)", got, src.Summaries-reads)
	}
	menus = desk.menus // (the request count is the menu's second line)
	*el = el.Add(30 * time.Second)
	tr.refresh()
	if got := tr.Menu()[2].Label; got != "Today: 3.2 M tokens · $3.40 + $2.10 API-equiv." || desk.menus != menus+1 || src.Summaries != reads+1 {
		t.Errorf("after new usage %q (%d new menus, %d reads)", got, desk.menus-menus, src.Summaries-reads)
	}
	tr.Menu()[2].Action()
	if !slices.Equal(*opened, []string{"usage"}) {
		t.Errorf("the usage line asked for %q", *opened)
	}
}

// The tray's usage line reads the relay's ledger: what it recorded today.
func TestTrayUsageLineReadsTheRelaysLedger(t *testing.T) {
	tr, relay, _, _ := newTestTray(t, map[string]string{"CODEXRELAY_LISTEN": "127.0.0.1:0"})
	if err := tr.svc.Start(); err != nil {
		t.Fatal(err)
	}
	l := relay.Ledger()
	if l == nil {
		t.Fatalf("no ledger: %v", relay.LedgerError())
	}
	l.Record(ledger.Row{Time: time.Now(), Account: "work", Model: "gpt-5.4", Status: 200,
		InputTokens: 1000, CachedTokens: 400, OutputTokens: 200, Project: "shop"})
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	tr.refresh()
	trayItem(t, tr, "Today: 1.2 k tokens · <$0.01 API-equiv.")
}

func TestTodayLine(t *testing.T) {
	k := look.KindsOf([]proxy.AccountStats{{Name: "seat", Kind: proxy.KindChatGPT}, {Name: "key", Kind: proxy.KindOpenAI}})
	rep := func(groups ...ledger.Group) ledger.Report {
		r := ledger.Report{Groups: groups}
		for _, g := range groups {
			r.Total.Add(g.Totals)
		}
		return r
	}
	g := func(account string, tokens int64, cost float64) ledger.Group {
		return ledger.Group{Key: account, Totals: ledger.Totals{InputTokens: tokens, CostUSD: cost}}
	}
	for _, c := range []struct {
		rep  ledger.Report
		want string
	}{
		{rep(g("key", 1_200_000, 3.40)), "Today: 1.2 M tokens · $3.40"},
		{rep(g("seat", 1_200_000, 3.40)), "Today: 1.2 M tokens · $3.40 API-equiv."},
		{rep(g("gone", 980, 0.001)), "Today: 980 tokens · <$0.01 API-equiv."},
		{rep(g("seat", 12_000_000, 20), g("key", 400_000, 1.5)), "Today: 12.4 M tokens · $1.50 + $20.00 API-equiv."},
		{rep(), "Today: no tokens yet"},
	} {
		if got := todayLine(c.rep, k); got != c.want {
			t.Errorf("%q, want %q", got, c.want)
		}
	}
}

// What the tray says of a ledger that is off, failed or empty: no line for the first two,
// "no tokens yet" for the last (the Usage window's half is ui/window's TestUsageWindowStates).
func TestUsageWindowStates(t *testing.T) {
	for _, c := range []struct {
		name string
		src  *source.FixedUsage
	}{
		{"off", &source.FixedUsage{Off: true}},
		{"failed", &source.FixedUsage{Err: errors.New("the usage ledger /tmp/x/usage.db cannot be opened: database disk image is malformed; the relay serves without it")}},
		{"empty", &source.FixedUsage{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr, _, _, _ := newUsageTray(t, c.src)
			tr.refresh()
			today := ""
			for _, it := range tr.Menu() {
				if strings.HasPrefix(it.Label, "Today:") {
					today = it.Label
				}
			}
			if want := map[bool]string{true: "Today: no tokens yet"}[c.name == "empty"]; today != want {
				t.Errorf("the tray says %q, want %q", today, want)
			}
		})
	}
}

// Usage… in the tray asks the window process for the Usage window (the windows' half, which
// opens it, is ui/window's TestUsageWindowOpens).
func TestUsageWindowOpens(t *testing.T) {
	tr, _, opened, _ := newUsageTray(t, uitest.SampleUsage())
	tr.refresh()
	trayItem(t, tr, "Usage…").Action()
	if !slices.Equal(*opened, []string{"usage"}) {
		t.Fatalf("Usage… in the tray asked for %q", *opened)
	}
}

// The tooltip says the pool's pace, read with the usage line (no read of its own while idle):
// until when the 5-hour capacity lasts, or that it lasts past the next reset.
func TestTrayTooltipSaysThePace(t *testing.T) {
	fixed := uitest.SampleUsage()
	tr, _, _, el := newUsageTray(t, fixed)
	tr.refresh()
	if want := "5-hour capacity lasts until 15:40 at this pace"; !strings.HasSuffix(tr.tray.tooltip, " · "+want) {
		t.Fatalf("tooltip %q, want it to end with %q", tr.tray.tooltip, want)
	}
	// A reset before it runs out; read again once a request was served and a minute passed.
	fixed.Pool.NextReset = uitest.Now.Add(28 * time.Minute)
	tr.refresh()
	if strings.Contains(tr.tray.tooltip, "past") {
		t.Fatalf("read again at once, with nothing served: %q", tr.tray.tooltip)
	}
	tr.src.(*source.Fixed).Snapshot.Requests.Total++
	*el = el.Add(time.Minute)
	tr.refresh()
	if want := "5-hour capacity lasts past the 15:00 reset at this pace"; !strings.HasSuffix(tr.tray.tooltip, want) {
		t.Fatalf("tooltip %q, want %q", tr.tray.tooltip, want)
	}
	// No pace: nothing said.
	fixed.Pool = ledger.Forecast{}
	tr.src.(*source.Fixed).Snapshot.Requests.Total++
	*el = el.Add(time.Minute)
	tr.refresh()
	if strings.Contains(tr.tray.tooltip, "pace") {
		t.Errorf("tooltip without a forecast: %q", tr.tray.tooltip)
	}
}

// An account kept in reserve says so, not "limit"; a resting bucket is named on its line.
func TestTrayMenuSaysReserveAndRestingBuckets(t *testing.T) {
	tr, _, _, _ := newTestTray(t, nil)
	src := uitest.Sample()
	src.Snapshot.Accounts[1].CooldownReason = app.CooldownReserve
	src.Snapshot.Accounts[0].BucketRests = []proxy.BucketRest{{Bucket: "codex_bengalfox", Name: "GPT-5.3-Codex-Spark", Until: uitest.Now.Add(38 * time.Minute)}}
	st := uitest.Running()
	tr.src, tr.fixed, tr.now = src, &st, func() time.Time { return uitest.Now }
	tr.refresh()
	items := tr.Menu()
	if got := items[3].Label; got != "personal · 5 h 37% · week 62% · GPT-5.3-Codex-Spark resting until 15:10 · in use" {
		t.Errorf("bucket line %q", got)
	}
	if got := items[4].Label; got != "team · kept in reserve until 14:36" {
		t.Errorf("reserve line %q", got)
	}
}
