package look

import (
	"fmt"
	"time"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/proxy"
)

// State is the relay's state as the tray icon and the dashboard header show it.
type State int

const (
	Serving  State = iota // listening, every enabled account ready
	Degraded              // listening, some accounts cooling down or needing a sign-in
	Stopped               // not serving requests: no usable account, or the listener failed
	Paused                // paused by the user
)

// Tone is the colour of the relay's state: the dashboard header's dot (the tray's icons are
// drawn in the same tones).
func (s State) Tone() Tone {
	switch s {
	case Serving:
		return Good
	case Degraded:
		return Warn
	case Paused:
		return Dim
	}
	return Bad
}

func (s State) String() string {
	switch s {
	case Serving:
		return "Serving"
	case Degraded:
		return "Degraded"
	case Paused:
		return "Paused"
	}
	return "Stopped"
}

// StateOf derives the relay's state and status line from a snapshot and the listener's
// status. It is pure: the tray, the dashboard header and the tests all call it.
func StateOf(snap proxy.Snapshot, st app.ServiceStatus) (State, string) {
	switch {
	case st.Paused:
		return Paused, "Paused"
	case st.Err != nil:
		return Stopped, "Stopped: " + st.Err.Error()
	case !st.Running:
		return Stopped, "Not running"
	case st.Refusing != "":
		return Stopped, "Refusing every client: the local key cannot be read"
	}
	where := "Listening on http://" + st.Addr + "/v1"
	var disabled, ready int
	for _, a := range snap.Accounts {
		switch a.State {
		case proxy.StateDisabled:
			disabled++
		case proxy.StateReady:
			ready++
		}
	}
	switch {
	case len(snap.Accounts) == 0:
		return Stopped, where + " · no account yet"
	case ready == 0:
		return Stopped, where + " · no usable account"
	case ready+disabled < len(snap.Accounts):
		// Counted over every configured account, as the dashboard's "6 configured · 3 ready ·
		// 2 disabled" is: "3 of 4 accounts ready" beside "6 configured" read as a contradiction.
		line := fmt.Sprintf("%s · %d of %d accounts ready", where, ready, len(snap.Accounts))
		if disabled > 0 {
			line += fmt.Sprintf(" (%d disabled)", disabled)
		}
		return Degraded, line
	}
	return Serving, where
}

// Header is the dashboard header's state word and status line (the tray's tooltip says them
// too); the line never repeats the word ("Paused · requests are refused until you resume",
// not "Paused · Paused").
func Header(snap proxy.Snapshot, st app.ServiceStatus) (s State, word, detail string) {
	s, line := StateOf(snap, st)
	switch {
	case st.Paused:
		return s, "Paused", "requests are refused until you resume"
	case st.Err != nil:
		return s, "Stopped", st.Err.Error()
	case !st.Running:
		return s, "Stopped", "the relay has not started"
	case s == Stopped:
		return s, "Not serving", line // listening, but no account can take a request
	}
	return s, s.String(), line
}

// BackAt says when a pool with no usable account is back, read at now: "the first account is
// back at 14:36 (team)", from the earliest rest that ends; "" when no rest ends (every account
// needs a sign-in or is disabled) or an account is ready.
func BackAt(snap proxy.Snapshot, now time.Time) string {
	var first *proxy.AccountStats
	for i, a := range snap.Accounts {
		switch {
		case a.State == proxy.StateReady:
			return ""
		case a.State != proxy.StateCooldown || a.CooldownUntil == nil || !a.CooldownUntil.After(now):
		case first == nil || a.CooldownUntil.Before(*first.CooldownUntil):
			first = &snap.Accounts[i]
		}
	}
	if first == nil {
		return ""
	}
	return "the first account is back at " + Clock(*first.CooldownUntil, now) + " (" + first.Name + ")"
}
