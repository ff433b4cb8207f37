package window

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/ui/look"
)

// firstRunCard is what the dashboard shows until there is an account. When the Codex CLI has
// a login that no account holds, one button takes it, points Codex at the relay and sends a
// test request through it, then says what each step did; otherwise it offers the ChatGPT
// sign-in and the API-key form, and once an account came of one of those while Codex does not
// use the relay, it stays to offer the rest (point Codex at the relay, the test request). It
// never mentions the tray, which may not exist.
type firstRunCard struct {
	opt *DashboardOptions
	box fyne.CanvasObject

	intro   *widget.RichText
	use     *widget.Button
	useNote *widget.RichText
	useBox  *fyne.Container
	// progress holds an infinite progress bar while the action runs, and nothing otherwise:
	// such a bar animates from its first layout on, even hidden.
	progress *fyne.Container
	results  *fyne.Container
	retry    *widget.Button // sends the test request again after it failed
	done     *widget.Button
	or       *widget.Label
	signIn   *widget.Button
	addKey   *widget.Button
	// other holds the other ways in: the sign-in and API-key buttons and the terminal
	// commands. It hides while the one action runs and while its results show.
	other *fyne.Container
	// terminal shows the commands that do the same, closed at first.
	terminal *collapsible

	// point is the offer made once an account was added another way: point Codex at the
	// relay and send the test request; following says that the card shows it.
	pointBox  *fyne.Container
	point     *widget.Button
	following bool
	// moved says that the user moved on to the dashboard once: the card offers nothing more.
	moved bool

	running bool
	// lines are the last run's results; fr is the last run.
	lines []resultLine
	fr    app.FirstRun
	// closed is called when the user moves on from the results to the dashboard.
	closed func()
}

// firstRunTimeout bounds the one action (its test request goes through a real account).
const firstRunTimeout = 2 * time.Minute

func newFirstRunCard(opt *DashboardOptions) *firstRunCard {
	c := &firstRunCard{opt: opt}
	title := widget.NewLabelWithStyle("Welcome to Codex Relay", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	title.SizeName = theme.SizeNameSubHeadingText
	c.intro = note("")
	c.use = widget.NewButtonWithIcon("", theme.LoginIcon(), c.run)
	c.use.Importance = widget.HighImportance
	c.useNote = note("It imports ~/.codex/auth.json as an account, " + pointsCodex + ", and sends one short test request through the relay.")
	c.useBox = container.NewVBox(container.NewHBox(c.use), c.useNote)
	c.useBox.Hide()
	c.point = widget.NewButtonWithIcon("Point Codex at the relay and send a test request", theme.ConfirmIcon(), c.runPoint)
	c.point.Importance = widget.HighImportance
	c.pointBox = container.NewVBox(container.NewHBox(c.point), note("It "+pointsCodex+
		", then sends one short test request through the relay."))
	c.pointBox.Hide()
	c.progress = container.NewVBox()
	c.results = container.NewVBox()
	c.done = widget.NewButtonWithIcon("Show the dashboard", theme.NavigateNextIcon(), c.close)
	c.done.Importance = widget.HighImportance
	c.done.Hide()
	c.retry = widget.NewButtonWithIcon("Send the test request again", theme.ViewRefreshIcon(), c.retest)
	c.retry.Hide()
	c.or = widget.NewLabel("")
	var actions []fyne.CanvasObject
	if opt.SignIn != nil {
		c.signIn = widget.NewButtonWithIcon("Sign in with ChatGPT…", theme.LoginIcon(), opt.SignIn)
		actions = append(actions, c.signIn)
	}
	if opt.AddKey != nil {
		c.addKey = widget.NewButtonWithIcon("Add an API key…", theme.ContentAddIcon(), opt.AddKey)
		actions = append(actions, c.addKey)
	}
	_, cmds := code(strings.Join([]string{
		"# sign in with ChatGPT in the browser (--device: with a code, on a machine without one)",
		"codexrelay accounts add --kind chatgpt",
		"# or take over the Codex CLI's login",
		"codexrelay accounts import-codex",
		"# or an OpenAI-compatible API key, read from stdin",
		"printenv OPENAI_API_KEY | codexrelay accounts add --name work --kind openai --base-url https://api.openai.com/v1",
		"# then point Codex at the relay (config.toml is backed up first)",
		"codexrelay codex-config --write",
	}, "\n"))
	c.terminal = newCollapsible("From a terminal", cmds)
	c.other = container.NewVBox(c.or, container.NewHBox(actions...), widget.NewSeparator(), c.terminal.box)
	c.box = container.New(&maxWidth{width: 760}, container.NewVBox(
		title,
		c.intro,
		c.useBox,
		c.pointBox,
		c.progress,
		c.results,
		container.NewHBox(c.retry, c.done),
		c.other,
	))
	return c
}

// pointsCodex says what pointing Codex at the relay changes, where the card offers it.
const pointsCodex = "adds the relay to ~/.codex/config.toml and sets SSL_CERT_FILE (the authorities Codex and the " +
	"commands it runs trust: the system's and the relay's own) and NO_PROXY (loopback) in ~/.codex/.env, " +
	"each after a backup (`codexrelay codex-config --remove` undoes it)"

// active reports whether the card has something to say although there may be accounts
// already: a run in progress, the results of one that added or found an account, or the offer
// to point Codex at the relay after an account was added another way.
func (c *firstRunCard) active() bool { return c.running || c.done.Visible() || c.following }

// offerPoint turns the card to the rest of the first run once account was added another way
// (the API-key form, the ChatGPT sign-in) while Codex does not use the relay: point Codex at
// it and send the test request, or move on to the dashboard.
func (c *firstRunCard) offerPoint(account string) {
	if c.active() || c.moved || c.opt.PointCodex == nil {
		return
	}
	c.following = true
	setNote(c.intro, "Account “"+account+"” is added. Codex does not send its requests through the relay yet: "+
		"point it there, and see a request go through.")
	c.useBox.Hide()
	c.other.Hide()
	c.pointBox.Show()
	c.done.Importance = widget.MediumImportance
	c.done.SetText("Not now: show the dashboard")
	c.done.Show()
}

// testFailed says whether the last run configured Codex but its test request failed.
func (c *firstRunCard) testFailed() bool {
	return (c.fr.Account.Name != "" || c.following) && c.fr.TestErr != nil
}

// show offers what fits login, the Codex CLI's login as last read. While the one action runs
// or its results show, the card stays as it is: the login is not read once an account
// exists, and the other ways in would only distract from the results.
func (c *firstRunCard) show(login app.CodexLogin) {
	setVisible(c.other, !c.active())
	if c.active() {
		return
	}
	offer := login.Found && login.Account == "" && c.opt.UseCodexLogin != nil
	if offer {
		who := login.Email
		if login.Kind == "openai" {
			who = "API key"
		}
		label := "Use your Codex login and point Codex at the relay"
		if who != "" {
			label = "Use your Codex login (" + who + ") and point Codex at the relay"
		}
		if c.use.Text != label {
			c.use.SetText(label)
			redraws.Add(1)
		}
		setNote(c.intro, "Codex Relay sends each of Codex's requests to one of your accounts, and to the next one "+
			"when an account reaches its limit or fails. The Codex CLI is signed in on this computer: "+
			"start with that login.")
		setText(c.or, "Or add an account another way:")
	} else {
		setNote(c.intro, "Codex Relay sends each of Codex's requests to one of your accounts, and to the next one "+
			"when an account reaches its limit or fails. Add your first account:")
		setText(c.or, "")
	}
	setVisible(c.useBox, offer)
	setVisible(c.or, c.or.Text != "")
	// The sign-in is the main way in when there is no Codex login to take.
	if c.signIn != nil {
		imp := widget.HighImportance
		if offer {
			imp = widget.MediumImportance
		}
		if c.signIn.Importance != imp {
			c.signIn.Importance = imp
			c.signIn.Refresh()
			redraws.Add(1)
		}
	}
}

// run is the one action: import, configure, test, off the UI thread.
func (c *firstRunCard) run() {
	if c.running {
		return
	}
	c.running = true
	c.use.Disable()
	c.useBox.Hide()
	c.other.Hide()
	c.results.Objects = nil
	c.results.Refresh()
	c.progress.Objects = []fyne.CanvasObject{widget.NewProgressBarInfinite()}
	c.progress.Refresh()
	c.opt.Async(func() {
		ctx, cancel := context.WithTimeout(context.Background(), firstRunTimeout)
		defer cancel()
		fr, err := c.opt.UseCodexLogin(ctx)
		fyne.Do(func() { c.finish(fr, err) })
	})
}

// runPoint points Codex at the relay and sends the test request, off the UI thread.
func (c *firstRunCard) runPoint() {
	if c.running {
		return
	}
	c.running = true
	c.point.Disable()
	c.pointBox.Hide()
	c.done.Hide()
	c.progress.Objects = []fyne.CanvasObject{widget.NewProgressBarInfinite()}
	c.progress.Refresh()
	c.opt.Async(func() {
		ctx, cancel := context.WithTimeout(context.Background(), firstRunTimeout)
		defer cancel()
		fr, err := c.opt.PointCodex(ctx)
		fyne.Do(func() { c.point.Enable(); c.finish(fr, err) })
	})
}

// retest sends the test request again, off the UI thread, after it failed (the relay may
// have needed a moment, or the account a sign-in).
func (c *firstRunCard) retest() {
	if c.running || c.opt.TestRelay == nil {
		return
	}
	c.running = true
	c.retry.Disable()
	c.progress.Objects = []fyne.CanvasObject{widget.NewProgressBarInfinite()}
	c.progress.Refresh()
	fr := c.fr
	c.opt.Async(func() {
		ctx, cancel := context.WithTimeout(context.Background(), firstRunTimeout)
		defer cancel()
		fr.Test, fr.TestErr = c.opt.TestRelay(ctx)
		fyne.Do(func() { c.retry.Enable(); c.finish(fr, nil) })
	})
}

// finish shows what each step did.
func (c *firstRunCard) finish(fr app.FirstRun, err error) {
	c.running = false
	for _, o := range c.progress.Objects {
		o.(*widget.ProgressBarInfinite).Stop()
	}
	c.progress.Objects = nil
	c.progress.Refresh()
	c.use.Enable()
	c.fr = fr
	if c.following {
		c.lines = pointLines(fr, err)
	} else {
		c.lines = firstRunLines(fr, err)
	}
	var objs []fyne.CanvasObject
	for _, l := range c.lines {
		objs = append(objs, l.object())
	}
	c.results.Objects = objs
	c.results.Refresh()
	retry := err == nil && c.testFailed() && c.opt.TestRelay != nil
	setVisible(c.retry, retry)
	// The next step is the one that stands out: the retry while the test failed.
	c.retry.Importance, c.done.Importance = widget.HighImportance, widget.MediumImportance
	if !retry {
		c.done.Importance = widget.HighImportance
	}
	c.retry.Refresh()
	c.done.SetText("Show the dashboard")
	switch {
	case c.following:
		c.done.Show()
		setVisible(c.pointBox, err != nil) // to try again
	case fr.Account.Name != "":
		c.done.Show() // the results stay until the user moves on to the dashboard
	default:
		// Nothing came of it: the error shows under the button, to try again, or another way.
		c.useBox.Show()
		c.other.Show()
	}
	if c.opt.Changed != nil {
		c.opt.Changed()
	}
}

// close leaves the results for the dashboard.
func (c *firstRunCard) close() {
	c.lines, c.fr, c.following, c.moved = nil, app.FirstRun{}, false, true
	c.pointBox.Hide()
	c.retry.Hide()
	c.results.Objects = nil
	c.results.Refresh()
	c.done.Hide()
	if c.closed != nil {
		c.closed()
	}
}

// resultLine is one step's outcome.
type resultLine struct {
	tone look.Tone // look.Good done, look.Bad failed, look.Dim skipped
	text string
}

// object is the line on screen: an icon in the line's tone and the text.
func (l resultLine) object() fyne.CanvasObject {
	var icon fyne.Resource
	switch l.tone {
	case look.Good:
		icon = theme.NewSuccessThemedResource(theme.ConfirmIcon())
	case look.Bad:
		icon = theme.NewErrorThemedResource(theme.ErrorIcon())
	default:
		icon = theme.InfoIcon()
	}
	text := widget.NewLabel(l.text)
	text.Wrapping = fyne.TextWrapWord
	return container.NewBorder(nil, nil, container.NewVBox(widget.NewIcon(icon)), nil, text)
}

// firstRunLines says what UseCodexLogin did, one line per step: the import, the Codex
// configuration and the test request.
func firstRunLines(fr app.FirstRun, err error) []resultLine {
	if fr.Account.Name == "" { // the import failed: nothing else ran
		if err == nil {
			err = errors.New("no account came of it")
		}
		return []resultLine{{look.Bad, "Could not import the Codex login: " + err.Error()}}
	}
	var out []resultLine
	name := fr.Account.Name
	switch fr.Imported {
	case app.Renewed:
		out = append(out, resultLine{look.Good, fmt.Sprintf("Account “%s” now has your Codex login's new sign-in.", name)})
	case app.Unchanged:
		out = append(out, resultLine{look.Good, fmt.Sprintf("Your Codex login is already account “%s”.", name)})
	default:
		out = append(out, resultLine{look.Good, fmt.Sprintf("Imported your Codex login as account “%s”.", name)})
	}
	if err != nil { // the configuration failed (UseCodexLogin wraps the cause)
		if u := errors.Unwrap(err); u != nil {
			err = u
		}
	}
	return append(out, pointLines(fr, err)...)
}

// pointLines says what pointing Codex at the relay and the test request did: config.toml,
// .env, the test; or why Codex could not be configured (err).
func pointLines(fr app.FirstRun, err error) []resultLine {
	if err != nil {
		return []resultLine{{look.Bad, "Could not point Codex at the relay: " + err.Error()}}
	}
	out := configLines(fr.Config)
	switch {
	case fr.TestErr != nil:
		out = append(out, resultLine{look.Bad, "The test request failed: " + fr.TestErr.Error() + "."})
	case fr.Test.Status == 0:
		out = append(out, resultLine{look.Dim, "No test request: the relay is not serving."})
	default:
		by := fr.Test.Account
		if by == "" {
			by = "an account"
		}
		out = append(out, resultLine{look.Good, fmt.Sprintf("Test request answered by %s with model %s in %s.",
			by, fr.Test.Model, seconds(fr.Test.Elapsed))})
	}
	return out
}

// configLines say what writing Codex's configuration did: config.toml, then .env.
func configLines(w app.CodexConfigWrite) []resultLine {
	out := []resultLine{configLine(w)}
	if s := w.Env.Summary(tildePath); s != "" {
		out = append(out, resultLine{look.Good, s})
	}
	return out
}

// configText is configLines in one paragraph.
func configText(w app.CodexConfigWrite) string {
	var parts []string
	for _, l := range configLines(w) {
		parts = append(parts, l.text)
	}
	return strings.Join(parts, " ")
}

// configLine says what writing Codex's config.toml did.
func configLine(w app.CodexConfigWrite) resultLine {
	path := tildePath(w.Path)
	switch w.Change {
	case app.ConfigCreated:
		return resultLine{look.Good, "Created " + path + ": Codex sends its requests through the relay."}
	case app.ConfigUpdated:
		return resultLine{look.Good, "Updated " + path + " (the previous version is saved as " + tildePath(w.Backup) + ")."}
	}
	return resultLine{look.Good, path + " already points Codex at the relay."}
}
