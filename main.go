// Command codexrelay is Codex Relay: a tray app (no arguments) or, with a sub-command, the
// headless proxy and its account tools. See README.md.
package main

import (
	"fmt"
	"os"
	"runtime"

	"fyne.io/fyne/v2"
	fyneapp "fyne.io/fyne/v2/app"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/ui"
)

// appID is the application's identifier (FyneApp.toml's ID).
const appID = "io.github.codexrelay"

func main() {
	if len(os.Args) > 1 {
		// Fyne's GLFW driver locks the main goroutine to the main OS thread in its init (the
		// tray needs that). The sub-commands do not, and a locked goroutine pays for a switch of
		// OS threads each time it blocks and wakes, which tripled the latencies `bench proxy`
		// measured. So they run on an ordinary goroutine.
		code := make(chan int)
		go func() {
			cli := &app.CLI{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
			code <- cli.Run(os.Args[1:])
		}()
		os.Exit(<-code)
	}
	// Fyne panics without a display. Say what to do instead, before anything is claimed or
	// written.
	if noDisplay() {
		fmt.Fprintln(os.Stderr, "codexrelay: no display: use 'codexrelay serve' for the headless proxy")
		os.Exit(1)
	}
	log := app.Logger(os.Stderr, os.Getenv)
	// One Codex Relay per user: a second launch brings the first one's dashboard to the front
	// and ends, having written nothing.
	inst, other, err := app.ClaimInstance(app.DefaultConfigDir(), "tray")
	if err != nil {
		fmt.Fprintln(os.Stderr, "codexrelay:", err)
		os.Exit(1)
	}
	if other != nil {
		if other.Mode == "tray" && other.Show() == nil {
			fmt.Printf("Codex Relay is already running (%s); its dashboard is in front now.\n", other)
		} else {
			fmt.Printf("Codex Relay is already running (%s).\n", other)
		}
		os.Exit(0)
	}
	defer inst.Release()
	app.SetMemoryLimit(os.Getenv)
	relay, err := app.Open(app.Options{Logger: log})
	if err != nil {
		inst.Release()
		fmt.Fprintln(os.Stderr, "codexrelay:", err)
		os.Exit(1)
	}
	// The tray's title (and the notifications' sender) come from the app's metadata, which only
	// a build by the fyne tool would embed: set it here for every build.
	fyneapp.SetMetadata(fyne.AppMetadata{ID: appID, Name: "Codex Relay", Version: app.Version})
	ui.Run(fyneapp.NewWithID(appID), relay, log, inst)
}

// noDisplay says whether this is Linux or a BSD without an X11 or Wayland display to open the
// tray app's windows on (macOS and Windows always have one).
func noDisplay() bool {
	switch runtime.GOOS {
	case "linux", "freebsd", "openbsd", "netbsd", "dragonfly":
		return os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == ""
	}
	return false
}
