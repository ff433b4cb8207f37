package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/app/relay"
)

// serveCommand is `codexrelay serve`: the proxy headless, in the foreground.
var serveCommand = &command{
	name:    "serve",
	usage:   []string{"[--listen ADDR] [--allow-remote]"},
	summary: "run the proxy headless in the foreground",
	details: `SIGINT or SIGTERM stops accepting, lets in-flight streams finish for up to 10 s, then cuts them.
A non-loopback address needs --allow-remote and the local API key on (codexrelay local-key on).`,
	flags: func(fs *flag.FlagSet) runFunc {
		listen := fs.String("listen", "", "the `ADDR` to listen on (default $CODEXRELAY_LISTEN, the setting, or "+app.DefaultListen+")")
		allowRemote := fs.Bool("allow-remote", false, "allow a non-loopback address (needs the local API key)")
		return func(c *CLI, _ []string) error { return c.serve(*listen, *allowRemote) }
	},
	flagOf: fieldFlags(map[string]string{string(app.SettingListen): "--listen"}),
}

// serve runs the proxy on listen (or the configured address) until a signal, or until it fails.
func (c *CLI) serve(listen string, allowRemote bool) error {
	c.setLogger()
	app.SetMemoryLimit(os.Getenv)
	inst, other, err := app.ClaimInstance(c.configDir(), "serve")
	if err != nil {
		return err
	}
	if other != nil {
		return fmt.Errorf("another Codex Relay is already running (%s): use that relay, or stop it first", other)
	}
	defer inst.Release()
	store, err := c.open()
	if err != nil {
		return err
	}
	a := relay.New(store) // the one command that serves
	sig, stopSignals := c.signals()
	defer stopSignals()
	svc := a.NewServeService(listen, allowRemote)
	svc.Instance = inst
	// A new install gets the local key before it serves; a serve refused for its address
	// (checked first) leaves nothing behind.
	if err := a.CheckListen(svc.Addr(), allowRemote); err != nil {
		return err
	}
	if _, err := a.LocalKeyForNewInstall(); err != nil && !errors.Is(err, app.ErrLocalKeyUnreadable) {
		return err
	}
	c.tellNewKey() // before serving: clients need the key from now on
	if err := a.LocalKeyError(); err != nil {
		fmt.Fprintf(c.Stderr, "warning: %v\n", err)
	}
	if err := svc.Start(); err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("%w; `codexrelay serve --listen 127.0.0.1:PORT` picks another", err)
		}
		return err
	}
	defer svc.Stop()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go a.Watch(ctx)
	go a.FollowTrust(ctx) // the bundle of authorities Codex trusts stays as current as the system's
	warnAtStart(store)
	select {
	case <-sig:
		return nil
	case <-svc.Done():
		return svc.Status().Err
	}
}

// setLogger gives the app the structured logger on stderr, unless the options bring one.
func (c *CLI) setLogger() {
	if c.Options.Logger != nil {
		return
	}
	getenv := c.Options.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	c.Options.Logger = app.Logger(c.Stderr, getenv)
}

// signals is where serve learns to stop: SIGINT and SIGTERM, or the test's channel; stop
// gives the signals back to their default.
func (c *CLI) signals() (sig <-chan os.Signal, stop func()) {
	if c.Signals != nil {
		return c.Signals, func() {}
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	return ch, func() { signal.Stop(ch) }
}

// warnAtStart logs what a user of a relay that just started should fix: no account yet, or
// keychain entries no account names.
func warnAtStart(a *app.App) {
	if len(a.Accounts()) == 0 {
		a.Log().Warn("no upstream account yet: add one with `codexrelay accounts add` (requests get 503 until then)")
	}
	if orphans, err := a.OrphanSecrets(); err == nil && len(orphans) > 0 {
		a.Log().Warn("keychain entries that belong to no account: remove them with `codexrelay accounts prune`", "entries", len(orphans))
	}
}
