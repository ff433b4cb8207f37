package app

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
)

// The local API key is the key clients must send the relay. Each settings folder has its own:
// its entry in the keychain is named after an ID the settings file keeps (LocalKeyID), as an
// account's entry is, and it names its folder, so that no other folder on the keyring (a
// second profile, a service with its own XDG_CONFIG_HOME, a reset config) overwrites it,
// deletes it or counts it as a leftover of its own.
//
// Versions before that kept one entry for every folder, named legacyLocalKeyUser. A folder
// whose settings name no ID still reads that entry, and never writes or deletes it: another
// folder may be using it. The next `local-key on` gives the folder an entry of its own.

// legacyLocalKeyUser is the one local key entry older versions shared between folders.
const legacyLocalKeyUser = "local-api-key"

// localKeyUser is the keychain entry of the local key with the given ID ("" is the legacy one).
func localKeyUser(id string) string {
	if id == "" {
		return legacyLocalKeyUser
	}
	return legacyLocalKeyUser + "/" + id
}

// localKeyEntry is the secret of a local key entry; Keychain.Set adds the folder.
type localKeyEntry struct {
	Key string `json:"key"`
}

// ErrLocalKeyUnreadable is a local key that is on but cannot be read from the keychain (its
// entry is gone, or the keychain is unavailable): the relay refuses every client until the key
// is turned on again (a new key) or off.
var ErrLocalKeyUnreadable = errors.New("the local API key is on but cannot be read from the keychain")

// localKeyRepair is what a user can do about ErrLocalKeyUnreadable.
const localKeyRepair = "every client is refused until it can: `codexrelay local-key on` makes a new key (and gives it to Codex), `codexrelay local-key off` turns it off"

// readLocalKey reads the local key the settings s name ("" when it is off).
func (a *App) readLocalKey(s Settings) (string, error) {
	if !s.LocalAPIKey {
		return "", nil
	}
	v, err := a.opt.Keychain.Get(localKeyUser(s.LocalKeyID))
	if err != nil {
		return "", fmt.Errorf("%w (%v); %s", ErrLocalKeyUnreadable, err, localKeyRepair)
	}
	if s.LocalKeyID == "" {
		return v, nil // the legacy entry holds the key as it is
	}
	var e localKeyEntry
	if json.Unmarshal([]byte(v), &e) != nil || e.Key == "" {
		return "", fmt.Errorf("%w (its entry is damaged); %s", ErrLocalKeyUnreadable, localKeyRepair)
	}
	return e.Key, nil
}

// LocalKey returns the local API key, "" when it is off. A key that is on and cannot be read
// is an ErrLocalKeyUnreadable.
func (a *App) LocalKey() (string, error) { return a.readLocalKey(a.Settings()) }

// storeLocalKey stores a new key under a new ID in the keychain and names it in s (the caller
// holds the settings lock and saves s). It returns the key and the ID s named before.
func (a *App) storeLocalKey(s *Settings) (key, oldID string, err error) {
	var b [24]byte
	rand.Read(b[:])
	key = "crk-" + base64.RawURLEncoding.EncodeToString(b[:])
	id := newID()
	secret, _ := json.Marshal(localKeyEntry{Key: key})
	if err := a.opt.Keychain.Set(localKeyUser(id), string(secret)); err != nil {
		return "", "", err
	}
	oldID = s.LocalKeyID
	s.LocalAPIKey, s.LocalKeyID = true, id
	s.LocalKeyRev++
	return key, oldID, nil
}

// dropLocalKey removes this folder's entry of the key with ID id, once the settings no longer
// name it (the legacy entry, which other folders may use, is never removed).
func (a *App) dropLocalKey(id string) error {
	if id == "" {
		return nil
	}
	return a.opt.Keychain.Delete(localKeyUser(id))
}

// SetLocalKey turns the local API key on with a new key (returned once; the previous key stops
// working) or off. Every running relay reads the change from the settings file, and the new
// key from the keychain.
func (a *App) SetLocalKey(on bool) (string, error) {
	if !on {
		var old string
		if err := a.update(func(s *Settings) error {
			old = s.LocalKeyID
			s.LocalAPIKey, s.LocalKeyID = false, ""
			return nil
		}); err != nil {
			return "", err
		}
		return "", a.dropLocalKey(old)
	}
	var key, old, id string
	err := a.update(func(s *Settings) error {
		var err error
		key, old, err = a.storeLocalKey(s)
		id = s.LocalKeyID
		return err
	})
	if err != nil {
		if id != "" {
			a.dropLocalKey(id) // stored, but the settings could not name it
		}
		return "", err
	}
	if err := a.dropLocalKey(old); err != nil {
		a.log.Warn("the previous local key's keychain entry could not be removed (`codexrelay accounts prune` removes it)", "error", err)
	}
	return key, nil
}

// EnsureLocalKey turns the local API key on, keeping the key in force when it is on and can be
// read: made says whether a new key was made (the key was off, or on but unreadable), and only
// then is key the new key, to be handed to clients.
func (a *App) EnsureLocalKey() (key string, made bool, err error) {
	var old, id string
	err = a.update(func(s *Settings) error {
		if _, rerr := a.readLocalKey(*s); s.LocalAPIKey && rerr == nil {
			return errNoChange
		}
		var err error
		key, old, err = a.storeLocalKey(s)
		id = s.LocalKeyID
		return err
	})
	if err != nil {
		if id != "" {
			a.dropLocalKey(id)
		}
		return "", false, err
	}
	if key == "" {
		return "", false, nil
	}
	a.dropLocalKey(old)
	return key, true, nil
}

// LocalKeyForNewInstall creates the settings file when there is none yet, which turns the
// local key on (see update: whichever process creates the file does); an existing file is
// left as it is. It reports whether this process made the key.
func (a *App) LocalKeyForNewInstall() (bool, error) {
	if err := a.update(func(*Settings) error { return errNoChange }); err != nil {
		return false, err
	}
	made, err := a.NewInstallKey()
	if err != nil {
		return false, fmt.Errorf("could not turn the local API key on for this new install: %w", err)
	}
	return made, nil
}

// NewInstallKey reports whether a change of this process created the settings file and with
// it turned on the local key that is still in force (made), or could not (err: the keychain
// refused the key; the file was created with the key off).
func (a *App) NewInstallKey() (made bool, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.freshKeyID != "" && a.settings.LocalAPIKey && a.settings.LocalKeyID == a.freshKeyID, a.freshKeyErr
}

// freshInstallKey turns the local key on in the settings a change is about to create (the
// caller holds the settings lock): on a shared machine any local user could otherwise spend the
// accounts and read the stats, where a ChatGPT account's e-mail appears. Whichever command
// creates the file does it (`accounts add`, `settings set`, `serve`, the tray app), so that no
// order of first commands leaves a new install open. A keychain that refuses the key leaves it
// off, and says so (NewInstallKey).
func (a *App) freshInstallKey(s *Settings) {
	_, _, err := a.storeLocalKey(s)
	a.mu.Lock()
	a.freshKeyID, a.freshKeyErr = s.LocalKeyID, err
	a.mu.Unlock()
	if err != nil {
		a.log.Warn("a new install, but the local API key could not be turned on", "error", err)
	}
}
