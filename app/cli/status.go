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
	Codex    codexStatus    `json:"codex"`
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
			s := proxy.AccountStats{Name: m.Name, State: "ready"}
			if m.Disabled {
				s.State = "disabled"
			}
			accounts = append(accounts, s)
		}
	}
	st.Accounts = countStates(accounts)
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
	add(n.NeedsLogin, "to sign in again")
	add(n.KeyRejected, "with a refused key to replace")
	add(n.Disabled, "disabled")
	switch {
	case n.Total == 0:
		fmt.Fprintln(w, "Accounts: none yet (`codexrelay accounts add`, or the dashboard)")
	default:
		fmt.Fprintf(w, "Accounts: %d: %s\n", n.Total, strings.Join(parts, ", "))
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
