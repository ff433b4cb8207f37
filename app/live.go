package app

import (
	"fmt"
	"strconv"
	"time"

	"github.com/codexrelay/codexrelay/proxy"
)

// These setters change one setting in the settings file through its row of the settings table
// (settingstable.go), which checks the value; this process applies it at once, and every other
// running relay when it sees the file change (see App.Reload).

// SetStaleWhileRevalidate turns serving a stale catalog while it refreshes on or off.
func (a *App) SetStaleWhileRevalidate(on bool) error {
	return a.Set(SettingSWR, strconv.FormatBool(on))
}

// SetListen saves a new listen address; a running relay moves to it. An address whose port
// another program holds is refused and nothing is saved, so that the next start does not fail
// (the port the relay of this folder listens on now is its own, and taken by it).
func (a *App) SetListen(addr string) error { return a.Set(SettingListen, addr) }

// listenOn is the listen row's effect.
func (a *App) listenOn(addr string) error {
	if err := a.CheckListen(addr, false); err != nil {
		return err
	}
	if info := RunningInstance(a.ConfigDir()); info == nil || info.Listen != addr {
		ln, err := a.Listen(addr)
		if err != nil {
			return err
		}
		ln.Close()
	}
	return a.SaveListen(addr)
}

// SaveListen writes the listen setting as it is, checking neither the address nor its port:
// for the relay's Service (app/relay), which checked both and may hold the port itself.
// Everyone else saves it through its row (Set), which checks.
func (a *App) SaveListen(addr string) error {
	return a.update(func(s *Settings) error { s.Listen = addr; return nil })
}

// setCatalogTiming saves the stale maximum age and the TTL (zero keeps the current value),
// refusing a pair where a stale catalog would never be served.
func (a *App) setCatalogTiming(staleMaxAge, ttl time.Duration) error {
	return a.update(func(s *Settings) error {
		if staleMaxAge > 0 {
			s.Catalog.StaleMaxAgeMs = staleMaxAge.Milliseconds()
		}
		if ttl > 0 {
			s.Catalog.TTLMs = ttl.Milliseconds()
		}
		// A stale catalog is one older than the TTL: a maximum stale age below it would
		// never serve one.
		opt, _ := catalogOptions(*s, func(string) string { return "" })
		if opt.StaleMaxAge < opt.TTL {
			return fieldError(string(SettingStaleMaxAge), fmt.Sprintf("(%s) is shorter than the catalog TTL (%s): it must be at least as long", opt.StaleMaxAge, opt.TTL))
		}
		return nil
	})
}

// SetTimeout sets one of the upstream timeouts; zero restores its default.
func (a *App) SetTimeout(which Timeout, d time.Duration) error {
	return a.Set(which.Setting(), strconv.FormatInt(d.Milliseconds(), 10))
}

// SetHold sets how long a request may wait, sending nothing, for a resting pool to come back
// (0 restores the default of 30 s; -1 never waits). At most an hour: a client waits that long
// with nothing on the line.
func (a *App) SetHold(seconds int) error { return a.Set(SettingHold, strconv.Itoa(seconds)) }

// SetNotification switches one kind of desktop notification on or off.
func (a *App) SetNotification(kind string, on bool) error {
	return a.Set(NotifySetting(kind), strconv.FormatBool(on))
}

// SetLowCapacityThreshold sets the share (1 to 99 percent) of the pool's five-hour capacity
// under which the tray app warns.
func (a *App) SetLowCapacityThreshold(percent int) error {
	return a.Set(SettingLowCapacity, strconv.Itoa(percent))
}

// SetStrategy sets the routing strategy: priority, round-robin or most-quota-left.
func (a *App) SetStrategy(strategy string) error { return a.Set(SettingStrategy, strategy) }

// SetUsageLedger turns the usage ledger on or off (off keeps the database).
func (a *App) SetUsageLedger(on bool) error { return a.Set(SettingUsageLedger, strconv.FormatBool(on)) }

// SetUsageRetention sets how many days request rows are kept in the usage ledger (0: the
// default, ledger.DefaultRetention); daily totals are kept longer.
func (a *App) SetUsageRetention(days int) error {
	return a.Set(SettingUsageRetentionDays, strconv.Itoa(days))
}

// SetResetCredits sets the reset-credit policy: proxy.ResetCreditsAsk (the default),
// proxy.ResetCreditsAuto or proxy.ResetCreditsOff.
func (a *App) SetResetCredits(mode string) error { return a.Set(SettingResetCredits, mode) }

// SetStartAtLogin installs or removes the login item that starts the tray app (autostart.go).
func (a *App) SetStartAtLogin(on bool) error {
	return a.Set(SettingStartAtLogin, strconv.FormatBool(on))
}

// SetAlias makes name an alias of targets (tried in order); no targets removes it.
func (a *App) SetAlias(name string, targets []string) error {
	if name == "" {
		return fieldError(FieldAlias, "needs a name")
	}
	return a.update(func(s *Settings) error {
		next := make(map[string][]string, len(s.Aliases)+1)
		for k, v := range s.Aliases {
			next[k] = v
		}
		if len(targets) == 0 {
			if _, ok := next[name]; !ok {
				return fmt.Errorf("no alias named %q", name) // a state, not a mistyped value
			}
			delete(next, name)
		} else {
			next[name] = targets
		}
		if err := proxy.CheckAliases(next); err != nil { // validates before saving
			return err
		}
		s.Aliases = next
		return nil
	})
}
