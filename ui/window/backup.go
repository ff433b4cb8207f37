package window

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/storage"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/codexrelay/codexrelay/app"
)

// The accounts window's Export… and Import… dialogs: the whole pool (settings and secrets) to
// one file encrypted with a passphrase, and back. They act through the window process's own
// app.App, as the other account actions do (the tray's relay follows the settings file), off
// the UI thread: the scrypt key derivation takes about a second, and the settings lock may wait.

// backupDialog is the Export or the Import dialog, for the tests to drive.
type backupDialog struct {
	d        *dialog.CustomDialog
	path     *widget.Entry
	pass     *widget.Entry
	confirm  *widget.Entry // Export only
	pathErr  *widget.Label
	passErr  *widget.Label
	ok       *widget.Button
	choose   *widget.Button
	chooser  dialog.Dialog // the file picker last opened
	result   *backupResult // shown after a success
	busyNote *widget.Label
	// replace is the existing file the user asked to replace (Export again after it was
	// named); "" replaces none.
	replace string
}

// backupResult is the dialog that says what an export or an import did.
type backupResult struct {
	d *dialog.CustomDialog
	// disable is "Disable them here" after an export with ChatGPT sign-ins (nil otherwise).
	disable *widget.Button
	keep    *widget.Button
	text    string
}

// defaultExportPath is where an export goes unless the user picks another file.
func defaultExportPath(u *UI) string {
	dir, err := os.UserHomeDir()
	if err != nil {
		dir = "."
	}
	return filepath.Join(dir, "codexrelay-accounts-"+u.now().Format("2006-01-02")+".age")
}

func (a *accountsWindow) newBackupDialog(title, confirm string, export bool) *backupDialog {
	b := &backupDialog{
		path: widget.NewEntry(), pass: widget.NewPasswordEntry(),
		pathErr: errorLabel(), passErr: errorLabel(), busyNote: widget.NewLabel(""),
	}
	b.busyNote.Hide()
	b.choose = widget.NewButtonWithIcon("Choose…", theme.FolderOpenIcon(), func() { b.pick(a, export) })
	b.ok = widget.NewButtonWithIcon(confirm, theme.ConfirmIcon(), nil)
	b.ok.Importance = widget.HighImportance
	cancel := widget.NewButtonWithIcon("Cancel", theme.CancelIcon(), func() { b.d.Hide() })
	fileRow := container.NewBorder(nil, nil, nil, b.choose, b.path)
	items := []fyne.CanvasObject{
		widget.NewLabel("File"), container.NewVBox(fileRow, b.pathErr),
		widget.NewLabel("Passphrase"), container.NewVBox(b.pass, b.passErr),
	}
	var intro string
	if export {
		b.confirm = widget.NewPasswordEntry()
		items = append(items[:3], container.NewVBox(b.pass), widget.NewLabel("Again"), container.NewVBox(b.confirm, b.passErr))
		intro = "Writes every account, its settings and its secret (API key or sign-in) to one file encrypted " +
			"with the passphrase (age, scrypt). Keep the passphrase: without it the file cannot be read."
	} else {
		intro = "Adds the accounts of an export made by Codex Relay, with their secrets, after yours. " +
			"Accounts that are here already are left as they are."
	}
	form := container.New(layout.NewFormLayout(), items...)
	b.d = dialog.NewCustomWithoutButtons(title, widthBox(500, note(intro), form, b.busyNote), a.win)
	b.d.SetButtons([]fyne.CanvasObject{cancel, b.ok})
	return b
}

// entered reads the file and the passphrase of a submit, clearing the fields' messages; ok is
// false while the dialog is busy or a field is empty (its message says which, with noPath or
// noPass).
func (b *backupDialog) entered(noPath, noPass string) (path, pass string, ok bool) {
	if b.ok.Disabled() {
		return "", "", false
	}
	path, pass = strings.TrimSpace(b.path.Text), b.pass.Text
	setError(b.pathErr, nil)
	setError(b.passErr, nil)
	switch {
	case path == "":
		setError(b.pathErr, errors.New(noPath))
		return "", "", false
	case pass == "":
		setError(b.passErr, errors.New(noPass))
		return "", "", false
	}
	return path, pass, true
}

// pick opens the file picker; the file chosen goes into the path field.
func (b *backupDialog) pick(a *accountsWindow, export bool) {
	set := func(uri fyne.URI) {
		if uri != nil {
			b.path.SetText(uri.Path())
		}
	}
	var d *dialog.FileDialog
	if export {
		d = dialog.NewFileSave(func(w fyne.URIWriteCloser, err error) {
			if err == nil && w != nil {
				set(w.URI())
				w.Close() // the export writes the file itself (0600, atomically)
			}
		}, a.win)
		d.SetFileName(filepath.Base(b.path.Text))
	} else {
		d = dialog.NewFileOpen(func(r fyne.URIReadCloser, err error) {
			if err == nil && r != nil {
				set(r.URI())
				r.Close()
			}
		}, a.win)
	}
	if dir := filepath.Dir(b.path.Text); b.path.Text != "" {
		if l, err := storage.ListerForURI(storage.NewFileURI(dir)); err == nil {
			d.SetLocation(l)
		}
	}
	b.chooser = d
	d.Show()
}

// busy shows that the action runs, or that it ended.
func (b *backupDialog) busy(text string) {
	if text == "" {
		b.ok.Enable()
		b.busyNote.Hide()
		return
	}
	b.ok.Disable()
	b.busyNote.SetText(text)
	b.busyNote.Show()
}

// showExport opens the Export dialog: a file, a passphrase typed twice; then what was written,
// and for ChatGPT sign-ins the offer to disable them here.
func (a *accountsWindow) showExport() *backupDialog {
	b := a.newBackupDialog("Export accounts", "Export", true)
	b.path.SetText(defaultExportPath(a.u))
	submit := func() {
		path, pass, ok := b.entered("choose the file to write", "enter a passphrase: the export holds your keys and sign-ins")
		if !ok {
			return
		}
		if pass != b.confirm.Text {
			setError(b.passErr, errors.New("the two passphrases differ"))
			return
		}
		if len([]rune(pass)) < app.MinPassphraseLength {
			setError(b.passErr, fmt.Errorf("use at least %d characters: the export holds every key and sign-in", app.MinPassphraseLength))
			return
		}
		replace := path == b.replace
		if err := app.CheckExportTarget(path, replace); errors.Is(err, app.ErrExportExists) {
			b.replace = path // a second Export replaces it
			setError(b.pathErr, fmt.Errorf("%s already exists: Export again to replace it, or choose another name", path))
			return
		} else if err != nil {
			setError(b.pathErr, err)
			return
		}
		b.busy("Encrypting…")
		a.u.async(func() {
			res, err := a.u.store.ExportAccountsFile(path, pass, replace)
			fyne.Do(func() {
				b.busy("")
				switch {
				case errors.Is(err, app.ErrShortPassphrase) || errors.Is(err, app.ErrEmptyPassphrase):
					setError(b.passErr, err)
					return
				case err != nil:
					if isKeychainError(err) {
						a.u.showError(a.win, err)
					}
					setError(b.pathErr, err)
					return
				}
				b.pass.SetText("")
				b.confirm.SetText("")
				b.d.Hide()
				b.result = a.showExportResult(path, res)
				a.done(fmt.Sprintf("Exported %s to %s.", countAccounts(len(res.Accounts)), path))
			})
		})
	}
	b.ok.OnTapped = submit
	b.pass.OnSubmitted = func(string) { a.win.Canvas().Focus(b.confirm) }
	b.confirm.OnSubmitted = func(string) { submit() }
	b.d.Show()
	a.win.Canvas().Focus(b.pass)
	return b
}

// showImport opens the Import dialog: a file and its passphrase; then what was imported and
// what was skipped, and why.
func (a *accountsWindow) showImport() *backupDialog {
	b := a.newBackupDialog("Import accounts", "Import", false)
	submit := func() {
		path, pass, ok := b.entered("choose the export to read", "enter the passphrase the export was made with")
		if !ok {
			return
		}
		b.busy("Decrypting…")
		a.u.async(func() {
			res, err := a.u.store.ImportAccountsFile(path, pass)
			fyne.Do(func() {
				b.busy("")
				switch {
				case errors.Is(err, app.ErrWrongPassphrase):
					setError(b.passErr, err)
					return
				case err != nil:
					if isKeychainError(err) {
						a.u.showError(a.win, err)
					}
					setError(b.pathErr, err)
					return
				}
				b.pass.SetText("")
				b.d.Hide()
				b.result = a.showImportResult(res)
				a.done(fmt.Sprintf("Imported %s; skipped %d.", countAccounts(len(res.Imported)), len(res.Skipped)))
			})
		})
	}
	b.ok.OnTapped = submit
	b.pass.OnSubmitted = func(string) { submit() }
	b.d.Show()
	a.win.Canvas().Focus(b.path)
	return b
}

// countAccounts is "1 account", "3 accounts".
func countAccounts(n int) string {
	if n == 1 {
		return "1 account"
	}
	return fmt.Sprintf("%d accounts", n)
}

// quoted lists names as “a”, “b”.
func quoted(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "“" + n + "”"
	}
	return strings.Join(q, ", ")
}

// exportResultText says what an export wrote, and warns about single-use sign-ins.
func exportResultText(path string, res app.ExportResult) string {
	lines := []string{fmt.Sprintf("Wrote %s to %s: %s.", countAccounts(len(res.Accounts)), path, quoted(res.Accounts))}
	for _, s := range res.Skipped {
		lines = append(lines, fmt.Sprintf("Not written: “%s” (%s).", s.Name, s.Reason))
	}
	if len(res.ChatGPT) > 0 {
		lines = append(lines, "", fmt.Sprintf("%s: a ChatGPT sign-in's refresh token works once. When two "+
			"machines use the same sign-in, the first to refresh it signs the other out. If the other machine "+
			"will use %s, disable %s here.", quoted(res.ChatGPT), them(len(res.ChatGPT), "it", "them"),
			them(len(res.ChatGPT), "it", "them")))
	}
	return strings.Join(lines, "\n")
}

func them(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func (a *accountsWindow) showExportResult(path string, res app.ExportResult) *backupResult {
	r := &backupResult{text: exportResultText(path, res)}
	msg := widget.NewLabel(r.text)
	msg.Wrapping = fyne.TextWrapWord
	r.keep = widget.NewButton("Close", func() { r.d.Hide() })
	buttons := []fyne.CanvasObject{r.keep}
	if len(res.ChatGPT) > 0 {
		r.keep.SetText("Keep them here")
		signins := res.ChatGPT
		r.disable = widget.NewButtonWithIcon("Disable them here", theme.MediaPauseIcon(), func() {
			r.d.Hide()
			a.u.async(func() {
				err := a.u.store.DisableAccounts(signins)
				fyne.Do(func() {
					if err != nil {
						a.fail(err)
						return
					}
					a.done(fmt.Sprintf("Disabled %s here: the other machine can use %s.", quoted(signins),
						them(len(signins), "it", "them")))
				})
			})
		})
		r.disable.Importance = widget.HighImportance
		buttons = append(buttons, r.disable)
	}
	r.d = dialog.NewCustomWithoutButtons("Accounts exported", widthBox(500, msg), a.win)
	r.d.SetButtons(buttons)
	r.d.Show()
	return r
}

// importResultText says what an import added and what it skipped.
func importResultText(res app.ImportResult) string {
	var lines []string
	if len(res.Imported) == 0 {
		lines = append(lines, "No account was added.")
	} else {
		lines = append(lines, fmt.Sprintf("Added %s: %s.", countAccounts(len(res.Imported)), quoted(res.Imported)))
	}
	for _, s := range res.Skipped {
		lines = append(lines, fmt.Sprintf("Skipped “%s”: %s.", s.Name, s.Reason))
	}
	if len(res.ChatGPT) > 0 {
		lines = append(lines, "", fmt.Sprintf("%s: a ChatGPT sign-in's refresh token works once. Make sure the "+
			"machine it came from no longer uses %s (disable %s there), or one of them will be signed out.",
			quoted(res.ChatGPT), them(len(res.ChatGPT), "it", "them"), them(len(res.ChatGPT), "it", "them")))
	}
	return strings.Join(lines, "\n")
}

func (a *accountsWindow) showImportResult(res app.ImportResult) *backupResult {
	r := &backupResult{text: importResultText(res)}
	msg := widget.NewLabel(r.text)
	msg.Wrapping = fyne.TextWrapWord
	r.keep = widget.NewButton("Close", func() { r.d.Hide() })
	r.d = dialog.NewCustomWithoutButtons("Accounts imported", widthBox(500, msg), a.win)
	r.d.SetButtons([]fyne.CanvasObject{r.keep})
	r.d.Show()
	return r
}
