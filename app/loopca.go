package app

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/codexrelay/codexrelay/app/looptls"
)

// The relay's loopback TLS. Codex reads its limits (/status), discovers its workspace and syncs
// its plugins at its chatgpt_base_url, which it takes only over HTTPS; pointed at the relay,
// those reads show the pool (proxy/chatgptapi.go). So each settings folder has an authority of
// its own that vouches for loopback only (looptls): its key is a keychain entry named in the
// settings (LoopbackCAID), made by the first `codex-config --write` that needs it, and its
// certificate is written to the folder for Codex to trust (codexbundle.go). Every relay of the
// folder serves TLS on its one port with a serving certificate the authority signs when the
// relay first needs it, and signs anew before it ends (looptls.RenewBefore); a relay that runs
// while the authority is made picks it up from the settings file, as it picks up any change.
// An authority made by an older version, without today's limits (looptls.Current), is
// replaced the next time the configuration is written or a relay starts.

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
// settings name) and the serving certificate it hands out.
type loopbackTLS struct {
	mu      sync.Mutex
	id      string // the authority the configuration is of
	caCert  []byte // its certificate and key (PEM), to sign the next serving certificate
	caKey   []byte
	leaf    *tls.Certificate // the serving certificate (Leaf parsed)
	cfg     *tls.Config
	renewed int // serving certificates signed since the start (tests)
}

// LoopbackTLS is the TLS configuration of the relay's port: nil while the folder has no
// authority, or when its entry cannot be read (said in the log once per authority). It is read
// at each TLS handshake: cheap once built. Its serving certificate is renewed at the first
// handshake after less than looptls.RenewBefore of it is left, so that a relay that runs for
// months never serves an expired one.
func (a *App) LoopbackTLS() *tls.Config {
	id := a.Settings().LoopbackCAID
	t := &a.tls
	t.mu.Lock()
	defer t.mu.Unlock()
	if id == "" {
		return nil
	}
	if id != t.id {
		t.id, t.caCert, t.caKey, t.leaf, t.cfg = id, nil, nil, nil, nil
		cert, key, err := a.readLoopbackCA(id)
		if err == nil {
			t.caCert, t.caKey = cert, key
			err = t.renew(a.opt.Now())
		}
		if err != nil {
			a.log.Error("the relay serves no TLS: its loopback authority cannot be read", "error", err)
			return nil
		}
		t.cfg = &tls.Config{GetCertificate: a.servingCertificate, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
	}
	return t.cfg
}

// servingCertificate is the serving certificate for a handshake (tls.Config.GetCertificate),
// signed anew when less than looptls.RenewBefore of it is left. Should that fail, the one it
// has serves on while it is valid.
func (a *App) servingCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	t := &a.tls
	t.mu.Lock()
	defer t.mu.Unlock()
	now := a.opt.Now()
	if t.leaf != nil && now.Before(t.leaf.Leaf.NotAfter.Add(-looptls.RenewBefore)) {
		return t.leaf, nil
	}
	if err := t.renew(now); err != nil {
		a.log.Error("the relay's serving certificate could not be renewed", "error", err)
		if t.leaf == nil || !now.Before(t.leaf.Leaf.NotAfter) {
			return nil, err
		}
	}
	return t.leaf, nil
}

// renew signs a new serving certificate valid from now (mu held).
func (t *loopbackTLS) renew(now time.Time) error {
	if t.caCert == nil {
		return errors.New("no loopback authority")
	}
	leaf, err := looptls.Leaf(t.caCert, t.caKey, now)
	if err != nil {
		return err
	}
	t.leaf = &leaf
	t.renewed++
	return nil
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
// in the folder, making the authority when the folder has none (or its entry is gone, or it
// lacks today's limits: looptls.Current). The certificate's file replaces whatever is at its
// path, a link included, and is never written through one.
func (a *App) EnsureLoopbackCA() (certPEM []byte, path string, err error) {
	path = filepath.Join(a.opt.ConfigDir, loopbackCAFile)
	var made string
	err = a.update(func(s *Settings) error {
		if s.LoopbackCAID != "" {
			if c, _, err := a.readLoopbackCA(s.LoopbackCAID); err == nil && looptls.Current(c) {
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
			a.opt.Keychain.Delete(loopbackCAUser(old)) // unreadable, or replaced: the settings name the new one
		}
		return nil
	})
	if err != nil {
		if made != "" {
			a.opt.Keychain.Delete(loopbackCAUser(made)) // stored, but the settings could not name it
		}
		return nil, "", err
	}
	if err := replaceFile(path, certPEM, 0o644); err != nil {
		return nil, "", err
	}
	return certPEM, path, nil
}

// codexChatGPTBase points Codex's ChatGPT origin at the relay where Codex can trust it: it makes
// the folder's loopback authority and writes the bundle of authorities Codex is to trust, which
// pointCodexEnv names in codexHome/.env (SSL_CERT_FILE: Codex reads that file at start, and
// takes a local authority from no config key). It returns the chatgpt_base_url to write ("" when
// Codex keeps its own), in a sentence whose limits Codex's /status then shows, the bundle's path
// ("" when there is none) and why a file of authorities Codex trusted before was left out of it.
func (a *App) codexChatGPTBase(codexHome string) (base, limits, bundle string, left error) {
	own := "Codex's /status shows the limits of the account Codex is signed in with, not the pool's: "
	if _, err := os.Stat(a.SettingsPath()); err != nil {
		// No settings yet, and so no account to pool: the write that would create them (the
		// authority's ID) would also turn the local key on, unasked.
		return "", own + "Codex Relay has no settings yet (add an account, then write the configuration again)", "", nil
	}
	extra := a.previousCertFiles()
	if d, err := readDotenv(filepath.Join(codexHome, ".env")); err == nil {
		if v, ok := d.get(envCertFile); ok {
			extra = append(extra, v) // a bundle of the user's own (the relay's is left out)
		}
	}
	ca, _, err := a.EnsureLoopbackCA()
	if err == nil {
		bundle, _, left, err = a.buildBundle(ca, extra)
	}
	if err != nil {
		return "", own + err.Error(), "", nil
	}
	return "https://" + a.codexHost() + "/backend-api/", "Codex's /status shows the pool's limits: its ChatGPT origin is the relay " +
		"(chatgpt_base_url), whose loopback certificate it trusts through SSL_CERT_FILE", bundle, left
}
