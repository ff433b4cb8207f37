package app

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// Undoing what pointing Codex at the relay did (`codexrelay codex-config --remove`, the
// Settings window's button). Each write records, per Codex home, what the values it replaces
// held before (codexPreviousFile): in config.toml model_provider and chatgpt_base_url, in .env
// SSL_CERT_FILE and NO_PROXY. RemoveCodexConfig takes out what the relay wrote and puts those
// back, and leaves everything else as the user has it now, whatever they changed since: the
// relay's provider table goes, model_provider and chatgpt_base_url return to what they were
// (or go) only while they still name the relay, SSL_CERT_FILE only while it names the relay's
// bundle, and NO_PROXY loses only the entries the relay added. Each file is backed up before
// it changes, as a write backs it up.

// codexPreviousFile records what the writes replaced (settings folder, readable by the user
// alone: the values are paths and hosts, never a secret).
const codexPreviousFile = "codex-previous.json"

// legacyPrevFile is where an older version kept the SSL_CERT_FILE its write replaced.
const legacyPrevFile = "codex-ca-previous"

// maxCodexConfig bounds Codex's config.toml (and the record).
const maxCodexConfig = 4 << 20

// codexPrevious is the record: what each Codex home held before the relay's writes.
type codexPrevious struct {
	Homes map[string]*homePrevious `json:"homes"`
}

// homePrevious is what one Codex home held: config.toml's and .env's values by name.
type homePrevious struct {
	Config map[string]*prevValue `json:"config,omitempty"`
	Env    map[string]*prevValue `json:"env,omitempty"`
	// NoEnv and NoConfig say that there was no .env, no config.toml, before the relay created
	// one.
	NoEnv    bool `json:"no_env,omitempty"`
	NoConfig bool `json:"no_config,omitempty"`
	// ConfigFile and EnvFile trace each file across the relay's writes, so that an undo with
	// nothing else changed since gives the file back byte for byte.
	ConfigFile *fileTrace `json:"config_file,omitempty"`
	EnvFile    *fileTrace `json:"env_file,omitempty"`
}

// fileTrace is one file across a run of the relay's writes with no other change between them:
// what it held before the first (its digest, and the backup holding it) and what the last left.
type fileTrace struct {
	Before string `json:"before"`           // SHA-256 of the file before the first write ("": there was none)
	Backup string `json:"backup,omitempty"` // the backup that holds it
	Wrote  string `json:"wrote"`            // SHA-256 of what the last write left
}

// digest is the hex SHA-256 of b.
func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// traced is the trace after a write that found old (nil: no file), kept it in backup and left
// now: a write over the previous write's own file continues its run, any other starts one.
func traced(t *fileTrace, old []byte, backup string, now []byte) *fileTrace {
	if t != nil && old != nil && digest(old) == t.Wrote {
		return &fileTrace{Before: t.Before, Backup: t.Backup, Wrote: digest(now)}
	}
	n := &fileTrace{Backup: backup, Wrote: digest(now)}
	if old != nil {
		n.Before = digest(old)
	}
	return n
}

// original is what the file held before the relay's writes, when the file is still what the
// last of them left (cur: its bytes now): ok says whether it can be given back, and none that
// there was no file.
func (t *fileTrace) original(cur []byte) (b []byte, none, ok bool) {
	if t == nil || digest(cur) != t.Wrote {
		return nil, false, false
	}
	if t.Before == "" {
		return nil, true, true
	}
	b, err := readBounded(t.Backup, maxCodexConfig, "a backup")
	if err != nil || digest(b) != t.Before {
		return nil, false, false
	}
	return b, false, true
}

// keptBackup is the backup of a traced file that pruning must leave ("": none).
func (t *fileTrace) keptBackup() string {
	if t == nil {
		return ""
	}
	return t.Backup
}

// prevValue is one value the relay replaced.
type prevValue struct {
	Was   *string `json:"was"`   // the value before the relay's (nil: it was not set)
	Wrote string  `json:"wrote"` // the value the relay wrote
}

// setPrev records p for key in m (made when nil).
func setPrev(m map[string]*prevValue, key string, p *prevValue) map[string]*prevValue {
	if m == nil {
		m = map[string]*prevValue{}
	}
	m[key] = p
	return m
}

// homeKey is a Codex home as the record names it.
func homeKey(home string) string {
	if abs, err := filepath.Abs(home); err == nil {
		return abs
	}
	return filepath.Clean(home)
}

// readPrevious reads the record (an empty one when there is none).
func (a *App) readPrevious() (codexPrevious, error) {
	var p codexPrevious
	b, err := readBounded(filepath.Join(a.opt.ConfigDir, codexPreviousFile), maxCodexConfig, "the record of Codex's previous settings")
	if errors.Is(err, fs.ErrNotExist) {
		return codexPrevious{Homes: map[string]*homePrevious{}}, nil
	}
	if err == nil {
		err = json.Unmarshal(b, &p)
	}
	if p.Homes == nil {
		p.Homes = map[string]*homePrevious{}
	}
	return p, err
}

// previousOf is what the record says codexHome held (empty when nothing).
func (a *App) previousOf(codexHome string) homePrevious {
	p, _ := a.readPrevious()
	if h := p.Homes[homeKey(codexHome)]; h != nil {
		return *h
	}
	return homePrevious{}
}

// recordPrevious changes the record of codexHome, under the settings lock (other programs of
// the folder write it too); a home left with nothing is dropped, and a record with no home
// removed.
func (a *App) recordPrevious(codexHome string, change func(*homePrevious)) error {
	if err := os.MkdirAll(a.opt.ConfigDir, 0o700); err != nil {
		return err
	}
	unlock, err := lockFile(filepath.Join(a.opt.ConfigDir, settingsLockName), lockWait)
	if err != nil {
		return err
	}
	defer unlock()
	p, err := a.readPrevious()
	if err != nil {
		// A damaged record holds nothing to keep: it is started anew.
		p = codexPrevious{Homes: map[string]*homePrevious{}}
	}
	key := homeKey(codexHome)
	h := p.Homes[key]
	if h == nil {
		h = &homePrevious{}
	}
	change(h)
	if len(h.Config)+len(h.Env) == 0 && !h.NoEnv && !h.NoConfig && h.ConfigFile == nil && h.EnvFile == nil {
		delete(p.Homes, key)
	} else {
		p.Homes[key] = h
	}
	path := filepath.Join(a.opt.ConfigDir, codexPreviousFile)
	if len(p.Homes) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	b, _ := json.MarshalIndent(p, "", "  ")
	return replaceFile(path, append(b, '\n'), 0o600)
}

// previousCertFiles are the files of authorities Codex trusted before the relay's bundle, in
// every Codex home the relay configured (their authorities stay in the bundle).
func (a *App) previousCertFiles() []string {
	var files []string
	p, _ := a.readPrevious()
	for _, h := range p.Homes {
		if v := h.Env[envCertFile]; v != nil && v.Was != nil {
			files = append(files, *v.Was)
		}
	}
	if b, err := readBounded(filepath.Join(a.opt.ConfigDir, legacyPrevFile), 4096, "a file name"); err == nil {
		files = append(files, strings.TrimSpace(string(b)))
	}
	slices.Sort(files)
	return slices.Compact(files)
}

// isRelayChatGPTBase says whether v is a chatgpt_base_url the relay writes: HTTPS to a loopback
// address, under /backend-api/.
func isRelayChatGPTBase(v string) bool {
	u, err := url.Parse(v)
	if err != nil || u.Scheme != "https" || u.Path != "/backend-api/" {
		return false
	}
	ip := net.ParseIP(u.Hostname())
	return u.Hostname() == "localhost" || ip != nil && ip.IsLoopback()
}

// CodexConfigRemoval says what RemoveCodexConfig did.
type CodexConfigRemoval struct {
	Path   string   // config.toml
	Backup string   // its copy before the change ("" when it did not change)
	Config []string // what changed in it, a phrase each
	// Restored: the file was still what the relay's writes left, and is again, byte for byte,
	// what it was before them. Deleted: the same, where there was no file before.
	Restored, Deleted bool
	Env               CodexEnvRemoval
}

// CodexEnvRemoval says what RemoveCodexConfig did to Codex's .env.
type CodexEnvRemoval struct {
	Path              string
	Backup            string   // its copy before the change ("" when it did not change)
	Changes           []string // a phrase each
	Restored, Deleted bool     // as CodexConfigRemoval's
}

// Changed says whether anything was undone.
func (r CodexConfigRemoval) Changed() bool { return len(r.Config)+len(r.Env.Changes) > 0 }

// Lines says what the removal did, a line a file, its paths shown by show (nil: as they are).
func (r CodexConfigRemoval) Lines(show func(string) string) []string {
	if show == nil {
		show = func(p string) string { return p }
	}
	if !r.Changed() {
		return []string{"Nothing to undo: " + show(r.Path) + " and " + show(r.Env.Path) + " hold nothing of Codex Relay's."}
	}
	var out []string
	say := func(path, backup string, changes []string, restored, deleted bool) {
		switch {
		case len(changes) == 0:
		case deleted:
			out = append(out, "Removed "+show(path)+", which Codex Relay had created and nothing else had changed (a copy is saved as "+show(backup)+").")
		case restored:
			out = append(out, "Put "+show(path)+" back as it was before Codex Relay changed it, byte for byte (Codex Relay's version is saved as "+
				show(backup)+"): "+strings.Join(changes, "; ")+".")
		default:
			out = append(out, "Updated "+show(path)+" (the previous version is saved as "+show(backup)+"): "+strings.Join(changes, "; ")+".")
		}
	}
	say(r.Path, r.Backup, r.Config, r.Restored, r.Deleted)
	say(r.Env.Path, r.Env.Backup, r.Env.Changes, r.Env.Restored, r.Env.Deleted)
	return out
}

// RemoveCodexConfig undoes what pointing Codex at the relay did to the Codex config at path (""
// = $CODEX_HOME/config.toml) and to the .env beside it, and says what it changed; run again, it
// finds nothing to undo. A file that changes is backed up first. A file still as the relay's
// writes left it is given back byte for byte as it was before them (and one the relay created
// goes again); a file changed since keeps every change, and is never deleted.
func (a *App) RemoveCodexConfig(path string) (CodexConfigRemoval, error) {
	if path == "" {
		path = filepath.Join(a.CodexHome(), "config.toml")
	}
	home := filepath.Dir(path)
	r := CodexConfigRemoval{Path: path, Env: CodexEnvRemoval{Path: filepath.Join(home, ".env")}}
	prev := a.previousOf(home)
	stamp := a.opt.Now().UTC().Format("20060102T150405Z")
	if err := a.removeFromConfig(&r, prev, stamp); err != nil {
		return r, err
	}
	if err := a.removeFromEnv(&r.Env, prev, stamp); err != nil {
		return r, err
	}
	if len(prev.Config)+len(prev.Env) > 0 || prev.NoEnv || prev.NoConfig || prev.ConfigFile != nil || prev.EnvFile != nil {
		if err := a.recordPrevious(home, func(h *homePrevious) { *h = homePrevious{} }); err != nil {
			return r, err
		}
	}
	if err := os.Remove(filepath.Join(a.opt.ConfigDir, legacyPrevFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return r, err
	}
	return r, nil
}

// providerFields are the keys a Codex provider table takes (Codex 0.171's ModelProviderInfo):
// a key of these the user added to the relay's table is the provider's, and goes with it.
var providerFields = []string{"name", "base_url", "env_key", "env_key_instructions", "experimental_bearer_token", "wire_api",
	"query_params", "http_headers", "env_http_headers", "request_max_retries", "stream_max_retries", "stream_idle_timeout_ms",
	"websocket_connect_timeout_ms", "requires_openai_auth", "supports_websockets", "supports_standalone_web_search",
	"model_catalog_url", "auth", "aws", "credential_file"}

// tomlKeyLine matches a line that sets a key (bare or quoted, maybe dotted), the key's first
// part in the match.
var tomlKeyLine = regexp.MustCompile(`^\s*([A-Za-z0-9_-]+|"[^"]*"|'[^']*')\s*[.=]`)

// isOurSubTable says whether a table header names a table under the relay's provider
// ([model_providers.codexrelay.http_headers]).
func isOurSubTable(name string) bool {
	name = strings.ReplaceAll(strings.ReplaceAll(strings.ReplaceAll(name, `"`, ""), "'", ""), " ", "")
	return strings.HasPrefix(name, "model_providers."+codexProviderID+".")
}

// removeFromConfig undoes the relay's writes to config.toml. Still as they left it, the file is
// given back as it was before them. Otherwise the relay's provider table goes (with the tables
// under it, which would be left a provider without a name or base_url, which Codex refuses),
// model_provider and chatgpt_base_url come back, while they name the relay, and every other
// line stays as it is; a key the user appended after the relay's table that is no provider's
// (TOML reads it as the table's) moves to the top of the file, where it was meant. The file is
// not deleted then, even if nothing is left in it.
func (a *App) removeFromConfig(r *CodexConfigRemoval, prev homePrevious, stamp string) error {
	path := r.Path
	old, err := readBounded(path, maxCodexConfig, "a Codex config.toml")
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var before map[string]any
	if err := toml.Unmarshal(old, &before); err != nil {
		return fmt.Errorf("%s is not valid TOML, so it was left alone: %v", path, err)
	}
	was := func(key string) *string { // what it held before the relay
		if v := prev.Config[key]; v != nil {
			return v.Was
		}
		return fromBackups(path, key)
	}
	ourKeys := map[string]any{}
	if ps, ok := before["model_providers"].(map[string]any); ok {
		ourKeys, _ = ps[codexProviderID].(map[string]any)
	}
	topKeys := map[string]bool{}
	for k, v := range before {
		if _, table := v.(map[string]any); !table {
			topKeys[k] = true
		}
	}
	var changes []string
	var top, rest, moved []string // the lines before the first table, those after, the keys moved to the top
	var movedKeys, dropped []string
	inTop, inOurs, inSub, moving := true, false, false, false
	for _, l := range strings.SplitAfter(string(old), "\n") {
		if m := tableHeader.FindStringSubmatch(strings.TrimRight(l, "\r\n")); m != nil {
			inTop, inOurs, inSub, moving = false, isOurTable(m[1]) || isOurSubTable(m[1]), isOurSubTable(m[1]), false
			switch {
			case isOurTable(m[1]):
				changes = append(changes, "removed the [model_providers."+codexProviderID+"] table")
				continue
			case inOurs:
				changes = append(changes, "removed the ["+m[1]+"] table with the relay's provider (a provider without it has no name or base_url, which Codex refuses)")
				continue
			}
		}
		switch {
		case inOurs:
			if m := tomlKeyLine.FindStringSubmatch(l); m != nil && !inSub {
				key := strings.Trim(m[1], `"'`)
				moving = !slices.Contains(providerKeyOrder, key) && !slices.Contains(providerFields, key)
				switch {
				case moving && topKeys[key]:
					moving, dropped = false, append(dropped, key)
				case moving:
					movedKeys, topKeys[key] = append(movedKeys, key), true
				}
			}
			if moving {
				moved = append(moved, ensureNL(l))
			}
			continue
		case inTop && providerLine.MatchString(l) && lineValue(l) == codexProviderID:
			if w := was("model_provider"); w != nil {
				top = append(top, fmt.Sprintf("model_provider = %q\n", *w))
				changes = append(changes, fmt.Sprintf("model_provider is %q again", *w))
			} else {
				changes = append(changes, "removed model_provider (Codex uses its own provider, openai)")
			}
			continue
		case inTop && chatgptBaseLine.MatchString(l) && isRelayChatGPTBase(lineValue(l)):
			if w := was("chatgpt_base_url"); w != nil && !isRelayChatGPTBase(*w) {
				top = append(top, fmt.Sprintf("chatgpt_base_url = %q\n", *w))
				changes = append(changes, fmt.Sprintf("chatgpt_base_url is %q again", *w))
			} else {
				changes = append(changes, "removed chatgpt_base_url (Codex reaches ChatGPT itself)")
			}
			continue
		case inTop:
			top = append(top, l)
		default:
			rest = append(rest, l)
		}
	}
	if len(changes) == 0 {
		return nil
	}
	if len(movedKeys) > 0 {
		changes = append(changes, "kept "+strings.Join(movedKeys, ", ")+", which you added after the relay's table (where TOML reads it as the table's), "+
			"at the top of the file")
	}
	if len(dropped) > 0 {
		changes = append(changes, "left out "+strings.Join(dropped, ", ")+" of the relay's table, which the top of the file sets already (the backup has it)")
	}
	mode := os.FileMode(0o600)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	backup := func() error {
		b, err := createUnique(nextBackup(path, stamp), func(p string) error { return writeNew(p, old, 0o600) })
		if err != nil {
			return fmt.Errorf("could not write a backup of %s, so it was left alone: %w", path, err)
		}
		r.Config, r.Backup = changes, b
		return nil
	}
	if orig, none, ok := prev.ConfigFile.original(old); ok {
		// Nothing else changed since the relay's writes: the file is given back as it was.
		if err := backup(); err != nil {
			return err
		}
		if none {
			r.Deleted = true
			return os.Remove(path)
		}
		r.Restored = true
		if err := writeAtomic(path, orig, mode); err != nil {
			return err
		}
		pruneBackups(path, keptBackups, "")
		return nil
	}
	head := strings.Join(top, "")
	if len(moved) > 0 {
		head = strings.TrimRight(head, "\n")
		if head != "" {
			head += "\n"
		}
		head += strings.TrimRight(strings.Join(moved, ""), "\n") + "\n"
		if len(rest) > 0 {
			head += "\n"
		}
	}
	merged := strings.TrimLeft(strings.TrimRight(head+strings.Join(rest, ""), "\n"), "\n") + "\n"
	if strings.TrimSpace(merged) == "" {
		merged = ""
	}
	var after map[string]any
	if err := toml.Unmarshal([]byte(merged), &after); err != nil {
		return fmt.Errorf("could not take the relay out of %s safely (%v), so it was left alone", path, err)
	}
	for _, k := range []string{"model_provider", "chatgpt_base_url"} {
		delete(before, k)
		delete(after, k)
	}
	for _, k := range movedKeys {
		before[k] = ourKeys[k]
	}
	if !sameExceptRelay(before, after) {
		return fmt.Errorf("could not take the relay out of %s without changing other settings, so it was left alone", path)
	}
	if err := backup(); err != nil {
		return err
	}
	if err := writeAtomic(path, []byte(merged), mode); err != nil {
		return err
	}
	pruneBackups(path, keptBackups, "")
	return nil
}

// lineValue is the string value of a one-line TOML assignment ("" when it is none).
func lineValue(l string) string {
	var m map[string]any
	if toml.Unmarshal([]byte(l), &m) != nil {
		return ""
	}
	for _, v := range m {
		s, _ := v.(string)
		return s
	}
	return ""
}

// fromBackups is what key held in the newest backup of the config at path that does not name
// the relay's provider (a write of an older version recorded nothing); nil when none says.
func fromBackups(path, key string) *string {
	for _, b := range backups(path) {
		data, err := readBounded(b.path, maxCodexConfig, "a backup of config.toml")
		var cfg map[string]any
		if err != nil || toml.Unmarshal(data, &cfg) != nil || cfg["model_provider"] == codexProviderID {
			continue
		}
		if v, ok := cfg[key].(string); ok {
			return &v
		}
		return nil
	}
	return nil
}

// removeFromEnv takes SSL_CERT_FILE (while it names the relay's bundle) and the NO_PROXY
// entries the relay added out of Codex's .env, putting back what they held.
func (a *App) removeFromEnv(r *CodexEnvRemoval, prev homePrevious, stamp string) error {
	d, err := readDotenv(r.Path)
	if err != nil {
		return fmt.Errorf("cannot read Codex's %s, so it was left alone: %w", r.Path, err)
	}
	if !d.exists {
		return nil
	}
	bundle := filepath.Join(a.opt.ConfigDir, loopbackBundleFile)
	if v, ok := d.get(envCertFile); ok && filepath.Clean(v) == filepath.Clean(bundle) {
		var was *string
		if p := prev.Env[envCertFile]; p != nil {
			was = p.Was
		} else if b, err := readBounded(filepath.Join(a.opt.ConfigDir, legacyPrevFile), 4096, "a file name"); err == nil {
			w := strings.TrimSpace(string(b))
			was = &w
		}
		if was != nil {
			d.set(envCertFile, *was)
			r.Changes = append(r.Changes, "SSL_CERT_FILE names "+*was+" again")
		} else {
			d.unset(envCertFile)
			r.Changes = append(r.Changes, "removed SSL_CERT_FILE")
		}
	}
	if v, ok := d.get(envNoProxy); ok {
		entries := splitNoProxy(v)
		var added []string // what the relay added
		if p := prev.Env[envNoProxy]; p != nil {
			was := []string{}
			if p.Was != nil {
				was = splitNoProxy(*p.Was)
			}
			for _, e := range splitNoProxy(p.Wrote) {
				if !slices.Contains(was, e) {
					added = append(added, e)
				}
			}
		} else if !slices.ContainsFunc(entries, func(e string) bool { return !slices.Contains(loopbackNoProxy, e) }) {
			added = entries // no record: only a value of nothing but loopback is taken for the relay's
		}
		left := slices.DeleteFunc(slices.Clone(entries), func(e string) bool { return slices.Contains(added, e) })
		switch {
		case len(left) == len(entries):
		case len(left) == 0 && (prev.Env[envNoProxy] == nil || prev.Env[envNoProxy].Was == nil):
			d.unset(envNoProxy)
			r.Changes = append(r.Changes, "removed NO_PROXY")
		default:
			d.set(envNoProxy, strings.Join(left, ","))
			r.Changes = append(r.Changes, "NO_PROXY is "+strings.Join(left, ",")+" again")
		}
	}
	if !d.changed() {
		return nil
	}
	if orig, none, ok := prev.EnvFile.original(d.old); ok {
		// Nothing else changed since the relay's writes: the file is given back as it was.
		r.Backup, err = createUnique(nextBackup(r.Path, stamp), func(p string) error { return writeNew(p, d.old, 0o600) })
		if err != nil {
			return fmt.Errorf("could not write a backup of %s, so it was left alone: %w", r.Path, err)
		}
		if none {
			r.Deleted = true
			return os.Remove(r.Path)
		}
		r.Restored = true
		if err := writeAtomic(r.Path, orig, d.mode); err != nil {
			return err
		}
		pruneBackups(r.Path, keptBackups, "")
		return nil
	}
	r.Backup, err = d.save(stamp, "")
	return err
}
