package relay

import (
	"crypto/rand"
	"fmt"
	"reflect"
	"time"

	"github.com/codexrelay/codexrelay/app"
)

// follow applies to the relay what one settings file the store applied changed (app.Follow:
// under the store's apply lock, one change at a time; the first from the zero settings, as New
// follows): each part only when it changed, so that an unrelated change does not, say,
// invalidate the model catalog. It returns the parts it could not apply (a reload logs them and
// keeps the rest). Last, the proxy reports the new generation: a program waiting for it on
// /health finds everything applied, the listener moved included.
func (r *Relay) follow(c app.Change) (problems []error) {
	prev, next := c.Prev, c.Next
	if r.built != nil { // the proxy was built with these: only a change since is applied
		prev.Catalog, r.built = *r.built, nil
	}
	if !sameCatalog(prev.Catalog, next.Catalog) {
		r.applyCatalog(prev.Catalog, next.Catalog)
	}
	if next.Timeouts != prev.Timeouts {
		r.Proxy.SetTimeouts(next.Timeouts.Proxy())
	}
	if next.HoldSeconds != prev.HoldSeconds {
		r.Proxy.SetHold(next.Hold())
	}
	if next.Strategy != prev.Strategy {
		if err := checkFileSetting(app.SettingStrategy, next.Strategy); err != nil {
			problems = append(problems, err)
		} else {
			r.Proxy.SetStrategy(next.Strategy)
		}
	}
	if !reflect.DeepEqual(prev.Aliases, next.Aliases) {
		if err := r.Proxy.SetAliases(next.Aliases); err != nil {
			problems = append(problems, fmt.Errorf("%w (fix the aliases in %s)", err, r.SettingsPath()))
		}
	}
	if prev.LocalAPIKey != next.LocalAPIKey || prev.LocalKeyRev != next.LocalKeyRev || prev.LocalKeyID != next.LocalKeyID {
		if err := r.applyLocalKey(); err != nil && prev.Generation != 0 {
			problems = append(problems, err) // a reload logs it; a start reports it as LocalKeyError
		}
	}
	if c.Accounts != nil {
		r.Proxy.SetAccounts(c.Accounts)
		for _, id := range c.Renewed {
			r.Proxy.ResetAccount(id)
		}
	}
	r.applyUsage(prev.Usage, next.Usage)
	problems = append(problems, r.applyResetCredits(prev, next)...)
	if prev.Listen != next.Listen {
		r.mu.Lock()
		moves := r.onListen
		r.mu.Unlock()
		for _, move := range moves {
			move() // never waits for a drain
		}
	}
	r.Proxy.SetSettingsGeneration(next.Generation)
	return problems
}

// checkFileSetting checks a value the settings file holds against its row ("" is the
// setting's default): a hand-edited file is refused in the words of `settings set`.
func checkFileSetting(name app.SettingName, v string) error {
	if v == "" {
		return nil
	}
	st, _ := app.LookupSetting(string(name))
	return st.Check(v)
}

func sameCatalog(a, b app.CatalogSettings) bool {
	return a.StaleMaxAgeMs == b.StaleMaxAgeMs && a.TTLMs == b.TTLMs && equalBoolPtr(a.StaleWhileRevalidate, b.StaleWhileRevalidate)
}

func equalBoolPtr(a, b *bool) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// applyCatalog applies the catalog settings that changed. A setting the file sets wins over
// the environment (which only gives the values a start begins with); one the file no longer
// sets falls back to the environment or the default.
func (r *Relay) applyCatalog(prev, n app.CatalogSettings) {
	def := r.CatalogOptions(n)
	c := r.Proxy.Stats().Catalog
	swr, staleMax, ttl := c.SWREnabled, time.Duration(c.StaleMaxAgeMs)*time.Millisecond, time.Duration(0)
	if !equalBoolPtr(prev.StaleWhileRevalidate, n.StaleWhileRevalidate) {
		swr = def.StaleWhileRevalidate
		if n.StaleWhileRevalidate != nil {
			swr = *n.StaleWhileRevalidate
		}
	}
	if prev.StaleMaxAgeMs != n.StaleMaxAgeMs {
		staleMax = def.StaleMaxAge
		if n.StaleMaxAgeMs > 0 {
			staleMax = time.Duration(n.StaleMaxAgeMs) * time.Millisecond
		}
	}
	if prev.TTLMs != n.TTLMs {
		ttl = def.TTL
		if n.TTLMs > 0 {
			ttl = time.Duration(n.TTLMs) * time.Millisecond
		}
	}
	r.Proxy.SetCatalogOptions(swr, staleMax, ttl)
}

// applyLocalKey reads the local key the settings in force name from the keychain and makes the
// proxy require it. A key that is on but cannot be read locks clients out rather than letting
// them in without it, and is reported by LocalKeyError until it is read again (or turned off,
// or made anew).
func (r *Relay) applyLocalKey() error {
	key, err := r.LocalKey()
	r.mu.Lock()
	r.localKeyErr = err
	r.mu.Unlock()
	if err != nil {
		r.Proxy.SetLocalAPIKey("unreadable-" + rand.Text()) // matches no client
		return err
	}
	r.Proxy.SetLocalAPIKey(key) // "" when off
	return nil
}

// LocalKeyError says why the local key that is on cannot be read (app.ErrLocalKeyUnreadable),
// as this relay last applied the settings; nil when it is off or was read.
func (r *Relay) LocalKeyError() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.localKeyErr
}
