package app

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/codexrelay/codexrelay/app/looptls"
)

// The relay's loopback TLS. Codex reads its limits (/status), discovers its workspace and syncs
// its plugins at its chatgpt_base_url, which it takes only over HTTPS; pointed at the relay,
// those reads show the pool (proxy/chatgptapi.go). So each settings folder has an authority of
// its own that vouches for loopback only (looptls): its key is a keychain entry named in the
// settings (LoopbackCAID), made by the first `codex-config --write` that needs it, and its
// certificate is written to the folder for Codex to trust (loopbackBundle). Every relay of the
// folder serves TLS on its one port with a serving certificate the authority signs when the
// relay first needs it; a relay that runs while the authority is made picks it up from the
// settings file, as it picks up any change.

// loopbackCAUser is the keychain entry of the loopback authority with the given ID.
func loopbackCAUser(id string) string { return "loopback-ca/" + id }

// loopbackCAEntry is the secret of the authority's keychain entry (Keychain.Set adds the folder).
type loopbackCAEntry struct {
	Cert string `json:"cert"`
	Key  string `json:"key"`
}

// loopbackCAFile is the authority's certificate in the settings folder (not a secret).
const loopbackCAFile = "loopback-ca.pem"

// loopbackTLS is the TLS configuration a relay of the folder serves (a cache of the one the
// settings name).
type loopbackTLS struct {
	mu  sync.Mutex
	id  string // the authority the configuration is of
	cfg *tls.Config
	err error
}

// LoopbackTLS is the TLS configuration of the relay's port: nil while the folder has no
// authority, or when its entry cannot be read (said in the log once per authority). It is read
// at each TLS handshake: cheap once built.
func (a *App) LoopbackTLS() *tls.Config {
	id := a.Settings().LoopbackCAID
	t := &a.tls
	t.mu.Lock()
	defer t.mu.Unlock()
	if id == "" {
		return nil
	}
	if id != t.id {
		t.id, t.cfg, t.err = id, nil, nil
		cert, key, err := a.readLoopbackCA(id)
		if err == nil {
			var leaf tls.Certificate
			if leaf, err = looptls.Leaf(cert, key, a.opt.Now()); err == nil {
				t.cfg = &tls.Config{Certificates: []tls.Certificate{leaf}, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
			}
		}
		if err != nil {
			t.err = err
			a.log.Error("the relay serves no TLS: its loopback authority cannot be read", "error", err)
		}
	}
	return t.cfg
}

func (a *App) readLoopbackCA(id string) (cert, key []byte, err error) {
	v, err := a.opt.Keychain.Get(loopbackCAUser(id))
	if err != nil {
		return nil, nil, err
	}
	var e loopbackCAEntry
	if json.Unmarshal([]byte(v), &e) != nil || e.Cert == "" || e.Key == "" {
		return nil, nil, errors.New("its keychain entry is damaged")
	}
	return []byte(e.Cert), []byte(e.Key), nil
}

// EnsureLoopbackCA returns the folder's loopback authority's certificate (PEM), and its path
// in the folder, making the authority when the folder has none (or its entry is gone).
func (a *App) EnsureLoopbackCA() (certPEM []byte, path string, err error) {
	path = filepath.Join(a.opt.ConfigDir, loopbackCAFile)
	var made string
	err = a.update(func(s *Settings) error {
		if s.LoopbackCAID != "" {
			if c, _, err := a.readLoopbackCA(s.LoopbackCAID); err == nil {
				certPEM = c
				return errNoChange
			}
		}
		c, k, err := looptls.NewCA(a.opt.Now())
		if err != nil {
			return err
		}
		id := newID()
		secret, _ := json.Marshal(loopbackCAEntry{Cert: string(c), Key: string(k)})
		if err := a.opt.Keychain.Set(loopbackCAUser(id), string(secret)); err != nil {
			return fmt.Errorf("cannot keep the relay's loopback TLS authority in the keychain: %w", err)
		}
		old := s.LoopbackCAID
		s.LoopbackCAID, certPEM, made = id, c, id
		if old != "" {
			a.opt.Keychain.Delete(loopbackCAUser(old)) // unreadable anyway
		}
		return nil
	})
	if err != nil {
		if made != "" {
			a.opt.Keychain.Delete(loopbackCAUser(made)) // stored, but the settings could not name it
		}
		return nil, "", err
	}
	if err := writeAtomic(path, certPEM, 0o644); err != nil {
		return nil, "", err
	}
	return certPEM, path, nil
}

// systemRoots are the files where this system keeps its trusted authorities (Go's list for
// Linux and the BSDs; macOS keeps a copy at /etc/ssl/cert.pem).
var systemRoots = []string{
	"/etc/ssl/certs/ca-certificates.crt",
	"/etc/pki/tls/certs/ca-bundle.crt",
	"/etc/ssl/ca-bundle.pem",
	"/etc/pki/tls/cacert.pem",
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
	"/etc/ssl/cert.pem",
}

// loopbackBundleFile is the authorities Codex trusts once pointed at the relay (SSL_CERT_FILE
// in $CODEX_HOME/.env): the system's, what Codex trusted before, and the loopback authority.
const loopbackBundleFile = "codex-ca-bundle.pem"

// errNoSystemRoots: no file of the system's authorities to build Codex's bundle from.
var errNoSystemRoots = errors.New("this system keeps its trusted authorities in no file Codex could read beside the relay's (Windows, or an unusual Linux)")

// loopbackBundle writes the bundle Codex is to trust: the system's authorities, those of
// extra (a file Codex was told to trust before, "" for none), and the loopback authority's
// certificate. It returns the bundle's path.
func (a *App) loopbackBundle(caPEM []byte, extra string) (string, error) {
	if runtime.GOOS == "windows" {
		return "", errNoSystemRoots
	}
	var roots []byte
	for _, f := range systemRoots {
		if b, err := os.ReadFile(f); err == nil && len(b) > 0 {
			roots = b
			break
		}
	}
	if roots == nil {
		return "", errNoSystemRoots
	}
	path := filepath.Join(a.opt.ConfigDir, loopbackBundleFile)
	out := append(ensureNLBytes(roots), ensureNLBytes(readIfOther(extra, path))...)
	out = append(out, ensureNLBytes(caPEM)...)
	return path, writeAtomic(path, out, 0o644)
}

// readIfOther is the content of file f ("" and the bundle itself read as nothing: a bundle
// is not built from itself).
func readIfOther(f, bundle string) []byte {
	if f == "" || filepath.Clean(f) == filepath.Clean(bundle) {
		return nil
	}
	b, _ := os.ReadFile(f)
	return b
}

func ensureNLBytes(b []byte) []byte {
	if len(b) > 0 && b[len(b)-1] != '\n' {
		return append(b, '\n')
	}
	return b
}

// loopbackPrevFile records the SSL_CERT_FILE Codex's .env named before the relay's bundle
// (its authorities stay in the bundle); not a secret.
const loopbackPrevFile = "codex-ca-previous"

// codexChatGPTBase points Codex's ChatGPT origin at the relay where Codex can trust it: it makes
// the folder's loopback authority, writes the bundle of authorities Codex is to trust and
// names it in codexHome/.env (SSL_CERT_FILE: Codex reads that file at start, and takes a local
// authority from no config key). It returns the chatgpt_base_url to write ("" when Codex
// keeps its own) and, in a sentence, whose limits Codex's /status then shows.
func (a *App) codexChatGPTBase(codexHome string) (base, limits string) {
	own := "Codex's /status shows the limits of the account Codex is signed in with, not the pool's: "
	if _, err := os.Stat(a.SettingsPath()); err != nil {
		// No settings yet, and so no account to pool: the write that would create them (the
		// authority's ID) would also turn the local key on, unasked.
		return "", own + "Codex Relay has no settings yet (add an account, then write the configuration again)"
	}
	ca, _, err := a.EnsureLoopbackCA()
	if err != nil {
		return "", own + err.Error()
	}
	envPath := filepath.Join(codexHome, ".env")
	prevPath := filepath.Join(a.opt.ConfigDir, loopbackPrevFile)
	bundlePath := filepath.Join(a.opt.ConfigDir, loopbackBundleFile)
	prev := dotenvValue(envPath, "SSL_CERT_FILE")
	if prev != "" && filepath.Clean(prev) != filepath.Clean(bundlePath) {
		writeAtomic(prevPath, []byte(prev+"\n"), 0o644) // a bundle of the user's own: kept in ours
	} else if b, err := os.ReadFile(prevPath); err == nil {
		prev = strings.TrimSpace(string(b))
	}
	bundle, err := a.loopbackBundle(ca, prev)
	if err == nil {
		err = setDotenv(envPath, "SSL_CERT_FILE", bundle)
	}
	if err != nil {
		return "", own + err.Error()
	}
	return "https://" + a.codexHost() + "/backend-api/", "Codex's /status shows the pool's limits: its ChatGPT origin is the relay " +
		"(chatgpt_base_url), whose loopback certificate it trusts through SSL_CERT_FILE in " + envPath
}

// dotenvLine matches a KEY=VALUE line of a .env file for key (export allowed).
func dotenvLine(key string) *regexp.Regexp {
	return regexp.MustCompile(`^\s*(?:export\s+)?` + regexp.QuoteMeta(key) + `\s*=\s*(.*?)\s*$`)
}

// dotenvValue is key's value in the .env file at path ("" when unset).
func dotenvValue(path, key string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	re := dotenvLine(key)
	for _, l := range strings.Split(string(b), "\n") {
		if m := re.FindStringSubmatch(strings.TrimRight(l, "\r")); m != nil {
			return strings.Trim(m[1], `"'`)
		}
	}
	return ""
}

// setDotenv sets key to value in the .env file at path, every other line as it was.
func setDotenv(path, key, value string) error {
	line := key + "='" + value + "'" // single quotes: taken as they are
	if strings.Contains(value, "'") {
		line = key + "=" + strconv.Quote(value)
	}
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	mode := os.FileMode(0o600)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	re := dotenvLine(key)
	lines := strings.SplitAfter(string(b), "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	found := false
	for i, l := range lines {
		if re.MatchString(strings.TrimRight(l, "\r\n")) {
			lines[i], found = line+"\n", true
		}
	}
	if !found {
		if len(lines) > 0 {
			lines[len(lines)-1] = ensureNL(lines[len(lines)-1])
		}
		lines = append(lines, line+"\n")
	}
	out := strings.Join(lines, "")
	if out == string(b) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return writeAtomic(path, []byte(out), mode)
}
