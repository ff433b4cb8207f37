package cli

import "fmt"

// pauseCommand and resumeCommand are `codexrelay pause` and `codexrelay resume`: the tray's
// Pause and Resume for the relay of this settings folder, whichever process runs it (the tray
// app or `serve`), reached through its signed client (app.RelayClient).
var (
	pauseCommand = &command{
		name:    "pause",
		summary: "pause the running relay: clients get 503 relay_paused until `codexrelay resume`",
		details: "The relay keeps its port and answers every request to an account with 503 relay_paused, which\n" +
			"says how to resume; requests under way finish. It acts on the relay of this settings folder\n" +
			"(the tray app or `codexrelay serve`) and fails when none is running.",
		run: func(c *CLI, _ []string) error { return c.setPaused(true) },
	}
	resumeCommand = &command{
		name:    "resume",
		summary: "resume the running relay after `codexrelay pause` or the tray's Pause",
		details: "It acts on the relay of this settings folder (the tray app or `codexrelay serve`) and fails\n" +
			"when none is running.",
		run: func(c *CLI, _ []string) error { return c.setPaused(false) },
	}
)

// setPaused pauses or resumes the running relay and says what it did.
func (c *CLI) setPaused(pause bool) error {
	a, err := c.open()
	if err != nil {
		return err
	}
	st, err := a.SetRelayPaused(pause)
	if err != nil {
		return err
	}
	switch {
	case pause && st.Changed:
		fmt.Fprintln(c.Stdout, "Paused: the relay refuses requests (503 relay_paused) until `codexrelay resume`.")
	case pause:
		fmt.Fprintln(c.Stdout, "The relay was paused already.")
	case st.Changed:
		fmt.Fprintln(c.Stdout, "Resumed: the relay serves requests again.")
	default:
		fmt.Fprintln(c.Stdout, "The relay was not paused: it serves requests.")
	}
	return nil
}
