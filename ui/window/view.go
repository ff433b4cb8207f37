package window

import (
	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/proxy"
)

// view is everything one tick of the windows shows: read once, off the UI thread, then applied
// with fyne.Do.
type view struct {
	snap   proxy.Snapshot
	traces []proxy.Trace
	svc    app.ServiceStatus
	// notice is a problem with the settings the user should know about: the file cannot be
	// followed, or the relay cannot listen where it says ("" when none).
	notice string
	// orphans are keychain entries of Codex Relay that no account names.
	orphans []string
	// codex says whether Codex's config.toml points at the relay (nil: not known).
	codex *app.CodexSetup
	// login is the Codex CLI's login, read while there is no account (for the first-run card).
	login app.CodexLogin
	// strategy is the routing strategy ("" when not known).
	strategy string
	// pace is the pool's pace (look.Pace; "" when the forecast says nothing).
	pace string
}
