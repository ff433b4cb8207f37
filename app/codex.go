package app

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/codexrelay/codexrelay/proxy"
)

// CodexHome is the Codex CLI's folder: $CODEX_HOME, else ~/.codex.
func (a *App) CodexHome() string {
	if v := a.opt.Getenv("CODEX_HOME"); v != "" {
		return v
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".codex")
}

// codexAuth is the Codex CLI's auth.json.
type codexAuth struct {
	APIKey *string `json:"OPENAI_API_KEY"`
	Tokens *struct {
		IDToken      string `json:"id_token"`
		AccessToken  string `json:"access_token"`
		RefreshToken string `json:"refresh_token"`
		AccountID    string `json:"account_id"`
	} `json:"tokens"`
}

// Outcome says what adding a login did.
type Outcome string

const (
	Added     Outcome = "added"     // a new account
	Renewed   Outcome = "renewed"   // an account with the same ChatGPT account id has the new sign-in
	Unchanged Outcome = "unchanged" // the account has this very login already
)

// ErrNoCodexLogin says that the Codex CLI has no login where it was looked for.
type ErrNoCodexLogin string

func (e ErrNoCodexLogin) Error() string {
	return fmt.Sprintf("no Codex login at %s: sign in with `codex login` first, or sign in with ChatGPT in Codex Relay", string(e))
}

// maxAuthFile bounds the Codex auth.json read by ImportCodex.
const maxAuthFile = 1 << 20

// ImportCodex imports the Codex CLI's login from auth.json at path ("" = $CODEX_HOME/auth.json):
// a ChatGPT sign-in (renewing an account with the same ChatGPT account id, if there is one) or
// an API key (as an openai account on api.openai.com).
func (a *App) ImportCodex(path string) (AccountMeta, Outcome, error) {
	if path == "" {
		path = filepath.Join(a.CodexHome(), "auth.json")
	}
	b, err := readRegularFile(path, maxAuthFile)
	if errors.Is(err, fs.ErrNotExist) {
		return AccountMeta{}, "", ErrNoCodexLogin(path)
	}
	if err != nil {
		return AccountMeta{}, "", err
	}
	var auth codexAuth
	if err := json.Unmarshal(b, &auth); err != nil {
		return AccountMeta{}, "", fmt.Errorf("%s is not a Codex auth.json: %v", path, err)
	}
	switch {
	case auth.Tokens != nil && auth.Tokens.AccessToken != "":
		t := auth.Tokens
		sec := Secret{AccessToken: t.AccessToken, RefreshToken: t.RefreshToken, IDToken: t.IDToken, AccountID: t.AccountID,
			ExpiresAt: jwtExpiry(t.AccessToken)}
		claims := parseIDToken(t.IDToken)
		if sec.AccountID == "" {
			sec.AccountID = claims.AccountID
		}
		name := claims.Email
		if name == "" {
			name = "codex"
		}
		return a.addOrRenew(name, NewAccount{Kind: "chatgpt", Email: claims.Email}, sec)
	case auth.APIKey != nil && *auth.APIKey != "":
		return a.addOrRenew("codex-api-key", NewAccount{Kind: "openai", BaseURL: "https://api.openai.com/v1"}, Secret{APIKey: *auth.APIKey})
	}
	return AccountMeta{}, "", fmt.Errorf("%s holds neither tokens nor an API key", path)
}

// readRegularFile reads the Codex auth.json at path: a regular file of at most max bytes.
func readRegularFile(path string, max int64) ([]byte, error) {
	return readBounded(path, max, "a Codex auth.json")
}

const codexProviderID = "codexrelay"

// codexLocalKeyEnv is the variable an older provider block (env_key) had Codex read the
// relay's local key from. Codex's desktop app and IDE extensions do not inherit a shell's
// environment, so the block now carries the key itself (experimental_bearer_token) in a file
// only the user can read.
const codexLocalKeyEnv = "CODEXRELAY_API_KEY"

// keyPlaceholder stands for the local key in a block shown to be pasted (never the key itself).
const keyPlaceholder = "PASTE-THE-KEY-FROM: codexrelay local-key show"

// codexProvider is the provider table Codex Relay manages in config.toml. With the local key
// on, key is what it carries (the key, or keyPlaceholder in a block shown on screen).
func (a *App) codexProvider(key string) map[string]any {
	base := "http://" + a.codexHost() + "/v1"
	// supports_websockets: the relay serves the Responses API over WebSocket too, so that
	// Codex sends only each turn's new items instead of the whole conversation.
	//
	// supports_standalone_web_search: Codex offers its web namespace (web.run) and posts each
	// search to {base_url}/alpha/search, which the relay sends to a ChatGPT account
	// (proxy/backend.go), whether or not Codex itself is signed in.
	//
	// requires_openai_auth, with the local key and a Codex that is signed in only: Codex
	// offers image_gen (and posts to {base_url}/images/...) when this is set and it is signed
	// in with ChatGPT, while experimental_bearer_token still makes it send the relay the local
	// key, never its own login. Without a bearer token Codex would send its ChatGPT token
	// instead, and a Codex never signed in would open its TUI on the sign-in screen (and stop
	// reading the relay's model list): so the key is left out then, and Codex is exactly as
	// before, less image generation (proxy/testdata/codex-0.171/README.md, "Which block").
	// Signing Codex in later makes the dashboard and `codex-config` ask for a new write.
	//
	// name: Codex compacts a long conversation remotely (compaction v2: the backend's sealed
	// summary, as it does signed in directly) only for a provider named "OpenAI"; under any
	// other name it compacts locally, with a summary turn of its own
	// (proxy/testdata/codex-0.171/README.md, "Compaction"). The relay keeps a remote compaction
	// across a rotation (proxy/compaction.go), so the block says "OpenAI" whenever an account
	// can make one: a ChatGPT sign-in, or an API key of OpenAI's own Responses API (or Azure's).
	// A pool without one (Chat Completions servers, another Responses server, which may not
	// know the compaction request) keeps the local compaction; adding an account that can makes
	// the dashboard and `codex-config` ask for a new write, as above.
	name := "Codex Relay"
	if a.poolCompactsRemotely() {
		name = "OpenAI"
	}
	p := map[string]any{"name": name, "base_url": base, "wire_api": "responses", "model_catalog_url": base + "/models",
		"supports_websockets": true, "supports_standalone_web_search": true}
	if a.Settings().LocalAPIKey {
		p["experimental_bearer_token"] = key
		if a.codexSignedIn() {
			p["requires_openai_auth"] = true
		}
	}
	return p
}

// poolCompactsRemotely reports whether an enabled account can answer Codex's remote
// compaction: a ChatGPT sign-in, or an API key of OpenAI's (or Azure OpenAI's) Responses API.
func (a *App) poolCompactsRemotely() bool {
	for _, m := range a.Accounts() {
		if m.Disabled {
			continue
		}
		if m.Kind == string(proxy.KindChatGPT) {
			return true
		}
		u, err := url.Parse(m.BaseURL)
		if err == nil && m.API != string(proxy.APIChat) && (u.Hostname() == "api.openai.com" || strings.HasSuffix(u.Hostname(), ".openai.azure.com")) {
			return true
		}
	}
	return false
}

// codexSignedIn reports whether Codex has a login of its own in $CODEX_HOME/auth.json (a
// ChatGPT sign-in or an API key), read without the keychain: it decides requires_openai_auth.
func (a *App) codexSignedIn() bool {
	b, err := readRegularFile(filepath.Join(a.CodexHome(), "auth.json"), maxAuthFile)
	if err != nil {
		return false
	}
	var auth codexAuth
	if json.Unmarshal(b, &auth) != nil {
		return false
	}
	return auth.Tokens != nil && auth.Tokens.AccessToken != "" || auth.APIKey != nil && *auth.APIKey != ""
}

// codexHost is the relay's host:port as Codex is to reach it.
func (a *App) codexHost() string {
	host, port, err := net.SplitHostPort(a.ListenAddr())
	if err != nil {
		host, port = "127.0.0.1", "7455"
	}
	// Every address (":7455", "0.0.0.0:7455", "[::]:7455"): Codex reaches the relay on loopback.
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// providerKeyOrder lists the keys the relay manages in its table, in the order written; a key
// listed here but absent from codexProvider (env_key, from older blocks) is removed.
var providerKeyOrder = []string{"name", "base_url", "wire_api", "model_catalog_url", "supports_websockets",
	"supports_standalone_web_search", "requires_openai_auth", "experimental_bearer_token", "env_key"}

func (a *App) providerBlock(key string) string {
	p := a.codexProvider(key)
	var b strings.Builder
	b.WriteString("[model_providers." + codexProviderID + "]\n")
	for _, k := range providerKeyOrder {
		switch v := p[k].(type) {
		case string:
			fmt.Fprintf(&b, "%s = %q\n", k, v) // a TOML basic string: the values are plain ASCII
		case bool:
			fmt.Fprintf(&b, "%s = %t\n", k, v)
		}
	}
	return b.String()
}

// localKeyForCodex is the local key the written block carries ("" when the key is off).
func (a *App) localKeyForCodex() (string, error) {
	key, err := a.LocalKey()
	if err != nil {
		return "", fmt.Errorf("cannot give Codex the local key: %w", err)
	}
	return key, nil
}

// CodexConfig is the provider block for ~/.codex/config.toml, ready to paste.
// With the local key on it shows a placeholder where the key goes: `codex-config --write`
// puts the key there itself, in a file only the user can read.
func (a *App) CodexConfig() string {
	s := "model_provider = \"" + codexProviderID + "\"\n\n" + a.providerBlock(keyPlaceholder)
	if a.Settings().LocalAPIKey {
		s = "# The relay's local key is on: `codexrelay codex-config --write` writes this block with the key\n" +
			"# (config.toml is then readable by you alone), or paste it from `codexrelay local-key show`.\n" + s
	}
	return s
}

var (
	tableHeader     = regexp.MustCompile(`^\s*\[\[?\s*([^\]]*?)\s*\]\]?\s*(#.*)?$`)
	providerLine    = regexp.MustCompile(`^\s*model_provider\s*=`)
	chatgptBaseLine = regexp.MustCompile(`^\s*chatgpt_base_url\s*=`)
	keyLine         = regexp.MustCompile(`^\s*([A-Za-z0-9_-]+)\s*=`)
)

func isOurTable(name string) bool {
	name = strings.ReplaceAll(strings.ReplaceAll(name, `"`, ""), " ", "")
	return name == "model_providers."+codexProviderID
}

// mergeCodexConfig returns old with model_provider set to the relay and the relay's provider
// table replaced, every other line (comments included) as it was. Keys the user added to the
// relay's table are kept. The result is checked with a TOML parser: everything but what the
// relay manages must read back equal, or nothing is written.
//
// chatgptBase, when not "", is the chatgpt_base_url the relay manages at the top of the file
// (the relay's HTTPS ChatGPT routes); "" leaves the user's own, if any, as it is.
func (a *App) mergeCodexConfig(old, key, chatgptBase string) (string, error) {
	var before map[string]any
	if err := toml.Unmarshal([]byte(old), &before); err != nil {
		return "", fmt.Errorf("the Codex config is not valid TOML, so it was left alone: %v", err)
	}
	lines := strings.SplitAfter(old, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	var top, rest, kept []string
	inTop, inOurs := true, false
	for _, l := range lines {
		if m := tableHeader.FindStringSubmatch(strings.TrimRight(l, "\r\n")); m != nil {
			inTop = false
			inOurs = isOurTable(m[1])
			if inOurs {
				continue
			}
		}
		switch {
		case inTop:
			if !providerLine.MatchString(l) && !(chatgptBase != "" && chatgptBaseLine.MatchString(l)) {
				top = append(top, l)
			}
		case inOurs:
			if m := keyLine.FindStringSubmatch(l); m != nil && !slices.Contains(providerKeyOrder, m[1]) {
				kept = append(kept, ensureNL(l))
			}
		default:
			rest = append(rest, l)
		}
	}
	var b strings.Builder
	b.WriteString("model_provider = \"" + codexProviderID + "\"\n")
	if chatgptBase != "" {
		fmt.Fprintf(&b, "chatgpt_base_url = %q\n", chatgptBase)
	}
	for _, l := range top {
		b.WriteString(l)
	}
	out := strings.TrimRight(b.String(), "\n") + "\n"
	if len(rest) > 0 {
		out += "\n" + strings.TrimRight(strings.TrimLeft(strings.Join(rest, ""), "\n"), "\n") + "\n"
	}
	out += "\n" + a.providerBlock(key) + strings.Join(kept, "")

	var after map[string]any
	if err := toml.Unmarshal([]byte(out), &after); err != nil {
		return "", fmt.Errorf("could not merge the Codex config safely (%v); add the block by hand:\n%s", err, a.CodexConfig())
	}
	if chatgptBase != "" {
		delete(before, "chatgpt_base_url")
		delete(after, "chatgpt_base_url")
	}
	if !sameExceptRelay(before, after) {
		return "", fmt.Errorf("could not merge the Codex config without changing other settings; add the block by hand:\n%s", a.CodexConfig())
	}
	return out, nil
}

// sameExceptRelay compares two configs outside model_provider and the relay's provider table.
func sameExceptRelay(a, b map[string]any) bool {
	strip := func(m map[string]any) map[string]any {
		c := map[string]any{}
		for k, v := range m {
			if k == "model_provider" {
				continue
			}
			if k == "model_providers" {
				if ps, ok := v.(map[string]any); ok {
					pc := map[string]any{}
					for pk, pv := range ps {
						if pk != codexProviderID {
							pc[pk] = pv
						}
					}
					if len(pc) == 0 {
						continue
					}
					v = pc
				}
			}
			c[k] = v
		}
		return c
	}
	return reflect.DeepEqual(strip(a), strip(b))
}

func ensureNL(s string) string {
	if strings.HasSuffix(s, "\n") {
		return s
	}
	return s + "\n"
}

// CodexConfigWrite says what WriteCodexConfig did.
type CodexConfigWrite struct {
	Path   string  // the config file (as named; a link stays a link)
	Backup string  // the copy of the previous file, or "" when there was none or nothing changed
	Change Outcome // ConfigCreated, ConfigUpdated or Unchanged
	// Limits says whose limits Codex's /status now shows: the pool's (chatgpt_base_url is the
	// relay's), or why they stay those of the account Codex is signed in with.
	Limits string
	// Env is what the write did to Codex's .env (SSL_CERT_FILE, NO_PROXY).
	Env CodexEnvWrite
}

// Outcomes of WriteCodexConfig besides Unchanged.
const (
	ConfigCreated Outcome = "created"
	ConfigUpdated Outcome = "updated"
)

// WriteCodexConfig merges the provider block into the Codex config at path ("" =
// $CODEX_HOME/config.toml) and sets model_provider, and sets what Codex needs in the .env
// beside it (codexenv.go). A file that changes is copied to a backup first (a new name each
// time, never over an earlier backup); a file that is a symbolic link is written through it
// and stays a link. What model_provider and chatgpt_base_url held before is recorded, for
// RemoveCodexConfig.
func (a *App) WriteCodexConfig(path string) (CodexConfigWrite, error) {
	if path == "" {
		path = filepath.Join(a.CodexHome(), "config.toml")
	}
	res := CodexConfigWrite{Path: path}
	old, err := readBounded(path, maxCodexConfig, "a Codex config.toml")
	mode := os.FileMode(0o600)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		old = nil
	case err != nil:
		return res, fmt.Errorf("cannot read %s: %w", path, err)
	default:
		if st, err := os.Stat(path); err == nil {
			mode = st.Mode().Perm()
		}
	}
	// First, as it may write the settings (the loopback authority's ID), and the write that
	// creates the settings file turns the local key on.
	chatgptBase, limits, bundle, left := a.codexChatGPTBase(filepath.Dir(path))
	res.Limits = limits
	key, err := a.localKeyForCodex()
	if err != nil {
		return res, err
	}
	merged, err := a.mergeCodexConfig(string(old), key, chatgptBase)
	if err != nil {
		return res, err
	}
	stamp := a.opt.Now().UTC().Format("20060102T150405Z")
	// .env before config.toml: chatgpt_base_url is of use only to a Codex that trusts it.
	if res.Env, err = a.pointCodexEnv(filepath.Dir(path), bundle, stamp); err != nil {
		return res, err
	}
	if left != nil {
		res.Env.Left = left.Error()
	}
	if key != "" {
		// The block carries the local key: the file is the user's alone, whatever it was.
		mode = 0o600
	}
	if old != nil && merged == string(old) {
		res.Change = Unchanged
		if key != "" {
			if err := os.Chmod(path, mode); err != nil {
				return res, fmt.Errorf("%s holds the relay's local key and could not be made readable by you alone: %w", path, err)
			}
		}
		return res, nil
	}
	if err := a.recordConfigPrevious(filepath.Dir(path), old, chatgptBase); err != nil {
		return res, fmt.Errorf("cannot keep what %s held, so it was left alone: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return res, err
	}
	res.Change = ConfigCreated
	if old != nil {
		res.Change = ConfigUpdated
		res.Backup, err = createUnique(nextBackup(path, stamp),
			func(p string) error { return writeNew(p, old, 0o600) })
		if err != nil {
			return res, fmt.Errorf("could not write a backup of %s, so it was left alone: %w", path, err)
		}
	}
	if err := writeAtomic(path, []byte(merged), mode); err != nil {
		return res, err
	}
	var kept string
	if err := a.recordPrevious(filepath.Dir(path), func(h *homePrevious) {
		h.ConfigFile = traced(h.ConfigFile, old, res.Backup, []byte(merged))
		kept = h.ConfigFile.keptBackup()
	}); err != nil {
		return res, fmt.Errorf("cannot keep what %s held: %w", path, err)
	}
	if res.Backup != "" {
		pruneBackups(path, keptBackups, kept)
	}
	return res, nil
}

// recordConfigPrevious records what model_provider and chatgpt_base_url (when the write sets
// it: chatgptBase) held in old, when it was not the relay's.
func (a *App) recordConfigPrevious(codexHome string, old []byte, chatgptBase string) error {
	var cfg map[string]any
	toml.Unmarshal(old, &cfg) // mergeCodexConfig parsed it
	str := func(k string) (string, bool) { v, ok := cfg[k].(string); return v, ok }
	return a.recordPrevious(codexHome, func(h *homePrevious) {
		if old == nil {
			h.NoConfig = true
		}
		if v, ok := str("model_provider"); v != codexProviderID {
			h.Config = setPrev(h.Config, "model_provider", &prevValue{Was: valueIf(v, ok), Wrote: codexProviderID})
		}
		if chatgptBase == "" {
			return
		}
		switch v, ok := str("chatgpt_base_url"); {
		case !isRelayChatGPTBase(v):
			h.Config = setPrev(h.Config, "chatgpt_base_url", &prevValue{Was: valueIf(v, ok), Wrote: chatgptBase})
		case h.Config["chatgpt_base_url"] != nil:
			h.Config["chatgpt_base_url"].Wrote = chatgptBase // the relay moved
		}
	})
}

// keptBackups is how many backups of config.toml a write keeps: each may hold a bearer token
// (an older local key), so they are not left to pile up with every port move or new key.
const keptBackups = 3

// backupName matches the names of the backups WriteCodexConfig makes: PATH.bak-STAMP[-N].
var backupName = regexp.MustCompile(`^\.bak-(\d{8}T\d{6}Z)(?:-(\d+))?$`)

// backups lists the backups of path (regular files named as WriteCodexConfig names them),
// newest first: by their stamp, then their number.
func backups(path string) []configBackup {
	dir, base := filepath.Dir(path), filepath.Base(path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var found []configBackup
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), base)
		m := backupName.FindStringSubmatch(rest)
		if !ok || m == nil || !e.Type().IsRegular() {
			continue
		}
		n, _ := strconv.Atoi(cmpOr(m[2], "1"))
		found = append(found, configBackup{filepath.Join(dir, e.Name()), m[1], n})
	}
	slices.SortFunc(found, func(a, b configBackup) int { return cmp.Or(strings.Compare(b.stamp, a.stamp), b.n-a.n) })
	return found
}

// configBackup is one backup of config.toml.
type configBackup struct {
	path, stamp string
	n           int
}

// nextBackup is the name of the next backup of path made at stamp: numbered after those of the
// same stamp, so that a name freed by pruneBackups is never taken again (the order by number
// would then put the newest among the oldest).
func nextBackup(path, stamp string) string {
	name := path + ".bak-" + stamp
	for _, b := range backups(path) {
		if b.stamp == stamp {
			return fmt.Sprintf("%s-%d", name, b.n+1)
		}
	}
	return name
}

// pruneBackups removes the backups of path but the keep newest and the one named by except
// (the file as it was before the relay's writes: codexundo.go gives it back).
func pruneBackups(path string, keep int, except string) {
	all := backups(path)
	for _, b := range all[min(keep, len(all)):] {
		if b.path != except {
			os.Remove(b.path)
		}
	}
}
