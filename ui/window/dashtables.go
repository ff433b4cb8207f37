package window

import (
	"slices"
	"strconv"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/codexrelay/codexrelay/proxy"
	"github.com/codexrelay/codexrelay/ui/look"
)

// The dashboard's two tables: the accounts and the recent requests. Each is a header and a
// list of typed rows over flexible columns; a table computes the views of its rows first and
// refreshes the list only when they differ from the ones on screen.

// Accounts table.

// Every column but Last error widens to its content (the table measures its rows): the
// minimums are the floor for a narrow window, not a guess at the longest name.
var accountColumns = []column{
	{title: "Account", min: 150, weight: 2},
	{title: "Kind", min: 66, weight: 0.3, drop: 4},
	{title: "State", min: 120, weight: 1},
	{title: "5-hour usage", min: 150, weight: 1.3},
	{title: "Weekly usage", min: 165, weight: 1.3},
	{title: "Banked resets", min: 90, weight: 0.5, drop: 1},
	{title: "Requests", min: 60, weight: 0.3, align: fyne.TextAlignTrailing, drop: 3},
	{title: "Last error", min: 80, weight: 3, drop: 2},
}

// accountView is one accounts-table row, as shown.
type accountView struct {
	name, badge      string
	kind             string
	state            textView
	fiveHour, weekly quotaView
	resets           textView
	requests         string
	lastError        textView
}

// newAccountView is the row of account a.
func newAccountView(a proxy.AccountStats, snap proxy.Snapshot, now time.Time) accountView {
	v := accountView{
		name: a.Name, badge: look.ServingBadge(a.Name, snap), kind: kindText(a.Kind),
		state:    accountState(a, now),
		fiveHour: quotaCellView(a, false, now), weekly: quotaCellView(a, true, now),
		resets:    creditsCell(a, now),
		requests:  look.Count(a.Requests),
		lastError: textView{"–", look.Dim},
	}
	if a.LastError != "" {
		v.lastError = textView{a.LastError, look.Bad}
	}
	return v
}

// widths are the widths v's cells need to show uncut, one per column (0: Last error, which
// takes what is left and may be cut).
func (v accountView) widths() []float32 {
	name := cellWidth(v.name, fyne.TextStyle{Bold: true})
	if v.badge != "" {
		name += fyne.MeasureText(v.badge, theme.CaptionTextSize(), fyne.TextStyle{}).Width + 2*badgePad
	}
	quota := func(q quotaView) float32 {
		w := cellWidth(q.text.text, fyne.TextStyle{})
		if q.bar {
			w += quotaBarWidth + compact.Size(theme.SizeNamePadding)
		}
		return w
	}
	return []float32{name, cellWidth(v.kind, fyne.TextStyle{}),
		dotSize + 4 + compact.Size(theme.SizeNamePadding) + cellWidth(v.state.text, fyne.TextStyle{}),
		quota(v.fiveHour), quota(v.weekly), cellWidth(v.resets.text, fyne.TextStyle{}), cellWidth(v.requests, fyne.TextStyle{}), 0}
}

// contentWidths are the widths the header and the rows need, column by column.
func contentWidths(spec []column, rows [][]float32) []float32 {
	ws := make([]float32, len(spec))
	for i, col := range spec {
		ws[i] = cellWidth(col.title, fyne.TextStyle{Bold: true})
	}
	for _, r := range rows {
		for i := range min(len(r), len(ws)) {
			ws[i] = max(ws[i], r[i])
		}
	}
	return ws
}

// accountRowCells is one row of the accounts table.
type accountRowCells struct {
	widget.BaseWidget
	name             *nameCell
	kind             *textCell
	state            *stateCell
	fiveHour, weekly *quotaCell
	resets           *textCell
	requests         *textCell
	lastError        *textCell
	box              *fyne.Container
	cols             *columns
	gen              int // the columns' widths the row was laid out at
}

func newAccountRowCells(cols *columns) *accountRowCells {
	r := &accountRowCells{
		name: newNameCell(), kind: newTextCell(fyne.TextAlignLeading), state: newStateCell(),
		fiveHour: newQuotaCell(), weekly: newQuotaCell(), resets: newTextCell(fyne.TextAlignLeading),
		requests: newTextCell(fyne.TextAlignTrailing), lastError: newTextCell(fyne.TextAlignLeading), cols: cols,
	}
	r.box = cols.row(r.name, r.kind, r.state, r.fiveHour, r.weekly, r.resets, r.requests, r.lastError)
	r.ExtendBaseWidget(r)
	return r
}

// Set shows v.
func (r *accountRowCells) Set(v accountView) {
	r.name.Set(v.name, v.badge)
	r.kind.Set(textView{text: v.kind})
	r.state.Set(v.state)
	r.fiveHour.Set(v.fiveHour)
	r.weekly.Set(v.weekly)
	r.resets.Set(v.resets)
	r.requests.Set(textView{text: v.requests})
	r.lastError.Set(v.lastError)
	r.cols.relayout(r.box, &r.gen)
}

// CreateRenderer implements fyne.Widget.
func (r *accountRowCells) CreateRenderer() fyne.WidgetRenderer {
	return widget.NewSimpleRenderer(r.box)
}

// accountsTable lists the accounts in priority order.
type accountsTable struct {
	cols   *columns
	rows   []accountView
	list   *widget.List
	header *fyne.Container
	box    *fyne.Container // header and list; as tall as three to six rows
	size   *sized
	rowH   float32
	shown  int // rows the box is sized for
}

func newAccountsTable() *accountsTable {
	t := &accountsTable{cols: newColumns(accountColumns...), size: &sized{}}
	t.cols.margin = listMargin
	t.list = widget.NewList(
		func() int { return len(t.rows) },
		func() fyne.CanvasObject { return newAccountRowCells(t.cols) },
		func(id widget.ListItemID, o fyne.CanvasObject) {
			if id < len(t.rows) {
				o.(*accountRowCells).Set(t.rows[id])
			}
		})
	t.list.OnSelected = func(widget.ListItemID) { t.list.UnselectAll() } // a read-only view
	t.rowH = newAccountRowCells(t.cols).MinSize().Height
	t.header = t.cols.header()
	t.box = container.NewBorder(t.header, nil, nil, nil, container.New(t.size, t.list))
	return t
}

// show puts the accounts on screen; it reports whether the table's height changed (the
// dashboard then lays itself out again).
func (t *accountsTable) show(snap proxy.Snapshot, now time.Time) (resized bool) {
	rows := make([]accountView, len(snap.Accounts))
	widths := make([][]float32, len(rows))
	for i, a := range snap.Accounts {
		rows[i] = newAccountView(a, snap, now)
		widths[i] = rows[i].widths()
	}
	if t.cols.fit(contentWidths(accountColumns, widths)) {
		t.header.Layout.Layout(t.header.Objects, t.header.Size())
		t.rows = nil // every row is set again, and lays itself out at the new widths
	}
	// As tall as its accounts (up to six, then it scrolls): a floor of three rows left an empty
	// band under a single account.
	if n := min(max(len(rows), 1), 6); n != t.shown {
		t.shown = n
		// A list separates its rows by a padding.
		t.size.min = fyne.NewSize(0, float32(n)*(t.rowH+compact.Size(theme.SizeNamePadding))+2)
		resized = true
	}
	if !slices.Equal(rows, t.rows) {
		t.rows = rows
		t.list.Refresh()
		redraws.Add(1)
	}
	return resized
}

// Recent requests table.

var requestColumns = []column{
	{title: "Time", min: 70, weight: 0.6},
	{title: "Model", min: 150, weight: 2},
	{title: "Accounts tried", min: 150, weight: 2.2},
	{title: "Status", min: 90, weight: 1},
	{title: "Attempts", min: 82, weight: 0.6, align: fyne.TextAlignTrailing, drop: 2},
	{title: "Preparation", min: 90, weight: 0.8, align: fyne.TextAlignTrailing, drop: 1},
	{title: "Total", min: 70, weight: 0.7, align: fyne.TextAlignTrailing},
}

// requestView is one recent-requests row, as shown.
type requestView struct {
	time, model, tried string
	status             textView
	attempts           string
	prep, total        string
}

// newRequestView is the row of trace t.
func newRequestView(t proxy.Trace) requestView {
	st := look.Good
	switch {
	case t.Status >= 400, t.Outcome == proxy.OutcomeInterrupted, t.Outcome == proxy.OutcomeError,
		t.Outcome == proxy.OutcomeFailed:
		st = look.Bad
	case t.Outcome == proxy.OutcomeCanceled:
		st = look.Warn
	}
	return requestView{
		time: t.Time.Local().Format("15:04:05"), model: modelText(t), tried: triedText(t),
		status: textView{statusText(t), st}, attempts: strconv.Itoa(len(t.Attempts)),
		prep: millis(t.LatencyBreakdown.PreparationMs), total: millis(t.LatencyBreakdown.TotalMs),
	}
}

// requestRowCells is one row of the recent-requests table.
type requestRowCells struct {
	widget.BaseWidget
	time, model, tried, status, attempts, prep, total *textCell
	box                                               *fyne.Container
}

func newRequestRowCells(cols *columns) *requestRowCells {
	lead, trail := fyne.TextAlignLeading, fyne.TextAlignTrailing
	r := &requestRowCells{
		time: newTextCell(lead), model: newTextCell(lead), tried: newTextCell(lead), status: newTextCell(lead),
		attempts: newTextCell(trail), prep: newTextCell(trail), total: newTextCell(trail),
	}
	r.box = cols.row(r.time, r.model, r.tried, r.status, r.attempts, r.prep, r.total)
	r.ExtendBaseWidget(r)
	return r
}

// Set shows v.
func (r *requestRowCells) Set(v requestView) {
	r.time.Set(textView{text: v.time})
	r.model.Set(textView{text: v.model})
	r.tried.Set(textView{text: v.tried})
	r.status.Set(v.status)
	r.attempts.Set(textView{text: v.attempts})
	r.prep.Set(textView{text: v.prep})
	r.total.Set(textView{text: v.total})
}

// CreateRenderer implements fyne.Widget.
func (r *requestRowCells) CreateRenderer() fyne.WidgetRenderer {
	return widget.NewSimpleRenderer(r.box)
}

// requestsTable lists the recent requests, newest first.
type requestsTable struct {
	cols        *columns
	rows        []requestView
	list        *widget.List
	box         *fyne.Container
	rowH, headH float32 // a row's height, its separator included; the header's
}

// wantHeight is the height the table needs to show every row (at least its minimum).
func (t *requestsTable) wantHeight() float32 {
	return max(t.box.MinSize().Height, t.headH+float32(len(t.rows))*t.rowH+2)
}

func newRequestsTable() *requestsTable {
	t := &requestsTable{cols: newColumns(requestColumns...)}
	t.cols.margin = listMargin
	t.list = widget.NewList(
		func() int { return len(t.rows) },
		func() fyne.CanvasObject { return newRequestRowCells(t.cols) },
		func(id widget.ListItemID, o fyne.CanvasObject) {
			if id < len(t.rows) {
				o.(*requestRowCells).Set(t.rows[id])
			}
		})
	t.list.OnSelected = func(widget.ListItemID) { t.list.UnselectAll() }
	// At least three rows show, however short the window: the dashboard scrolls the rest.
	rowH := newRequestRowCells(t.cols).MinSize().Height + compact.Size(theme.SizeNamePadding)
	head := t.cols.header()
	t.rowH, t.headH = rowH, head.MinSize().Height
	t.box = container.NewBorder(head, nil, nil, nil,
		container.New(&sized{min: fyne.NewSize(0, 3*rowH+2)}, t.list))
	return t
}

// show puts the traces on screen, refreshing the list only when a row changed.
func (t *requestsTable) show(traces []proxy.Trace) {
	rows := make([]requestView, len(traces))
	for i, tr := range traces {
		rows[i] = newRequestView(tr)
	}
	if !slices.Equal(rows, t.rows) {
		t.rows = rows
		t.list.Refresh()
		redraws.Add(1)
	}
}
