package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/proxy"
)

// statusCommand is `codexrelay status`: the running relay of this settings folder in a few
// lines, read through its signed client (app.RelayClient), and whether Codex points at it.
var statusCommand = &command{
	name:    "status",
	usage:   []string{"[--json]"},
	summary: "say whether the relay runs and where, whether it is paused, its accounts' states and whether Codex uses it",
	details: "It asks the relay of this settings folder (the tray app or `codexrelay serve`) through its signed\n" +
		"local API, and reads Codex's config.toml; it changes nothing.",
	flags: func(fs *flag.FlagSet) runFunc {
		asJSON := fs.Bool("json", false, "print one JSON object")
		return func(c *CLI, _ []string) error { return c.status(*asJSON) }
	},
}

// relayStatus is what `status` says, and its JSON.
type relayStatus struct {
	Running bool   `json:"running"`
	Mode    string `json:"mode,omitempty"` // "tray" or "serve"
	PID     int    `json:"pid,omitempty"`
	Listen  string `json:"listen,omitempty"`
	Paused  bool   `json:"paused"`
	// Problem says why the running relay could not be asked ("" when it answered).
	Problem  string         `json:"problem,omitempty"`
	Accounts accountsStatus `json:"accounts"`
	// Held are the accounts with a reserve or a resting bucket, in priority order.
	Held []accountHeld `json:"held,omitempty"`
	// Pace is the pool's forecast, when the running relay's ledger gives one.
	Pace  *paceStatus `json:"pace,omitempty"`
	Codex codexStatus `json:"codex"`
}

// accountHeld is an account the relay holds back in part: its reserve (and until when it is
// kept in reserve), the buckets resting on it.
type accountHeld struct {
	Name    string `json:"name"`
	Reserve int    `json:"reserve,omitempty"`
	// InReserveUntil is when its binding window resets, while the relay keeps it in reserve.
	InReserveUntil *time.Time         `json:"in_reserve_until,omitempty"`
	BucketRests    []proxy.BucketRest `json:"bucket_rests,omitempty"`
}

// paceStatus is what the pool's forecast says of its five-hour capacity (ledger.Forecast.Lasts).
type paceStatus struct {
	// LastsUntil is when it runs out at the last hour's pace.
	LastsUntil time.Time `json:"lasts_until"`
	// PastReset says a counted window resets first (NextReset), before it runs out.
	PastReset bool       `json:"past_reset"`
	NextReset *time.Time `json:"next_reset,omitempty"`
}

// accountsStatus counts the accounts by state (those of the running relay, else as stored).
type accountsStatus struct {
	Total      int `json:"total"`
	Ready      int `json:"ready"`
	Resting    int `json:"resting"`
	NeedsLogin int `json:"needs_login"`
	// KeyRejected counts the API keys the upstream refused (to be replaced).
	KeyRejected int `json:"key_rejected"`
	Disabled    int `json:"disabled"`
	// InReserve counts the accounts the relay keeps in reserve (not counted as resting).
	InReserve int `json:"in_reserve"`
	// NextBack is when the first resting account serves again (nil: none rests).
	NextBack *time.Time `json:"next_back,omitempty"`
}

type codexStatus struct {
	Configured bool   `json:"configured"`
	Path       string `json:"path"`
	Why        string `json:"why,omitempty"`
}

// status reads the relay's state and says it.
func (c *CLI) status(asJSON bool) error {
	a, err := c.open()
	if err != nil {
		return err
	}
	st := relayStatus{}
	var accounts []proxy.AccountStats
	if info := app.RunningInstance(a.ConfigDir()); info != nil {
		st.Running, st.Mode, st.PID, st.Listen, st.Paused = true, info.Mode, info.PID, info.Listen, info.Paused
		rc, err := a.RunningRelay(2 * time.Second)
		if err == nil && rc != nil {
			var snap proxy.Snapshot
			if snap, err = rc.Stats(context.Background()); err == nil {
				accounts = snap.Accounts
				st.Pace = pace(rc, accounts)
				if h, herr := rc.Health(context.Background()); herr == nil {
					st.Paused, st.Listen = h.Paused, cmpOr(h.Listen, st.Listen)
				}
			}
		}
		if err != nil {
			st.Problem = err.Error()
		}
	}
	if accounts == nil {
		for _, m := range a.Accounts() {
			s := proxy.AccountStats{Name: m.Name, State: "ready", Reserve: m.Reserve}
			if m.Disabled {
				s.State = "disabled"
			}
			accounts = append(accounts, s)
		}
	}
	st.Accounts = countStates(accounts)
	st.Held = held(accounts)
	setup := a.CodexConfigured()
	st.Codex = codexStatus{Configured: setup.Configured, Path: setup.Path, Why: setup.Why}
	if asJSON {
		enc := json.NewEncoder(c.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	c.printStatus(st)
	return nil
}

// countStates counts the accounts by state.
func countStates(accounts []proxy.AccountStats) accountsStatus {
	var s accountsStatus
	for _, acc := range accounts {
		s.Total++
		switch acc.State {
		case proxy.StateKeyRejected:
			s.KeyRejected++
		case "cooldown":
			if app.InReserve(acc) {
				s.InReserve++
				continue
			}
			s.Resting++
			if t := acc.CooldownUntil; t != nil && (s.NextBack == nil || t.Before(*s.NextBack)) {
				s.NextBack = t
			}
		case "needs_login":
			s.NeedsLogin++
		case "disabled":
			s.Disabled++
		default:
			s.Ready++
		}
	}
	return s
}

// printStatus writes the status for a person, a line a part.
func (c *CLI) printStatus(st relayStatus) {
	w := c.Stdout
	switch {
	case !st.Running:
		fmt.Fprintln(w, "Relay:    not running (start the tray app, or `codexrelay serve`)")
	case st.Listen == "":
		fmt.Fprintf(w, "Relay:    running (%s, pid %d) but not serving: its address could not be opened (see its log)\n", modeName(st.Mode), st.PID)
	default:
		fmt.Fprintf(w, "Relay:    running (%s, pid %d) on http://%s/v1\n", modeName(st.Mode), st.PID, st.Listen)
	}
	if st.Running {
		if st.Paused {
			fmt.Fprintln(w, "Paused:   yes: clients get 503 relay_paused until `codexrelay resume`")
		} else {
			fmt.Fprintln(w, "Paused:   no")
		}
	}
	if st.Problem != "" {
		fmt.Fprintf(w, "          (the relay could not be asked: %s; the accounts are as stored)\n", st.Problem)
	}
	n := st.Accounts
	var parts []string
	add := func(k int, what string) {
		if k > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", k, what))
		}
	}
	add(n.Ready, "ready")
	if n.Resting > 0 {
		rest := fmt.Sprintf("%d resting", n.Resting)
		if n.NextBack != nil {
			rest += " (the first back at " + n.NextBack.Local().Format("15:04") + ")"
		}
		parts = append(parts, rest)
	}
	add(n.InReserve, "kept in reserve")
	add(n.NeedsLogin, "to sign in again")
	add(n.KeyRejected, "with a refused key to replace")
	add(n.Disabled, "disabled")
	switch {
	case n.Total == 0:
		fmt.Fprintln(w, "Accounts: none yet (`codexrelay accounts add`, or the dashboard)")
	default:
		fmt.Fprintf(w, "Accounts: %d: %s\n", n.Total, strings.Join(parts, ", "))
	}
	for _, h := range st.Held {
		fmt.Fprintf(w, "          %s: %s\n", h.Name, heldLine(h))
	}
	if p := st.Pace; p != nil {
		if p.PastReset {
			fmt.Fprintf(w, "Pace:     the pool's 5-hour capacity lasts past the %s reset at this pace\n", p.NextReset.Local().Format("15:04"))
		} else {
			fmt.Fprintf(w, "Pace:     the pool's 5-hour capacity lasts until %s at this pace\n", p.LastsUntil.Local().Format("15:04"))
		}
	}
	if st.Codex.Configured {
		fmt.Fprintf(w, "Codex:    configured: %s sends its requests through the relay\n", st.Codex.Path)
	} else {
		fmt.Fprintf(w, "Codex:    not configured: %s (`codexrelay codex-config --write` points it at the relay)\n", st.Codex.Why)
	}
}

// modeName names the program that runs the relay.
func modeName(mode string) string {
	if mode == "serve" {
		return "`codexrelay serve`"
	}
	return "the tray app"
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// held lists the accounts with a reserve or a resting bucket.
func held(accounts []proxy.AccountStats) []accountHeld {
	var out []accountHeld
	for _, a := range accounts {
		h := accountHeld{Name: a.Name, Reserve: a.Reserve, BucketRests: a.BucketRests}
		if app.InReserve(a) {
			h.InReserveUntil = a.CooldownUntil
		}
		if h.Reserve > 0 || h.InReserveUntil != nil || len(h.BucketRests) > 0 {
			out = append(out, h)
		}
	}
	return out
}

// heldLine says what holds an account back: "kept in reserve until 16:40 (20% in reserve);
// GPT-5.3-Codex-Spark resting until 15:10".
func heldLine(h accountHeld) string {
	clock := func(t time.Time) string { return t.Local().Format("15:04") }
	var parts []string
	switch {
	case h.InReserveUntil != nil:
		parts = append(parts, fmt.Sprintf("kept in reserve until %s (it keeps %d%%)", clock(*h.InReserveUntil), h.Reserve))
	case h.Reserve > 0:
		parts = append(parts, fmt.Sprintf("keeps %d%% in reserve", h.Reserve))
	}
	parts = append(parts, app.BucketRests(h.BucketRests, clock)...)
	return strings.Join(parts, "; ")
}

// pace asks the running relay for the pool's forecast over its ChatGPT accounts (nil when its
// ledger gives none: switched off, too few readings, no pace).
func pace(rc *app.RelayClient, accounts []proxy.AccountStats) *paceStatus {
	var names []string
	for _, a := range accounts {
		if a.Kind == proxy.KindChatGPT {
			names = append(names, a.Name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	now := time.Now()
	f, err := rc.Forecast(context.Background(), names, now)
	if err != nil {
		return nil
	}
	until, past, ok := f.Lasts(now)
	if !ok {
		return nil
	}
	p := &paceStatus{LastsUntil: until, PastReset: past}
	if !f.NextReset.IsZero() {
		p.NextReset = &f.NextReset
	}
	return p
}
