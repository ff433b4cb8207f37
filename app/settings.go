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
	"reflect"
	"slices"
	"sync/atomic"
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
	LocalKeyRev int `json:"local_api_key_rev,omitempty"`
	// LocalKeyID names this folder's local key entry in the keychain (localkey.go); "" is the
	// one entry versions before it shared between folders.
	LocalKeyID string `json:"local_api_key_id,omitempty"`
	// LoopbackCAID names this folder's loopback TLS authority's entry in the keychain
	// (loopca.go); "" while it has none.
	LoopbackCAID string          `json:"loopback_ca_id,omitempty"`
	Catalog      CatalogSettings `json:"catalog"`
	Timeouts     TimeoutSettings `json:"timeouts,omitzero"`
	// HoldSeconds is the longest a request waits, with nothing sent, for a resting pool to
	// come back (0: proxy.DefaultHold; negative: never).
	HoldSeconds int `json:"hold_seconds,omitempty"`
	// ResetCredits is the banked-reset policy: ask ("": the default), auto or off (credits.go).
	ResetCredits string `json:"reset_credits,omitempty"`
	// Notifications are the desktop notifications the tray app sends.
	Notifications NotificationSettings `json:"notifications,omitzero"`
	// Usage configures the usage ledger.
	Usage        UsageSettings       `json:"usage,omitzero"`
	Aliases      map[string][]string `json:"aliases,omitempty"`
	StartAtLogin bool                `json:"start_at_login,omitempty"`
	// Updates is the update notice: off unless the user turns it on (no network call otherwise).
	Updates  UpdateSettings `json:"updates,omitzero"`
	Accounts []AccountMeta  `json:"accounts"`
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
var NotifyKinds = []string{NotifyNeedsLogin, NotifyLimit, NotifyAllResting, NotifyWindowReset, NotifyLowCapacity, NotifyResetCredit}

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

// Proxy are the timeouts as the proxy takes them (zero: its default).
func (t TimeoutSettings) Proxy() proxy.Timeouts {
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
	// Reserve is the share of its binding window (percent, 0-99; 0: none) the relay leaves
	// unspent: it stops choosing the account once less is left, until that window resets
	// (proxy.Account.Reserve).
	Reserve int `json:"reserve,omitempty"`
	// SecretRev changes each time the user replaces the account's secret (a new sign-in, a new
	// key), so that every running relay reads it again from the keychain. Token refreshes
	// do not change it: they are shared through the keychain under the token lock.
	SecretRev int       `json:"secret_rev,omitempty"`
	Added     time.Time `json:"added"`
}

// ErrCorruptSettings reports a settings file that could not be used: not valid JSON (twice, a
// moment apart), or larger than maxSettingsBytes.
var ErrCorruptSettings = errors.New("settings file is corrupt")

// ErrSettingsLink reports a settings.json that is a symbolic link to something that is not a
// Codex Relay settings file (a dotfile linked by mistake, a missing file, a folder): Codex
// Relay neither reads it nor writes, moves or creates anything through it.
var ErrSettingsLink = errors.New("settings link refused")

// errSettingsMissing is a settings file that does not exist, for the readers that must tell
// it apart from an empty one (a running relay: see followSettings).
var errSettingsMissing = errors.New("the settings file does not exist")

const (
	settingsName = "settings.json"
	// settingsLockName is the lock every change to the settings file (and to the keychain
	// entries it names) holds, in every process.
	settingsLockName = "settings.lock"
	// tokensLockName is held while a ChatGPT refresh token is spent, in every process.
	tokensLockName = "tokens.lock"
	// lockWait is how long a change waits for another process's change to finish.
	lockWait = 15 * time.Second
	// maxSettingsBytes bounds the settings file: a real one is a few KiB (a hundred accounts
	// take about 40 KiB), and a larger file is refused unread rather than held in memory.
	maxSettingsBytes = 4 << 20
)

// settleDelay is how long a reader waits before reading again a settings file that does not
// parse: an editor saving in place, or a copy under way, leaves a half-written file for a
// moment, and only a file that still does not parse is judged corrupt.
var settleDelay = 100 * time.Millisecond

// settle waits settleDelay (tests replace it to change the file in between).
var settle atomic.Pointer[func()]

func init() {
	wait := func() { time.Sleep(settleDelay) }
	settle.Store(&wait)
}

// readSettings reads the settings file at path for a change or a command. A missing file is an
// empty Settings. A file that does not parse is read again settleDelay later and, failing again,
// is an ErrCorruptSettings; one over maxSettingsBytes is one too, unread. A symbolic link is
// followed only to a regular file that parses as settings (ErrSettingsLink otherwise). Nothing
// is ever changed on disk.
func readSettings(path string) (Settings, error) {
	s, err := readSettingsFile(path)
	if errors.Is(err, errSettingsMissing) {
		return Settings{}, nil
	}
	return s, err
}

// readSettingsFile is readSettings with a missing file reported as errSettingsMissing.
func readSettingsFile(path string) (Settings, error) {
	s, unparsed, err := readSettingsOnce(path)
	if unparsed {
		(*settle.Load())()
		s, _, err = readSettingsOnce(path)
	}
	return s, err
}

// readSettingsOnce reads the settings file once; unparsed says that it was read whole but did
// not parse (worth a second look).
func readSettingsOnce(path string) (_ Settings, unparsed bool, _ error) {
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Settings{}, false, errSettingsMissing
	}
	if err != nil {
		return Settings{}, false, fmt.Errorf("cannot read the settings file %s: %w", path, err)
	}
	if st.Mode()&fs.ModeSymlink == 0 {
		b, err := readBounded(path, maxSettingsBytes, "a settings file")
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return Settings{}, false, errSettingsMissing
		case errors.Is(err, errTooLarge):
			return Settings{}, false, fmt.Errorf("%w: %v", ErrCorruptSettings, err)
		case err != nil:
			return Settings{}, false, fmt.Errorf("cannot read the settings file %s: %w", path, err)
		}
		s, err := parseSettings(b, false)
		if err != nil {
			return Settings{}, true, fmt.Errorf("%w: %s is not valid JSON (%v)", ErrCorruptSettings, path, err)
		}
		return s, false, nil
	}
	refuse := func(why string) error {
		return fmt.Errorf("%w: %s is a symbolic link %s; Codex Relay neither reads it nor writes through it: point the link at a Codex Relay settings file, or remove it", ErrSettingsLink, path, why)
	}
	target, err := resolveLink(path)
	if err != nil {
		return Settings{}, false, refuse(fmt.Sprintf("that cannot be followed (%v)", err))
	}
	b, err := readBounded(target, maxSettingsBytes, "a settings file")
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Settings{}, false, refuse(fmt.Sprintf("to %s, which does not exist (Codex Relay creates no file outside its folder)", target))
	case err != nil:
		return Settings{}, false, refuse(fmt.Sprintf("to %s, which cannot be used: %v", target, err))
	}
	s, err := parseSettings(b, true)
	if err != nil {
		return Settings{}, true, refuse(fmt.Sprintf("to %s, which is not a Codex Relay settings file (%v)", target, err))
	}
	return s, false, nil
}

// parseSettings decodes a settings file: one JSON object and nothing after it. A file reached
// through a link must also carry "generation" or "accounts" (every file Codex Relay writes
// has both), so that a link to some other JSON file is not taken for settings and written over.
func parseSettings(b []byte, linked bool) (Settings, error) {
	if t := bytes.TrimSpace(b); len(t) == 0 || t[0] != '{' {
		return Settings{}, errors.New("it does not hold a JSON object")
	}
	var s Settings
	if err := json.Unmarshal(b, &s); err != nil {
		return Settings{}, err
	}
	if linked {
		var keys map[string]json.RawMessage
		json.Unmarshal(b, &keys)
		if _, ok := keys["generation"]; !ok {
			if _, ok := keys["accounts"]; !ok {
				return Settings{}, errors.New(`it has neither "generation" nor "accounts"`)
			}
		}
	}
	return s, nil
}

// followSettings reads the settings file for the running relay to apply (Reload). Unlike a
// change, which starts a missing file afresh, it never takes a missing file for empty
// settings: an editor's rename-style save removes it for a moment, and applying "nothing"
// meanwhile would drop every account and the local key. A missing file is an error (the last
// good settings stay in force), unless what is in force is empty anyway.
func (a *App) followSettings() (Settings, error) {
	s, err := readSettingsFile(a.SettingsPath())
	if errors.Is(err, errSettingsMissing) {
		if isEmptySettings(a.Settings()) {
			return Settings{}, nil
		}
		return Settings{}, fmt.Errorf("%w: %s is missing (moved, deleted, or being saved); the relay keeps the settings it last read until a file that parses is there", err, a.SettingsPath())
	}
	return s, err
}

// isEmptySettings reports whether s says nothing that a missing file does not.
func isEmptySettings(s Settings) bool {
	if len(s.Accounts) == 0 {
		s.Accounts = nil
	}
	return reflect.DeepEqual(s, Settings{})
}

// loadSettings reads dir/settings.json at start. A file that is corrupt (see readSettings)
// is moved aside under a dated name (never over an earlier one) only by the running relay of
// the folder, the process that holds its instance claim: a command (even a read-only one, such
// as accounts list) leaves it in place, and uses empty settings. A link is never moved.
func loadSettings(dir string, now time.Time) (Settings, error) {
	path := filepath.Join(dir, settingsName)
	s, err := readSettings(path)
	if !errors.Is(err, ErrCorruptSettings) {
		return s, err
	}
	if claimOf(dir) == nil {
		return Settings{}, fmt.Errorf("%w; it was left as it is (changes are refused until it is fixed or moved away)", err)
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
	// Only the name in the folder moves: a hard link to the same file, then the name goes
	// (os.Link does not follow a link that appeared meanwhile; it would move the link).
	aside, rerr := createUnique(path+".corrupt-"+now.UTC().Format("20060102T150405Z"), func(p string) error {
		return os.Link(path, p)
	})
	if rerr != nil {
		return Settings{}, fmt.Errorf("%w; could not move it aside: %v", err, rerr)
	}
	os.Remove(path)
	return Settings{}, fmt.Errorf("%w; it was kept as %s and a fresh one is used", err, aside)
}

// saveSettings writes dir/settings.json atomically with mode 0600. The caller holds the
// settings lock and has just read the file with readSettings, which refuses a link to
// anything but a settings file: through a link, only a settings file is replaced.
func saveSettings(dir string, s Settings) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("cannot create the settings folder: %w", err)
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	// Never a file the reader would refuse: every later change, a removal included, would fail.
	if len(b)+1 > maxSettingsBytes {
		return fmt.Errorf("cannot write the settings: they would be larger than the %d MiB a settings file may have", maxSettingsBytes>>20)
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
	return replaceFile(target, data, mode)
}

// replaceFile is writeAtomic without following links: a link at path is itself replaced by
// the file, and whatever it pointed to is left alone. Codex Relay's own files in the settings
// folder (instance.json) are written so.
func replaceFile(path string, data []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*.tmp")
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
	return os.Rename(f.Name(), path)
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

// Hold is the proxy's hold bound for HoldSeconds.
func (s Settings) Hold() time.Duration {
	if s.HoldSeconds < 0 {
		return -1
	}
	return time.Duration(s.HoldSeconds) * time.Second
}
