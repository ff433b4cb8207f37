package app

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/codexrelay/codexrelay/proxy"
)

// Accounts returns the accounts' metadata in priority order.
func (a *App) Accounts() []AccountMeta { return a.Settings().Accounts }

// nameRE is compiled at first use: its Unicode classes cost every process 9 ms at start.
var nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[\p{L}\p{N}][\p{L}\p{N}._@+-]{0,63}$`) })

// ValidateName checks an account name: a slug of 1 to 64 letters, digits and . _ @ + -,
// starting with a letter or digit, so that it can be typed on a command line as it is.
func ValidateName(name string) error {
	if !nameRE().MatchString(name) {
		return fieldError(FieldName, fmt.Sprintf("%q is not valid: use 1 to 64 letters, digits or . _ @ + - (no spaces), starting with a letter or digit", name))
	}
	return nil
}

// ValidateBaseURL checks an upstream base URL (http or https, with a host, no credentials).
func ValidateBaseURL(raw string) (string, error) {
	if len(raw) > maxBaseURLBytes {
		return "", fieldError(FieldBaseURL, fmt.Sprintf("is longer than %d bytes", maxBaseURLBytes))
	}
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fieldError(FieldBaseURL, fmt.Sprintf("%q is not valid: use http(s)://host[:port]/path, e.g. https://api.openai.com/v1", raw))
	}
	if u.User != nil {
		return "", fieldError(FieldBaseURL, "must not carry credentials: the key is given apart and kept in the keychain")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", fieldError(FieldBaseURL, "must not have a query or fragment")
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// ValidateKey checks an API key: not empty, no whitespace inside (a key pasted with its
// neighbours is the usual mistake).
func ValidateKey(key string) error {
	switch {
	case strings.TrimSpace(key) == "":
		return fieldError(FieldKey, "is empty")
	case strings.ContainsAny(strings.TrimSpace(key), " \t\r\n"):
		return fieldError(FieldKey, "contains whitespace: give the key alone")
	}
	return nil
}

// NewAccount describes an account to add.
type NewAccount struct {
	Name    string
	Kind    string // openai or chatgpt
	BaseURL string
	API     string // responses (default) or chat
	Email   string
}

// CheckNewAccount checks what describes a new account, so that a caller can refuse it before
// it asks for the secret: the name, the kind, the base URL (required for an API-key account)
// and the API. It returns the account's metadata as it would be stored, without an ID.
func CheckNewAccount(na NewAccount) (AccountMeta, error) {
	if err := ValidateName(na.Name); err != nil {
		return AccountMeta{}, err
	}
	m := AccountMeta{Name: na.Name, Kind: na.Kind, API: na.API}
	switch proxy.Kind(na.Kind) {
	case proxy.KindOpenAI:
		if na.BaseURL == "" {
			return m, fieldError(FieldBaseURL, "is required for an API-key account, e.g. https://api.openai.com/v1")
		}
	case proxy.KindChatGPT:
	default:
		return m, fieldError(FieldKind, fmt.Sprintf("%q is not an account kind: use openai or chatgpt", na.Kind))
	}
	if na.BaseURL != "" {
		u, err := ValidateBaseURL(na.BaseURL)
		if err != nil {
			return m, err
		}
		m.BaseURL = u
	}
	switch m.API {
	case "":
		m.API = string(proxy.APIResponses)
	case string(proxy.APIResponses), string(proxy.APIChat):
	default:
		return m, fieldError(FieldAPI, fmt.Sprintf("%q is not an API Codex Relay speaks: use responses or chat", m.API))
	}
	return m, nil
}

// AddAccount stores the secret in the keychain and the metadata in the settings, both under
// the settings lock. If the settings cannot be saved, the keychain entry is removed again.
func (a *App) AddAccount(na NewAccount, sec Secret) (AccountMeta, error) {
	m, err := CheckNewAccount(na)
	if err != nil {
		return m, err
	}
	m.ID, m.Email, m.Added = newID(), cleanEmail(na.Email), a.opt.Now().UTC()
	switch proxy.Kind(na.Kind) {
	case proxy.KindOpenAI:
		if err := ValidateKey(sec.APIKey); err != nil {
			return m, err
		}
	case proxy.KindChatGPT:
		if sec.AccessToken == "" {
			return m, errors.New("a chatgpt account needs a sign-in")
		}
	}
	stored := false
	err = a.update(func(s *Settings) error {
		if slices.ContainsFunc(s.Accounts, func(o AccountMeta) bool { return o.Name == m.Name }) {
			return ErrNameTaken(m.Name)
		}
		if err := a.opt.Keychain.Set(accountUser(m.ID), sec.encode()); err != nil {
			return err
		}
		stored = true
		s.Accounts = append(s.Accounts, m)
		return nil
	})
	if err != nil {
		if stored {
			a.opt.Keychain.Delete(accountUser(m.ID))
		}
		return m, err
	}
	return m, nil
}

// addOrRenew adds a login as a new account named after name (made unique with -2, -3...),
// or, when an account holds the same login (the same user in the same ChatGPT workspace, or
// the same API key), gives that account the new login. Two members of one Team workspace are
// two accounts.
func (a *App) addOrRenew(name string, na NewAccount, sec Secret) (AccountMeta, Outcome, error) {
	for _, m := range a.Accounts() {
		c := a.credsFor(m.ID)
		if c == nil || m.Kind != na.Kind {
			continue
		}
		held, err := c.secret()
		if err != nil {
			continue
		}
		switch {
		case na.Kind == string(proxy.KindOpenAI) && held.APIKey == sec.APIKey,
			na.Kind == string(proxy.KindChatGPT) && held.AccessToken == sec.AccessToken:
			return m, Unchanged, nil
		case na.Kind == string(proxy.KindChatGPT) && sameChatGPTLogin(held, m.Email, sec, na.Email):
			m, err := a.replaceSecret(m.ID, sec)
			return m, Renewed, err
		}
	}
	var m AccountMeta
	var err error
	for i := 1; i < 100; i++ {
		na.Name = name
		if i > 1 {
			na.Name = fmt.Sprintf("%s-%d", name, i)
		}
		m, err = a.AddAccount(na, sec)
		var taken ErrNameTaken
		if !errors.As(err, &taken) {
			break
		}
	}
	return m, Added, err
}

// replaceSecret stores a new secret for the account with this ID (a new sign-in or key) and
// bumps its SecretRev, so that every running relay reads it again and clears the account's
// cooldown and needs-login mark. It holds the token lock too, so that no refresh in another
// process writes an older sign-in over it.
func (a *App) replaceSecret(id string, sec Secret) (AccountMeta, error) {
	var out AccountMeta
	err := a.update(func(s *Settings) error {
		i := slices.IndexFunc(s.Accounts, func(m AccountMeta) bool { return m.ID == id })
		if i < 0 {
			return errors.New("the account was removed meanwhile")
		}
		unlock, err := lockFile(filepath.Join(a.opt.ConfigDir, tokensLockName), lockWait)
		if err != nil {
			return err
		}
		defer unlock()
		if err := a.opt.Keychain.Set(accountUser(id), sec.encode()); err != nil {
			return err
		}
		s.Accounts[i].SecretRev++
		out = s.Accounts[i]
		return nil
	})
	return out, err
}

// SetAPIKey replaces the key of an API-key account (after the upstream rejected the old one).
func (a *App) SetAPIKey(name, key string) error {
	key = strings.TrimSpace(key)
	if err := ValidateKey(key); err != nil {
		return err
	}
	for _, m := range a.Accounts() {
		if m.Name != name {
			continue
		}
		if m.Kind != string(proxy.KindOpenAI) {
			return ErrSignInAccount(name)
		}
		_, err := a.replaceSecret(m.ID, Secret{APIKey: key})
		return err
	}
	return ErrNoAccount(name)
}

// ErrNoAccount names an account that does not exist.
type ErrNoAccount string

func (e ErrNoAccount) Error() string {
	return fmt.Sprintf("no account named %q", string(e))
}

// ErrSignInAccount names a ChatGPT account given where an API key was expected: only a new
// sign-in replaces its credential.
type ErrSignInAccount string

func (e ErrSignInAccount) Error() string {
	return fmt.Sprintf("account %q is a ChatGPT sign-in, which has no API key: sign in again instead", string(e))
}

// ErrNameTaken names an account name that is in use already.
type ErrNameTaken string

func (e ErrNameTaken) Error() string {
	return fmt.Sprintf("an account named %q exists already", string(e))
}

// RemoveAccount removes the account from the settings, then its keychain entry.
func (a *App) RemoveAccount(name string) error {
	var removed AccountMeta
	err := a.update(func(s *Settings) error {
		i := slices.IndexFunc(s.Accounts, func(m AccountMeta) bool { return m.Name == name })
		if i < 0 {
			return ErrNoAccount(name)
		}
		removed = s.Accounts[i]
		s.Accounts = slices.Delete(s.Accounts, i, i+1)
		return nil
	})
	if err != nil {
		return err
	}
	if err := a.opt.Keychain.Delete(accountUser(removed.ID)); err != nil {
		return fmt.Errorf("account %q removed, but its keychain entry (service %s, user %s) could not be deleted (removing the keychain entries that belong to no account retries it): %w",
			name, a.opt.Keychain.service(), accountUser(removed.ID), err)
	}
	return nil
}

// RenameAccount gives an account a new, unique name (its secret stays under its ID).
func (a *App) RenameAccount(old, name string) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	return a.update(func(s *Settings) error {
		i := slices.IndexFunc(s.Accounts, func(m AccountMeta) bool { return m.Name == old })
		if i < 0 {
			return ErrNoAccount(old)
		}
		if old != name && slices.ContainsFunc(s.Accounts, func(m AccountMeta) bool { return m.Name == name }) {
			return ErrNameTaken(name)
		}
		s.Accounts[i].Name = name
		return nil
	})
}

// SetAccountEnabled enables or disables an account.
func (a *App) SetAccountEnabled(name string, enabled bool) error {
	return a.update(func(s *Settings) error {
		i := slices.IndexFunc(s.Accounts, func(m AccountMeta) bool { return m.Name == name })
		if i < 0 {
			return ErrNoAccount(name)
		}
		s.Accounts[i].Disabled = !enabled
		return nil
	})
}

// MaxReserve is the largest reserve an account may keep (percent of its binding window).
const MaxReserve = 99

// CheckReserve checks a reserve: 0 (none) to MaxReserve percent.
func CheckReserve(percent int) error {
	if percent < 0 || percent > MaxReserve {
		return fieldError(FieldReserve, fmt.Sprintf("%d%% is out of range: use 1 to %d (percent of the account's binding window), or 0 for none", percent, MaxReserve))
	}
	return nil
}

// SetAccountReserve sets the share of an account's binding window (percent; 0: none) the relay
// leaves unspent.
func (a *App) SetAccountReserve(name string, percent int) error {
	if err := CheckReserve(percent); err != nil {
		return err
	}
	return a.update(func(s *Settings) error {
		i := slices.IndexFunc(s.Accounts, func(m AccountMeta) bool { return m.Name == name })
		if i < 0 {
			return ErrNoAccount(name)
		}
		s.Accounts[i].Reserve = percent
		return nil
	})
}

// MoveAccount moves an account to position to (1-based) in the priority order and returns
// how many accounts there are.
func (a *App) MoveAccount(name string, to int) (int, error) {
	n := 0
	err := a.update(func(s *Settings) error {
		i := slices.IndexFunc(s.Accounts, func(m AccountMeta) bool { return m.Name == name })
		if i < 0 {
			return ErrNoAccount(name)
		}
		n = len(s.Accounts)
		if to < 1 || to > n {
			return fieldError(FieldPosition, fmt.Sprintf("%d is out of range: use 1 to %d", to, n))
		}
		m := s.Accounts[i]
		s.Accounts = slices.Delete(s.Accounts, i, i+1)
		s.Accounts = slices.Insert(s.Accounts, to-1, m)
		return nil
	})
	return n, err
}

// OrphanSecrets lists this settings folder's keychain entries that no account names: left
// behind by a crash between the keychain and the settings file. PruneSecrets removes them.
// Entries of other folders on the same keyring, and entries of unknown owner, are not counted
// (see KeychainLeftovers).
func (a *App) OrphanSecrets() ([]string, error) {
	own, _, err := a.KeychainLeftovers()
	return own, err
}

// PruneSecrets removes the keychain entries OrphanSecrets lists and returns them. It never
// removes an entry of another folder, nor one of unknown owner.
func (a *App) PruneSecrets() ([]string, error) {
	own, _, err := a.KeychainLeftovers()
	if err != nil || len(own) == 0 {
		return nil, err
	}
	return a.RemoveLeftovers(own, false)
}

// KeychainLeftovers lists, under the settings lock, the entries of Codex Relay's keychain
// service that neither an account of this folder nor its local key names, in two lists: own,
// those that name this settings folder (every account entry written since entries name their
// folder, and every local key's), and unknown, those that name no folder (written by an older
// version, such as the one local key entry older versions shared between folders). Entries that name another folder are
// another profile's, perhaps its live keys, and are left out. It refuses while the settings file
// is missing or cannot be read: every entry would look left over.
func (a *App) KeychainLeftovers() (own, unknown []string, err error) {
	unlock, err := lockFile(filepath.Join(a.opt.ConfigDir, settingsLockName), lockWait)
	if err != nil {
		return nil, nil, err
	}
	defer unlock()
	return a.leftoversLocked()
}

// RemoveLeftovers removes those of names that are still left over (see KeychainLeftovers) when
// it runs: this folder's own, and those of unknown owner only when unknown is true. It returns
// what it removed, sorted.
func (a *App) RemoveLeftovers(names []string, unknown bool) ([]string, error) {
	unlock, err := lockFile(filepath.Join(a.opt.ConfigDir, settingsLockName), lockWait)
	if err != nil {
		return nil, err
	}
	defer unlock()
	own, unk, err := a.leftoversLocked()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, u := range names {
		if !slices.Contains(own, u) && !(unknown && slices.Contains(unk, u)) {
			continue // named meanwhile, or not this folder's to remove
		}
		if err := a.opt.Keychain.Delete(u); err != nil {
			return out, err
		}
		out = append(out, u)
	}
	sort.Strings(out)
	return out, nil
}

// leftoversLocked is KeychainLeftovers with the settings lock held. Under it no other process
// is between writing an entry and naming it.
func (a *App) leftoversLocked() (own, unknown []string, err error) {
	s, err := readSettingsFile(a.SettingsPath())
	if errors.Is(err, errSettingsMissing) {
		return nil, nil, fmt.Errorf("%s does not exist, so every keychain entry would look left over: nothing is counted or removed until it is back", a.SettingsPath())
	}
	if err != nil {
		return nil, nil, err
	}
	users, err := a.opt.Keychain.List()
	if err != nil {
		return nil, nil, err
	}
	named := map[string]bool{}
	for _, m := range s.Accounts {
		named[accountUser(m.ID)] = true
	}
	if s.LocalAPIKey {
		named[localKeyUser(s.LocalKeyID)] = true
	}
	if s.LoopbackCAID != "" {
		named[loopbackCAUser(s.LoopbackCAID)] = true
	}
	mine := a.opt.Keychain.Folder
	for _, u := range users {
		if named[u] {
			continue
		}
		v, err := a.opt.Keychain.Get(u)
		if errors.Is(err, ErrNoSecret) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, nil, err
		}
		switch f := entryFolder(v); {
		case f == "":
			unknown = append(unknown, u)
		case mine != "" && f == mine:
			own = append(own, u)
		}
	}
	sort.Strings(own)
	sort.Strings(unknown)
	return own, unknown, nil
}

func newID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func accountUser(id string) string { return "account/" + id }
