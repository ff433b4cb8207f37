package app

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/adrg/xdg"

	"github.com/codexrelay/codexrelay/proxy"
)

// Options configure an App. Zero values mean the real environment.
type Options struct {
	ConfigDir string   // default $XDG_CONFIG_HOME/codexrelay
	Keychain  Keychain // default service "codexrelay"
	Logger    *slog.Logger
	Getenv    func(string) string
	Now       func() time.Time
	// Transport sends the proxy's upstream and the sign-in requests (default: the real network).
	Transport http.RoundTripper
	// CallbackAddr is where the browser sign-in returns (default 127.0.0.1:1455).
	CallbackAddr string
	// PollInterval overrides the device sign-in's polling interval (tests).
	PollInterval time.Duration
	// AutostartDir is where the XDG autostart entry goes (default $XDG_CONFIG_HOME/autostart).
	AutostartDir string
}

// App holds the settings, the keychain and the proxy. Its methods are safe for concurrent use.
type App struct {
	opt   Options
	log   *slog.Logger
	Proxy *proxy.Server
	// LoadWarning is set when the settings file was corrupt and kept aside.
	LoadWarning error

	mu       sync.Mutex
	settings Settings
	creds    map[string]*accountCreds // by account ID
}

// DefaultConfigDir is where the settings file lives.
func DefaultConfigDir() string { return filepath.Join(xdg.ConfigHome, "codexrelay") }

// Open loads the settings and builds the proxy with the configured accounts. Secrets are read
// from the keychain lazily, on an account's first request.
func Open(opt Options) (*App, error) {
	if opt.ConfigDir == "" {
		opt.ConfigDir = DefaultConfigDir()
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.Getenv == nil {
		opt.Getenv = os.Getenv
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	a := &App{opt: opt, log: opt.Logger, creds: map[string]*accountCreds{}}
	s, err := loadSettings(opt.ConfigDir, opt.Now())
	if errors.Is(err, ErrCorruptSettings) {
		a.LoadWarning = err
		a.log.Error("settings file was corrupt", "error", err)
	} else if err != nil {
		return nil, err
	}
	a.settings = s
	catOpt, err := catalogOptions(s, opt.Getenv)
	if err != nil {
		return nil, err
	}
	if err := validStrategy(s.Strategy); err != nil {
		return nil, fmt.Errorf("settings: %w", err)
	}
	a.Proxy = proxy.New(proxy.Options{
		Strategy:  s.Strategy,
		Transport: opt.Transport,
		Logger:    opt.Logger,
		Catalog:   catOpt,
	})
	if err := a.Proxy.SetAliases(s.Aliases); err != nil {
		return nil, fmt.Errorf("settings: %w (fix it with `codexrelay aliases`)", err)
	}
	if s.LocalAPIKey {
		key, err := a.opt.Keychain.Get(localKeyUser)
		if err != nil {
			return nil, fmt.Errorf("the local API key is on but cannot be read: %w", err)
		}
		a.Proxy.SetLocalAPIKey(key)
	}
	a.syncProxy()
	return a, nil
}

// ConfigDir is the folder of the settings file.
func (a *App) ConfigDir() string { return a.opt.ConfigDir }

// Settings returns a copy of the current settings.
func (a *App) Settings() Settings {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.settings
	s.Accounts = slices.Clone(s.Accounts)
	return s
}

// ListenAddr is where the proxy listens: CODEXRELAY_LISTEN, else the setting, else the default.
func (a *App) ListenAddr() string {
	if v := a.opt.Getenv("CODEXRELAY_LISTEN"); v != "" {
		return v
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.settings.Listen != "" {
		return a.settings.Listen
	}
	return DefaultListen
}

// update applies change to a copy of the settings, saves it and, on success, makes it current.
func (a *App) update(change func(*Settings) error) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	next := a.settings
	next.Accounts = slices.Clone(a.settings.Accounts)
	if err := change(&next); err != nil {
		return err
	}
	if err := saveSettings(a.opt.ConfigDir, next); err != nil {
		return err
	}
	a.settings = next
	return nil
}

// syncProxy hands the current accounts to the proxy.
func (a *App) syncProxy() {
	a.mu.Lock()
	accounts := make([]proxy.Account, 0, len(a.settings.Accounts))
	for _, m := range a.settings.Accounts {
		c := a.creds[m.ID]
		if c == nil {
			c = &accountCreds{app: a, id: m.ID, kind: proxy.Kind(m.Kind)}
			a.creds[m.ID] = c
		}
		accounts = append(accounts, proxy.Account{
			Name: m.Name, Kind: proxy.Kind(m.Kind), BaseURL: a.baseURL(m), API: proxy.API(m.API),
			Disabled: m.Disabled, Credentials: c,
		})
	}
	a.mu.Unlock()
	a.Proxy.SetAccounts(accounts)
}

func (a *App) baseURL(m AccountMeta) string {
	if m.BaseURL != "" {
		return m.BaseURL
	}
	if m.Kind == string(proxy.KindChatGPT) {
		if v := a.opt.Getenv("CODEXRELAY_CHATGPT_BASE_URL"); v != "" {
			return v
		}
		return proxy.DefaultChatGPTBaseURL
	}
	return ""
}

// Accounts returns the accounts' metadata in priority order.
func (a *App) Accounts() []AccountMeta { return a.Settings().Accounts }

var nameRE = regexp.MustCompile(`^[\p{L}\p{N}][\p{L}\p{N} ._@+-]{0,63}$`)

// ValidateName checks an account name: 1 to 64 letters, digits, spaces and . _ @ + -.
func ValidateName(name string) error {
	if !nameRE.MatchString(name) || strings.TrimSpace(name) != name {
		return fmt.Errorf("account name %q is not valid: use 1 to 64 letters, digits, spaces or . _ @ + -, starting with a letter or digit", name)
	}
	return nil
}

// ValidateBaseURL checks an upstream base URL (http or https, with a host, no credentials).
func ValidateBaseURL(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("base URL %q is not valid: use http(s)://host[:port]/path, e.g. https://api.openai.com/v1", raw)
	}
	if u.User != nil {
		return "", errors.New("base URL must not carry credentials: the key is read from stdin and kept in the keychain")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", errors.New("base URL must not have a query or fragment")
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// NewAccount describes an account to add.
type NewAccount struct {
	Name    string
	Kind    string // openai or chatgpt
	BaseURL string
	API     string // responses (default) or chat
	Email   string
}

// AddAccount stores the secret in the keychain, then the metadata in the settings. If the
// settings cannot be saved, the keychain entry is removed again.
func (a *App) AddAccount(na NewAccount, sec Secret) (AccountMeta, error) {
	if err := ValidateName(na.Name); err != nil {
		return AccountMeta{}, err
	}
	m := AccountMeta{ID: newID(), Name: na.Name, Kind: na.Kind, API: na.API, Email: na.Email, Added: a.opt.Now().UTC()}
	switch proxy.Kind(na.Kind) {
	case proxy.KindOpenAI:
		if na.BaseURL == "" {
			return m, errors.New("--base-url is required for openai accounts (e.g. https://api.openai.com/v1)")
		}
		if strings.TrimSpace(sec.APIKey) == "" {
			return m, errors.New("the API key is empty: pipe it on stdin, e.g. `printenv OPENAI_API_KEY | codexrelay accounts add ...`")
		}
	case proxy.KindChatGPT:
		if sec.AccessToken == "" {
			return m, errors.New("a chatgpt account needs a sign-in")
		}
	default:
		return m, fmt.Errorf("unknown account kind %q: use openai or chatgpt", na.Kind)
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
		return m, fmt.Errorf("unknown --api %q: use responses or chat", m.API)
	}
	if a.findAccount(na.Name) >= 0 {
		return m, fmt.Errorf("an account named %q exists already", na.Name)
	}
	if err := a.opt.Keychain.Set(accountUser(m.ID), sec.encode()); err != nil {
		return m, err
	}
	err := a.update(func(s *Settings) error {
		for _, o := range s.Accounts {
			if o.Name == m.Name {
				return fmt.Errorf("an account named %q exists already", m.Name)
			}
		}
		s.Accounts = append(s.Accounts, m)
		return nil
	})
	if err != nil {
		a.opt.Keychain.Delete(accountUser(m.ID))
		return m, err
	}
	a.syncProxy()
	return m, nil
}

func (a *App) findAccount(name string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.IndexFunc(a.settings.Accounts, func(m AccountMeta) bool { return m.Name == name })
}

// ErrNoAccount names an account that does not exist.
type ErrNoAccount string

func (e ErrNoAccount) Error() string {
	return fmt.Sprintf("no account named %q (see `codexrelay accounts list`)", string(e))
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
	a.mu.Lock()
	delete(a.creds, removed.ID)
	a.mu.Unlock()
	a.syncProxy()
	if err := a.opt.Keychain.Delete(accountUser(removed.ID)); err != nil {
		return fmt.Errorf("account %q removed, but its keychain entry (service %s, user %s) could not be deleted: %w",
			name, a.opt.Keychain.service(), accountUser(removed.ID), err)
	}
	return nil
}

// RenameAccount gives an account a new, unique name (its secret stays under its ID).
func (a *App) RenameAccount(old, name string) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	err := a.update(func(s *Settings) error {
		i := slices.IndexFunc(s.Accounts, func(m AccountMeta) bool { return m.Name == old })
		if i < 0 {
			return ErrNoAccount(old)
		}
		if slices.ContainsFunc(s.Accounts, func(m AccountMeta) bool { return m.Name == name }) {
			return fmt.Errorf("an account named %q exists already", name)
		}
		s.Accounts[i].Name = name
		return nil
	})
	if err == nil {
		a.syncProxy()
	}
	return err
}

// SetAccountEnabled enables or disables an account.
func (a *App) SetAccountEnabled(name string, enabled bool) error {
	err := a.update(func(s *Settings) error {
		i := slices.IndexFunc(s.Accounts, func(m AccountMeta) bool { return m.Name == name })
		if i < 0 {
			return ErrNoAccount(name)
		}
		s.Accounts[i].Disabled = !enabled
		return nil
	})
	if err == nil {
		a.syncProxy()
	}
	return err
}

// MoveAccount moves an account to position to (1-based) in the priority order.
func (a *App) MoveAccount(name string, to int) error {
	err := a.update(func(s *Settings) error {
		i := slices.IndexFunc(s.Accounts, func(m AccountMeta) bool { return m.Name == name })
		if i < 0 {
			return ErrNoAccount(name)
		}
		if to < 1 || to > len(s.Accounts) {
			return fmt.Errorf("position %d is out of range: use 1 to %d", to, len(s.Accounts))
		}
		m := s.Accounts[i]
		s.Accounts = slices.Delete(s.Accounts, i, i+1)
		s.Accounts = slices.Insert(s.Accounts, to-1, m)
		return nil
	})
	if err == nil {
		a.syncProxy()
	}
	return err
}

func newID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func accountUser(id string) string { return "account/" + id }

const localKeyUser = "local-api-key"
