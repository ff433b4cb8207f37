package window

import (
	"fmt"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// The Settings window's Codex section: one button that undoes what pointing Codex at the relay
// did (`codexrelay codex-config --remove`), before the relay is uninstalled or whenever Codex is
// to go back to its own provider. It asks first, then says what it changed in each file.

// codexUndoText says what the button does.
const codexUndoText = "Codex Relay changed two of Codex's files when it pointed Codex at the relay: ~/.codex/config.toml " +
	"(its provider block, model_provider and chatgpt_base_url) and ~/.codex/.env (SSL_CERT_FILE and NO_PROXY). " +
	"Stop using the relay takes those out and puts back what was there before, keeping every other change " +
	"(a file nothing else changed comes back exactly as it was), after a backup of each file. Do it before you uninstall Codex Relay: Codex would otherwise stay pointed at a relay that is gone."

// codexSection is the section's content: the explanation, the button and the line that says
// what it did.
func (s *settingsWindow) codexSection() fyne.CanvasObject {
	result := errorLabel()
	var undo *widget.Button
	undo = widget.NewButtonWithIcon("Stop using the relay in Codex…", theme.ContentUndoIcon(), func() {
		s.confirmCodexUndo(undo, result)
	})
	s.codexUndo, s.codexUndone = undo, result
	return container.NewVBox(note(codexUndoText), container.NewHBox(undo), result)
}

// confirmCodexUndo asks, then undoes off the UI thread and says what it changed.
func (s *settingsWindow) confirmCodexUndo(undo *widget.Button, result *widget.Label) {
	msg := note("Codex will send its requests to its own provider again, and trust only what it trusted before. " +
		"`codexrelay codex-config --write` (or the dashboard's Configure) points it at the relay again.")
	s.undoAsk = dialog.NewCustomConfirm("Stop using the relay in Codex?", "Stop using the relay", "Cancel", widthBox(520, msg),
		func(ok bool) {
			if !ok {
				return
			}
			undo.Disable()
			s.u.async(func() {
				r, err := s.u.store.RemoveCodexConfig("")
				fyne.Do(func() {
					undo.Enable()
					if err != nil {
						setError(result, fmt.Errorf("could not take the relay out of Codex's configuration: %w", err))
						return
					}
					setMessage(result, strings.Join(r.Lines(tildePath), "\n"), widget.SuccessImportance)
				})
				s.u.changed()
			})
		}, s.win)
	s.undoAsk.Show()
}

// ShowSettingsCodex opens the Settings window scrolled to its Codex section (screenshots).
func (u *UI) ShowSettingsCodex() {
	u.showSettings()
	if scroll, ok := u.settings.win.Content().(*container.Scroll); ok {
		scroll.ScrollToBottom()
	}
}
