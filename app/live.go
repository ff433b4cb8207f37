package app

import (
	"errors"
	"fmt"
	"time"

	"github.com/codexrelay/codexrelay/proxy"
)

// These setters change a setting, save it and apply it to the running proxy at once.

// SetStaleWhileRevalidate turns serving a stale catalog while it refreshes on or off.
func (a *App) SetStaleWhileRevalidate(on bool) error {
	if err := a.update(func(s *Settings) error { s.Catalog.StaleWhileRevalidate = &on; return nil }); err != nil {
		return err
	}
	c := a.Proxy.Stats().Catalog
	a.Proxy.SetCatalogOptions(on, time.Duration(c.StaleMaxAgeMs)*time.Millisecond, 0)
	return nil
}

// SetCatalogTiming sets the stale maximum age and the TTL (zero keeps the current value).
// Like the toggle, it changes the running proxy at once; the environment variables only give
// the values a start begins with.
func (a *App) SetCatalogTiming(staleMaxAge, ttl time.Duration) error {
	if staleMaxAge < 0 || ttl < 0 {
		return errors.New("durations must not be negative")
	}
	err := a.update(func(s *Settings) error {
		if staleMaxAge > 0 {
			s.Catalog.StaleMaxAgeMs = staleMaxAge.Milliseconds()
		}
		if ttl > 0 {
			s.Catalog.TTLMs = ttl.Milliseconds()
		}
		return nil
	})
	if err != nil {
		return err
	}
	c := a.Proxy.Stats().Catalog
	if staleMaxAge == 0 {
		staleMaxAge = time.Duration(c.StaleMaxAgeMs) * time.Millisecond
	}
	a.Proxy.SetCatalogOptions(c.SWREnabled, staleMaxAge, ttl)
	return nil
}

// SetStrategy sets the routing strategy: priority or round-robin.
func (a *App) SetStrategy(strategy string) error {
	if err := validStrategy(strategy); err != nil {
		return err
	}
	if err := a.update(func(s *Settings) error { s.Strategy = strategy; return nil }); err != nil {
		return err
	}
	a.Proxy.SetStrategy(strategy)
	return nil
}

func validStrategy(s string) error {
	switch s {
	case "", proxy.StrategyPriority, proxy.StrategyRoundRobin:
		return nil
	}
	return fmt.Errorf("unknown routing strategy %q: use %s or %s", s, proxy.StrategyPriority, proxy.StrategyRoundRobin)
}

// SetAlias makes name an alias of targets (tried in order); no targets removes it.
func (a *App) SetAlias(name string, targets []string) error {
	if name == "" {
		return errors.New("an alias needs a name")
	}
	var next map[string][]string
	err := a.update(func(s *Settings) error {
		next = make(map[string][]string, len(s.Aliases)+1)
		for k, v := range s.Aliases {
			next[k] = v
		}
		if len(targets) == 0 {
			if _, ok := next[name]; !ok {
				return fmt.Errorf("no alias named %q", name)
			}
			delete(next, name)
		} else {
			next[name] = targets
		}
		if err := a.Proxy.SetAliases(next); err != nil { // validates before saving
			return err
		}
		s.Aliases = next
		return nil
	})
	if err != nil {
		a.Proxy.SetAliases(a.Settings().Aliases)
	}
	return err
}
