package ui

import (
	"image/color"
	"slices"
	"strconv"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/proxy"
)

// DashboardSize is the dashboard window's size.
var DashboardSize = fyne.NewSize(1140, 760)

// DashboardOptions connect a dashboard to the rest of the app; every field may be nil.
type DashboardOptions struct {
	// Status is the listener's status; nil means "running on Snapshot.Listen".
	Status func() app.ServiceStatus
	// CodexConfig is the provider block shown while there is no account.
	CodexConfig func() string
	// OpenAccounts and OpenSettings open those windows; nil hides their buttons.
	OpenAccounts, OpenSettings func()
	// CopyText puts text on the clipboard; nil hides the Copy button.
	CopyText func(string)
	// Now is the clock for countdowns (default time.Now).
	Now func() time.Time
	// PruneSecrets removes keychain entries that no account names; nil hides its button.
	PruneSecrets func()
}

// Dashboard shows what the proxy is doing: the catalog, the serialization cache, request
// counts, the accounts and the recent requests. It reads everything from one view at a time.
type Dashboard struct {
	src     Source
	opt     DashboardOptions
	content fyne.CanvasObject
	now     time.Time

	stateDot  *canvas.Circle
	stateText *widget.Label
	status    *widget.Label
	notice    *widget.Label
	orphans   *widget.Label
	orphanRow *fyne.Container

	catAge, catModels, catTTL, catSWR, catStaleMax  *stat
	refBackground, refBlocking, refShared, refTotal *stat
	serHits, serMisses, serDirect, serRate          *stat
	reqTotal, reqErrors, reqRotations, reqInFlight  *stat
	reqPrep                                         *stat
	catalogErr                                      *widget.Label

	accountsSummary *canvas.Text
	accounts        []proxy.AccountStats
	accountsTable   *widget.Table
	accountsBox     *fyne.Container
	accountsSection *fyne.Container

	requestsSummary *canvas.Text
	traces          []proxy.Trace
	requestsTable   *widget.Table
	requestsSection *fyne.Container

	empty       *fyne.Container
	emptyConfig *widget.Label
	body        *fyne.Container
}

// NewDashboard builds a dashboard that shows src; call Refresh (or let the UI's poller do
// it) to fill it.
func NewDashboard(src Source, opt DashboardOptions) *Dashboard {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	d := &Dashboard{src: src, opt: opt}
	d.build()
	return d
}

// Content is the dashboard's widget tree, for a window.
func (d *Dashboard) Content() fyne.CanvasObject { return d.content }

// Refresh reads the source now and shows it (UI thread).
func (d *Dashboard) Refresh() {
	snap := d.src.Stats()
	var st app.ServiceStatus
	if d.opt.Status != nil {
		st = d.opt.Status()
	} else {
		st = app.ServiceStatus{Addr: snap.Listen, Running: snap.Listen != ""}
	}
	d.show(view{snap: snap, traces: d.src.Traces(recentTraces), svc: st})
}

func (d *Dashboard) build() {
	// Header: icon, name, state and status line; window buttons on the right.
	icon := canvas.NewImageFromResource(iconApp)
	icon.FillMode = canvas.ImageFillContain
	icon.SetMinSize(fyne.NewSize(40, 40))
	title := widget.NewLabelWithStyle("Codex Relay", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	title.SizeName = theme.SizeNameSubHeadingText
	d.stateDot = canvas.NewCircle(theme.Color(theme.ColorNameDisabled))
	dot := container.NewCenter(container.NewGridWrap(fyne.NewSize(10, 10), d.stateDot))
	d.stateText = widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	d.status = widget.NewLabel("")
	d.status.Truncation = fyne.TextTruncateEllipsis
	statusLine := container.NewBorder(nil, nil, container.NewHBox(dot, d.stateText), nil, d.status)
	var buttons []fyne.CanvasObject
	if d.opt.OpenAccounts != nil {
		buttons = append(buttons, widget.NewButtonWithIcon("Accounts…", theme.AccountIcon(), d.opt.OpenAccounts))
	}
	if d.opt.OpenSettings != nil {
		buttons = append(buttons, widget.NewButtonWithIcon("Settings…", theme.SettingsIcon(), d.opt.OpenSettings))
	}
	header := container.NewBorder(nil, nil,
		container.NewCenter(icon),
		container.NewCenter(container.NewHBox(buttons...)),
		container.NewVBox(title, statusLine))
	d.notice = errorLabel()
	d.orphans = widget.NewLabel("")
	d.orphans.Importance = widget.WarningImportance
	d.orphans.Wrapping = fyne.TextWrapWord
	orphanButtons := []fyne.CanvasObject{}
	if d.opt.PruneSecrets != nil {
		orphanButtons = append(orphanButtons, widget.NewButtonWithIcon("Remove them", theme.DeleteIcon(), d.opt.PruneSecrets))
	}
	d.orphanRow = container.NewBorder(nil, nil, nil, container.NewHBox(orphanButtons...), d.orphans)
	d.orphanRow.Hide()
	header = container.NewVBox(header, d.notice, d.orphanRow)

	// Figures, in four panels.
	d.catAge, d.catModels, d.catTTL = newStat("Age"), newStat("Models"), newStat("TTL")
	d.catSWR, d.catStaleMax = newStat("Stale-while-revalidate"), newStat("Maximum stale age")
	d.refBackground, d.refBlocking = newStat("Background"), newStat("Blocking")
	d.refShared, d.refTotal = newStat("Shared"), newStat("Refreshes run")
	d.serHits, d.serMisses, d.serDirect, d.serRate = newStat("Hits"), newStat("Misses"), newStat("Direct"), newStat("Hit rate")
	d.reqTotal, d.reqErrors, d.reqRotations = newStat("Total"), newStat("Errors"), newStat("Rotations")
	d.reqInFlight, d.reqPrep = newStat("In flight"), newStat("Median preparation")
	panels := container.NewGridWithColumns(4,
		panel("Model catalog", d.catAge, d.catModels, d.catTTL, d.catSWR, d.catStaleMax),
		panel("Catalog refreshes", d.refBackground, d.refBlocking, d.refShared, d.refTotal),
		panel("Serialization cache", d.serHits, d.serMisses, d.serDirect, d.serRate),
		panel("Requests", d.reqTotal, d.reqErrors, d.reqRotations, d.reqInFlight, d.reqPrep),
	)
	d.catalogErr = errorLabel()

	// Accounts and recent requests.
	d.accountsTable = d.newAccountsTable()
	d.accountsBox = container.New(&sized{}, d.accountsTable)
	d.accountsSummary = dim("")
	d.accountsSection = container.NewVBox(
		container.NewHBox(heading("Accounts"), container.NewCenter(d.accountsSummary)), d.accountsBox)

	d.requestsTable = d.newRequestsTable()
	d.requestsSummary = dim("")
	d.requestsSection = container.NewBorder(
		container.NewHBox(heading("Recent requests"), container.NewCenter(d.requestsSummary)), nil, nil, nil, d.requestsTable)

	d.empty = d.buildEmpty()
	d.empty.Hide()

	top := container.NewVBox(header, widget.NewSeparator(), panels, d.catalogErr, d.accountsSection)
	d.body = container.NewBorder(top, nil, nil, nil, d.requestsSection, container.NewVScroll(d.empty))
	d.content = container.NewThemeOverride(container.NewPadded(d.body), compact{})
}

// buildEmpty is what the dashboard shows until there is an account: how to add one, and how
// to point Codex at the relay.
func (d *Dashboard) buildEmpty() *fyne.Container {
	_, cmdBox := code(strings.Join([]string{
		"# sign in with ChatGPT in the browser",
		"codexrelay accounts add --name me --kind chatgpt",
		"# or reuse the Codex CLI's login",
		"codexrelay accounts import-codex",
		"# or an OpenAI-compatible API key",
		"printenv OPENAI_API_KEY | codexrelay accounts add --name api --kind openai --base-url https://api.openai.com/v1",
	}, "\n"))
	var cfgBox fyne.CanvasObject
	d.emptyConfig, cfgBox = code("")
	addRow := []fyne.CanvasObject{}
	if d.opt.OpenAccounts != nil {
		b := widget.NewButtonWithIcon("Accounts…", theme.ContentAddIcon(), d.opt.OpenAccounts)
		b.Importance = widget.HighImportance
		addRow = append(addRow, b)
	}
	cfgRow := []fyne.CanvasObject{}
	if d.opt.CopyText != nil {
		cfgRow = append(cfgRow, widget.NewButtonWithIcon("Copy", theme.ContentCopyIcon(), func() {
			d.opt.CopyText(d.emptyConfig.Text + "\n")
		}))
	}
	return container.NewVBox(
		heading("Add your first account"),
		note("Codex Relay sends each request to a healthy account and moves on to the next one when an account "+
			"hits its quota or fails. Add accounts in the Accounts window, or from a terminal:"),
		cmdBox,
		container.NewHBox(addRow...),
		widget.NewSeparator(),
		heading("Point Codex at the relay"),
		note("Add this provider block to ~/.codex/config.toml (the tray's Configure Codex… merges it for you, "+
			"with a backup). Any OpenAI client can use the same base URL."),
		cfgBox,
		container.NewHBox(cfgRow...),
	)
}

// show puts one view on screen (UI thread).
func (d *Dashboard) show(v view) {
	d.now = d.opt.Now()
	snap := v.snap

	s, line := trayState(snap, v.svc)
	d.stateDot.FillColor = stateColor(s)
	d.stateDot.Refresh()
	word := s.String()
	if s == stateStopped && v.svc.Running {
		word = "Not serving" // listening, but no account can take a request
	}
	d.stateText.SetText(word)
	d.status.SetText("·  " + line)
	setMessage(d.notice, v.notice, widget.WarningImportance)
	if n := len(v.orphans); n > 0 {
		what := strconv.Itoa(n) + " keychain entries of Codex Relay belong"
		if n == 1 {
			what = "1 keychain entry of Codex Relay belongs"
		}
		d.orphans.SetText(what + " to no account (left by an interrupted add or an older version).")
		d.orphanRow.Show()
	} else if d.orphanRow.Visible() {
		d.orphanRow.Hide()
	}

	c := snap.Catalog
	d.catAge.set(age(c.AgeMs))
	d.catModels.set(count(int64(c.Models)))
	d.catTTL.set(minutes(c.TTLMs))
	d.catSWR.set(onOff(c.SWREnabled))
	d.catStaleMax.set(minutes(c.StaleMaxAgeMs))
	d.refBackground.set(count(c.Refresh.Background))
	d.refBlocking.set(count(c.Refresh.Blocking))
	d.refShared.set(count(c.Refresh.Shared))
	d.refTotal.set(count(c.Refreshes))
	if c.LastError != "" {
		setMessage(d.catalogErr, "Model catalog: "+c.LastError, widget.WarningImportance)
	} else {
		setMessage(d.catalogErr, "", widget.WarningImportance)
	}

	z := snap.Serialization
	d.serHits.set(count(z.Hits))
	d.serMisses.set(count(z.Misses))
	d.serDirect.set(count(z.Direct))
	d.serRate.set(percent(z.Hits, z.Hits+z.Misses))

	r := snap.Requests
	d.reqTotal.set(count(r.Total))
	d.reqErrors.set(count(r.Errors))
	d.reqRotations.set(count(r.Rotations))
	d.reqInFlight.set(count(r.InFlight))
	if r.Total == 0 || r.MedianPreparationMs == 0 { // no request reached an upstream yet
		d.reqPrep.set("–")
	} else {
		d.reqPrep.set(millis(r.MedianPreparationMs))
	}

	relayout := false // sizes or sections changed: lay the whole body out again
	if len(snap.Accounts) == 0 {
		if d.opt.CodexConfig != nil {
			if cfg := strings.TrimRight(d.opt.CodexConfig(), "\n"); cfg != d.emptyConfig.Text {
				d.emptyConfig.SetText(cfg)
			}
		}
		if !d.empty.Visible() {
			d.accountsSection.Hide()
			d.requestsSection.Hide()
			d.empty.Show()
			d.body.Refresh()
		}
		d.accounts, d.traces = nil, nil
		return
	}
	if d.empty.Visible() {
		d.empty.Hide()
		d.accountsSection.Show()
		d.requestsSection.Show()
		relayout = true
	}

	d.accounts = snap.Accounts
	setDim(d.accountsSummary, accountsSummary(snap.Accounts))
	// The accounts table is as tall as its rows (three to six), the requests take the rest.
	rows := min(max(len(d.accounts), 3), 6)
	h := (rowHeight()+compact{}.Size(theme.SizeNamePadding))*float32(rows+1) + 2
	if want := fyne.NewSize(0, h); d.accountsBox.Layout.(*sized).min != want {
		d.accountsBox.Layout.(*sized).min = want
		relayout = true
	}
	setRowHeights(d.accountsTable, len(d.accounts))
	setRowHeights(d.requestsTable, len(v.traces))
	if relayout {
		d.body.Refresh()
	}
	d.accountsTable.Refresh()

	d.traces = v.traces
	switch len(v.traces) {
	case 0:
		setDim(d.requestsSummary, "none yet")
	case 1:
		setDim(d.requestsSummary, "the last one")
	default:
		setDim(d.requestsSummary, "the last "+strconv.Itoa(len(v.traces))+", newest first")
	}
	d.requestsTable.Refresh()
}

func accountsSummary(accts []proxy.AccountStats) string {
	n := map[string]int{}
	for _, a := range accts {
		n[a.State]++
	}
	parts := []string{count(int64(len(accts))) + " configured"}
	for _, st := range []string{proxy.StateReady, proxy.StateCooldown, proxy.StateNeedsLogin, proxy.StateDisabled} {
		if n[st] > 0 {
			parts = append(parts, strconv.Itoa(n[st])+" "+strings.ToLower(stateText(st)))
		}
	}
	return strings.Join(parts, " · ")
}

func stateColor(s state) color.Color {
	switch s {
	case stateServing:
		return theme.Color(theme.ColorNameSuccess)
	case stateDegraded:
		return theme.Color(theme.ColorNameWarning)
	case statePaused:
		return theme.Color(theme.ColorNameDisabled)
	}
	return theme.Color(theme.ColorNameError)
}

// setRowHeights gives a table's header and first n rows the compact row height (a table
// measures its template before the dashboard's theme applies to it).
func setRowHeights(t *widget.Table, n int) {
	h := rowHeight()
	for i := -1; i < n; i++ {
		t.SetRowHeight(i, h)
	}
}

// rowHeight is the height of a table row (a label, or a bar a little shorter) in the
// dashboard's compact theme.
func rowHeight() float32 {
	th := compact{}
	text := fyne.MeasureText("Xy", th.Size(theme.SizeNameText), fyne.TextStyle{})
	return text.Height + 2*th.Size(theme.SizeNameInnerPadding)
}

// Accounts table.

const (
	acName = iota
	acKind
	acState
	acCooldown
	acFiveHour
	acWeekly
	acRequests
	acLastError
	acColumns
)

var accountHeaders = [acColumns]string{"Account", "Kind", "State", "Cooldown", "5-hour quota", "Weekly quota", "Requests", "Last error"}
var accountWidths = [acColumns]float32{150, 75, 115, 100, 200, 200, 80, 180}

// cellView is what one table cell shows: text, or a bar when bar is set.
type cellView struct {
	text  string
	imp   widget.Importance
	align fyne.TextAlign // numbers are right-aligned
	bar   bool
	frac  float64 // 0..1
}

// accountCell is the content of one accounts-table cell.
func accountCell(a proxy.AccountStats, col int, now time.Time) cellView {
	switch col {
	case acName:
		return cellView{text: a.Name}
	case acKind:
		return cellView{text: kindText(a.Kind)}
	case acState:
		return cellView{text: stateText(a.State), imp: stateImportance(a.State)}
	case acCooldown:
		if a.CooldownUntil != nil && a.State == proxy.StateCooldown {
			return cellView{text: countdown(*a.CooldownUntil, now), imp: widget.WarningImportance}
		}
		return cellView{text: "–", imp: widget.LowImportance}
	case acFiveHour, acWeekly:
		if a.Kind != proxy.KindChatGPT || a.Quota == nil {
			return cellView{text: "–", imp: widget.LowImportance}
		}
		used, resets := a.Quota.PrimaryUsedPercent, a.Quota.PrimaryResetsAt
		if col == acWeekly {
			used, resets = a.Quota.SecondaryUsedPercent, a.Quota.SecondaryResetsAt
		}
		return cellView{text: quotaText(used, resets, now), bar: true, frac: min(max(used/100, 0), 1)}
	case acRequests:
		return cellView{text: count(a.Requests), align: fyne.TextAlignTrailing}
	case acLastError:
		if a.LastError == "" {
			return cellView{text: "–", imp: widget.LowImportance}
		}
		return cellView{text: a.LastError, imp: widget.DangerImportance}
	}
	return cellView{}
}

func stateImportance(st string) widget.Importance {
	switch st {
	case proxy.StateReady:
		return widget.SuccessImportance
	case proxy.StateCooldown:
		return widget.WarningImportance
	case proxy.StateNeedsLogin:
		return widget.DangerImportance
	}
	return widget.LowImportance
}

func (d *Dashboard) newAccountsTable() *widget.Table {
	t := widget.NewTable(
		func() (int, int) { return len(d.accounts), acColumns },
		newCell,
		func(id widget.TableCellID, o fyne.CanvasObject) {
			if id.Row < len(d.accounts) {
				updateCell(o, accountCell(d.accounts[id.Row], id.Col, d.now))
			}
		})
	setHeaders(t, accountHeaders[:], accountWidths[:], acRequests)
	return t
}

// Recent requests table.

const (
	rqTime = iota
	rqModel
	rqTried
	rqStatus
	rqAttempts
	rqPrep
	rqTotal
	rqColumns
)

var requestHeaders = [rqColumns]string{"Time", "Model", "Accounts tried", "Status", "Attempts", "Preparation", "Total"}
var requestWidths = [rqColumns]float32{90, 270, 280, 140, 85, 110, 100}

// requestCell is the content of one recent-requests cell.
func requestCell(t proxy.Trace, col int) cellView {
	switch col {
	case rqTime:
		return cellView{text: t.Time.Local().Format("15:04:05")}
	case rqModel:
		return cellView{text: modelText(t)}
	case rqTried:
		return cellView{text: triedText(t)}
	case rqStatus:
		imp := widget.SuccessImportance
		switch {
		case t.Status >= 400 || t.Outcome == "interrupted" || t.Outcome == "error" || t.Outcome == "failed":
			imp = widget.DangerImportance
		case t.Outcome == "canceled":
			imp = widget.WarningImportance
		}
		return cellView{text: statusText(t), imp: imp}
	case rqAttempts:
		return cellView{text: strconv.Itoa(len(t.Attempts)), align: fyne.TextAlignTrailing}
	case rqPrep:
		return cellView{text: millis(t.LatencyBreakdown.PreparationMs), align: fyne.TextAlignTrailing}
	case rqTotal:
		return cellView{text: millis(t.LatencyBreakdown.TotalMs), align: fyne.TextAlignTrailing}
	}
	return cellView{}
}

func (d *Dashboard) newRequestsTable() *widget.Table {
	t := widget.NewTable(
		func() (int, int) { return len(d.traces), rqColumns },
		newTextCell,
		func(id widget.TableCellID, o fyne.CanvasObject) {
			if id.Row < len(d.traces) {
				setLabel(o.(*widget.Label), requestCell(d.traces[id.Row], id.Col))
			}
		})
	setHeaders(t, requestHeaders[:], requestWidths[:], rqAttempts, rqPrep, rqTotal)
	return t
}

// Table cells: a label, or a quota bar with its figure, in one template.

func newCell() fyne.CanvasObject {
	bar := widget.NewProgressBar()
	bar.TextFormatter = func() string { return "" } // the figure sits beside the bar, readable on any fill
	over := container.NewThemeOverride(container.New(layout.NewCustomPaddedLayout(8, 8, 0, 0), bar), barTheme{})
	figure := widget.NewLabel("")
	quota := container.NewBorder(nil, nil, container.New(&sized{min: fyne.NewSize(52, 0)}, over), nil, figure)
	quota.Hide()
	return container.NewStack(newTextCell(), quota)
}

func updateCell(o fyne.CanvasObject, v cellView) {
	c := o.(*fyne.Container)
	l := c.Objects[0].(*widget.Label)
	quota := c.Objects[1].(*fyne.Container)
	if !v.bar {
		quota.Hide()
		l.Show()
		setLabel(l, v)
		return
	}
	l.Hide()
	figure := quota.Objects[0].(*widget.Label)
	over := quota.Objects[1].(*fyne.Container).Objects[0].(*container.ThemeOverride)
	bar := over.Content.(*fyne.Container).Objects[0].(*widget.ProgressBar)
	setLabel(figure, v)
	over.Theme = barTheme{level: v.frac}
	bar.Value = v.frac
	quota.Show()
	over.Refresh()
}

func newTextCell() fyne.CanvasObject {
	l := widget.NewLabel("")
	l.Truncation = fyne.TextTruncateEllipsis
	return l
}

func setLabel(l *widget.Label, v cellView) {
	if l.Text != v.text || l.Importance != v.imp || l.Alignment != v.align {
		l.Text, l.Importance, l.Alignment = v.text, v.imp, v.align
		l.Refresh()
	}
}

// setHeaders names a table's columns (right-aligning those in trailing) and sets their widths.
func setHeaders(t *widget.Table, names []string, widths []float32, trailing ...int) {
	t.ShowHeaderRow = true
	t.CreateHeader = func() fyne.CanvasObject {
		return widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	}
	t.UpdateHeader = func(id widget.TableCellID, o fyne.CanvasObject) {
		if id.Col >= 0 && id.Col < len(names) {
			l := o.(*widget.Label)
			l.Alignment = fyne.TextAlignLeading
			if slices.Contains(trailing, id.Col) {
				l.Alignment = fyne.TextAlignTrailing
			}
			l.SetText(names[id.Col])
		}
	}
	for i, w := range widths {
		t.SetColumnWidth(i, w)
	}
	t.OnSelected = func(widget.TableCellID) { t.UnselectAll() } // a read-only view
}

// barTheme colours a quota bar by how much is used: primary, then warning, then error.
type barTheme struct{ level float64 }

func (b barTheme) Color(n fyne.ThemeColorName, v fyne.ThemeVariant) color.Color {
	if n == theme.ColorNamePrimary {
		switch {
		case b.level >= 0.9:
			return base().Color(theme.ColorNameError, v)
		case b.level >= 0.75:
			return base().Color(theme.ColorNameWarning, v)
		}
	}
	return compact{}.Color(n, v)
}
func (barTheme) Font(s fyne.TextStyle) fyne.Resource     { return compact{}.Font(s) }
func (barTheme) Icon(n fyne.ThemeIconName) fyne.Resource { return compact{}.Icon(n) }
func (barTheme) Size(n fyne.ThemeSizeName) float32       { return compact{}.Size(n) }
