// Package app is Codex Relay's composition root: settings, keychain secrets, the account
// store, the Codex wiring and the proxy's lifecycle. The CLI and the tray both act through it.
package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// DefaultListen is the proxy's default loopback address. (Port 1455 is the Codex sign-in
// callback and must stay free.)
const DefaultListen = "127.0.0.1:7455"

// Settings is what the settings file holds. It never holds a secret: API keys and tokens live
// in the keychain under each account's ID.
type Settings struct {
	Listen   string `json:"listen,omitempty"`
	Strategy string `json:"strategy,omitempty"` // priority (default) or round-robin
	// LocalAPIKey requires clients to present the relay's own key (kept in the keychain).
	LocalAPIKey  bool                `json:"local_api_key,omitempty"`
	Catalog      CatalogSettings     `json:"catalog"`
	Aliases      map[string][]string `json:"aliases,omitempty"`
	StartAtLogin bool                `json:"start_at_login,omitempty"`
	Accounts     []AccountMeta       `json:"accounts"`
}

// CatalogSettings tune the model catalog; zero values mean the defaults (env overrides win).
type CatalogSettings struct {
	StaleWhileRevalidate *bool `json:"stale_while_revalidate,omitempty"`
	StaleMaxAgeMs        int64 `json:"stale_max_age_ms,omitempty"`
	TTLMs                int64 `json:"ttl_ms,omitempty"`
}

// AccountMeta is an account's metadata; its secret is in the keychain under ID.
type AccountMeta struct {
	ID       string    `json:"id"`
	Name     string    `json:"name"`
	Kind     string    `json:"kind"`
	BaseURL  string    `json:"base_url,omitempty"`
	API      string    `json:"api,omitempty"`
	Disabled bool      `json:"disabled,omitempty"`
	Email    string    `json:"email,omitempty"`
	Added    time.Time `json:"added"`
}

// ErrCorruptSettings reports a settings file that could not be read; the file was kept aside.
var ErrCorruptSettings = errors.New("settings file is corrupt")

const settingsName = "settings.json"

// loadSettings reads dir/settings.json. A missing file is an empty Settings. A file that does
// not parse is renamed aside under a dated name (never overwritten) and reported.
func loadSettings(dir string, now time.Time) (Settings, error) {
	path := filepath.Join(dir, settingsName)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Settings{}, nil
	}
	if err != nil {
		return Settings{}, fmt.Errorf("cannot read the settings file %s: %w", path, err)
	}
	var s Settings
	if err := json.Unmarshal(b, &s); err != nil {
		aside := path + ".corrupt-" + now.UTC().Format("20060102T150405Z")
		if rerr := os.Rename(path, aside); rerr != nil {
			return Settings{}, fmt.Errorf("%w: %s (%v); could not move it aside: %v", ErrCorruptSettings, path, err, rerr)
		}
		return Settings{}, fmt.Errorf("%w: %s (%v); it was kept as %s and a fresh one is used", ErrCorruptSettings, path, err, aside)
	}
	return s, nil
}

// saveSettings writes dir/settings.json atomically (temporary file, fsync, rename) with mode 0600.
func saveSettings(dir string, s Settings) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("cannot create the settings folder: %w", err)
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".settings-*.tmp")
	if err != nil {
		return fmt.Errorf("cannot write the settings: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op after the rename
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("cannot write the settings: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, settingsName)); err != nil {
		return fmt.Errorf("cannot write the settings: %w", err)
	}
	return nil
}
