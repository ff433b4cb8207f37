package window

import (
	"context"
	"errors"
	"fmt"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/codexrelay/codexrelay/app"
)

// signInDialog runs a ChatGPT sign-in, for a new account (name "") or to renew one. It opens
// the sign-in page in the browser and shows its link at once, with a Copy button, for when no
// browser opens. "Use a code instead" switches to the device-code flow, for a computer
// without a browser: it shows the page to visit elsewhere and the code to enter there, each
// with a Copy button.
type signInDialog struct {
	u    *UI
	win  fyne.Window
	name string
	done func(app.AccountMeta)

	d        *dialog.CustomDialog
	msg      *widget.Label
	progress *widget.ProgressBarInfinite
	link     *widget.Label
	linkRow  fyne.CanvasObject
	codeURL  *widget.Label
	code     *widget.Label
	codeBox  fyne.CanvasObject
	useCode  *widget.Button

	cancel context.CancelFunc
	// flow counts the flows started: the result of one the user left is ignored.
	flow int
	// open says whether the dialog shows (a flow may hold the sign-in port until it closes).
	open bool
}

func newSignInDialog(u *UI, win fyne.Window, name string, done func(app.AccountMeta)) *signInDialog {
	s := &signInDialog{u: u, win: win, name: name, done: done,
		msg: widget.NewLabel(""), progress: widget.NewProgressBarInfinite(),
		link: widget.NewLabel(""), codeURL: widget.NewLabel(""), code: widget.NewLabel("")}
	s.msg.Wrapping = fyne.TextWrapWord
	s.linkRow = container.NewVBox(widget.NewLabel("If no browser opened, open this link in one:"), copyRow(s.link, u.copyText))
	s.linkRow.Hide()
	s.code.TextStyle = fyne.TextStyle{Bold: true, Monospace: true}
	s.code.SizeName = theme.SizeNameSubHeadingText
	s.codeBox = container.NewVBox(
		widget.NewLabel("1. On any device, open:"), copyRow(s.codeURL, u.copyText),
		widget.NewLabel("2. Sign in, and enter this code:"), copyRow(s.code, u.copyText))
	s.codeBox.Hide()
	s.useCode = widget.NewButtonWithIcon("Use a code instead", theme.ComputerIcon(), s.startDevice)
	title := "Sign in with ChatGPT"
	if name != "" {
		title = "Sign in again: " + name
	}
	s.d = dialog.NewCustom(title, "Cancel",
		widthBox(500, s.msg, s.progress, s.linkRow, s.codeBox, container.NewHBox(s.useCode)), win)
	s.d.SetOnClosed(func() {
		s.open = false
		s.progress.Stop() // an infinite bar animates until it is stopped, even hidden
		s.flow++          // whatever was running is left
		if s.cancel != nil {
			s.cancel()
		}
	})
	s.open = true
	s.d.Show()
	s.startBrowser()
	return s
}

// begin starts a new flow, leaving the one before; it returns the flow's number and context.
func (s *signInDialog) begin() (int, context.Context) {
	if s.cancel != nil {
		s.cancel()
	}
	s.flow++
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	return s.flow, ctx
}

// startBrowser runs the browser sign-in (PKCE, with a callback on this computer).
func (s *signInDialog) startBrowser() {
	flow, ctx := s.begin()
	s.msg.SetText("Opening the ChatGPT sign-in page in your browser… Come back here when you have signed in.")
	s.u.async(func() {
		meta, err := s.u.store.SignInChatGPT(ctx, s.name, func(raw string) error {
			fyne.Do(func() {
				if flow == s.flow {
					s.link.SetText(raw)
					s.linkRow.Show()
				}
			})
			return s.u.openURL(raw)
		})
		fyne.Do(func() { s.finish(flow, meta, err) })
	})
}

// startDevice switches to the device-code sign-in.
func (s *signInDialog) startDevice() {
	flow, ctx := s.begin()
	s.useCode.Hide()
	s.linkRow.Hide()
	s.msg.SetText("Asking for a code…")
	s.u.async(func() {
		meta, err := s.u.store.SignInChatGPTDevice(ctx, s.name, func(dc app.DeviceCode) {
			fyne.Do(func() {
				if flow == s.flow {
					s.showCode(dc)
				}
			})
		})
		fyne.Do(func() { s.finish(flow, meta, err) })
	})
}

// showCode shows where to go and what to enter.
func (s *signInDialog) showCode(dc app.DeviceCode) {
	s.msg.SetText("Sign in on another device; this window finishes by itself once you have entered the code.")
	s.codeURL.SetText(dc.VerificationURL)
	s.code.SetText(dc.UserCode)
	s.codeBox.Show()
}

// finish closes the dialog with the flow's result, unless the user left that flow.
func (s *signInDialog) finish(flow int, meta app.AccountMeta, err error) {
	if flow != s.flow {
		return
	}
	s.d.Hide() // stops the progress bar too
	switch {
	case errors.Is(err, context.Canceled):
	case err != nil:
		s.u.showError(s.win, fmt.Errorf("the ChatGPT sign-in failed: %w", err))
	default:
		s.done(meta)
	}
}
