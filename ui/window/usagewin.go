package window

import (
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/ui/look"
	"github.com/codexrelay/codexrelay/ui/source"
)

// The Usage window: what the usage ledger recorded over the last 7 or 30 days. Tokens and
// cost per day stacked by account (an API key's cost is real, a ChatGPT seat's
// API-equivalent, each dated by the price table), the top models and projects, the cache
// hits, and for the ChatGPT accounts how many tokens fill 1% of their windows and when the
// pool's five-hour capacity runs out.
//
// The ledger is read off the UI thread when the window opens, when the period changes and
// then at most every source.UsageEvery while it stays open; a read that finds what is on screen
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

	models, projects, tiers             *usageTable
	modelsNote, projectsNote, tiersNote *widget.RichText

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

	w.tokensChart = newBarChart(105, func(x float64) string { return look.TokenCount(int64(x)) })
	w.legend = newLegend()
	tokens := container.NewBorder(
		container.NewBorder(nil, nil, container.NewHBox(heading("Tokens per day"), container.NewCenter(dim("by account, UTC days"))),
			w.legend),
		nil, nil, nil, w.tokensChart)

	w.costTitle = hint("")
	w.costTitle.Wrapping = fyne.TextWrapWord
	w.costChart = newBarChart(80, look.Dollars)
	cost := container.NewBorder(container.NewVBox(heading("Cost per day"), w.costTitle), nil, nil, nil, w.costChart)

	w.burns = newBurnTable()
	w.forecast = widget.NewLabel("")
	w.forecast.Wrapping = fyne.TextWrapWord
	burn := container.NewVBox(heading("Quota burn · tokens per 1% of a window"), w.burns.box, w.forecast)

	// The service tiers beside them (Fast mode is priority, priced at its multiple): a narrow
	// table, so that the cost chart and the burn keep their room.
	w.tiers = newUsageTableOf(tierSpec)
	w.tiersNote = hint("")
	w.tiersNote.Wrapping = fyne.TextWrapOff
	w.tiersNote.Truncation = fyne.TextTruncateEllipsis
	tiers := container.NewVBox(heading("Service tiers"), w.tiersNote, w.tiers.box)

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
		container.NewVBox(container.NewBorder(nil, nil, nil, container.NewHBox(burn, tiers), cost),
			container.NewGridWithColumns(2, models, projects)),
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

// tick reads the ledger again when the last read is source.UsageEvery old (the poller calls it
// every second; it reads nothing while the window is hidden or a read is under way).
func (w *usageScreen) tick() {
	if w.shown && !w.reading && w.u.elapsed().Sub(w.readAt) >= source.UsageEvery {
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
		err := w.u.store.Set(app.SettingUsageLedger, "true")
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
	setNote(w.tiersNote, v.tiersNote)
	w.tiers.Set(v.tiers)
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

// usageSpecFor is a top-models or top-projects table, name being its first column's title.
func usageSpecFor(name string) []tableColumn[usageRowView] {
	return []tableColumn[usageRowView]{
		{title: name, min: 120, weight: 3, cell: plainOf(func(r usageRowView) string { return r.name })},
		{title: "Tokens", min: 62, weight: 0.5, align: fyne.TextAlignTrailing,
			cell: plainOf(func(r usageRowView) string { return r.tokens })},
		{title: "Cost", min: 66, weight: 0.5, align: fyne.TextAlignTrailing,
			cell: plainOf(func(r usageRowView) string { return r.cost })},
		{title: "Cache hit", min: 70, weight: 0.5, align: fyne.TextAlignTrailing,
			cell: plainOf(func(r usageRowView) string { return r.cacheHit })},
	}
}

// tierSpec is the service tiers table: narrower than the others, and without the cache hits,
// which a tier does not change.
var tierSpec = []tableColumn[usageRowView]{
	{title: "Tier", min: 96, weight: 1, cell: plainOf(func(r usageRowView) string { return r.name })},
	{title: "Tokens", min: 56, weight: 0.5, align: fyne.TextAlignTrailing,
		cell: plainOf(func(r usageRowView) string { return r.tokens })},
	{title: "Cost", min: 60, weight: 0.5, align: fyne.TextAlignTrailing,
		cell: plainOf(func(r usageRowView) string { return r.cost })},
}

// usageTable lists up to usageTop models, projects or service tiers; unused rows hide.
type usageTable = lineTable[usageRowView]

func newUsageTable(name string) *usageTable { return newUsageTableOf(usageSpecFor(name)) }

// newUsageTableOf is a table of spec that says "None in this period." while it has no rows.
func newUsageTableOf(spec []tableColumn[usageRowView]) *usageTable {
	return newLineTable(spec, false, usageTop, hint("None in this period."))
}

// burnSpec is the quota burn table, whose columns widen to their content (the table is as
// wide as its names, up to burnNameMax, and its titles): "dev@example.com" was cut at a
// fixed 80.
var burnSpec = []tableColumn[burnRowView]{
	{title: "Account", min: 80, weight: 1, widest: burnNameMax,
		cell: plainOf(func(r burnRowView) string { return r.account })},
	{title: "5-hour window", min: 125, weight: 1, align: fyne.TextAlignTrailing,
		cell: textOf(func(r burnRowView) textView { return r.five })},
	{title: "Weekly window", min: 125, weight: 1, align: fyne.TextAlignTrailing,
		cell: textOf(func(r burnRowView) textView { return r.week })},
}

// burnNameMax is the most the quota burn's names take; a longer one is cut.
const burnNameMax = 200

// burnTable lists the ChatGPT accounts' tokens per 1% of their windows, a row per account;
// it hides while there are none.
type burnTable = lineTable[burnRowView]

func newBurnTable() *burnTable {
	t := newLineTable(burnSpec, true, 0, nil)
	t.cols.grow = true // beside the cost chart: as wide as its content, not its minimums
	return t
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

// usageCommand turns the ledger on from a terminal.
const usageCommand = "codexrelay settings set usage-ledger true"

// usageSource is the usage source the windows read.
func (u *UI) usageSource() source.UsageSource {
	u.usageMu.Lock()
	defer u.usageMu.Unlock()
	return u.usage
}

// ShowFixedUsage makes the Usage window read src instead of the relay's ledger (screenshots,
// demonstrations).
func (u *UI) ShowFixedUsage(src source.UsageSource) {
	u.usageMu.Lock()
	u.usage = src
	u.usageMu.Unlock()
	u.pace.Forget()
	if u.usageWin != nil && u.usageWin.shown {
		u.usageWin.reload()
	}
	u.apply(u.fetch())
}
