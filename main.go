// Command codexrelay is Codex Relay: a tray app (no arguments) or, with a sub-command, the
// headless proxy and its account tools. See README.md.
//
// The tray app is two processes of this binary: the tray process (no arguments) runs the relay
// and the tray icon without any GL loop, and starts `codexrelay window NAME`, the Fyne windows,
// only while a window is open.
package main

import (
	// First: it keeps Fyne's locale lookup, which runs before main, quiet in the C locale.
	"github.com/codexrelay/codexrelay/ui/locale"

	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/app/cli"
	"github.com/codexrelay/codexrelay/app/relay"
	"github.com/codexrelay/codexrelay/ui/tray"
	"github.com/codexrelay/codexrelay/ui/window"
)

func main() {
	switch {
	case len(os.Args) == 1:
		os.Exit(trayProcess())
	case os.Args[1] == "window" && len(os.Args) == 3 && !strings.HasPrefix(os.Args[2], "-"):
		os.Exit(windowProcess(os.Args[2]))
	case os.Args[1] == "window":
		os.Exit(windowUsage(os.Args[2:]))
	}
	// Fyne's GLFW driver and systray lock the main goroutine to the main OS thread in their
	// init (the tray and the windows need that). The sub-commands do not, and a locked
	// goroutine pays for a switch of OS threads each time it blocks and wakes, which tripled
	// the latencies `bench proxy` measured. So they run on an ordinary goroutine.
	locale.Restore() // for the programs a command starts (a browser)
	code := make(chan int)
	go func() {
		cmd := &cli.CLI{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
		code <- cmd.Run(os.Args[1:])
	}()
	os.Exit(<-code)
}

// trayProcess runs the tray process: the relay in-process and the tray icon (no Fyne app).
func trayProcess() int {
	locale.Restore() // the window processes it starts quiet Fyne themselves
	// The windows need a display. Say what to do instead, before anything is claimed or
	// written.
	if noDisplay() {
		fmt.Fprintln(os.Stderr, "codexrelay: no display: use 'codexrelay serve' for the headless proxy")
		return 1
	}
	log := app.Logger(os.Stderr, os.Getenv)
	// One Codex Relay per user: a second launch brings the first one's dashboard up and ends,
	// having written nothing.
	inst, other, err := app.ClaimInstance(app.DefaultConfigDir(), "tray")
	if err != nil {
		fmt.Fprintln(os.Stderr, "codexrelay:", err)
		return 1
	}
	if other != nil {
		if other.Mode == "tray" && other.Show() == nil {
			fmt.Printf("Codex Relay is already running (%s); its dashboard is in front now.\n", other)
		} else {
			fmt.Printf("Codex Relay is already running (%s).\n", other)
		}
		return 0
	}
	defer inst.Release()
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "codexrelay: cannot find its own executable for the windows:", err)
		return 1
	}
	app.SetMemoryLimit(os.Getenv)
	r, err := relay.Open(app.Options{Logger: log}) // the tray process serves
	if err != nil {
		fmt.Fprintln(os.Stderr, "codexrelay:", err)
		return 1
	}
	// A new install starts with the local key on; the first run writes it into Codex's
	// configuration (the window process reads the tray's state with a token of its own).
	if made, err := r.LocalKeyForNewInstall(); err != nil {
		log.Warn(err.Error())
	} else if made {
		log.Info("a new install: the relay's local API key is on (codexrelay codex-config --write gives it to Codex)")
	}
	tray.RunTray(r, log, inst, exe)
	return 0
}

// windowProcess runs the window process the tray process starts: the Fyne windows over the tray
// process's state, until the last one closes.
func windowProcess(name string) int {
	if st, err := os.Stdin.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
		// Typed in a terminal: the tray process starts window processes itself. Ask it for the
		// dashboard, as a second launch does.
		if other := app.RunningInstance(app.DefaultConfigDir()); other != nil && other.Mode == "tray" && other.Show() == nil {
			fmt.Println("Codex Relay's dashboard is in front now.")
			return 0
		}
		fmt.Fprintln(os.Stderr, "codexrelay window: the tray app opens its windows itself: run codexrelay without arguments")
		return 2
	}
	log := app.Logger(os.Stderr, os.Getenv)
	store, err := app.Open(app.Options{Logger: log}) // the store alone: it shows the tray's relay
	if err != nil {
		fmt.Fprintln(os.Stderr, "codexrelay window:", err)
		return 1
	}
	// The tray's Quit ends this process at once (window.TrayLeft).
	window.TrayLeft = func() { os.Exit(0) }
	// The app has Codex Relay's ID and name, and no preferences file (window.NewApp).
	if err := window.RunWindows(window.NewApp(app.ReadBuild().Version), store, log, name, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "codexrelay window:", err)
		return 2
	}
	return 0
}

// windowUsage answers `codexrelay window` with anything but a window's name (-h among it):
// the window process is the tray app's, which starts it itself.
func windowUsage(args []string) int {
	const usage = "codexrelay window NAME is the tray app's window process: the tray app starts it when you open a window. Run codexrelay without arguments for the tray app."
	for _, a := range args {
		if a == "-h" || a == "--help" || a == "-help" {
			fmt.Println(usage)
			return 0
		}
	}
	fmt.Fprintln(os.Stderr, "codexrelay: "+usage)
	return 2
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
