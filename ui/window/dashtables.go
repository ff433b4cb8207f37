package window

import (
	"strconv"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"

	"github.com/codexrelay/codexrelay/proxy"
	"github.com/codexrelay/codexrelay/ui/look"
)

// The dashboard's two tables: the accounts and the recent requests, each a table (table.go)
// made from its spec below. A new column is its row in a spec.

// Accounts table.

// dashAccount is what an accounts-table row is made from: an account, the badge the snapshot
// gives it, and the time its figures are read at.
type dashAccount struct {
	proxy.AccountStats
	badge string
	now   time.Time
}

// accountSpec is the accounts table. Every column widens to its content (the table measures its
// rows): the minimums are the floor for a narrow window, not a guess at the longest name. Last
// error, often the only sign of why an account rests, widens up to lastErrorWidest and is the
// last column to go in a narrow window: Kind, Requests and Banked resets go first.
var accountSpec = []tableColumn[dashAccount]{
	{title: "Account", min: 150, weight: 2,
		cell: nameOf(func(a dashAccount) nameView { return nameView{a.Name, a.badge} })},
	{title: "Kind", min: 66, weight: 0.3, drop: 4,
		cell: plainOf(func(a dashAccount) string { return kindText(a.Kind) })},
	{title: "State", min: 120, weight: 1,
		cell: stateOf(func(a dashAccount) textView { return accountState(a.AccountStats, a.now) })},
	{title: "5-hour usage", min: 150, weight: 1.3,
		cell: quotaOf(func(a dashAccount) quotaView { return quotaCellView(a.AccountStats, false, a.now) })},
	{title: "Weekly usage", min: 165, weight: 1.3,
		cell: quotaOf(func(a dashAccount) quotaView { return quotaCellView(a.AccountStats, true, a.now) })},
	{title: "Reserve", min: 60, weight: 0.3, align: fyne.TextAlignTrailing, drop: 5,
		cell: textOf(func(a dashAccount) textView { return reserveCell(a.AccountStats) })},
	{title: "Banked resets", min: 90, weight: 0.5, drop: 2,
		cell: textOf(func(a dashAccount) textView { return creditsCell(a.AccountStats, a.now) })},
	{title: "Requests", min: 60, weight: 0.3, align: fyne.TextAlignTrailing, drop: 3,
		cell: plainOf(func(a dashAccount) string { return look.Count(a.Requests) })},
	{title: "Last error", min: 80, weight: 3, drop: 1, widest: lastErrorWidest,
		cell: textOf(func(a dashAccount) textView { return lastErrorView(a.LastError) })},
}

// lastErrorWidest is the most the Last error column widens to: "429 usage_limit_reached: the
// 5-hour limit resets at 14:36" and its like show whole, a page of an upstream's prose is cut.
const lastErrorWidest = 420

// reserveCell is the share of its binding window an account keeps unspent ("20%"), or a dim
// "–".
func reserveCell(a proxy.AccountStats) textView {
	if a.Reserve <= 0 {
		return textView{"–", look.Dim}
	}
	return textView{text: strconv.Itoa(a.Reserve) + "%"}
}

// lastErrorView is an account's last error, or a dim "–".
func lastErrorView(err string) textView {
	if err == "" {
		return textView{"–", look.Dim}
	}
	return textView{err, look.Bad}
}

// accountsTable lists the accounts in priority order.
type accountsTable struct {
	*listTable[dashAccount]
	box   *fyne.Container // header and list; as tall as one to six rows
	size  *sized
	rowH  float32
	shown int // rows the box is sized for
}

func newAccountsTable() *accountsTable {
	t := &accountsTable{listTable: newListTable(accountSpec, true), size: &sized{}}
	t.rowH = t.newRow().MinSize().Height
	t.box = container.NewBorder(t.header, nil, nil, nil, container.New(t.size, t.list))
	return t
}

// show puts the accounts on screen; it reports whether the table's height changed (the
// dashboard then lays itself out again).
func (t *accountsTable) show(snap proxy.Snapshot, now time.Time) (resized bool) {
	rows := make([]dashAccount, len(snap.Accounts))
	for i, a := range snap.Accounts {
		rows[i] = dashAccount{AccountStats: a, badge: look.ServingBadge(a.Name, snap), now: now}
	}
	// As tall as its accounts (up to six, then it scrolls): a floor of three rows left an empty
	// band under a single account.
	if n := min(max(len(rows), 1), 6); n != t.shown {
		t.shown = n
		// A list separates its rows by a padding.
		t.size.min = fyne.NewSize(0, float32(n)*(t.rowH+compact.Size(theme.SizeNamePadding))+2)
		resized = true
	}
	t.listTable.show(rows)
	return resized
}

// Recent requests table.

// requestSpec is the recent-requests table, a trace a row.
var requestSpec = []tableColumn[proxy.Trace]{
	{title: "Time", min: 70, weight: 0.6,
		cell: plainOf(func(t proxy.Trace) string { return t.Time.Local().Format("15:04:05") })},
	{title: "Model", min: 150, weight: 2, cell: plainOf(modelText)},
	{title: "Accounts tried", min: 150, weight: 2.2, cell: plainOf(triedText)},
	{title: "Status", min: 90, weight: 1, cell: textOf(requestStatus)},
	{title: "Attempts", min: 82, weight: 0.6, align: fyne.TextAlignTrailing, drop: 2,
		cell: plainOf(func(t proxy.Trace) string { return strconv.Itoa(len(t.Attempts)) })},
	{title: "Preparation", min: 90, weight: 0.8, align: fyne.TextAlignTrailing, drop: 1,
		cell: plainOf(func(t proxy.Trace) string { return millis(t.LatencyBreakdown.PreparationMs) })},
	{title: "Total", min: 70, weight: 0.7, align: fyne.TextAlignTrailing,
		cell: plainOf(func(t proxy.Trace) string { return millis(t.LatencyBreakdown.TotalMs) })},
}

// requestStatus is a request's status, in the tone of its outcome.
func requestStatus(t proxy.Trace) textView {
	st := look.Good
	switch {
	case t.Status >= 400, t.Outcome == proxy.OutcomeInterrupted, t.Outcome == proxy.OutcomeError,
		t.Outcome == proxy.OutcomeFailed:
		st = look.Bad
	case t.Outcome == proxy.OutcomeCanceled:
		st = look.Warn
	}
	return textView{statusText(t), st}
}

// requestsTable lists the recent requests, newest first.
type requestsTable struct {
	*listTable[proxy.Trace]
	box         *fyne.Container
	rowH, headH float32 // a row's height, its separator included; the header's
}

// wantHeight is the height the table needs to show every row (at least its minimum).
func (t *requestsTable) wantHeight() float32 {
	return max(t.box.MinSize().Height, t.headH+float32(len(t.rows))*t.rowH+2)
}

func newRequestsTable() *requestsTable {
	// Its columns widen to their content, as the accounts': a status ("200 · compaction
	// re-made") or the accounts a request tried are the only sign of what became of it.
	t := &requestsTable{listTable: newListTable(requestSpec, true)}
	// At least three rows show, however short the window: the dashboard scrolls the rest.
	rowH := t.newRow().MinSize().Height + compact.Size(theme.SizeNamePadding)
	t.rowH, t.headH = rowH, t.header.MinSize().Height
	t.box = container.NewBorder(t.header, nil, nil, nil,
		container.New(&sized{min: fyne.NewSize(0, 3*rowH+2)}, t.list))
	return t
}
