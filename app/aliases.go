package app

import (
	"fmt"

	"github.com/codexrelay/codexrelay/proxy"
)

// The model aliases are the one setting that is no row of the settings table: a map from a
// name a client asks for to the models it stands for, set one alias at a time.

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
