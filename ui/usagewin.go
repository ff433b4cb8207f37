package ui

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/codexrelay/codexrelay/app/ledger"
	"github.com/codexrelay/codexrelay/proxy"
)

// The Usage window: what the usage ledger recorded over the last 7 or 30 days. Tokens and
// cost per day stacked by account (an API key's cost is real, a ChatGPT seat's
// API-equivalent, each dated by the price table), the top models and projects, the cache
// hits, and for the ChatGPT accounts how many tokens fill 1% of their windows and when the
// pool's five-hour capacity runs out.
//
// The ledger is read off the UI thread when the window opens, when the period changes and
// then at most every usageEvery while it stays open; a read that finds what is on screen
// redraws nothing.

// usagePeriods are the periods the window offers, in days, with their labels.
var usagePeriods = []struct {
	days  int
	label string
}{{7, "Last 7 days"}, {30, "Last 30 days"}}

// usageTop is how many models and projects the tables list.
const usageTop = 5

// usageWindowSize is the window's default size; everything fits in it without scrolling.
var usageWindowSize = fyne.NewSize(800, 600)

// usageData is what one read of the ledger found (read off the UI thread).
type usageData struct {
	days  int
	now   time.Time
	kinds accountKinds
	// err is why the ledger could not be read (ErrUsageOff, ErrUsageClosed or a failure).
	err                        error
	accounts, models, projects ledger.Report
	daily                      []ledger.DayByAccount
	// burns are the ChatGPT accounts' burn rates, in list order; burnErr is why they or the
	// forecast could not be read.
	burns    []ledger.Burn
	forecast ledger.Forecast
	burnErr  error
}

// periodStart is the first UTC day the last days days cover (today, in UTC, is the last).
func periodStart(now time.Time, days int) time.Time {
	return utcDay(now).AddDate(0, 0, -(days - 1))
}

// readUsage reads everything the window shows for the last days days; it may block.
func readUsage(src UsageSource, accts []proxy.AccountStats, days int, now time.Time) usageData {
	d := usageData{days: days, now: now, kinds: kindsOf(accts)}
	ctx, cancel := context.WithTimeout(context.Background(), usageReadTimeout)
	defer cancel()
	since := periodStart(now, days)
	if d.accounts, d.err = src.Summary(ctx, ledger.Query{Since: since, By: "account"}); d.err != nil {
		return d
	}
	if d.models, d.err = src.Summary(ctx, ledger.Query{Since: since, By: "model"}); d.err != nil {
		return d
	}
	if d.projects, d.err = src.Summary(ctx, ledger.Query{Since: since, By: "project"}); d.err != nil {
		return d
	}
	if d.daily, d.err = src.Daily(ctx, since); d.err != nil {
		return d
	}
	for _, a := range d.kinds.chatgpt {
		b, err := src.Burn(ctx, a)
		if err != nil {
			d.burnErr = err
			return d
		}
		d.burns = append(d.burns, b)
	}
	if len(d.kinds.chatgpt) > 0 {
		d.forecast, d.burnErr = src.Forecast(ctx, d.kinds.chatgpt, now)
	}
	return d
}

// usageState is what the window shows: the figures, or a message in their place.
type usageState int

const (
	usageLoading usageState = iota
	usageReady
	usageEmpty  // the ledger works and holds nothing for the period
	usageOff    // switched off: how to turn it on
	usageFailed // cannot be read: why
)

// tileView is one of the figures at the top: a value and what it is.
type tileView struct{ value, caption string }

// usageRowView is one line of the top models or projects.
type usageRowView struct{ name, tokens, cost, cacheHit string }

// burnRowView is one ChatGPT account's burn rates.
type burnRowView struct {
	account    string
	five, week textView
}

// usageView is everything the window shows for one read.
type usageView struct {
	state   usageState
	message string

	tokens, cost, cache, requests tileView
	pricesNote                    string

	// legend names the accounts of both charts (the same colours in each).
	legend      []legendItem
	tokensChart chartData
	costTitle   string
	costChart   chartData

	modelsNote, projectsNote string
	models, projects         []usageRowView

	burns    []burnRowView
	forecast string
}

// pricesAt is the wording that dates a cost: "API list prices of 2026-11-30".
func pricesAt(date string) string {
	if date == "" {
		date = ledger.PricesCheckedAt
	}
	return "API list prices of " + date
}

// newUsageView is what the window shows for d (pure: the tests call it too).
func newUsageView(d usageData) usageView {
	switch {
	case errors.Is(d.err, ErrUsageOff):
		return usageView{state: usageOff, message: "The usage ledger is off, so Codex Relay records no usage. " +
			"Turn it on here, or from a terminal with:"}
	case errors.Is(d.err, ErrUsageClosed):
		return usageView{state: usageFailed, message: "The usage ledger opens while the relay serves: " +
			"start the proxy (Start proxy in the tray menu) to record and see usage."}
	case d.err != nil:
		return usageView{state: usageFailed, message: sentence(d.err.Error())}
	}
	total := d.accounts.Total
	if total.Requests == 0 && total.Tokens() == 0 && len(d.daily) == 0 {
		return usageView{state: usageEmpty, message: fmt.Sprintf("No requests recorded in the last %d days yet. "+
			"Each request through the relay adds its tokens, cost and cache hits here.", d.days)}
	}
	prices := pricesAt(d.accounts.PricesCheckedAt)
	v := usageView{state: usageReady}

	// The figures at the top.
	split := d.kinds.split(d.accounts.Groups)
	v.tokens = tileView{tokenCount(total.Tokens()), "tokens · " + tokenCount(total.OutputTokens) + " output"}
	v.cost = tileView{dollars(total.CostUSD), "cost"}
	switch {
	case split.equivalent > 0 && split.real > 0:
		v.cost.caption = "cost · " + dollars(split.equivalent) + " API-equivalent"
	case split.equivalent > 0:
		v.cost.caption = "API-equivalent cost"
	}
	v.cache = tileView{"–", "cache hits"}
	if total.InputTokens > 0 {
		v.cache = tileView{fmt.Sprintf("%.0f%%", 100*total.CacheHitRatio), "cache hits · " + tokenCount(total.CachedTokens) + " cached"}
	}
	v.requests = tileView{count(total.Requests), "requests"}
	if total.Errors > 0 {
		v.requests.caption += " · " + plural(total.Errors, "error")
	}
	v.pricesNote = "Costs at " + prices + ". A ChatGPT seat's cost is API-equivalent: what its tokens would cost on an API key."
	if len(d.accounts.UnpricedModels) > 0 {
		v.pricesNote += " No price known for " + strings.Join(d.accounts.UnpricedModels, ", ") + " (counted as $0)."
	}
	if d.accounts.FromRollups {
		v.pricesNote += " Days before the retention come from the daily totals."
	}

	// Tokens and cost per day, stacked by account in the same colours.
	colors := accountColors(d)
	days := make([]string, d.days)
	byDay := map[string]int{}
	for i := range days {
		days[i] = periodStart(d.now, d.days).AddDate(0, 0, i).Format(time.DateOnly)
		byDay[days[i]] = i
	}
	tokenBars := make([]chartBar, d.days)
	costBars := make([]chartBar, d.days)
	for i, day := range days {
		tokenBars[i] = chartBar{key: day, label: dayLabel(day)}
		costBars[i] = chartBar{key: day, label: dayLabel(day)}
	}
	used := map[string]bool{}
	for _, r := range d.daily {
		i, ok := byDay[r.Day]
		if !ok {
			continue
		}
		if r.Tokens() > 0 {
			tokenBars[i].parts = append(tokenBars[i].parts, chartPart{series: r.Account, value: float64(r.Tokens()), color: colors[r.Account]})
			used[r.Account] = true
		}
		if r.CostUSD > 0 {
			costBars[i].parts = append(costBars[i].parts, chartPart{series: r.Account, value: r.CostUSD, color: colors[r.Account]})
			used[r.Account] = true
		}
	}
	for i := range tokenBars {
		order := func(a, b chartPart) int { return d.kinds.compare(a.series, b.series) }
		slices.SortStableFunc(tokenBars[i].parts, order)
		slices.SortStableFunc(costBars[i].parts, order)
	}
	v.tokensChart = newChartData(tokenBars, func(x float64) string { return tokenCount(int64(x)) })
	v.costChart = newChartData(costBars, axisDollars)
	if v.costChart.top < minCostTop {
		// A few tokens' worth: an axis to $0.02, so that its two lines read $0.01 and $0.02
		// (both read "<$0.01" on an axis to the tallest bar's fraction of a cent).
		v.costChart = newChartDataTo(costBars, minCostTop, axisDollars)
	}
	var names []string
	for a := range used {
		names = append(names, a)
	}
	slices.SortFunc(names, d.kinds.compare)
	for _, a := range names {
		text := a
		if d.kinds.apiKey(a) {
			text += " (API key)"
		}
		v.legend = append(v.legend, legendItem{text, colors[a]})
	}
	// The prices' date is said once, in the note at the top (it was said four times).
	v.costTitle = "API-equivalent for ChatGPT seats"

	// The top models and projects.
	v.models, v.modelsNote = topRows(d.models, "(unknown model)"), "by tokens"
	v.projects, v.projectsNote = topRows(d.projects, "(no project)"), "by tokens"

	// Quota burn and the forecast.
	for _, b := range d.burns {
		v.burns = append(v.burns, burnRowView{account: b.Account,
			five: perPercent(b.PrimaryTokensPerPercent), week: perPercent(b.SecondaryTokensPerPercent)})
	}
	v.forecast = forecastText(d)
	return v
}

// accountColors gives each account a chart colour by its place in the list (so that it keeps
// its colour from one period to the next), then the accounts no longer listed by name.
func accountColors(d usageData) map[string]fyne.ThemeColorName {
	var gone []string
	for _, r := range d.daily {
		if _, ok := d.kinds.order[r.Account]; !ok && !slices.Contains(gone, r.Account) {
			gone = append(gone, r.Account)
		}
	}
	slices.Sort(gone)
	colors := map[string]fyne.ThemeColorName{}
	for a, i := range d.kinds.order {
		colors[a] = chartColor(i)
	}
	for i, a := range gone {
		colors[a] = chartColor(len(d.kinds.order) + i)
	}
	return colors
}

// compare orders accounts as the list does, the ones no longer listed last, by name.
func (k accountKinds) compare(a, b string) int {
	ia, oka := k.order[a]
	ib, okb := k.order[b]
	switch {
	case oka && okb:
		return cmp.Compare(ia, ib)
	case oka:
		return -1
	case okb:
		return 1
	}
	return strings.Compare(a, b)
}

// dayLabel is a UTC day ("2026-03-12") as the chart labels it: "Mar 12".
func dayLabel(day string) string {
	t, err := time.Parse(time.DateOnly, day)
	if err != nil {
		return day
	}
	return t.Format("Jan 2")
}

// axisDollars labels the cost axis: "$5", "$2.50", "$0.25".
func axisDollars(v float64) string {
	switch {
	case v == float64(int64(v)):
		return "$" + count(int64(v))
	case math.Abs(v*100-math.Round(v*100)) > 1e-9:
		return "$" + strconv.FormatFloat(v, 'f', -1, 64) // $0.025: never "<$0.01" on an axis
	}
	return dollars(v)
}

// minCostTop is the least top of the cost axis.
const minCostTop = 0.02

// topRows are the first usageTop groups of a report as table lines.
func topRows(rep ledger.Report, none string) []usageRowView {
	var rows []usageRowView
	for _, g := range rep.Groups {
		if len(rows) == usageTop {
			break
		}
		name := g.Key
		if name == "" {
			name = none
		}
		hit := "–"
		if g.InputTokens > 0 {
			hit = fmt.Sprintf("%.0f%%", 100*g.CacheHitRatio)
		}
		rows = append(rows, usageRowView{name: name, tokens: tokenCount(g.Tokens()), cost: dollars(g.CostUSD), cacheHit: hit})
	}
	return rows
}

// perPercent is a burn rate as a cell: "48.2 k", or "too few readings" when unknown.
func perPercent(tokens float64) textView {
	if tokens <= 0 {
		return textView{"too few readings", toneDim}
	}
	return textView{text: tokenCount(int64(tokens))}
}

// forecastText says when the pool's five-hour capacity runs out at the last hour's pace.
func forecastText(d usageData) string {
	f := d.forecast
	switch {
	case len(d.kinds.chatgpt) == 0:
		return "Quota burn is measured for ChatGPT accounts, and the list has none."
	case d.burnErr != nil:
		return "The quota burn cannot be read: " + d.burnErr.Error()
	case len(f.Known) == 0:
		return "Not enough readings yet to forecast the pool's 5-hour capacity: each ChatGPT account needs " +
			"a few usage readings in one window while it works."
	}
	var s string
	switch {
	case f.TokensLastHour <= 0:
		s = "No tokens in the last hour: at this pace the pool's 5-hour capacity does not run out."
	case f.RunsOut.IsZero():
		s = "Not enough readings yet to forecast the pool's 5-hour capacity."
	case !f.RunsOut.After(d.now):
		s = "At the pace of the last hour (" + tokenCount(f.TokensLastHour) + " tokens), the pool's 5-hour capacity is used up."
	case f.RunsOut.Sub(d.now) > 24*time.Hour:
		s = "At the pace of the last hour (" + tokenCount(f.TokensLastHour) + " tokens), the pool's 5-hour capacity lasts more than a day."
	default:
		s = "At the pace of the last hour (" + tokenCount(f.TokensLastHour) + " tokens), the pool's 5-hour capacity runs out around " +
			clock(f.RunsOut, d.now) + "."
	}
	if len(f.Unknown) > 0 {
		s += " Not counted, for want of readings: " + strings.Join(f.Unknown, ", ") + "."
	}
	return s
}

// usageScreen is the Usage window: it shows a usageView, redrawing only what changed.
type usageScreen struct {
	u   *UI
	win fyne.Window
	// shown says whether the window is open: a hidden one reads nothing.
	shown bool
	days  int
	// gen counts the reads asked for: a read that finishes after a newer one was asked for
	// (the period changed meanwhile) is dropped. reading says one is under way; readAt is
	// when the last one was asked for (elapsed clock).
	gen     int
	reading bool
	readAt  time.Time
	last    usageView

	period  *widget.RadioGroup
	message *widget.Label
	command fyne.CanvasObject
	turnOn  *widget.Button
	msgBox  *fyne.Container
	body    fyne.CanvasObject
	// tilesBox holds the figures at the top, beside the period.
	tilesBox *fyne.Container
	scroll   *container.Scroll

	tiles      [4]*usageTile
	pricesNote *widget.RichText

	legend      *legend
	tokensChart *barChart
	costTitle   *widget.RichText
	costChart   *barChart

	models, projects         *usageTable
	modelsNote, projectsNote *widget.RichText

	burns    *burnTable
	forecast *widget.Label
}

func newUsageScreen(u *UI) *usageScreen {
	w := &usageScreen{u: u, days: usagePeriods[0].days}
	w.win = u.toolWindow("Usage – Codex Relay", w.build(), usageWindowSize)
	w.win.SetCloseIntercept(w.close)
	return w
}

func (w *usageScreen) build() fyne.CanvasObject {
	var labels []string
	for _, p := range usagePeriods {
		labels = append(labels, p.label)
	}
	w.period = widget.NewRadioGroup(labels, nil)
	w.period.Required = true
	w.period.Selected = labels[0]
	w.period.OnChanged = func(s string) {
		for _, p := range usagePeriods {
			if p.label == s && p.days != w.days {
				w.days = p.days
				w.reload()
			}
		}
	}

	// What shows instead of the figures: the ledger is off, failed or empty.
	w.message = widget.NewLabel("")
	w.message.Wrapping = fyne.TextWrapWord
	_, cmd := code(usageCommand)
	w.turnOn = widget.NewButtonWithIcon("Turn on", theme.MediaPlayIcon(), w.turnLedgerOn)
	w.turnOn.Importance = widget.HighImportance
	w.command = container.NewBorder(nil, nil, nil, w.turnOn, cmd)
	w.msgBox = container.NewVBox(w.message, w.command)
	w.msgBox.Hide()

	for i := range w.tiles {
		w.tiles[i] = newUsageTile()
	}
	w.tilesBox = container.NewGridWithColumns(4, w.tiles[0], w.tiles[1], w.tiles[2], w.tiles[3])
	w.tilesBox.Hide()
	// The figures (or what shows in their place) beside the period.
	top := container.NewBorder(nil, nil, nil, container.NewCenter(w.period), container.NewStack(w.tilesBox, w.msgBox))
	w.pricesNote = hint("")

	w.tokensChart = newBarChart(105, func(x float64) string { return tokenCount(int64(x)) })
	w.legend = newLegend()
	tokens := container.NewBorder(
		container.NewBorder(nil, nil, container.NewHBox(heading("Tokens per day"), container.NewCenter(dim("by account, UTC days"))),
			w.legend),
		nil, nil, nil, w.tokensChart)

	w.costTitle = hint("")
	w.costTitle.Wrapping = fyne.TextWrapWord
	w.costChart = newBarChart(80, dollars)
	cost := container.NewBorder(container.NewVBox(heading("Cost per day"), w.costTitle), nil, nil, nil, w.costChart)

	w.burns = newBurnTable()
	w.forecast = widget.NewLabel("")
	w.forecast.Wrapping = fyne.TextWrapWord
	burn := container.NewVBox(heading("Quota burn · tokens per 1% of a window"), w.burns.box, w.forecast)

	w.models, w.projects = newUsageTable("Model"), newUsageTable("Project")
	w.modelsNote, w.projectsNote = hint(""), hint("")
	for _, n := range []*widget.RichText{w.modelsNote, w.projectsNote} {
		n.Wrapping = fyne.TextWrapOff
		n.Truncation = fyne.TextTruncateEllipsis
	}
	models := container.NewVBox(container.NewBorder(nil, nil, heading("Top models"), nil, w.modelsNote), w.models.box)
	projects := container.NewVBox(container.NewBorder(nil, nil, heading("Top projects"), nil, w.projectsNote), w.projects.box)

	// The tokens chart takes the height the rest leaves.
	w.body = container.NewBorder(w.pricesNote,
		container.NewVBox(container.NewGridWithColumns(2, cost, burn), container.NewGridWithColumns(2, models, projects)),
		nil, nil, tokens)
	w.body.Hide()
	w.scroll = container.NewVScroll(container.NewBorder(top, nil, nil, nil, w.body))
	return container.NewThemeOverride(container.NewPadded(w.scroll), dense)
}

// open shows the window and reads the ledger.
func (w *usageScreen) open() {
	w.shown = true
	w.u.showWindow(w.win)
	w.reload()
}

// close hides the window; a hidden one reads nothing.
func (w *usageScreen) close() {
	w.shown = false
	w.u.hideWindow(w.win)
}

// tick reads the ledger again when the last read is usageEvery old (the poller calls it
// every second; it reads nothing while the window is hidden or a read is under way).
func (w *usageScreen) tick() {
	if w.shown && !w.reading && w.u.elapsed().Sub(w.readAt) >= usageEvery {
		w.reload()
	}
}

// reload reads the ledger now, off the UI thread, and shows what it found.
func (w *usageScreen) reload() {
	w.gen++
	gen, days, now := w.gen, w.days, w.u.now()
	src, accts := w.u.usageSource(), w.u.last.snap.Accounts
	w.reading, w.readAt = true, w.u.elapsed()
	w.u.async(func() {
		d := readUsage(src, accts, days, now)
		fyne.Do(func() {
			if gen != w.gen {
				return // a newer read is under way
			}
			w.reading = false
			w.show(newUsageView(d))
		})
	})
}

// turnLedgerOn switches the ledger on (off the UI thread: saving waits for the settings lock).
func (w *usageScreen) turnLedgerOn() {
	w.u.async(func() {
		err := w.u.relay.SetUsageLedger(true)
		fyne.Do(func() {
			if err != nil {
				w.u.showError(w.win, err)
				return
			}
			w.reload()
		})
	})
}

// show puts v on screen, redrawing only what changed.
func (w *usageScreen) show(v usageView) {
	relayout := v.state != w.last.state
	w.last = v
	ready := v.state == usageReady
	imp := widget.MediumImportance
	if v.state == usageFailed {
		imp = widget.WarningImportance
	}
	setMessage(w.message, v.message, imp)
	// The period matters only with a ledger to read.
	setVisible(w.period, v.state == usageReady || v.state == usageEmpty || v.state == usageLoading)
	setVisible(w.command, v.state == usageOff)
	setVisible(w.msgBox, !ready && v.state != usageLoading)
	setVisible(w.body, ready)
	setVisible(w.tilesBox, ready)
	if relayout {
		// The message and the figures trade places: lay the window out again.
		defer func() {
			w.win.Content().Refresh()
			redraws.Add(1)
		}()
	}
	if !ready {
		return
	}
	for i, t := range []tileView{v.tokens, v.cost, v.cache, v.requests} {
		w.tiles[i].Set(t)
	}
	setNote(w.pricesNote, v.pricesNote)
	w.legend.Set(v.legend)
	w.tokensChart.Set(v.tokensChart)
	setNote(w.costTitle, v.costTitle)
	w.costChart.Set(v.costChart)
	setNote(w.modelsNote, v.modelsNote)
	setNote(w.projectsNote, v.projectsNote)
	w.models.Set(v.models)
	w.projects.Set(v.projects)
	w.burns.Set(v.burns)
	setText(w.forecast, v.forecast)
}

// usageTile is one figure at the top: a large value over a line that says what it is.
type usageTile struct {
	widget.BaseWidget
	value   *widget.Label
	caption *widget.RichText
	box     *fyne.Container
}

func newUsageTile() *usageTile {
	t := &usageTile{value: widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}), caption: hint("")}
	t.value.SizeName = theme.SizeNameSubHeadingText
	t.caption.Wrapping = fyne.TextWrapOff
	t.caption.Truncation = fyne.TextTruncateEllipsis
	t.box = container.NewVBox(t.value, container.New(&shiftUp{by: 10}, t.caption))
	t.ExtendBaseWidget(t)
	return t
}

// Set shows v.
func (t *usageTile) Set(v tileView) {
	setText(t.value, v.value)
	setNote(t.caption, v.caption)
}

// CreateRenderer implements fyne.Widget.
func (t *usageTile) CreateRenderer() fyne.WidgetRenderer { return widget.NewSimpleRenderer(t.box) }

// shiftUp draws its objects a few pixels higher than their place, reporting as much less
// height: the caption under a large figure then sits close to it.
type shiftUp struct{ by float32 }

func (l *shiftUp) MinSize(objs []fyne.CanvasObject) fyne.Size {
	var m fyne.Size
	for _, o := range objs {
		m = m.Max(o.MinSize())
	}
	return fyne.NewSize(m.Width, max(m.Height-l.by, 0))
}

func (l *shiftUp) Layout(objs []fyne.CanvasObject, size fyne.Size) {
	for _, o := range objs {
		o.Move(fyne.NewPos(0, -l.by))
		o.Resize(fyne.NewSize(size.Width, size.Height+l.by))
	}
}

// usageColumnsFor are the columns of a top-models or top-projects table.
func usageColumnsFor(name string) []column {
	return []column{
		{title: name, min: 120, weight: 3},
		{title: "Tokens", min: 62, weight: 0.5, align: fyne.TextAlignTrailing},
		{title: "Cost", min: 66, weight: 0.5, align: fyne.TextAlignTrailing},
		{title: "Cache hit", min: 70, weight: 0.5, align: fyne.TextAlignTrailing},
	}
}

// usageTable lists up to usageTop models or projects; unused rows hide.
type usageTable struct {
	cols  *columns
	rows  [usageTop][4]*textCell
	lines [usageTop]*fyne.Container
	none  *widget.RichText
	box   *fyne.Container
}

func newUsageTable(name string) *usageTable {
	t := &usageTable{cols: newColumns(usageColumnsFor(name)...)}
	objs := []fyne.CanvasObject{t.cols.header()}
	for i := range t.rows {
		cells := make([]fyne.CanvasObject, 4)
		for j := range t.rows[i] {
			align := fyne.TextAlignTrailing
			if j == 0 {
				align = fyne.TextAlignLeading
			}
			t.rows[i][j] = newTextCell(align)
			cells[j] = t.rows[i][j]
		}
		t.lines[i] = t.cols.row(cells...)
		t.lines[i].Hide()
		objs = append(objs, t.lines[i])
	}
	t.none = hint("None in this period.")
	objs = append(objs, t.none)
	t.box = container.NewVBox(objs...)
	return t
}

// Set shows rows (at most usageTop).
func (t *usageTable) Set(rows []usageRowView) {
	for i := range t.lines {
		if i >= len(rows) {
			setVisible(t.lines[i], false)
			continue
		}
		r := rows[i]
		t.rows[i][0].Set(textView{text: r.name})
		t.rows[i][1].Set(textView{text: r.tokens})
		t.rows[i][2].Set(textView{text: r.cost})
		t.rows[i][3].Set(textView{text: r.cacheHit})
		setVisible(t.lines[i], true)
	}
	setVisible(t.none, len(rows) == 0)
}

// names are the first column's texts of the rows shown (tests).
func (t *usageTable) names() []string {
	var out []string
	for i, l := range t.lines {
		if l.Visible() {
			out = append(out, t.rows[i][0].Text())
		}
	}
	return out
}

var burnColumns = []column{
	{title: "Account", min: 80, weight: 1},
	{title: "5-hour window", min: 125, weight: 1, align: fyne.TextAlignTrailing},
	{title: "Weekly window", min: 125, weight: 1, align: fyne.TextAlignTrailing},
}

// burnTable lists the ChatGPT accounts' tokens per 1% of their windows.
type burnTable struct {
	cols   *columns
	header *fyne.Container
	rows   [][3]*textCell
	lines  []*fyne.Container
	box    *fyne.Container
}

func newBurnTable() *burnTable {
	t := &burnTable{cols: newColumns(burnColumns...)}
	t.header = t.cols.header()
	t.box = container.NewVBox(t.header)
	return t
}

// Set shows one row per account, adding rows as needed and hiding the rest.
func (t *burnTable) Set(rows []burnRowView) {
	for len(t.lines) < len(rows) {
		var cells [3]*textCell
		cells[0] = newTextCell(fyne.TextAlignLeading)
		cells[1], cells[2] = newTextCell(fyne.TextAlignTrailing), newTextCell(fyne.TextAlignTrailing)
		line := t.cols.row(cells[0], cells[1], cells[2])
		t.rows, t.lines = append(t.rows, cells), append(t.lines, line)
		t.box.Add(line)
		redraws.Add(1)
	}
	for i, line := range t.lines {
		if i >= len(rows) {
			setVisible(line, false)
			continue
		}
		t.rows[i][0].Set(textView{text: rows[i].account})
		t.rows[i][1].Set(rows[i].five)
		t.rows[i][2].Set(rows[i].week)
		setVisible(line, true)
	}
	setVisible(t.header, len(rows) > 0)
}

// ShowUsage opens the Usage window.
func (u *UI) ShowUsage() { u.showUsage() }

// ShowUsagePeriod opens the Usage window on the last days days (7 or 30; for screenshots).
func (u *UI) ShowUsagePeriod(days int) {
	u.showUsage()
	for _, p := range usagePeriods {
		if p.days == days {
			u.usageWin.period.SetSelected(p.label)
		}
	}
}

func (u *UI) showUsage() {
	if u.usageWin == nil {
		u.usageWin = newUsageScreen(u)
	}
	u.usageWin.open()
}
