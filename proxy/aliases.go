package proxy

import (
	"fmt"
	"slices"
	"strings"
)

// SetAliases replaces the model aliases: each alias names one or more target models (or other
// aliases), tried in order. Cycles are refused. An alias that shadows a real model, or whose
// targets are all unknown once the catalog is known, is reported in the stats and ignored.
func (s *Server) SetAliases(aliases map[string][]string) error {
	if err := CheckAliases(aliases); err != nil {
		return err
	}
	cp := make(map[string][]string, len(aliases))
	for k, v := range aliases {
		cp[k] = slices.Clone(v)
	}
	s.aliases.Store(&cp)
	return nil
}

// CheckAliases reports what SetAliases would refuse: an alias without a name or a target,
// and cycles.
func CheckAliases(aliases map[string][]string) error {
	for k, v := range aliases {
		if k == "" || len(v) == 0 {
			return fmt.Errorf("alias %q needs at least one target model", k)
		}
	}
	return checkAliasCycles(aliases)
}

func checkAliasCycles(aliases map[string][]string) error {
	const (
		visiting = 1
		done     = 2
	)
	mark := map[string]int{}
	var visit func(name string, path []string) error
	visit = func(name string, path []string) error {
		switch mark[name] {
		case visiting:
			return fmt.Errorf("model aliases form a cycle: %s", strings.Join(append(path, name), " -> "))
		case done:
			return nil
		}
		targets, ok := aliases[name]
		if !ok {
			return nil
		}
		mark[name] = visiting
		for _, t := range targets {
			if err := visit(t, append(path, name)); err != nil {
				return err
			}
		}
		mark[name] = done
		return nil
	}
	names := make([]string, 0, len(aliases))
	for k := range aliases {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		if err := visit(k, nil); err != nil {
			return err
		}
	}
	return nil
}

func (s *Server) aliasMap() map[string][]string {
	if p := s.aliases.Load(); p != nil {
		return *p
	}
	return nil
}

// aliasErrors lists the aliases the known catalog makes invalid.
func (s *Server) aliasErrors(st *catalogState) []string {
	if st == nil || st.listed == 0 {
		return nil
	}
	var errs []string
	for name := range s.aliasMap() {
		if st.models[name] != nil {
			errs = append(errs, fmt.Sprintf("alias %q shadows a real model and is ignored", name))
			continue
		}
		for _, t := range s.expand(name, st) {
			if st.models[t] == nil && len(st.unlisted) == 0 {
				errs = append(errs, fmt.Sprintf("alias %q: target %q is not in the catalog", name, t))
			}
		}
	}
	slices.Sort(errs)
	return errs
}
