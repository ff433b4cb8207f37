package app

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/codexrelay/codexrelay/proxy"
)

// These setters change one setting in the settings file; this process applies it at once,
// and every other running relay when it sees the file change (see App.Reload).

// SetStaleWhileRevalidate turns serving a stale catalog while it refreshes on or off.
func (a *App) SetStaleWhileRevalidate(on bool) error {
	return a.update(func(s *Settings) error { s.Catalog.StaleWhileRevalidate = &on; return nil })
}

// SetListen saves a new listen address; a running relay moves to it. An address whose port
// another program holds is refused and nothing is saved, so that the next start does not fail
// (the port the relay of this folder listens on now is its own, and taken by it).
func (a *App) SetListen(addr string) error {
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
	return a.update(func(s *Settings) error { s.Listen = addr; return nil })
}

// SetCatalogTiming sets the stale maximum age and the TTL (zero keeps the current value).
// Like the toggle, it changes the running proxy at once; the environment variables only give
// the values a start begins with.
func (a *App) SetCatalogTiming(staleMaxAge, ttl time.Duration) error {
	if staleMaxAge < 0 {
		return fieldError(FieldStaleAge, "must not be negative")
	}
	if ttl < 0 {
		return fieldError(FieldTTL, "must not be negative")
	}
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
			return fieldError(FieldStaleAge, fmt.Sprintf("(%s) is shorter than the catalog TTL (%s): it must be at least as long", opt.StaleMaxAge, opt.TTL))
		}
		return nil
	})
}

// SetTimeout sets one of the upstream timeouts; zero restores its default.
func (a *App) SetTimeout(which Timeout, d time.Duration) error {
	if d < 0 {
		return fieldError(FieldTimeout, "must not be negative")
	}
	if d > 0 && d < time.Second {
		return fieldError(FieldTimeout, "must be at least one second: a shorter one would cut healthy upstreams")
	}
	return a.update(func(s *Settings) error {
		ms, _ := s.Timeouts.field(which)
		if ms == nil {
			names := make([]string, len(Timeouts))
			for i, t := range Timeouts {
				names[i] = string(t)
			}
			return fieldError(FieldTimeout, fmt.Sprintf("%q is not a timeout: use %s", which, orList(names)))
		}
		*ms = d.Milliseconds()
		return nil
	})
}

// SetHold sets how long a request may wait, sending nothing, for a resting pool to come back
// (0 restores the default of 30 s; negative never waits). At most an hour: a client waits
// that long with nothing on the line.
func (a *App) SetHold(seconds int) error {
	if seconds > maxHoldSeconds {
		return fieldError(FieldHold, fmt.Sprintf("must be at most %d seconds", maxHoldSeconds))
	}
	return a.update(func(s *Settings) error { s.HoldSeconds = max(seconds, -1); return nil })
}

// SetNotification switches one kind of desktop notification on or off.
func (a *App) SetNotification(kind string, on bool) error {
	if !slices.Contains(NotifyKinds, kind) {
		return fieldError(FieldNotification, fmt.Sprintf("%q is not one: use %s", kind, orList(NotifyKinds)))
	}
	return a.update(func(s *Settings) error {
		off := slices.DeleteFunc(slices.Clone(s.Notifications.Off), func(k string) bool { return k == kind })
		if !on {
			off = append(off, kind)
		}
		s.Notifications.Off = off
		return nil
	})
}

// SetLowCapacityThreshold sets the share (1 to 99 percent) of the pool's five-hour capacity
// under which the tray app warns.
func (a *App) SetLowCapacityThreshold(percent int) error {
	if percent < 1 || percent > 99 {
		return fieldError(FieldThreshold, "must be a percentage from 1 to 99")
	}
	return a.update(func(s *Settings) error { s.Notifications.LowCapacityPercent = percent; return nil })
}

// SetStrategy sets the routing strategy: priority, round-robin or most-quota-left.
func (a *App) SetStrategy(strategy string) error {
	if err := validStrategy(strategy); err != nil {
		return err
	}
	return a.update(func(s *Settings) error { s.Strategy = strategy; return nil })
}

func validStrategy(s string) error {
	switch s {
	case "", proxy.StrategyPriority, proxy.StrategyRoundRobin, proxy.StrategyMostQuotaLeft:
		return nil
	}
	n := len(proxy.Strategies)
	return fieldError(FieldStrategy, fmt.Sprintf("must be %s or %s (unknown routing strategy %q)",
		strings.Join(proxy.Strategies[:n-1], ", "), proxy.Strategies[n-1], s))
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

// SetUsageLedger turns the usage ledger on or off (off keeps the database).
func (a *App) SetUsageLedger(on bool) error {
	return a.update(func(s *Settings) error { s.Usage.Off = !on; return nil })
}

// SetUsageRetention sets how many days request rows are kept in the usage ledger (0: the
// default, ledger.DefaultRetention); daily totals are kept longer.
func (a *App) SetUsageRetention(days int) error {
	if days < 0 {
		return fieldError(FieldRetention, "must be a number of days, 0 for the default")
	}
	return a.update(func(s *Settings) error { s.Usage.RetentionDays = days; return nil })
}
