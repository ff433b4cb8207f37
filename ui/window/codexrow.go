package window

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/ui/look"
)

// codexRow is the dashboard's permanent line about the Codex CLI: whether its config.toml
// sends Codex's requests through the relay and, when it does not, why, with a Configure
// button that merges the relay's provider block into it (after a backup) and says what it did.
type codexRow struct {
	opt       *DashboardOptions
	box       *fyne.Container
	dot       *mark
	state     *widget.Label
	why       *textCell
	configure *widget.Button
	result    *fleeting
	shown     app.CodexSetup
}

func newCodexRow(opt *DashboardOptions) *codexRow {
	r := &codexRow{opt: opt, dot: newDot(), state: widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}),
		why: newTextCell(fyne.TextAlignLeading), result: newFleeting(func() {
			if opt.Changed != nil {
				opt.Changed()
			}
		})}
	r.configure = widget.NewButtonWithIcon("Configure", theme.DocumentSaveIcon(), r.write)
	r.configure.Importance = widget.HighImportance
	r.configure.Hide()
	left := container.NewHBox(r.dot, r.state)
	r.box = container.NewVBox(container.NewBorder(nil, nil, left, container.NewCenter(r.configure), r.why), r.result.Label)
	r.box.Hide()
	return r
}

// show says what setup found; nil hides the row (no way to know).
func (r *codexRow) show(setup *app.CodexSetup) {
	setVisible(r.box, setup != nil)
	if r.result.expire(r.opt.Now()) {
		r.box.Refresh()
	}
	if setup == nil || *setup == r.shown {
		return
	}
	r.shown = *setup
	if setup.Configured {
		r.dot.SetTone(look.Good)
		setText(r.state, "Codex: configured")
		r.why.Set(textView{tildePath(setup.Path) + " sends Codex's requests through the relay", look.Dim})
	} else {
		r.dot.SetTone(look.Warn)
		setText(r.state, "Codex: not configured")
		r.why.Set(textView{sentence(setup.Why), look.Normal})
	}
	setVisible(r.configure, !setup.Configured && r.opt.ConfigureCodex != nil)
	r.box.Refresh() // the line's parts changed size
}

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
				r.result.set(configText(res), widget.MediumImportance, r.opt.Now())
			}
			if r.opt.Changed != nil {
				r.opt.Changed()
			}
		})
	})
}
