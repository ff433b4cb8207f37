package window

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/proxy"
	"github.com/codexrelay/codexrelay/ui/look"
)

// accountsWindow lists the accounts in priority order, each with its state, its usage and a
// "…" menu of what can be done to it (replace its key or sign in again, rename, enable or
// disable, move, remove), and adds accounts through the Add account dialog.
type accountsWindow struct {
	u   *UI
	win fyne.Window
	// shown says whether the window is open: a hidden one is not kept up to date.
	shown bool

	rows  []accountRow
	views []accountItemView // what the list shows
	list  *widget.List
	none  *widget.RichText
	order *widget.RichText
	// status says what the last action did ("Added “work”.").
	status *fleeting // it clears itself after noteFor

	// The dialogs last opened, for the tests to drive.
	add    *addDialog
	ask    *valueDialog
	remove *removeDialog
	signin *signInDialog
}

// accountRow is one account as the window shows it: its settings and its live state.
type accountRow struct {
	meta app.AccountMeta
	live proxy.AccountStats
}

// accountsWindowSize fits seven accounts without scrolling.
var accountsWindowSize = fyne.NewSize(780, 560)

func newAccountsWindow(u *UI) *accountsWindow {
	a := &accountsWindow{u: u}
	a.win = u.toolWindow("Accounts – Codex Relay", a.build(), accountsWindowSize)
	a.win.SetCloseIntercept(func() { a.shown = false; u.hideWindow(a.win) })
	return a
}

func (a *accountsWindow) build() fyne.CanvasObject {
	a.list = widget.NewList(
		func() int { return len(a.views) },
		func() fyne.CanvasObject { return newAccountItem() },
		func(id widget.ListItemID, o fyne.CanvasObject) {
			if id < len(a.views) {
				it := o.(*accountItem)
				it.Set(a.views[id])
				it.menu.OnTapped = func() { a.openMenu(id, it.menu) }
			}
		})
	a.list.OnSelected = func(widget.ListItemID) { a.list.UnselectAll() }
	a.none = note("No account yet. Add one: the relay needs at least one to send requests to.")
	a.none.Hide()
	a.order = note("")
	add := widget.NewButtonWithIcon("Add account…", theme.ContentAddIcon(), func() { a.showAdd(addChatGPT) })
	add.Importance = widget.HighImportance
	a.status = newFleeting(a.u.changed)
	top := container.NewVBox(
		container.NewBorder(nil, nil, nil, container.NewHBox(
			widget.NewButtonWithIcon("Export…", theme.UploadIcon(), func() { a.showExport() }),
			widget.NewButtonWithIcon("Import…", theme.DownloadIcon(), func() { a.showImport() }), add),
			heading("Accounts, in list order")),
		a.none)
	bottom := container.NewVBox(a.status.Label, a.order)
	// The compact theme fits seven accounts in the window without scrolling.
	return container.NewThemeOverride(container.NewPadded(container.NewBorder(top, bottom, nil, nil, a.list)), compact)
}

// show merges the saved accounts with the live state and refreshes the list if it changed.
func (a *accountsWindow) show(v view) {
	live := map[string]proxy.AccountStats{}
	for _, s := range v.snap.Accounts {
		live[s.Name] = s
	}
	metas := a.u.store.Accounts()
	now := a.u.now()
	a.status.expire(now)
	rows := make([]accountRow, 0, len(metas))
	views := make([]accountItemView, 0, len(metas))
	for i, m := range metas {
		r := accountRow{meta: m, live: proxy.AccountStats{Name: m.Name, Kind: proxy.Kind(m.Kind), State: proxy.StateReady}}
		if s, ok := live[m.Name]; ok {
			r.live = s
		}
		if m.Disabled {
			r.live.State = proxy.StateDisabled
		}
		rows = append(rows, r)
		views = append(views, newAccountItemView(r, i, v.snap, now))
	}
	a.rows = rows
	setVisible(a.none, len(rows) == 0)
	setNote(a.order, orderNote(a.u.store.Settings().Strategy))
	if !slices.Equal(views, a.views) {
		a.views = views
		a.list.Refresh()
		redraws.Add(1)
	}
}

// orderNote says what the list's order means under the routing strategy.
func orderNote(strategy string) string {
	switch strategy {
	case proxy.StrategyRoundRobin:
		return "Routing: round-robin. The healthy accounts take turns, in this order."
	case proxy.StrategyMostQuotaLeft:
		return "Routing: most quota left. Untouched accounts first, then the ones with the most room; " +
			"this order breaks ties."
	case app.StrategyResetFirst:
		return "Routing: reset first. The account whose binding window resets soonest spends its quota first; " +
			"accounts whose reset is unknown after them, in this order."
	}
	return "Routing: priority. The first healthy account takes every request; the next one only " +
		"when it fails, reaches its limit or rests."
}

// reload shows the accounts again after a change made here.
func (a *accountsWindow) reload() {
	a.u.refresh()
	a.show(a.u.last)
}

// done reports what an action did, under the list.
func (a *accountsWindow) done(text string) {
	a.status.set(text, widget.SuccessImportance, a.u.now())
	a.reload()
}

// fail reports err in a dialog (a keychain failure with its advice).
func (a *accountsWindow) fail(err error) {
	a.status.set("", widget.SuccessImportance, a.u.now())
	a.u.showError(a.win, err)
	a.reload()
}

// rowMenu is the "…" menu of the account in row id.
func (a *accountsWindow) rowMenu(id int) *fyne.Menu {
	r := a.rows[id]
	name := r.meta.Name
	var items []*fyne.MenuItem
	if r.meta.Kind == string(proxy.KindOpenAI) {
		items = append(items, fyne.NewMenuItem("Replace key…", func() { a.replaceKey(name) }))
	} else {
		items = append(items, fyne.NewMenuItem("Sign in again…", func() { a.signIn(name) }))
	}
	if look.CanRedeem(r.live) {
		items = append(items, fyne.NewMenuItem("Redeem a banked reset", func() { a.redeem(name) }))
	}
	items = append(items, fyne.NewMenuItem("Rename…", func() { a.rename(name) }),
		fyne.NewMenuItem("Reserve…", func() { a.setReserve(name, r.meta.Reserve) }))
	if r.meta.Disabled {
		items = append(items, fyne.NewMenuItem("Enable", func() { a.setEnabled(name, true) }))
	} else {
		items = append(items, fyne.NewMenuItem("Disable", func() { a.setEnabled(name, false) }))
	}
	up := fyne.NewMenuItem("Move up", func() { a.move(name, id) }) // positions are 1-based
	up.Disabled = id == 0
	down := fyne.NewMenuItem("Move down", func() { a.move(name, id+2) })
	down.Disabled = id == len(a.rows)-1
	items = append(items, up, down, fyne.NewMenuItemSeparator(),
		fyne.NewMenuItem("Remove…", func() { a.confirmRemove(name) }))
	return fyne.NewMenu(name, items...)
}

// openMenu shows row id's menu by its "…" button, inside the window.
func (a *accountsWindow) openMenu(id int, button fyne.CanvasObject) {
	if id >= len(a.rows) {
		return
	}
	c := a.win.Canvas()
	m := widget.NewPopUpMenu(a.rowMenu(id), c)
	at := fyne.CurrentApp().Driver().AbsolutePositionForObject(button)
	m.ShowAtPosition(menuPosition(at, button.Size(), m.MinSize(), c.Size()))
}

// menuPosition is where a menu of size menu pops up for a button at at, size big, in a
// window of size win: under the button, or above it when the window has no room below, its
// right edge at the button's (the "…" buttons sit at the window's right edge), and inside
// the window either way. Placed under the button and left to Fyne, the last rows' menu ran
// past the window's edge or was pushed back over the button that opened it.
func menuPosition(at fyne.Position, button, menu, win fyne.Size) fyne.Position {
	x := min(at.X+button.Width-menu.Width, win.Width-menu.Width)
	y := at.Y + button.Height
	if y+menu.Height > win.Height && at.Y-menu.Height >= 0 {
		y = at.Y - menu.Height
	}
	return fyne.NewPos(max(x, 0), max(min(y, win.Height-menu.Height), 0))
}

// setEnabled enables or disables an account, off the UI thread (saving the settings may wait
// for another process's lock).
func (a *accountsWindow) setEnabled(name string, on bool) {
	a.u.async(func() {
		err := a.u.store.SetAccountEnabled(name, on)
		fyne.Do(func() {
			switch {
			case err != nil:
				a.fail(err)
			case on:
				a.done(fmt.Sprintf("Enabled “%s”: it takes requests again.", name))
			default:
				a.done(fmt.Sprintf("Disabled “%s”: it takes no request until you enable it.", name))
			}
		})
	})
}

// move moves an account to position to (1-based), off the UI thread.
func (a *accountsWindow) move(name string, to int) {
	a.u.async(func() {
		n, err := a.u.store.MoveAccount(name, to)
		fyne.Do(func() {
			if err != nil {
				a.fail(err)
				return
			}
			a.done(fmt.Sprintf("Moved “%s” to position %d of %d.", name, to, n))
		})
	})
}

// rename asks for a new name; app's message about a bad or taken name shows under the field.
func (a *accountsWindow) rename(name string) {
	a.ask = a.newValueDialog(valueSpec{
		title: "Rename “" + name + "”", label: "New name", initial: name, confirm: "Rename",
		hint:  "Letters, digits and . _ @ + - (no spaces), e.g. work or dev@example.com.",
		apply: func(v string) error { return a.u.store.RenameAccount(name, strings.TrimSpace(v)) },
		done: func(v string) {
			a.done(fmt.Sprintf("Renamed “%s” to “%s”.", name, strings.TrimSpace(v)))
		},
	})
}

// setReserve asks for the share of the account's binding window the relay keeps unspent;
// app's message about a share out of range shows under the field.
func (a *accountsWindow) setReserve(name string, reserve int) {
	a.ask = a.newValueDialog(valueSpec{
		title: "Reserve of “" + name + "”", label: "Keep in reserve (%)", initial: strconv.Itoa(reserve), confirm: "Set",
		hint: fmt.Sprintf("1 to %d: the relay stops choosing the account once its binding window (the one with the least left) "+
			"has less left, until that window resets. 0 keeps no reserve.", app.MaxReserve),
		apply: func(v string) error {
			pct, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), "%"))
			if err != nil {
				return &app.FieldError{Field: app.FieldReserve, Msg: fmt.Sprintf("must be a whole number from 0 to %d, not %q", app.MaxReserve, v)}
			}
			return a.u.store.SetAccountReserve(name, pct)
		},
		done: func(v string) {
			pct, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), "%"))
			if pct == 0 {
				a.done(fmt.Sprintf("“%s” keeps no reserve.", name))
				return
			}
			a.done(fmt.Sprintf("“%s” keeps %d%% in reserve.", name, pct))
		},
	})
}

// replaceKey asks for a new API key and stores it in the keychain (the relay tries the
// account again at once).
func (a *accountsWindow) replaceKey(name string) {
	a.ask = a.newValueDialog(valueSpec{
		title: "Replace the key of “" + name + "”", label: "New API key", confirm: "Replace key", secret: true,
		hint:  "Paste the key alone. It goes to the system keychain, never to a file.",
		apply: func(v string) error { return a.u.store.SetAPIKey(name, v) },
		done: func(string) {
			a.done(fmt.Sprintf("Replaced the key of “%s”: the relay tries it again at once.", name))
		},
	})
}

// confirmRemove asks before removing an account; Cancel is the default.
func (a *accountsWindow) confirmRemove(name string) {
	a.remove = newRemoveDialog(a.win, name, func() {
		a.u.async(func() {
			err := a.u.store.RemoveAccount(name)
			fyne.Do(func() {
				if err != nil {
					a.fail(err)
					return
				}
				a.done(fmt.Sprintf("Removed “%s” and its keychain entry.", name))
			})
		})
	})
}

// signIn runs a ChatGPT sign-in: for a new account (name "") or to renew one. Only one runs
// at a time (its callback holds the sign-in port): while one is open, this brings it to the
// front instead.
func (a *accountsWindow) signIn(name string) {
	if a.signin != nil && a.signin.open {
		a.u.showWindow(a.win)
		return
	}
	a.signin = newSignInDialog(a.u, a.win, name, func(meta app.AccountMeta) {
		if name == "" {
			a.done(fmt.Sprintf("Signed in: added the ChatGPT account “%s”.", meta.Name))
		} else {
			a.done(fmt.Sprintf("Signed in again: “%s” has a new sign-in.", meta.Name))
		}
	})
}

// accountItemView is one row of the list, as shown.
type accountItemView struct {
	pos, name, badge string
	detail           string
	state            textView
	usage            string
}

// newAccountItemView is row i.
func newAccountItemView(r accountRow, i int, snap proxy.Snapshot, now time.Time) accountItemView {
	return accountItemView{
		pos: strconv.Itoa(i+1) + ".", name: r.meta.Name, badge: look.ServingBadge(r.meta.Name, snap),
		detail: accountDetail(r, now), state: accountState(r.live, now), usage: look.UsageShort(r.live.Quota),
	}
}

// accountDetail is the kind of an account and whose or where it is, with its last error when
// it is not ready, and its banked resets: "ChatGPT · dev@example.com", "API key · https://api.openai.com/v1".
func accountDetail(r accountRow, now time.Time) string {
	parts := []string{kindText(proxy.Kind(r.meta.Kind))}
	if r.meta.Email != "" && r.meta.Email != r.meta.Name {
		parts = append(parts, r.meta.Email)
	}
	if r.meta.BaseURL != "" {
		parts = append(parts, r.meta.BaseURL)
	}
	if r.meta.Kind == string(proxy.KindOpenAI) && r.meta.API == string(proxy.APIChat) {
		parts = append(parts, "Chat Completions")
	}
	if r.meta.Reserve > 0 {
		parts = append(parts, strconv.Itoa(r.meta.Reserve)+"% in reserve")
	}
	if c := creditsDetail(r.live.ResetCredits, now); c != "" {
		parts = append(parts, c)
	}
	if q := quotaExtras(r.live.Quota); q != "" {
		parts = append(parts, q)
	}
	if r.live.LastError != "" && r.live.State != proxy.StateReady {
		parts = append(parts, r.live.LastError)
	}
	return strings.Join(parts, " · ")
}

// accountItem is one row of the accounts list: state dot, position, name (with the serving
// badge) over its detail, state over usage, and the "…" menu button.
type accountItem struct {
	widget.BaseWidget
	dot    *mark
	pos    *textCell
	name   *nameCell
	detail *textCell
	state  *textCell
	usage  *textCell
	menu   *widget.Button
	box    *fyne.Container
}

// accountItemRight is the width of the state and usage column.
const accountItemRight = 190

func newAccountItem() *accountItem {
	it := &accountItem{
		dot: newDot(), pos: newTextCell(fyne.TextAlignTrailing), name: newNameCell(),
		detail: newTextCell(fyne.TextAlignLeading), state: newTextCell(fyne.TextAlignTrailing),
		usage: newTextCell(fyne.TextAlignTrailing),
		menu:  widget.NewButtonWithIcon("", theme.MoreHorizontalIcon(), nil),
	}
	it.menu.Importance = widget.LowImportance
	left := container.NewVBox(container.NewHBox(container.NewCenter(it.dot), container.New(&sized{min: fyne.NewSize(28, 0)}, it.pos)))
	right := container.NewHBox(
		container.New(&sized{min: fyne.NewSize(accountItemRight, 0)}, container.NewVBox(it.state, it.usage)),
		container.NewCenter(it.menu))
	it.box = container.NewBorder(nil, nil, left, right, container.NewVBox(it.name, it.detail))
	it.ExtendBaseWidget(it)
	return it
}

// Set shows v.
func (it *accountItem) Set(v accountItemView) {
	it.dot.SetTone(v.state.tone)
	it.pos.Set(textView{v.pos, look.Dim})
	it.name.Set(nameView{v.name, v.badge})
	it.detail.Set(textView{v.detail, look.Dim})
	it.state.Set(v.state)
	it.usage.Set(textView{v.usage, look.Dim})
}

// CreateRenderer implements fyne.Widget.
func (it *accountItem) CreateRenderer() fyne.WidgetRenderer { return widget.NewSimpleRenderer(it.box) }

// fieldOf names the form field an error from app is about: a *app.FieldError names it, and a
// taken name is the name's ("" for an error about no one field).
func fieldOf(err error) string {
	var fe *app.FieldError
	if errors.As(err, &fe) {
		return fe.Field
	}
	var taken app.ErrNameTaken
	if errors.As(err, &taken) {
		return app.FieldName
	}
	return ""
}
