// Package app is Codex Relay's composition root: settings, keychain secrets, the account
// store, the Codex wiring and the proxy's lifecycle. The CLI and the tray both act through it.
package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/gofrs/flock"

	"github.com/codexrelay/codexrelay/proxy"
)

// DefaultListen is the proxy's default loopback address. (Port 1455 is the Codex sign-in
// callback and must stay free.)
const DefaultListen = "127.0.0.1:7455"

// Settings is what the settings file holds. It never holds a secret: API keys and tokens live
// in the keychain under each account's ID.
type Settings struct {
	// Generation counts the changes Codex Relay made to the file. Every change increments it
	// under the settings lock; a running relay reports the generation it follows on /health.
	Generation uint64 `json:"generation"`
	Listen     string `json:"listen,omitempty"`
	Strategy   string `json:"strategy,omitempty"` // priority (default), round-robin or most-quota-left
	// LocalAPIKey requires clients to present the relay's own key (kept in the keychain).
	LocalAPIKey bool `json:"local_api_key,omitempty"`
	// LocalKeyRev changes each time a new local key is stored, so that a running relay reads it.
	LocalKeyRev int             `json:"local_api_key_rev,omitempty"`
	Catalog     CatalogSettings `json:"catalog"`
	Timeouts    TimeoutSettings `json:"timeouts,omitzero"`
	// Notifications are the desktop notifications the tray app sends.
	Notifications NotificationSettings `json:"notifications,omitzero"`
	// Usage configures the usage ledger.
	Usage        UsageSettings       `json:"usage,omitzero"`
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

// NotificationSettings switch the desktop notifications off by kind (all are on by default)
// and set the pool's low-capacity threshold.
type NotificationSettings struct {
	Off []string `json:"off,omitempty"` // the kinds switched off (Notify* constants)
	// LowCapacityPercent is the share of the pool's five-hour capacity left under which the
	// tray app warns (default 20).
	LowCapacityPercent int `json:"low_capacity_percent,omitempty"`
}

// The kinds of desktop notifications.
const (
	NotifyNeedsLogin  = "needs_login"  // an account needs a sign-in, or its key was rejected
	NotifyLimit       = "limit"        // an account hit its limit (with the reset time)
	NotifyAllResting  = "all_resting"  // every account rests (naming the first back)
	NotifyWindowReset = "window_reset" // an account's usage window reset
	NotifyLowCapacity = "low_capacity" // the pool's five-hour capacity fell below the threshold
)

// NotifyKinds lists the notification kinds in the order the settings show them.
var NotifyKinds = []string{NotifyNeedsLogin, NotifyLimit, NotifyAllResting, NotifyWindowReset, NotifyLowCapacity}

// DefaultLowCapacityPercent is the default low-capacity threshold.
const DefaultLowCapacityPercent = 20

// Enabled reports whether notifications of kind are on.
func (n NotificationSettings) Enabled(kind string) bool { return !slices.Contains(n.Off, kind) }

// Threshold is the low-capacity threshold in percent.
func (n NotificationSettings) Threshold() int {
	if n.LowCapacityPercent <= 0 {
		return DefaultLowCapacityPercent
	}
	return n.LowCapacityPercent
}

// TimeoutSettings bound the waits for an upstream, in milliseconds; zero means the default
// (proxy.DefaultHeaderTimeout, DefaultFirstEventTimeout, DefaultStreamIdleTimeout).
type TimeoutSettings struct {
	HeaderMs     int64 `json:"header_ms,omitempty"`
	FirstEventMs int64 `json:"first_event_ms,omitempty"`
	StreamIdleMs int64 `json:"stream_idle_ms,omitempty"`
}

func (t TimeoutSettings) proxy() proxy.Timeouts {
	return proxy.Timeouts{
		Header:     time.Duration(t.HeaderMs) * time.Millisecond,
		FirstEvent: time.Duration(t.FirstEventMs) * time.Millisecond,
		StreamIdle: time.Duration(t.StreamIdleMs) * time.Millisecond,
	}
}

// AccountMeta is an account's metadata; its secret is in the keychain under ID.
type AccountMeta struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Kind     string `json:"kind"`
	BaseURL  string `json:"base_url,omitempty"`
	API      string `json:"api,omitempty"`
	Disabled bool   `json:"disabled,omitempty"`
	Email    string `json:"email,omitempty"`
	// SecretRev changes each time the user replaces the account's secret (a new sign-in, a new
	// key), so that every running relay reads it again from the keychain. Token refreshes
	// do not change it: they are shared through the keychain under the token lock.
	SecretRev int       `json:"secret_rev,omitempty"`
	Added     time.Time `json:"added"`
}

// ErrCorruptSettings reports a settings file that could not be read.
var ErrCorruptSettings = errors.New("settings file is corrupt")

const (
	settingsName = "settings.json"
	// settingsLockName is the lock every change to the settings file (and to the keychain
	// entries it names) holds, in every process.
	settingsLockName = "settings.lock"
	// tokensLockName is held while a ChatGPT refresh token is spent, in every process.
	tokensLockName = "tokens.lock"
	// lockWait is how long a change waits for another process's change to finish.
	lockWait = 15 * time.Second
)

// readSettings reads the settings file at path. A missing file is an empty Settings; a file
// that does not parse is an ErrCorruptSettings and is left as it is.
func readSettings(path string) (Settings, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Settings{}, nil
	}
	if err != nil {
		return Settings{}, fmt.Errorf("cannot read the settings file %s: %w", path, err)
	}
	var s Settings
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&s); err != nil {
		return Settings{}, fmt.Errorf("%w: %s is not valid JSON (%v)", ErrCorruptSettings, path, err)
	}
	return s, nil
}

// loadSettings reads dir/settings.json at start. A file that does not parse is renamed aside
// under a dated name (never overwritten) and reported, and an empty Settings is used.
func loadSettings(dir string, now time.Time) (Settings, error) {
	path := filepath.Join(dir, settingsName)
	s, err := readSettings(path)
	if !errors.Is(err, ErrCorruptSettings) {
		return s, err
	}
	// Move it aside under the lock, so that no other process's write is moved instead.
	unlock, lerr := lockFile(filepath.Join(dir, settingsLockName), lockWait)
	if lerr != nil {
		return Settings{}, lerr
	}
	defer unlock()
	if s, err2 := readSettings(path); !errors.Is(err2, ErrCorruptSettings) {
		return s, err2 // fixed meanwhile
	}
	target, rerr := resolveLink(path)
	if rerr != nil {
		return Settings{}, fmt.Errorf("%w; could not move it aside: %v", err, rerr)
	}
	aside, rerr := createUnique(path+".corrupt-"+now.UTC().Format("20060102T150405Z"), func(p string) error {
		return os.Link(target, p)
	})
	if rerr != nil {
		return Settings{}, fmt.Errorf("%w; could not move it aside: %v", err, rerr)
	}
	os.Remove(target)
	return Settings{}, fmt.Errorf("%w; it was kept as %s and a fresh one is used", err, aside)
}

// saveSettings writes dir/settings.json atomically with mode 0600. The caller holds the
// settings lock.
func saveSettings(dir string, s Settings) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("cannot create the settings folder: %w", err)
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(dir, settingsName), append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("cannot write the settings: %w", err)
	}
	return nil
}

// lockFile takes the exclusive cross-process lock at path (creating the file), waiting up to
// wait for another process to release it.
func lockFile(path string, wait time.Duration) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("cannot create the settings folder: %w", err)
	}
	l := flock.New(path, flock.SetPermissions(0o600))
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	ok, err := l.TryLockContext(ctx, 5*time.Millisecond)
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return nil, fmt.Errorf("cannot lock %s: %w", path, err)
	}
	if !ok {
		return nil, fmt.Errorf("another Codex Relay process has held %s for over %s; try again", path, wait)
	}
	return func() { l.Unlock() }, nil
}

// writeAtomic replaces the file at path with data: a temporary file beside it, synced, then
// renamed over it. When path is a symbolic link, the link's target is replaced (beside the
// target) and the link stays.
func writeAtomic(path string, data []byte, mode os.FileMode) error {
	target, err := resolveLink(path)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+"-*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // a no-op after the rename
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), target)
}

// resolveLink follows symbolic links from path to the file they name, which need not exist
// yet. A path that is not a link is returned as it is.
func resolveLink(path string) (string, error) {
	for range 40 {
		st, err := os.Lstat(path)
		if errors.Is(err, fs.ErrNotExist) || (err == nil && st.Mode()&fs.ModeSymlink == 0) {
			return path, nil
		}
		if err != nil {
			return "", err
		}
		dest, err := os.Readlink(path)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(dest) {
			dest = filepath.Join(filepath.Dir(path), dest)
		}
		path = dest
	}
	return "", fmt.Errorf("%s: too many levels of symbolic links", path)
}

// createUnique calls create with base, then base-2, base-3... until one does not exist yet, and
// returns the name it took: a backup never overwrites an earlier one.
func createUnique(base string, create func(string) error) (string, error) {
	for i := 1; i < 1000; i++ {
		name := base
		if i > 1 {
			name = fmt.Sprintf("%s-%d", base, i)
		}
		err := create(name)
		if err == nil {
			return name, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", err
		}
	}
	return "", fmt.Errorf("too many files named %s-N", base)
}

// writeNew writes data to a new file at path (never replacing one) with mode.
func writeNew(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err2 := f.Sync(); err == nil {
		err = err2
	}
	if err2 := f.Close(); err == nil {
		err = err2
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}
