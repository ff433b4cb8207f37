package window

import (
	"path/filepath"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/ui/look"
)

// codexRow is the dashboard's permanent line about the Codex CLI: whether its config.toml
// sends Codex's requests through the relay and, when it does not, why, with a Configure
// button that, once there is an account to send them to, asks (saying what it writes and how
// to undo it), merges the relay's provider block into it (after a backup) and says what it did.
// With no account there is no Configure: Codex would be pointed at a relay with no model to
// offer, and lose the provider it had.
type codexRow struct {
	opt       *DashboardOptions
	box       *fyne.Container
	dot       *mark
	state     *widget.Label
	why       *textCell
	configure *widget.Button
	result    *fleeting
	shown     app.CodexSetup
	// accounts says whether the relay has an account (Configure is offered only then).
	accounts bool
}

func newCodexRow(opt *DashboardOptions) *codexRow {
	r := &codexRow{opt: opt, dot: newDot(), state: widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}),
		why: newTextCell(fyne.TextAlignLeading), result: newFleeting(func() {
			if opt.Changed != nil {
				opt.Changed()
			}
		})}
	r.configure = widget.NewButtonWithIcon("Configure", theme.DocumentSaveIcon(), r.ask)
	r.configure.Importance = widget.HighImportance
	r.configure.Hide()
	left := container.NewHBox(r.dot, r.state)
	r.box = container.NewVBox(container.NewBorder(nil, nil, left, container.NewCenter(r.configure), r.why), r.result.Label)
	r.box.Hide()
	return r
}

// show says what setup found, with accounts saying whether the relay has an account; nil
// hides the row (no way to know).
func (r *codexRow) show(setup *app.CodexSetup, accounts bool) {
	setVisible(r.box, setup != nil)
	if r.result.expire(r.opt.Now()) {
		r.box.Refresh()
	}
	if setup == nil || *setup == r.shown && accounts == r.accounts {
		return
	}
	r.shown, r.accounts = *setup, accounts
	if setup.Configured {
		r.dot.SetTone(look.Good)
		setText(r.state, "Codex: configured")
		r.why.Set(textView{tildePath(setup.Path) + " sends Codex's requests through the relay", look.Dim})
	} else {
		r.dot.SetTone(look.Warn)
		setText(r.state, "Codex: not configured")
		why := sentence(strings.ReplaceAll(setup.Why, setup.Path, tildePath(setup.Path)))
		if !accounts {
			// No Configure: pointed at a relay with no account, Codex would have no model.
			why += " · Configure comes once there is an account"
		}
		r.why.Set(textView{why, look.Normal})
	}
	setVisible(r.configure, !setup.Configured && accounts && r.opt.ConfigureCodex != nil)
	r.box.Refresh() // the line's parts changed size
}

// ask says what Configure writes and how to undo it, and writes once the user agrees (at once
// when there is no one to ask: a dashboard without AskFirst).
func (r *codexRow) ask() {
	if r.opt.AskFirst == nil {
		r.write()
		return
	}
	r.opt.AskFirst("Configure Codex?", "Configure", configureAskText(r.shown.Path), r.write)
}

// configureAskText says what pointing Codex at the relay writes, beside config.toml at path
// ("" for ~/.codex/config.toml), and how to undo it.
func configureAskText(path string) string {
	if path == "" {
		path = "~/.codex/config.toml"
	}
	path = tildePath(path)
	env := tildePath(filepath.Join(filepath.Dir(path), ".env"))
	return "Codex Relay will point Codex at the relay, so that every Codex request goes through it:\n\n" +
		"• " + path + ": its provider block [model_providers.codexrelay], made Codex's provider (model_provider), and " +
		"chatgpt_base_url, so that Codex's /status shows the pool's limits;\n" +
		"• " + env + ": SSL_CERT_FILE (a bundle of the system's authorities and the relay's own) and NO_PROXY (loopback).\n\n" +
		"Each file is copied to a backup first. " + undoCodexText
}

// undoCodexText says how to undo pointing Codex at the relay.
const undoCodexText = "To undo it: codexrelay codex-config --remove, or Settings > Codex > “Stop using the relay in Codex…”."

// write runs Configure off the UI thread and says what it did, with the backup's path.
func (r *codexRow) write() {
	r.configure.Disable()
	r.opt.Async(func() {
		res, err := r.opt.ConfigureCodex()
		fyne.Do(func() {
			r.configure.Enable()
			if err != nil {
				r.result.set("Could not configure Codex: "+err.Error(), widget.DangerImportance, r.opt.Now())
			} else {
				r.result.set(configText(res)+" "+undoCodexText, widget.MediumImportance, r.opt.Now())
			}
			if r.opt.Changed != nil {
				r.opt.Changed()
			}
		})
	})
}
