package window

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/app/ledger"
	"github.com/codexrelay/codexrelay/ui/look"
	"github.com/codexrelay/codexrelay/ui/source"
	"github.com/codexrelay/codexrelay/ui/uitest"
)

// newUsageUI is a UI showing uitest.Sample() and src, its elapsed clock moved by hand (*el).
func newUsageUI(t *testing.T, src source.UsageSource) (*UI, *time.Time) {
	t.Helper()
	u, _ := newTestUI(t, nil)
	el := time.Unix(1_000_000, 0)
	u.elapsed = func() time.Time { return el }
	u.ShowFixed(uitest.Sample(), uitest.Running(), uitest.Now)
	u.ShowFixedUsage(src)
	return u, &el
}

// poll is one tick of the poller: a fetch, then apply.
func poll(u *UI) { u.apply(u.fetch()) }

func TestUsageWindowShowsTheLedger(t *testing.T) {
	u, _ := newUsageUI(t, uitest.SampleUsage())
	u.ShowUsage()
	w := u.usageWin
	if !w.shown || w.win == nil {
		t.Fatal("the Usage window did not open")
	}
	c := w.win.Content()
	mustShow(t, c,
		"4.8 M", "$11.40", "64%", "5", // the last 7 days: tokens, cost, cache hits, requests
		"Tokens per day", "Cost per day", "Top models", "Top projects",
		"gpt-5.3-codex", "3.4 M", "$7.10", "72%", // the top model: 3.2 M input + 160 k output, 2.3 M cached
		"codexrelay", "(no project)", "webshop",
		"personal", "212 k", "1.8 M",
	)
	mustContain(t, c,
		"cost · $10.10 API-equivalent", // seats' cost beside the API key's
		"Costs at API list prices of "+ledger.PricesCheckedAt,
		"API-equivalent for ChatGPT seats",
		"At the pace of the last hour (4.1 M tokens), the pool's 5-hour capacity runs out around 15:40.",
		"–: too few readings yet; the forecast leaves out team.",
	)
	// "Too few readings" is said once, under the table, however many rates are unknown; their
	// cells show a dash (issue 32 Low: six times).
	all := w.forecast.Text
	for _, r := range burnCells(w.burns) {
		all += "\n" + r[0].Text() + "\n" + r[1].Text() + "\n" + r[2].Text()
	}
	if n := strings.Count(strings.ToLower(all), "too few readings"); n != 1 {
		t.Errorf("%q %d times, want once", "too few readings", n)
	}
	if got := burnCells(w.burns)[1][1].Text(); got != "–" {
		t.Errorf("team's unknown 5-hour rate reads %q", got)
	}
	if got := w.models.names(); strings.Join(got, ",") != "gpt-5.3-codex,gpt-5.4,gpt-5.4-mini" {
		t.Errorf("top models %q", got)
	}
	if got := w.projects.names(); strings.Join(got, ",") != "codexrelay,webshop,(no project)" {
		t.Errorf("top projects %q", got)
	}
	var legend []string
	for _, it := range w.legend.items {
		legend = append(legend, it.text)
	}
	if strings.Join(legend, ",") != "personal,team,api (API key)" {
		t.Errorf("legend %q", legend)
	}
	for _, gone := range []string{"gpt-5.5", "The usage ledger is off"} {
		if strings.Contains(strings.Join(texts(c), "\n"), gone) {
			t.Errorf("%q shows", gone)
		}
	}
}

// The tokens chart has one segment per day and account, as tall as its tokens, stacked in
// the accounts' list order, each account in its own colour.
func TestUsageChartSegments(t *testing.T) {
	u, _ := newUsageUI(t, uitest.SampleUsage())
	u.ShowUsage()
	w := u.usageWin
	w.win.Resize(usageWindowSize)
	segs := w.tokensChart.segments()
	type key struct{ bar, series string }
	got := map[key]chartSegment{}
	for _, s := range segs {
		got[key{s.bar, s.series}] = s
	}
	day := func(daysAgo int) string {
		return uitest.Now.Add(-time.Duration(daysAgo)*24*time.Hour - time.Minute).UTC().Format(time.DateOnly)
	}
	want := map[key]float64{
		{day(0), "personal"}: 840_000, {day(0), "api"}: 360_000,
		{day(1), "personal"}: 2_100_000, {day(1), "team"}: 1_050_000,
		{day(3), "team"}: 420_000,
	}
	if len(segs) != len(want) {
		t.Fatalf("%d segments, want %d: %+v", len(segs), len(want), segs)
	}
	for k, v := range want {
		if s, ok := got[k]; !ok || s.value != v {
			t.Errorf("segment %v: %+v, want %v tokens", k, s, v)
		}
	}
	if n := len(w.last.tokensChart.bars); n != 7 {
		t.Errorf("%d bars for 7 days", n)
	}
	// Heights: personal's 2.1 M on day 1 is twice team's 1.05 M (each drawn chartGap shorter).
	p, tm := got[key{day(1), "personal"}].rect, got[key{day(1), "team"}].rect
	hp, ht := p.Size().Height+chartGap, tm.Size().Height+chartGap
	if ht < 10 || math.Abs(float64(hp/ht)-2) > 0.02 {
		t.Errorf("heights %.1f and %.1f, want 2:1", hp, ht)
	}
	// Stacked: team sits on personal (list order: personal first), in the same column.
	if p.Position().X != tm.Position().X || math.Abs(float64(tm.Position().Y+tm.Size().Height+chartGap-p.Position().Y)) > 0.5 {
		t.Errorf("team at %v %v is not stacked on personal at %v %v", tm.Position(), tm.Size(), p.Position(), p.Size())
	}
	if p.FillColor == tm.FillColor || p.FillColor == nil {
		t.Errorf("personal and team share the colour %v", p.FillColor)
	}
	// Cost bars are stacked by account too; the API key's real cost among them.
	var costs float64
	for _, s := range w.costChart.segments() {
		costs += s.value
	}
	if math.Abs(costs-11.40) > 1e-9 {
		t.Errorf("cost segments add up to %v", costs)
	}
	// Pointing at a bar shows its figures.
	w.tokensChart.MouseMoved(&desktop.MouseEvent{PointEvent: fyne.PointEvent{Position: fyne.NewPos(p.Position().X+1, p.Position().Y+1)}})
	if got, want := w.tokensChart.tip.Text, dayLabel(day(1))+": 3.1 M (personal 2.1 M, team 1.1 M)"; got != want {
		t.Errorf("hover %q, want %q", got, want)
	}
	w.tokensChart.MouseOut()
	if w.tokensChart.tip.Text != "" {
		t.Errorf("the figures stay after the pointer left: %q", w.tokensChart.tip.Text)
	}
}

func TestUsageWindowPeriod(t *testing.T) {
	src := &uitest.CountingUsage{UsageSource: uitest.SampleUsage()}
	u, _ := newUsageUI(t, src)
	u.ShowUsage()
	w := u.usageWin
	before := src.Summaries
	w.period.SetSelected("Last 30 days")
	if src.Summaries == before {
		t.Fatal("changing the period read nothing")
	}
	if n := len(w.last.tokensChart.bars); n != 30 {
		t.Errorf("%d bars for 30 days", n)
	}
	mustShow(t, w.win.Content(), "10 M", "$31.40", "gpt-5.5")
	if n := len(w.tokensChart.segments()); n != 6 {
		t.Errorf("%d segments over 30 days, want 6", n)
	}
}

// The window reads the ledger when it opens, then at most every minute while it is open,
// and an unchanged read redraws nothing.
func TestUsageWindowReadsOncePerMinute(t *testing.T) {
	fixed := uitest.SampleUsage()
	src := &uitest.CountingUsage{UsageSource: fixed}
	u, el := newUsageUI(t, src)
	u.ShowUsage()
	w := u.usageWin
	reads, before := src.Summaries, redraws.Load()
	for range 59 {
		*el = el.Add(time.Second)
		poll(u)
	}
	if src.Summaries != reads {
		t.Errorf("%d reads within a minute", src.Summaries-reads)
	}
	*el = el.Add(time.Second)
	u.refresh()
	if n := src.Summaries - reads; n != 4 { // by account, model, project and tier
		t.Errorf("a minute later: %d reads, want 4", n)
	}
	if n := redraws.Load() - before; n != 0 {
		t.Errorf("unchanged usage redrew %d widgets", n)
	}
	// A hidden window reads nothing.
	w.close()
	if w.shown {
		t.Fatal("closing did not hide the window")
	}
	reads = src.Summaries
	*el = el.Add(5 * time.Minute)
	u.refresh()
	if src.Summaries != reads {
		t.Error("a closed Usage window read the ledger")
	}
	// New usage shows at the next read.
	fixed.Rows = append(fixed.Rows, uitest.UsageRow(0, "team", "gpt-5.4", "webshop", 1_000_000, 0, 0, 1))
	u.ShowUsage()
	if n := redraws.Load() - before; n == 0 {
		t.Error("new usage redrew nothing")
	}
	mustShow(t, w.win.Content(), "5.8 M", "$12.40")
}

func TestUsageWindowStates(t *testing.T) {
	for _, c := range []struct {
		name  string
		src   *source.FixedUsage
		shows string
		offer bool
	}{
		{"off", &source.FixedUsage{Off: true}, "The usage ledger is off, so Codex Relay records no usage. Turn it on here, or from a terminal with:", true},
		{"failed", &source.FixedUsage{Err: errors.New("the usage ledger /tmp/x/usage.db cannot be opened: database disk image is malformed; the relay serves without it")},
			"The usage ledger /tmp/x/usage.db cannot be opened: database disk image is malformed; the relay serves without it", false},
		{"empty", &source.FixedUsage{}, "No requests recorded in the last 7 days yet. Each request through the relay adds its tokens, cost and cache hits here.", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			u, _ := newUsageUI(t, c.src)
			u.ShowUsage()
			w := u.usageWin
			mustShow(t, w.win.Content(), c.shows)
			if w.body.Visible() {
				t.Error("the figures show")
			}
			if w.command.Visible() != c.offer {
				t.Errorf("the command to turn it on shows: %v", w.command.Visible())
			}
			if c.offer {
				mustShow(t, w.win.Content(), usageCommand, "Turn on")
			}
			if w.period.Visible() != (c.name == "empty") {
				t.Errorf("the period shows: %v", w.period.Visible())
			}
			// (What the tray says of the same ledgers is ui/tray's TestUsageWindowStates.)
		})
	}
}

// The real source follows the relay: closed until the relay serves, empty at first, then
// what the ledger recorded; off, with a button that turns it on.
func TestUsageWindowReadsTheRelaysLedger(t *testing.T) {
	u, relay := newTestUI(t, map[string]string{"CODEXRELAY_LISTEN": "127.0.0.1:0"})
	u.refresh()
	u.ShowUsage()
	w := u.usageWin
	c := w.win.Content()
	mustContain(t, c, "The usage ledger opens while the relay serves")

	if err := u.svc.Start(); err != nil {
		t.Fatal(err)
	}
	l := relay.Ledger()
	if l == nil {
		t.Fatalf("no ledger: %v", relay.LedgerError())
	}
	w.reload()
	mustContain(t, c, "No requests recorded in the last 7 days yet.")

	l.Record(ledger.Row{Time: time.Now(), Account: "work", Model: "gpt-5.4", Status: 200,
		InputTokens: 1000, CachedTokens: 400, OutputTokens: 200, Project: "shop"})
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	w.reload()
	mustShow(t, c, "1.2 k", "40%", "gpt-5.4", "shop")

	if err := relay.Set(app.SettingUsageLedger, "false"); err != nil {
		t.Fatal(err)
	}
	w.reload()
	mustShow(t, c, usageCommand)
	tapButton(t, c, "Turn on")
	if relay.Settings().Usage.Off {
		t.Error("Turn on left the ledger off")
	}
	if strings.Contains(strings.Join(texts(c), "\n"), "The usage ledger is off") {
		t.Error("the window still says the ledger is off")
	}
}

// The dashboard's header and the tray open the Usage window.
func TestUsageWindowOpens(t *testing.T) {
	u, _ := newUsageUI(t, uitest.SampleUsage())
	u.ShowDashboard()
	tapButton(t, u.dashWin.Content(), "Usage…")
	if u.usageWin == nil || !u.usageWin.shown {
		t.Fatal("Usage… in the dashboard did not open the window")
	}
	u.usageWin.close()
	// Usage… in the tray asks the window process for "usage" (ui/tray's TestUsageWindowOpens).
	u.OpenWindow("usage")
	if !u.usageWin.shown {
		t.Error("the window process did not open the Usage window")
	}
}

// fitsWithoutScrolling checks that the Usage window, at its 800x600, shows everything without
// scrolling.
func fitsWithoutScrolling(t *testing.T, w *usageScreen) {
	t.Helper()
	w.win.Resize(usageWindowSize)
	if m := w.win.Content().MinSize(); m.Width > usageWindowSize.Width || m.Height > usageWindowSize.Height {
		t.Errorf("the Usage window needs %v", m)
	}
	if inner, outer := w.scroll.Content.MinSize().Height, w.scroll.Size().Height; inner > outer {
		t.Errorf("the figures need %.0f of %.0f: they scroll", inner, outer)
	}
}

// At 800x600 everything shows without scrolling.
func TestUsageWindowFits(t *testing.T) {
	u, _ := newUsageUI(t, uitest.SampleUsage())
	u.ShowUsagePeriod(30)
	w := u.usageWin
	fitsWithoutScrolling(t, w)
}

// The prices' date is said once in the window (it was said four times), and a few tokens'
// worth of cost has an axis whose two lines read differently (both read "<$0.01").
func TestUsageWindowSaysThingsOnce(t *testing.T) {
	u, _ := newUsageUI(t, uitest.SampleUsage())
	u.ShowUsage()
	all := strings.Join(texts(u.usageWin.win.Content()), "\n")
	if n := strings.Count(all, ledger.PricesCheckedAt); n != 1 {
		t.Errorf("the prices' date is said %d times:\n%s", n, all)
	}

	for _, cost := range []float64{0.002, 0.004, 0.012, 0.03} {
		tiny := &source.FixedUsage{Rows: []source.UsageRow{uitest.UsageRow(0, "api", "gpt-5.4-mini", "", 1_000, 0, 10, cost)}}
		u, _ := newUsageUI(t, tiny)
		u.ShowUsage()
		ticks := u.usageWin.costChart.data.ticks
		if len(ticks) != 2 || ticks[0].label == ticks[1].label || strings.Contains(ticks[0].label+ticks[1].label, "<") {
			t.Errorf("cost %v: the axis reads %v", cost, ticks)
		}
		if top := u.usageWin.costChart.data.top; top < cost {
			t.Errorf("cost %v: the axis ends at %v, below the bar", cost, top)
		}
	}
}

func TestUsageFormats(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 840: "840", 1000: "1 k", 12_400: "12.4 k", 1_230_000: "1.2 M",
		50_000_000: "50 M", 312_000_000: "312 M", 1_500_000_000: "1.5 B"} {
		if got := look.TokenCount(n); got != want {
			t.Errorf("look.TokenCount(%d) = %q, want %q", n, got, want)
		}
	}
	for v, want := range map[float64]string{0: "$0.00", 0.004: "<$0.01", 3.4: "$3.40", 1234.5: "$1,234.50"} {
		if got := look.Dollars(v); got != want {
			t.Errorf("look.Dollars(%v) = %q, want %q", v, got, want)
		}
	}
	for v, want := range map[float64]float64{0: 1, 0.3: 0.5, 7: 10, 12: 20, 23: 25, 25: 25, 4_100_000: 5_000_000} {
		if got := niceCeil(v); got != want {
			t.Errorf("niceCeil(%v) = %v, want %v", v, got, want)
		}
	}
}

// A chart whose data did not change redraws nothing; new data makes new segments.
func TestBarChartRedrawsOnlyOnChange(t *testing.T) {
	test.NewTempApp(t).Settings().SetTheme(newTheme())
	c := newBarChart(100, look.Dollars)
	test.NewTempWindow(t, c).Resize(fyne.NewSize(300, 120))
	bars := func(v float64) []chartBar {
		return []chartBar{{key: "a", label: "A", parts: []chartPart{{series: "x", value: v, color: chartColor(0)}}}}
	}
	c.Set(newChartData(bars(3), axisDollars))
	before := redraws.Load()
	c.Set(newChartData(bars(3), axisDollars))
	if n := redraws.Load() - before; n != 0 {
		t.Errorf("the same data redrew %d times", n)
	}
	old := c.segments()[0].rect
	c.Set(newChartData(bars(4), axisDollars))
	if n := redraws.Load() - before; n != 1 || c.segments()[0].rect == old {
		t.Errorf("new data: %d redraws", n)
	}
	if c.data.top != 5 || c.gridTxt[1].Text != "$5" {
		t.Errorf("axis top %v labelled %q", c.data.top, c.gridTxt[1].Text)
	}
}

// The quota burn's names show uncut: the table widens to them (issue 32 Low: names cut in the
// Usage window), and the window still fits at its 800x600.
func TestUsageWindowShowsWholeNames(t *testing.T) {
	u, _ := newTestUI(t, nil)
	snap := uitest.Sample()
	snap.Snapshot.Accounts[1].Name = "team@example.com"
	src := uitest.SampleUsage()
	for i := range src.Rows {
		if src.Rows[i].Account == "team" {
			src.Rows[i].Account = "team@example.com"
		}
	}
	u.ShowFixed(snap, uitest.Running(), uitest.Now)
	u.ShowFixedUsage(src)
	u.ShowUsagePeriod(30)
	w := u.usageWin
	w.win.Resize(usageWindowSize)
	var found bool
	for _, r := range burnCells(w.burns) {
		if r[0].Text() == "team@example.com" && r[0].Visible() {
			found = true
			if need := fyne.MeasureText(r[0].Text(), theme.TextSize(), fyne.TextStyle{}).Width + 2*dense.Size(theme.SizeNameInnerPadding); r[0].Size().Width < need {
				t.Errorf("the name %q is cut: %v wide, needs %v", r[0].Text(), r[0].Size().Width, need)
			}
		}
	}
	if !found {
		t.Fatal("no quota burn row for team@example.com")
	}
	fitsWithoutScrolling(t, w)
}

// A ledger that is not open because nothing serves says how to open it; one that failed to open
// says why it failed (its error wraps ErrUsageClosed, as the local API carries it).
func TestUsageMessageSaysWhyTheLedgerFailed(t *testing.T) {
	v, _ := usageMessage(usageData{err: source.ErrUsageClosed})
	if !strings.Contains(v.message, "opens while the relay serves") {
		t.Errorf("closed: %q", v.message)
	}
	failed := fmt.Errorf("%w: cannot open usage.db: permission denied", source.ErrUsageClosed)
	if v, _ := usageMessage(usageData{err: failed}); !strings.Contains(v.message, "permission denied") {
		t.Errorf("failed to open: %q", v.message)
	}
}

// burnCells are the quota burn's rows' cells, column by column, hidden rows included.
func burnCells(b *burnTable) [][]*textCell {
	var rows [][]*textCell
	for _, l := range b.lines {
		var cells []*textCell
		for _, c := range l.cells {
			cells = append(cells, c.(*textCell))
		}
		rows = append(rows, cells)
	}
	return rows
}
