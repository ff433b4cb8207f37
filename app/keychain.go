package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/zalando/go-keyring"

	"github.com/codexrelay/codexrelay/proxy"
)

// KeychainService is the service name of every secret Codex Relay stores.
const KeychainService = "codexrelay"

// Keychain stores secrets in the operating system's keychain (Secret Service on Linux,
// Keychain on macOS, Credential Manager on Windows). There is no plaintext fallback.
type Keychain struct {
	Service string
	// Folder is the settings folder that the entries written through this keychain belong to
	// (Open sets it). Several settings folders can share one keyring and one service (a
	// second profile, a service run with another XDG_CONFIG_HOME), so Set records it in each
	// entry whose secret is a JSON object (an account's), as "folder": the entries one folder
	// left over are never taken for another's (see App.KeychainLeftovers).
	Folder string
}

// folderField is the member of an account entry's JSON that names its settings folder.
const folderField = "folder"

// ErrNoSecret means the keychain has no entry for the account.
var ErrNoSecret = errors.New("no secret in the keychain")

func (k Keychain) service() string {
	if k.Service == "" {
		return KeychainService
	}
	return k.Service
}

// Get returns the secret stored under user.
func (k Keychain) Get(user string) (string, error) {
	v, err := keyring.Get(k.service(), user)
	if errors.Is(err, keyring.ErrNotFound) {
		return "", ErrNoSecret
	}
	return v, keychainError(err)
}

// Set stores secret under user, replacing what was there. A JSON object secret is stored with
// the keychain's Folder in it.
func (k Keychain) Set(user, secret string) error {
	owned := k.owned(secret)
	err := keyring.Set(k.service(), user, owned)
	if errors.Is(err, keyring.ErrSetDataTooBig) && owned != secret {
		// The folder's few bytes tipped a large sign-in over the system's limit (2,560 bytes
		// on Windows): stored without it, the entry is of unknown owner, never pruned unasked.
		err = keyring.Set(k.service(), user, secret)
	}
	return keychainError(err)
}

// owned adds the folder to a JSON object secret; any other secret is returned as it is.
func (k Keychain) owned(secret string) string {
	if k.Folder == "" {
		return secret
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(secret), &obj) != nil || obj == nil {
		return secret
	}
	obj[folderField], _ = json.Marshal(k.Folder)
	b, err := json.Marshal(obj)
	if err != nil {
		return secret
	}
	return string(b)
}

// entryFolder is the settings folder an entry's secret names, "" when it names none (an entry
// an older version wrote, or one that is not a JSON object, such as the local key).
func entryFolder(secret string) string {
	var obj struct {
		Folder string `json:"folder"`
	}
	if json.Unmarshal([]byte(secret), &obj) != nil {
		return ""
	}
	return obj.Folder
}

// Delete removes the secret under user; a missing one is not an error.
func (k Keychain) Delete(user string) error {
	err := keyring.Delete(k.service(), user)
	if errors.Is(err, keyring.ErrNotFound) {
		return nil
	}
	return keychainError(err)
}

// KeychainError is a keychain failure with advice on how to fix it.
type KeychainError struct {
	Err    error
	Advice string
}

func (e *KeychainError) Error() string {
	return "keychain unavailable: " + e.Err.Error() + ". " + e.Advice
}

func (e *KeychainError) Unwrap() error { return e.Err }

// Is makes a keychain failure a proxy.ErrSecretStoreUnavailable: a request no account could
// take for it gets 503 keychain_unavailable with this advice, not a retryable upstream error.
func (e *KeychainError) Is(target error) bool { return target == proxy.ErrSecretStoreUnavailable }

// keychainError turns go-keyring's low-level errors into one that says what to install or unlock.
func keychainError(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, keyring.ErrSetDataTooBig) {
		return fmt.Errorf("keychain refused the secret: %w", err)
	}
	msg := err.Error()
	advice := "Codex Relay keeps tokens only in the system keychain and has no plaintext fallback."
	switch {
	case strings.Contains(msg, "org.freedesktop.secrets") || strings.Contains(msg, "ServiceUnknown"):
		advice = "No Secret Service is running: install and start one (Debian/Ubuntu: `apt-get install gnome-keyring`, or enable KeePassXC's Secret Service integration) inside your desktop session. " + advice
	case strings.Contains(msg, "DBUS_SESSION_BUS_ADDRESS") || strings.Contains(msg, "dbus") || strings.Contains(msg, "D-Bus") ||
		strings.Contains(msg, "dial unix") || strings.Contains(msg, "autolaunch"):
		advice = "No D-Bus session bus is reachable: run Codex Relay inside your desktop session (or `dbus-run-session`) with a Secret Service such as gnome-keyring. " + advice
	case strings.Contains(msg, "locked") || strings.Contains(msg, "prompt") || strings.Contains(msg, "dismissed"):
		advice = "The keychain is locked: unlock your login keyring (e.g. log in to the desktop session, or `gnome-keyring-daemon --unlock`). " + advice
	default:
		advice = "Make sure a Secret Service (gnome-keyring, or KeePassXC's integration) is running and unlocked in your session. " + advice
	}
	return &KeychainError{Err: err, Advice: advice}
}
