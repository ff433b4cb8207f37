package window

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/proxy"
	"github.com/codexrelay/codexrelay/ui/look"
	"github.com/codexrelay/codexrelay/ui/source"
)

// DashboardSize is the dashboard window's default size: wide enough for the accounts' columns
// to show e-mail-like names with their badge, the states, both windows with their reset times
// and the banked resets uncut. It shrinks to 800x500 without clipping: the tables' columns
// flex with the width (and the least important go first).
var DashboardSize = fyne.NewSize(1200, 760)

// DashboardOptions connect a dashboard to the rest of the app; every field may be nil.
type DashboardOptions struct {
	// Status is the listener's status; nil means "running on Snapshot.Listen".
	Status func() app.ServiceStatus
	// CodexSetup says whether Codex points at the relay; nil hides the Codex row.
	CodexSetup func() app.CodexSetup
	// ConfigureCodex merges the provider block into Codex's config.toml; nil hides Configure.
	ConfigureCodex func() (app.CodexConfigWrite, error)
	// AskFirst asks the user (title, the button that agrees, what it does) and calls ok when
	// they agree; Configure asks through it (nil: it does not ask).
	AskFirst func(title, confirm, text string, ok func())
	// CodexLogin is the Codex CLI's login, which the first-run card offers to use.
	CodexLogin func() app.CodexLogin
	// Strategy is the routing strategy, named in the accounts' heading; nil leaves it out.
	Strategy func() string
	// Usage is the usage ledger Refresh reads the pool's pace from (source.Pace); nil leaves
	// it out. (The UI's poller reads it in its own fetch.)
	Usage source.UsageSource
	// UseCodexLogin is the first run's one action (import, configure, test request).
	UseCodexLogin func(ctx context.Context) (app.FirstRun, error)
	// PointCodex points Codex at the relay and sends the test request, once an account was
	// added another way than the Codex login (the first-run card offers it); nil offers nothing.
	PointCodex func(ctx context.Context) (app.FirstRun, error)
	// TestRelay sends the first run's test request again, after it failed ("" addr: the
	// relay is not serving); nil offers no retry.
	TestRelay func(ctx context.Context) (app.RelayTest, error)
	// SignIn starts a ChatGPT sign-in; AddKey opens the API-key form.
	SignIn, AddKey func()
	// OpenUsage, OpenAccounts and OpenSettings open those windows; nil hides their buttons.
	OpenUsage, OpenAccounts, OpenSettings func()
	// Resume resumes a paused relay; nil hides its button.
	Resume func()
	// Now is the clock the cooldown and reset times are read against (default time.Now).
	Now func() time.Time
	// PruneSecrets removes keychain entries that no account names; nil hides its button.
	PruneSecrets func()
	// Async runs a slow action off the UI thread (default: a goroutine); its result comes
	// back with fyne.Do.
	Async func(func())
	// Changed asks for a fresh view after an action (default: nothing).
	Changed func()
}

// Dashboard shows what the relay is doing: its state, whether Codex points at it, the
// accounts (which one served last, which one serves next, their usage) and the recent
// requests, with the internals in a Diagnostics section that starts closed. Until there is an
// account it shows the first-run card instead. It reads everything from one view at a time
// and redraws only what changed.
type Dashboard struct {
	src     source.Source
	opt     DashboardOptions
	pace    source.Pace // the pool's forecast, for Refresh
	content fyne.CanvasObject
	last    view

	stateDot  *mark
	stateText *widget.Label
	status    *widget.Label
	resume    *widget.Button
	notice    *widget.Label
	catalog   *widget.Label
	orphans   *widget.Label
	orphanRow *fyne.Container

	codex *codexRow
	first *firstRunCard
	// firstBox holds the first-run card; firstMode says whether it shows instead of the tables.
	firstBox  fyne.CanvasObject
	firstMode bool
	// top holds the header, the banners and the accounts; middle is under it.
	top *fyne.Container
	// bannersShown is what banners said at the last layout.
	bannersShown string

	accounts        *accountsTable
	accountsTitle   *widget.Label
	accountsSummary *canvas.Text
	accountsSection *fyne.Container
	requests        *requestsTable
	requestsSummary *canvas.Text
	requestsSection *fyne.Container
	// calls is the folded line of Codex's background calls, under the requests.
	calls *backgroundCalls
	diag  *diagnostics
	// middle scrolls the recent requests and the Diagnostics section below them: the requests
	// take the height left, at least a few rows, and an open Diagnostics scrolls into view.
	middle *container.Scroll

	body *fyne.Container
}

// NewDashboard builds a dashboard that shows src; call Refresh (or let the UI's poller do
// it) to fill it.
func NewDashboard(src source.Source, opt DashboardOptions) *Dashboard {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Async == nil {
		opt.Async = func(f func()) { go f() }
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
	v := view{snap: snap, traces: d.src.Traces(source.TracesRead)}
	if d.opt.Status != nil {
		v.svc = d.opt.Status()
	} else {
		v.svc = app.ServiceStatus{Addr: snap.Listen, Running: snap.Listen != ""}
	}
	if d.opt.CodexSetup != nil {
		st := d.opt.CodexSetup()
		v.codex = &st
	}
	if d.opt.CodexLogin != nil && len(snap.Accounts) == 0 {
		v.login = d.opt.CodexLogin()
	}
	if d.opt.Strategy != nil {
		v.strategy = d.opt.Strategy()
	}
	if d.opt.Usage != nil {
		now := d.opt.Now()
		v.pace = look.Pace(d.pace.Read(snap.Requests.Total, time.Now(), d.opt.Usage, snap.Accounts, now), now)
	}
	d.show(v)
}

func (d *Dashboard) build() {
	// Header: icon, name, state and status line; window buttons on the right.
	icon := canvas.NewImageFromResource(iconApp)
	icon.FillMode = canvas.ImageFillContain
	icon.SetMinSize(fyne.NewSize(40, 40))
	title := widget.NewLabelWithStyle("Codex Relay", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	title.SizeName = theme.SizeNameSubHeadingText
	d.stateDot = newDot()
	d.stateText = widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	d.status = widget.NewLabel("")
	d.status.Truncation = fyne.TextTruncateEllipsis
	statusLine := container.NewBorder(nil, nil, container.NewHBox(d.stateDot, d.stateText), nil, d.status)
	var buttons []fyne.CanvasObject
	d.resume = widget.NewButtonWithIcon("Resume", theme.MediaPlayIcon(), func() {
		if d.opt.Resume != nil {
			d.opt.Resume()
		}
	})
	d.resume.Importance = widget.HighImportance
	d.resume.Hide()
	buttons = append(buttons, d.resume)
	if d.opt.OpenUsage != nil {
		buttons = append(buttons, widget.NewButtonWithIcon("Usage…", iconUsage, d.opt.OpenUsage))
	}
	if d.opt.OpenAccounts != nil {
		buttons = append(buttons, widget.NewButtonWithIcon("Accounts…", theme.AccountIcon(), d.opt.OpenAccounts))
	}
	if d.opt.OpenSettings != nil {
		buttons = append(buttons, widget.NewButtonWithIcon("Settings…", theme.SettingsIcon(), d.opt.OpenSettings))
	}
	// The buttons sit beside the name; the status line below takes the whole width.
	header := container.NewBorder(nil, nil,
		container.NewCenter(icon), nil,
		container.NewVBox(container.NewBorder(nil, nil, nil, container.NewHBox(buttons...), title), statusLine))
	d.notice = errorLabel()
	d.catalog = errorLabel()
	d.orphans = widget.NewLabel("")
	d.orphans.Importance = widget.WarningImportance
	d.orphans.Wrapping = fyne.TextWrapWord
	var orphanButtons []fyne.CanvasObject
	if d.opt.PruneSecrets != nil {
		orphanButtons = append(orphanButtons, widget.NewButtonWithIcon("Remove them", theme.DeleteIcon(), d.opt.PruneSecrets))
	}
	d.orphanRow = container.NewBorder(nil, nil, nil, container.NewHBox(orphanButtons...), d.orphans)
	d.orphanRow.Hide()
	d.codex = newCodexRow(&d.opt)

	// The first-run card, or the accounts and the recent requests.
	d.first = newFirstRunCard(&d.opt)
	d.first.closed = func() { d.show(d.last) }
	d.firstBox = container.NewVScroll(d.first.box)
	d.firstBox.Hide()

	d.accounts = newAccountsTable()
	d.accountsTitle = heading("Accounts")
	d.accountsSummary = dim("")
	d.accountsSection = container.NewVBox(
		container.NewHBox(d.accountsTitle, container.NewCenter(d.accountsSummary)), d.accounts.box)
	d.requests = newRequestsTable()
	d.requestsSummary = dim("")
	d.requestsSection = container.NewBorder(
		container.NewHBox(heading("Recent requests"), container.NewCenter(d.requestsSummary)), nil, nil, nil, d.requests.box)
	d.calls = newBackgroundCalls()
	d.calls.toggled = func(bool) { d.relayout() }
	d.diag = newDiagnostics(diagnosticsSpec)
	wantRequests := func() float32 {
		return d.requestsSection.MinSize().Height - d.requests.box.MinSize().Height + d.requests.wantHeight()
	}
	d.middle = container.NewVScroll(container.New(fillFirst{want: wantRequests}, d.requestsSection, d.calls.box, d.diag.box))
	d.diag.opened = d.revealDiagnostics

	d.top = container.NewVBox(header, d.notice, d.catalog, d.orphanRow, d.codex.box, widget.NewSeparator(), d.accountsSection)
	d.body = container.NewBorder(d.top, nil, nil, nil, d.middle, d.firstBox)
	d.content = container.NewThemeOverride(container.NewPadded(d.body), compact)
}

// show puts one view on screen (UI thread), redrawing only what changed.
func (d *Dashboard) show(v view) {
	d.last = v
	now := d.opt.Now()
	snap := v.snap

	s, word, detail := look.Header(snap, v.svc)
	if back := look.BackAt(snap, now); s == look.Stopped && v.svc.Running && back != "" {
		detail += " · " + back // a dry pool: when it serves again
	}
	d.stateDot.SetTone(s.Tone())
	setText(d.stateText, word)
	setText(d.status, "·  "+detail)
	setVisible(d.resume, v.svc.Paused && d.opt.Resume != nil)
	setMessage(d.notice, v.notice, widget.WarningImportance)
	catalogErr := ""
	if snap.Catalog.LastError != "" {
		catalogErr = "The model catalog could not be read: " + snap.Catalog.LastError
	}
	setMessage(d.catalog, catalogErr, widget.WarningImportance)
	if n := len(v.orphans); n > 0 {
		what := strconv.Itoa(n) + " keychain entries of Codex Relay belong"
		if n == 1 {
			what = "1 keychain entry of Codex Relay belongs"
		}
		setText(d.orphans, what+" to no account of this settings folder (left by an interrupted add).")
	}
	setVisible(d.orphanRow, len(v.orphans) > 0)
	d.codex.show(v.codex, len(snap.Accounts) > 0)

	if d.firstMode && len(snap.Accounts) > 0 && v.codex != nil && !v.codex.Configured {
		// An account came of the card's other ways in (the key form, the sign-in): the card
		// stays, to point Codex at the relay and test it.
		d.first.offerPoint(snap.Accounts[0].Name)
	}
	first := len(snap.Accounts) == 0 || d.first.active()
	relayout := first != d.firstMode
	// A banner that comes or goes changes the top's height: the body is laid out again, or
	// the top would cover the first rows under it (they were clipped when a banner showed).
	if b := d.banners(); b != d.bannersShown {
		d.bannersShown = b
		relayout = true
	}
	if relayout {
		d.firstMode = first
		setVisible(d.firstBox, first)
		setVisible(d.accountsSection, !first)
		setVisible(d.requestsSection, !first)
		setVisible(d.diag.box, !first)
		setVisible(d.middle, !first)
	}
	if first {
		d.first.show(v.login)
	} else {
		setText(d.accountsTitle, accountsHeading(v.strategy))
		summary := accountsSummary(snap.Accounts)
		if v.pace != "" {
			summary += " · " + v.pace
		}
		setDim(d.accountsSummary, summary)
		if d.accounts.show(snap, now) {
			relayout = true
		}
		requests, calls := splitTraces(v.traces)
		d.requests.show(requests)
		setDim(d.requestsSummary, requestsSummary(len(requests)))
		if d.calls.show(calls) {
			relayout = true
		}
		d.diag.show(snap)
	}
	if relayout {
		d.relayout()
		redraws.Add(1)
	}
}

// relayout lays the dashboard out again in its compact theme. A container's own Refresh lays
// it out in the app's theme: Fyne's ThemeOverride pushes its theme (the paddings the layouts
// read) only while it is itself laid out or measured, which a size change does. Laid out
// outside it, the top took 6 px more than the window's own layouts gave it and the rows under
// it sat off by as much ("live Diagnostics values drift about 4 px off their row").
func (d *Dashboard) relayout() {
	d.body.Refresh()
	if s := d.content.Size(); !s.IsZero() {
		d.content.Resize(s.AddWidthHeight(0, 1))
		d.content.Resize(s)
	}
}

// banners says which of the lines above the accounts show, and the Codex line's height.
func (d *Dashboard) banners() string {
	return fmt.Sprint(d.notice.Visible(), d.notice.Text, d.catalog.Visible(), d.catalog.Text, d.orphanRow.Visible(),
		d.codex.box.Visible(), d.codex.result.Visible(), d.codex.result.Text, d.resume.Visible())
}

// accountsHeading is the accounts section's title, with the routing strategy that orders
// them: "Accounts · priority order", "Accounts · round-robin", "Accounts · most quota left", "Accounts · reset first".
func accountsHeading(strategy string) string {
	switch strategy {
	case "":
		return "Accounts"
	case proxy.StrategyPriority:
		return "Accounts · priority order"
	case proxy.StrategyMostQuotaLeft:
		return "Accounts · most quota left"
	case app.StrategyResetFirst:
		return "Accounts · reset first"
	}
	return "Accounts · " + strategy
}

// ShowDiagnostics opens the Diagnostics section (for screenshots).
func (d *Dashboard) ShowDiagnostics() { d.diag.setOpen(true) }

// revealDiagnostics scrolls the Diagnostics section, just opened, to the top of the view (as
// far as the scrolling goes), so that opening it shows it even in a small window.
func (d *Dashboard) revealDiagnostics() {
	// The panels' height follows from the width they are laid out at: the first layout gives
	// them their width, the second the height that follows.
	d.middle.Refresh()
	d.middle.Refresh()
	d.relayout()
	d.middle.ScrollToOffset(fyne.NewPos(0, d.diag.box.Position().Y))
}

// fillFirst lays its objects out top to bottom, each at least its minimum height: the first
// takes whatever height the others leave, up to what it wants (want, when set: the recent
// requests need no more than their rows), so that a short list leaves no gap above the
// objects after it; any height left over stays below the last.
type fillFirst struct{ want func() float32 }

// fillGap is the space between two objects of a fillFirst.
const fillGap = 4

func (fillFirst) MinSize(objs []fyne.CanvasObject) fyne.Size {
	var s fyne.Size
	n := 0
	for _, o := range objs {
		if o.Visible() {
			m := o.MinSize()
			s.Width = max(s.Width, m.Width)
			s.Height += m.Height
			n++
		}
	}
	s.Height += fillGap * float32(max(n-1, 0))
	return s
}

func (f fillFirst) Layout(objs []fyne.CanvasObject, size fyne.Size) {
	var rest float32
	for _, o := range objs[1:] {
		if o.Visible() {
			rest += o.MinSize().Height + fillGap
		}
	}
	var y float32
	for i, o := range objs {
		if !o.Visible() {
			continue
		}
		h := o.MinSize().Height
		if i == 0 {
			room := size.Height - rest
			if f.want != nil {
				room = min(room, f.want())
			}
			h = max(room, h)
		}
		o.Move(fyne.NewPos(0, y))
		o.Resize(fyne.NewSize(size.Width, h))
		y += h + fillGap
	}
}

// accountsSummary counts the accounts by state: "3 configured · 1 ready · 1 resting".
func accountsSummary(accts []proxy.AccountStats) string {
	n := map[string]int{}
	for _, a := range accts {
		n[a.State]++
	}
	parts := []string{look.Count(int64(len(accts))) + " configured"}
	for _, st := range []string{proxy.StateReady, proxy.StateCooldown, proxy.StateNeedsLogin, proxy.StateKeyRejected, proxy.StateDisabled} {
		if n[st] > 0 {
			parts = append(parts, strconv.Itoa(n[st])+" "+strings.ToLower(stateText(st)))
		}
	}
	return strings.Join(parts, " · ")
}
