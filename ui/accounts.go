package ui

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/proxy"
)

// accountsWindow lists the accounts in priority order and adds, orders, enables and removes them.
type accountsWindow struct {
	u   *UI
	win fyne.Window

	rows  []accountRow
	shown string // signature of rows on screen
	list  *widget.List
	none  *widget.RichText

	// The API-key form.
	name, baseURL, key          *widget.Entry
	api                         *widget.Select
	nameErr, urlErr, keyErr     *widget.Label
	addErr                      *widget.Label
	add, signIn, importCodexBtn *widget.Button
}

// accountRow is one account as the window shows it: settings merged with live state.
type accountRow struct {
	meta  app.AccountMeta
	state string
	err   string
}

func newAccountsWindow(u *UI) *accountsWindow {
	a := &accountsWindow{u: u}
	a.win = u.toolWindow("Accounts – Codex Relay", a.build(), fyne.NewSize(760, 720))
	return a
}

func (a *accountsWindow) build() fyne.CanvasObject {
	a.list = widget.NewList(
		func() int { return len(a.rows) },
		a.newRow,
		func(id widget.ListItemID, o fyne.CanvasObject) { a.updateRow(id, o) })
	a.list.OnSelected = func(widget.ListItemID) { a.list.UnselectAll() }
	a.none = note("No accounts yet. Add one below: the relay needs at least one to route requests.")

	a.name = widget.NewEntry()
	a.name.SetPlaceHolder("work")
	a.baseURL = widget.NewEntry()
	a.baseURL.SetPlaceHolder("https://api.openai.com/v1")
	a.api = widget.NewSelect([]string{string(proxy.APIResponses), string(proxy.APIChat)}, nil)
	a.api.SetSelected(string(proxy.APIResponses))
	a.key = widget.NewPasswordEntry()
	a.key.SetPlaceHolder("sk-…")
	a.nameErr, a.urlErr, a.keyErr, a.addErr = errorLabel(), errorLabel(), errorLabel(), errorLabel()
	a.add = widget.NewButtonWithIcon("Add account", theme.ContentAddIcon(), a.addAPIKey)
	a.add.Importance = widget.HighImportance

	form := container.New(layout.NewFormLayout(),
		widget.NewLabel("Name"), container.NewVBox(a.name, a.nameErr),
		widget.NewLabel("Base URL"), container.NewVBox(a.baseURL, a.urlErr),
		widget.NewLabel("API"), a.api,
		widget.NewLabel("API key"), container.NewVBox(a.key, a.keyErr),
	)

	a.signIn = widget.NewButtonWithIcon("Sign in with ChatGPT…", theme.LoginIcon(), a.signInChatGPT)
	a.importCodexBtn = widget.NewButtonWithIcon("Import from Codex", theme.DownloadIcon(), a.importCodex)

	bottom := container.NewVBox(
		widget.NewSeparator(),
		heading("Add a ChatGPT account"),
		note("Sign in in the browser, or import the login the Codex CLI keeps in ~/.codex/auth.json."),
		container.NewHBox(a.signIn, a.importCodexBtn),
		widget.NewSeparator(),
		heading("Add an API-key account"),
		note("Any OpenAI-compatible endpoint. The key goes to the system keychain, never to a file."),
		form,
		container.NewHBox(layout.NewSpacer(), a.add),
		a.addErr,
	)
	top := container.NewVBox(heading("Accounts, in priority order"), a.none)
	return container.NewPadded(container.NewBorder(top, bottom, nil, nil, a.list))
}

// Each list row: position, name, kind and detail, state; enable check, up, down, remove.
func (a *accountsWindow) newRow() fyne.CanvasObject {
	pos := widget.NewLabel("9.")
	name := widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	name.Truncation = fyne.TextTruncateEllipsis
	detail := widget.NewRichText(&widget.TextSegment{Style: widget.RichTextStyle{
		ColorName: theme.ColorNamePlaceHolder, Inline: true, SizeName: theme.SizeNameText}})
	detail.Truncation = fyne.TextTruncateEllipsis
	stateL := widget.NewLabel("")
	enabled := widget.NewCheck("Enabled", nil)
	up := widget.NewButtonWithIcon("", theme.MoveUpIcon(), nil)
	down := widget.NewButtonWithIcon("", theme.MoveDownIcon(), nil)
	remove := widget.NewButtonWithIcon("", theme.DeleteIcon(), nil)
	remove.Importance = widget.LowImportance
	controls := container.NewCenter(container.NewHBox(stateL, enabled, up, down, remove))
	return container.NewBorder(nil, nil, container.NewCenter(pos), controls, container.NewVBox(name, detail))
}

func (a *accountsWindow) updateRow(id widget.ListItemID, o fyne.CanvasObject) {
	if id >= len(a.rows) {
		return
	}
	r := a.rows[id]
	c := o.(*fyne.Container)
	// Border puts the center object first, then left, then right.
	texts := c.Objects[0].(*fyne.Container).Objects
	pos := c.Objects[1].(*fyne.Container).Objects[0].(*widget.Label)
	controls := c.Objects[2].(*fyne.Container).Objects[0].(*fyne.Container).Objects
	pos.SetText(strconv.Itoa(id+1) + ".")
	texts[0].(*widget.Label).SetText(r.meta.Name)
	detail := texts[1].(*widget.RichText)
	detail.Segments[0].(*widget.TextSegment).Text = accountDetail(r)
	detail.Refresh()
	stateL := controls[0].(*widget.Label)
	stateL.Importance = stateImportance(r.state)
	stateL.SetText(stateText(r.state))
	enabled := controls[1].(*widget.Check)
	enabled.OnChanged = nil
	enabled.SetChecked(!r.meta.Disabled)
	name := r.meta.Name
	enabled.OnChanged = func(on bool) { a.setEnabled(name, on) }
	up, down, remove := controls[2].(*widget.Button), controls[3].(*widget.Button), controls[4].(*widget.Button)
	up.OnTapped = func() { a.move(name, id) } // 1-based: id is the position above
	down.OnTapped = func() { a.move(name, id+2) }
	remove.OnTapped = func() { a.confirmRemove(name) }
	if id == 0 {
		up.Disable()
	} else {
		up.Enable()
	}
	if id == len(a.rows)-1 {
		down.Disable()
	} else {
		down.Enable()
	}
}

func accountDetail(r accountRow) string {
	parts := []string{kindText(proxy.Kind(r.meta.Kind))}
	if r.meta.Email != "" {
		parts = append(parts, r.meta.Email)
	}
	if r.meta.BaseURL != "" {
		parts = append(parts, r.meta.BaseURL)
	}
	if r.meta.Kind == string(proxy.KindOpenAI) && r.meta.API != "" {
		parts = append(parts, r.meta.API+" API")
	}
	if r.err != "" {
		parts = append(parts, "last error: "+r.err)
	}
	return strings.Join(parts, " · ")
}

// show merges the saved accounts with the live state and redraws the list if it changed.
func (a *accountsWindow) show(v view) {
	live := map[string]proxy.AccountStats{}
	for _, s := range v.snap.Accounts {
		live[s.Name] = s
	}
	metas := a.u.relay.Accounts()
	rows := make([]accountRow, 0, len(metas))
	var sig strings.Builder
	for _, m := range metas {
		r := accountRow{meta: m, state: proxy.StateReady}
		if s, ok := live[m.Name]; ok {
			r.state, r.err = s.State, s.LastError
		}
		if m.Disabled {
			r.state = proxy.StateDisabled
		}
		rows = append(rows, r)
		fmt.Fprintf(&sig, "%s|%s|%s|%t|%s|%s\n", m.Name, m.Kind, r.state, m.Disabled, r.err, m.BaseURL)
	}
	a.rows = rows
	if len(rows) == 0 {
		a.none.Show()
	} else {
		a.none.Hide()
	}
	if s := sig.String(); s != a.shown {
		a.shown = s
		a.list.Refresh()
	}
}

// reload shows the accounts again after a change made here.
func (a *accountsWindow) reload() {
	a.u.refresh()
	a.show(a.u.last)
}

// fail reports err: keychain failures in a dialog with their advice, others in a dialog too.
func (a *accountsWindow) fail(err error) {
	a.u.showError(a.win, err)
	a.reload()
}

func (a *accountsWindow) setEnabled(name string, on bool) {
	if err := a.u.relay.SetAccountEnabled(name, on); err != nil {
		a.fail(err)
		return
	}
	a.reload()
}

func (a *accountsWindow) move(name string, to int) {
	if _, err := a.u.relay.MoveAccount(name, to); err != nil {
		a.fail(err)
		return
	}
	a.reload()
}

func (a *accountsWindow) confirmRemove(name string) {
	dialog.ShowConfirm("Remove account?",
		fmt.Sprintf("Remove %q from Codex Relay and delete its secret from the keychain?\nThis cannot be undone.", name),
		func(ok bool) {
			if !ok {
				return
			}
			a.u.async(func() {
				err := a.u.relay.RemoveAccount(name)
				fyne.Do(func() {
					if err != nil {
						a.fail(err)
						return
					}
					a.reload()
				})
			})
		}, a.win)
}

// validate checks the API-key form and shows each problem next to its field.
func (a *accountsWindow) validate() (app.NewAccount, app.Secret, bool) {
	ok := true
	name := strings.TrimSpace(a.name.Text)
	if name == "" {
		setError(a.nameErr, errors.New("enter a name, e.g. work"))
		ok = false
	} else {
		err := app.ValidateName(name)
		setError(a.nameErr, err)
		ok = ok && err == nil
	}
	base, err := app.ValidateBaseURL(a.baseURL.Text)
	if strings.TrimSpace(a.baseURL.Text) == "" {
		err = errors.New("enter the endpoint's base URL, e.g. https://api.openai.com/v1")
	}
	setError(a.urlErr, err)
	ok = ok && err == nil
	key := strings.TrimSpace(a.key.Text)
	if key == "" {
		setError(a.keyErr, errors.New("enter the API key"))
		ok = false
	} else {
		setError(a.keyErr, nil)
	}
	return app.NewAccount{Name: name, Kind: string(proxy.KindOpenAI), BaseURL: base, API: a.api.Selected},
		app.Secret{APIKey: key}, ok
}

// addAPIKey validates the form, then stores the account (the keychain may be slow or prompt).
func (a *accountsWindow) addAPIKey() {
	setError(a.addErr, nil)
	na, sec, ok := a.validate()
	if !ok {
		return
	}
	a.add.Disable()
	a.u.async(func() {
		_, err := a.u.relay.AddAccount(na, sec)
		fyne.Do(func() {
			a.add.Enable()
			if err != nil {
				var ke *app.KeychainError
				if errors.As(err, &ke) {
					a.u.showError(a.win, err)
				}
				setError(a.addErr, err)
				return
			}
			a.name.SetText("")
			a.key.SetText("")
			setMessage(a.addErr, fmt.Sprintf("Added %q.", na.Name), widget.SuccessImportance)
			a.reload()
		})
	})
}

// signInChatGPT runs the browser sign-in, showing progress and a Cancel button meanwhile.
func (a *accountsWindow) signInChatGPT() {
	ctx, cancel := context.WithCancel(context.Background())
	link := widget.NewHyperlink("", nil)
	link.Hide()
	msg := widget.NewLabel("Opening the ChatGPT sign-in page in your browser…\nCome back here when you have signed in.")
	bar := widget.NewProgressBarInfinite()
	d := dialog.NewCustom("Sign in with ChatGPT", "Cancel", widthBox(420, msg, bar, link), a.win)
	d.SetOnClosed(cancel)
	d.Show()
	a.signIn.Disable()
	a.u.async(func() {
		meta, err := a.u.relay.SignInChatGPT(ctx, "", func(raw string) error {
			fyne.Do(func() {
				if err := link.SetURLFromString(raw); err == nil {
					link.SetText("If the browser did not open, click here")
					link.Show()
				}
			})
			return a.u.openURL(raw)
		})
		fyne.Do(func() {
			a.signIn.Enable()
			bar.Stop()
			d.Hide()
			cancel()
			switch {
			case errors.Is(err, context.Canceled):
			case err != nil:
				a.fail(fmt.Errorf("ChatGPT sign-in failed: %w", err))
			default:
				dialog.ShowInformation("Signed in", fmt.Sprintf("Added the ChatGPT account %q.", meta.Name), a.win)
				a.reload()
			}
		})
	})
}

// importCodex imports the Codex CLI login from ~/.codex/auth.json.
func (a *accountsWindow) importCodex() {
	a.importCodexBtn.Disable()
	a.u.async(func() {
		meta, outcome, err := a.u.relay.ImportCodex("")
		fyne.Do(func() {
			a.importCodexBtn.Enable()
			if err != nil {
				a.fail(fmt.Errorf("could not import the Codex login: %w", err))
				return
			}
			text := fmt.Sprintf("Added %q from the Codex CLI login.", meta.Name)
			switch outcome {
			case app.Unchanged:
				text = fmt.Sprintf("The Codex CLI login is already account %q.", meta.Name)
			case app.Renewed:
				text = fmt.Sprintf("Account %q now has the Codex CLI login's new sign-in.", meta.Name)
			}
			dialog.ShowInformation("Imported", text, a.win)
			a.reload()
		})
	})
}
