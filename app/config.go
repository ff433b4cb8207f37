package app

import (
	"fmt"
	"strconv"
	"time"

	"github.com/codexrelay/codexrelay/proxy"
)

// Catalog defaults (docs/performance.md: "The serialization cache and the catalog refresh").
const (
	DefaultCatalogTTL  = 10 * time.Minute
	DefaultStaleMaxAge = 30 * time.Minute
)

// catalogOptions merges defaults, settings and the environment (which wins):
// MODELS_CACHE_MS, MODELS_STALE_WHILE_REVALIDATE, MODELS_STALE_MAX_AGE_MS, MODELS_REFRESH_INTERVAL_MS.
func catalogOptions(s Settings, getenv func(string) string) (proxy.CatalogOptions, error) {
	o := proxy.CatalogOptions{TTL: DefaultCatalogTTL, StaleWhileRevalidate: true, StaleMaxAge: DefaultStaleMaxAge}
	if s.Catalog.TTLMs > 0 {
		o.TTL = time.Duration(s.Catalog.TTLMs) * time.Millisecond
	}
	if s.Catalog.StaleMaxAgeMs > 0 {
		o.StaleMaxAge = time.Duration(s.Catalog.StaleMaxAgeMs) * time.Millisecond
	}
	if s.Catalog.StaleWhileRevalidate != nil {
		o.StaleWhileRevalidate = *s.Catalog.StaleWhileRevalidate
	}
	ms := func(name string, dst *time.Duration, allowZero bool) error {
		v := getenv(name)
		if v == "" {
			return nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 || (n == 0 && !allowZero) {
			return fmt.Errorf("%s=%q is not valid: give a whole number of milliseconds", name, v)
		}
		*dst = time.Duration(n) * time.Millisecond
		return nil
	}
	if err := ms("MODELS_CACHE_MS", &o.TTL, false); err != nil {
		return o, err
	}
	if err := ms("MODELS_STALE_MAX_AGE_MS", &o.StaleMaxAge, true); err != nil {
		return o, err
	}
	o.RefreshInterval = o.TTL
	if v := getenv("MODELS_REFRESH_INTERVAL_MS"); v != "" {
		if err := ms("MODELS_REFRESH_INTERVAL_MS", &o.RefreshInterval, true); err != nil {
			return o, err
		}
		if o.RefreshInterval == 0 {
			o.RefreshInterval = -1 // off
		}
	}
	if v := getenv("MODELS_STALE_WHILE_REVALIDATE"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return o, fmt.Errorf("MODELS_STALE_WHILE_REVALIDATE=%q is not valid: use true or false", v)
		}
		o.StaleWhileRevalidate = b
	}
	return o, nil
}
