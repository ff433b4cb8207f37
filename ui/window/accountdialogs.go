package window

import (
	"errors"
	"fmt"
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

// The accounts window's dialogs: one value (rename, replace a key), the removal's
// confirmation, and Add account (ChatGPT sign-in, the Codex CLI's login, an API key).

// valueSpec describes a dialog that asks for one value.
type valueSpec struct {
	title, label, hint, confirm, initial string
	secret                               bool
	// apply uses the value (off the UI thread); its error shows under the field.
	apply func(string) error
	// done runs after apply succeeded, once the dialog closed.
	done func(string)
}

// valueDialog asks for one value: the confirm button or Return applies it; an error shows
// under the field, in app's words, and keeps the dialog open.
type valueDialog struct {
	d     *dialog.CustomDialog
	entry *widget.Entry
	err   *widget.Label
	ok    *widget.Button
}

func (a *accountsWindow) newValueDialog(s valueSpec) *valueDialog {
	v := &valueDialog{err: errorLabel()}
	if s.secret {
		v.entry = widget.NewPasswordEntry()
	} else {
		v.entry = widget.NewEntry()
	}
	v.entry.SetText(s.initial)
	submit := func() {
		if v.ok.Disabled() {
			return
		}
		v.ok.Disable()
		text := v.entry.Text
		a.u.async(func() {
			err := s.apply(text)
			fyne.Do(func() {
				v.ok.Enable()
				if err != nil {
					if isKeychainError(err) {
						a.u.showError(a.win, err)
					}
					setError(v.err, err)
					return
				}
				v.d.Hide()
				s.done(text)
			})
		})
	}
	v.entry.OnSubmitted = func(string) { submit() }
	v.ok = widget.NewButtonWithIcon(s.confirm, theme.ConfirmIcon(), submit)
	v.ok.Importance = widget.HighImportance
	cancel := widget.NewButtonWithIcon("Cancel", theme.CancelIcon(), func() { v.d.Hide() })
	form := container.New(layout.NewFormLayout(),
		widget.NewLabel(s.label), container.NewVBox(v.entry, hint(s.hint), v.err))
	v.d = dialog.NewCustomWithoutButtons(s.title, widthBox(460, form), a.win)
	v.d.SetButtons([]fyne.CanvasObject{cancel, v.ok})
	v.d.Show()
	a.win.Canvas().Focus(v.entry)
	return v
}

// isKeychainError reports whether err is the keychain's (its dialog gives advice).
func isKeychainError(err error) bool {
	var ke *app.KeychainError
	return errors.As(err, &ke)
}

// removeDialog asks before an account is removed. Its confirm button says Remove; Cancel is
// the default: Escape and Return both cancel, only a click on Remove removes.
type removeDialog struct {
	d    *dialog.ConfirmDialog
	win  fyne.Window
	prev func(*fyne.KeyEvent)
}

func newRemoveDialog(win fyne.Window, name string, remove func()) *removeDialog {
	r := &removeDialog{win: win, prev: win.Canvas().OnTypedKey()}
	msg := widget.NewLabel(fmt.Sprintf("Remove “%s” from Codex Relay and delete its secret from the keychain?\n"+
		"This cannot be undone.", name))
	r.d = dialog.NewCustomConfirm("Remove “"+name+"”?", "Remove", "Cancel", msg, func(ok bool) {
		win.Canvas().SetOnTypedKey(r.prev)
		if ok {
			remove()
		}
	}, win)
	r.d.SetConfirmImportance(widget.DangerImportance)
	win.Canvas().SetOnTypedKey(func(e *fyne.KeyEvent) {
		switch e.Name {
		case fyne.KeyEscape, fyne.KeyReturn, fyne.KeyEnter:
			r.d.Hide() // the dismiss answer: Cancel
		default:
			if r.prev != nil {
				r.prev(e)
			}
		}
	})
	r.d.Show()
	return r
}

// The Add account dialog's tabs.
const (
	addChatGPT = iota
	addCodexLogin
	addAPIKey
)

// addDialog adds an account: a ChatGPT sign-in, the Codex CLI's login, or an API key.
type addDialog struct {
	a    *accountsWindow
	d    *dialog.CustomDialog
	tabs *container.AppTabs
	form *keyForm

	codexInfo *widget.Label
	importBtn *widget.Button
}

// showAdd opens the Add account dialog on tab.
func (a *accountsWindow) showAdd(tab int) {
	ad := &addDialog{a: a, form: newKeyForm(a)}

	signIn := widget.NewButtonWithIcon("Sign in with ChatGPT…", theme.LoginIcon(), func() {
		ad.d.Hide()
		a.signIn("")
	})
	signIn.Importance = widget.HighImportance
	chatgpt := container.NewVBox(
		note("Sign in with your ChatGPT account (Plus, Pro, Team…) in the browser, as the Codex CLI does. "+
			"On a computer without a browser you can enter a code on another device instead."),
		container.NewHBox(signIn))

	ad.codexInfo = widget.NewLabel("Looking for the Codex CLI's login…")
	ad.codexInfo.Wrapping = fyne.TextWrapWord
	ad.importBtn = widget.NewButtonWithIcon("Import the Codex login", theme.DownloadIcon(), ad.importCodex)
	ad.importBtn.Importance = widget.HighImportance
	ad.importBtn.Disable()
	codex := container.NewVBox(
		note("Take over the login the Codex CLI keeps in ~/.codex/auth.json (a ChatGPT sign-in or an API key). "+
			"Let Codex talk through the relay afterwards, so that only one program refreshes the sign-in."),
		ad.codexInfo,
		container.NewHBox(ad.importBtn))

	// Each tab asks for its own height only while it shows, and the dialog fits the tab shown:
	// AppTabs asks for its tallest tab's, which made the ChatGPT tab a full-height dialog
	// around one button.
	item := func(title string, icon fyne.Resource, content fyne.CanvasObject) *container.TabItem {
		ti := container.NewTabItemWithIcon(title, icon, nil)
		ti.Content = container.New(shownTab{func() bool { return ad.tabs.Selected() == ti }}, container.NewPadded(content))
		return ti
	}
	ad.tabs = container.NewAppTabs(
		item("ChatGPT", theme.LoginIcon(), chatgpt),
		item("Codex login", theme.DownloadIcon(), codex),
		item("API key", theme.AccountIcon(), ad.form.box),
	)
	ad.tabs.SelectIndex(tab)
	ad.d = dialog.NewCustom("Add an account", "Close",
		container.NewThemeOverride(widthBox(560, ad.tabs), compact), a.win)
	ad.tabs.OnSelected = func(*container.TabItem) { ad.d.Resize(ad.d.MinSize()) }
	ad.d.Show()
	ad.d.Resize(ad.d.MinSize())
	if tab == addAPIKey {
		a.win.Canvas().Focus(ad.form.name)
	}
	a.add = ad

	a.u.async(func() {
		login := a.u.store.FindCodexLogin()
		fyne.Do(func() { ad.showLogin(login) })
	})
}

// shownTab lays out a tab's content; it asks for the content's size only while its tab is
// the one shown (shown), and for none otherwise.
type shownTab struct{ shown func() bool }

func (l shownTab) MinSize(objs []fyne.CanvasObject) fyne.Size {
	if len(objs) == 0 || !l.shown() {
		return fyne.Size{}
	}
	return objs[0].MinSize()
}

func (shownTab) Layout(objs []fyne.CanvasObject, size fyne.Size) {
	for _, o := range objs {
		o.Resize(size)
	}
}

// showLogin says what the Codex CLI's login is, and whether an account holds it already.
func (ad *addDialog) showLogin(l app.CodexLogin) {
	what := "a ChatGPT sign-in"
	if l.Email != "" {
		what += " (" + l.Email + ")"
	}
	if l.Kind == string(proxy.KindOpenAI) {
		what = "an API key"
	}
	switch {
	case !l.Found:
		setText(ad.codexInfo, "There is no Codex login in "+tildePath(l.Path)+": sign in with `codex login` first, "+
			"or use the ChatGPT tab.")
		ad.importBtn.Disable()
	case l.Account != "":
		setText(ad.codexInfo, tildePath(l.Path)+" holds "+what+", which is account “"+l.Account+"” already.")
		ad.importBtn.Enable()
	default:
		setText(ad.codexInfo, tildePath(l.Path)+" holds "+what+".")
		ad.importBtn.Enable()
	}
}

// importCodex imports the Codex CLI's login.
func (ad *addDialog) importCodex() {
	a := ad.a
	ad.importBtn.Disable()
	a.u.async(func() {
		meta, outcome, err := a.u.store.ImportCodex("")
		fyne.Do(func() {
			ad.importBtn.Enable()
			if err != nil {
				a.fail(fmt.Errorf("could not import the Codex login: %w", err))
				return
			}
			ad.d.Hide()
			switch outcome {
			case app.Unchanged:
				a.done(fmt.Sprintf("The Codex login is account “%s” already.", meta.Name))
			case app.Renewed:
				a.done(fmt.Sprintf("“%s” now has the Codex login's new sign-in.", meta.Name))
			default:
				a.done(fmt.Sprintf("Added “%s” from the Codex login.", meta.Name))
			}
		})
	})
}

// keyForm is the API-key account form. Each field's problem shows under it, in app's words;
// Return in any field submits.
type keyForm struct {
	a                  *accountsWindow
	name, baseURL, key *widget.Entry
	api                *widget.Select
	errs               map[string]*widget.Label    // by app.Field*
	hints              map[string]*widget.RichText // by app.Field*; an error takes its hint's place
	other              *widget.Label               // a problem with no one field
	submit             *widget.Button
	box                fyne.CanvasObject
	// added is called with the account's name once it is stored.
	added func(string)
}

// apiChoices are the form's API options (what the endpoint speaks), the default first.
var apiChoices = []struct{ label, api string }{
	{"Responses (/v1/responses)", string(proxy.APIResponses)},
	{"Chat Completions (/v1/chat/completions)", string(proxy.APIChat)},
}

func newKeyForm(a *accountsWindow) *keyForm {
	f := &keyForm{a: a, name: widget.NewEntry(), baseURL: widget.NewEntry(), key: widget.NewPasswordEntry(),
		other: errorLabel()}
	var labels []string
	for _, c := range apiChoices {
		labels = append(labels, c.label)
	}
	f.api = widget.NewSelect(labels, nil)
	f.api.SetSelectedIndex(0)
	f.errs, f.hints = map[string]*widget.Label{}, map[string]*widget.RichText{}
	for _, e := range []*widget.Entry{f.name, f.baseURL, f.key} {
		e.OnSubmitted = func(string) { f.add() }
	}
	f.submit = widget.NewButtonWithIcon("Add account", theme.ContentAddIcon(), f.add)
	f.submit.Importance = widget.HighImportance
	field := func(e fyne.CanvasObject, hintText, name string) fyne.CanvasObject {
		f.errs[name], f.hints[name] = errorLabel(), hint(hintText)
		return container.NewVBox(e, f.hints[name], f.errs[name])
	}
	f.box = container.NewVBox(
		note("Any OpenAI-compatible endpoint. The key goes to the system keychain, never to a file."),
		container.New(layout.NewFormLayout(),
			widget.NewLabel("Name"), field(f.name, "How the relay calls it, e.g. work (letters, digits, . _ @ + -).", app.FieldName),
			widget.NewLabel("Base URL"), field(f.baseURL, "e.g. https://api.openai.com/v1 or http://127.0.0.1:8080/v1", app.FieldBaseURL),
			widget.NewLabel("API"), field(f.api, "What the endpoint speaks; the relay translates for the other.", app.FieldAPI),
			widget.NewLabel("API key"), field(f.key, "Paste the key alone.", app.FieldKey),
		),
		f.other,
		container.NewHBox(layout.NewSpacer(), f.submit),
	)
	f.added = func(name string) {
		if a.add != nil {
			a.add.d.Hide()
		}
		a.done(fmt.Sprintf("Added “%s”.", name))
	}
	return f
}

// check reads the form and shows each field's problem under it: an empty field asks to be
// filled in; anything else is app's own validators' verdict.
func (f *keyForm) check() (app.NewAccount, app.Secret, bool) {
	name, base, key := strings.TrimSpace(f.name.Text), strings.TrimSpace(f.baseURL.Text), strings.TrimSpace(f.key.Text)
	errs := map[string]error{}
	if name == "" {
		errs[app.FieldName] = errors.New("enter a name for the account")
	} else if err := app.ValidateName(name); err != nil {
		errs[app.FieldName] = err
	}
	if base == "" {
		errs[app.FieldBaseURL] = errors.New("enter the endpoint's base URL")
	} else if _, err := app.ValidateBaseURL(base); err != nil {
		errs[app.FieldBaseURL] = err
	}
	if key == "" {
		errs[app.FieldKey] = errors.New("enter the API key")
	} else if err := app.ValidateKey(key); err != nil {
		errs[app.FieldKey] = err
	}
	for field := range f.errs {
		f.setFieldError(field, errs[field])
	}
	setError(f.other, nil)
	na := app.NewAccount{Name: name, Kind: string(proxy.KindOpenAI), BaseURL: base,
		API: apiChoices[max(f.api.SelectedIndex(), 0)].api}
	return na, app.Secret{APIKey: key}, len(errs) == 0
}

// showError puts an error from app under its field, or under the form.
func (f *keyForm) showError(err error) {
	if field := fieldOf(err); f.errs[field] != nil {
		f.setFieldError(field, err)
		return
	}
	if isKeychainError(err) {
		f.a.u.showError(f.a.win, err)
	}
	setError(f.other, err)
}

// setFieldError shows err under its field, in place of the field's hint (nil: the hint).
func (f *keyForm) setFieldError(field string, err error) {
	setError(f.errs[field], err)
	setVisible(f.hints[field], err == nil)
}

// add checks the form, then stores the account (the keychain may be slow or ask).
func (f *keyForm) add() {
	if f.submit.Disabled() {
		return
	}
	na, sec, ok := f.check()
	if !ok {
		return
	}
	f.submit.Disable()
	f.a.u.async(func() {
		_, err := f.a.u.store.AddAccount(na, sec)
		fyne.Do(func() {
			f.submit.Enable()
			if err != nil {
				f.showError(err)
				return
			}
			f.key.SetText("")
			f.added(na.Name)
		})
	})
}
