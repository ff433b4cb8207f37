package app

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Codex's .env ($CODEX_HOME/.env), which Codex loads at its start into its own environment,
// and so into that of every command it runs. Pointing Codex at the relay sets two variables
// there, after a backup of the file, and says so where the user looks (the first-run card, the
// dashboard's Configure, `codex-config --write`):
//
//   - SSL_CERT_FILE names the bundle of authorities (codexbundle.go) that has the relay's
//     loopback authority, so that Codex trusts the relay's HTTPS ChatGPT origin
//     (chatgpt_base_url);
//   - NO_PROXY gets 127.0.0.1, localhost and ::1 beside what it held, so that Codex reaches the
//     relay directly where a system proxy is set (Codex's desktop app on Windows sent loopback
//     through it: cc-switch #5693).
//
// What each held before is recorded (codexundo.go), and `codex-config --remove` puts it back.
// The file is read only when it is a regular file of at most maxDotenv bytes; a link is written
// through (as config.toml is: a dotfile manager's link stays a link), and the file keeps its
// mode (0600 when it is new: it may hold keys).

// maxDotenv bounds Codex's .env.
const maxDotenv = 1 << 20

// loopbackNoProxy are the NO_PROXY entries that keep Codex's way to the relay off any proxy.
var loopbackNoProxy = []string{"127.0.0.1", "localhost", "::1"}

// The variables the relay sets in Codex's .env.
const (
	envCertFile = "SSL_CERT_FILE"
	envNoProxy  = "NO_PROXY"
)

// dotenv is a .env file as read: its lines, edited in place, every other line kept as it was.
type dotenv struct {
	path   string
	old    []byte // the file as read (nil: there was none)
	lines  []string
	mode   fs.FileMode
	exists bool
}

// readDotenv reads the .env file at path (none is an empty one).
func readDotenv(path string) (*dotenv, error) {
	d := &dotenv{path: path, mode: 0o600}
	b, err := readBounded(path, maxDotenv, "a .env file")
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return d, nil
	case err != nil:
		return nil, err
	}
	d.old, d.exists = b, true
	if st, err := os.Stat(path); err == nil {
		d.mode = st.Mode().Perm()
	}
	d.lines = strings.SplitAfter(string(b), "\n")
	if d.lines[len(d.lines)-1] == "" {
		d.lines = d.lines[:len(d.lines)-1]
	}
	return d, nil
}

// dotenvLine matches a KEY=VALUE line of a .env file for key (export allowed).
func dotenvLine(key string) *regexp.Regexp {
	return regexp.MustCompile(`^\s*(?:export\s+)?` + regexp.QuoteMeta(key) + `\s*=\s*(.*?)\s*$`)
}

// get is key's value (quotes taken off) and whether a line sets it.
func (d *dotenv) get(key string) (string, bool) {
	re := dotenvLine(key)
	for _, l := range d.lines {
		if m := re.FindStringSubmatch(strings.TrimRight(l, "\r\n")); m != nil {
			return unquoteDotenv(m[1]), true
		}
	}
	return "", false
}

// unquoteDotenv is a .env value without its quotes.
func unquoteDotenv(v string) string {
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		if u, err := strconv.Unquote(v); err == nil {
			return u
		}
	}
	return strings.Trim(v, `"'`)
}

// set sets key to value: the first line that sets it is replaced (later ones are dropped), or
// a line is added at the end.
func (d *dotenv) set(key, value string) {
	line := key + "='" + value + "'\n" // single quotes: taken as they are
	if strings.Contains(value, "'") {
		line = key + "=" + strconv.Quote(value) + "\n"
	}
	re := dotenvLine(key)
	out, found := d.lines[:0:0], false
	for _, l := range d.lines {
		if re.MatchString(strings.TrimRight(l, "\r\n")) {
			if !found {
				out, found = append(out, line), true
			}
			continue
		}
		out = append(out, l)
	}
	if !found {
		if n := len(out); n > 0 {
			out[n-1] = ensureNL(out[n-1])
		}
		out = append(out, line)
	}
	d.lines = out
}

// unset removes the lines that set key.
func (d *dotenv) unset(key string) {
	re := dotenvLine(key)
	d.lines = slices.DeleteFunc(d.lines, func(l string) bool { return re.MatchString(strings.TrimRight(l, "\r\n")) })
}

// text is the file as it now reads.
func (d *dotenv) text() string { return strings.Join(d.lines, "") }

// changed says whether the file would change.
func (d *dotenv) changed() bool { return d.text() != string(d.old) || (!d.exists && len(d.lines) > 0) }

// save writes the file if it changed, after a backup of the previous one (a new name each time,
// the keptBackups newest kept, and except), and returns the backup's path ("" when there was no
// file). stamp names the backup.
func (d *dotenv) save(stamp, except string) (backup string, err error) {
	if !d.changed() {
		return "", nil
	}
	if err := os.MkdirAll(filepath.Dir(d.path), 0o700); err != nil {
		return "", err
	}
	if d.exists {
		backup, err = createUnique(nextBackup(d.path, stamp), func(p string) error { return writeNew(p, d.old, 0o600) })
		if err != nil {
			return "", fmt.Errorf("could not write a backup of %s, so it was left alone: %w", d.path, err)
		}
	}
	if err := writeAtomic(d.path, []byte(d.text()), d.mode); err != nil {
		return backup, err
	}
	if backup != "" {
		pruneBackups(d.path, keptBackups, except)
	}
	return backup, nil
}

// withLoopback is a NO_PROXY value with the loopback entries it lacks added.
func withLoopback(v string) string {
	entries := splitNoProxy(v)
	for _, e := range loopbackNoProxy {
		if !slices.Contains(entries, e) {
			entries = append(entries, e)
		}
	}
	return strings.Join(entries, ",")
}

// splitNoProxy is a NO_PROXY value's entries.
func splitNoProxy(v string) []string {
	var out []string
	for _, e := range strings.Split(v, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// CodexEnvWrite says what pointing Codex at the relay did to its .env.
type CodexEnvWrite struct {
	Path   string  // the .env file
	Backup string  // the copy of the previous file ("" when there was none, or nothing changed)
	Change Outcome // ConfigCreated, ConfigUpdated or Unchanged
	// CertFile is the bundle SSL_CERT_FILE names ("" when it was not set: Limits says why).
	CertFile string
	// NoProxy is NO_PROXY's value.
	NoProxy string
	// Left says why a file of authorities Codex trusted before was left out of the bundle ("":
	// none was).
	Left string
}

// Summary says in a sentence what the write did to the .env file, its paths shown by show
// (nil: as they are).
func (w CodexEnvWrite) Summary(show func(string) string) string {
	if show == nil {
		show = func(p string) string { return p }
	}
	if w.Path == "" {
		return ""
	}
	var set []string
	if w.CertFile != "" {
		set = append(set, "SSL_CERT_FILE names the relay's bundle of trusted authorities (the system's, which the relay keeps "+
			"current, and its own loopback authority): Codex, and the commands it runs (curl, git, pip), trust those")
	}
	set = append(set, "NO_PROXY has "+strings.Join(loopbackNoProxy, ",")+", so that Codex reaches the relay without a proxy")
	what := strings.Join(set, "; ")
	var s string
	switch w.Change {
	case Unchanged:
		s = show(w.Path) + " already has what Codex needs: " + what + "."
	case ConfigCreated:
		s = "Created " + show(w.Path) + ": " + what + "."
	default:
		s = "Updated " + show(w.Path) + " (the previous version is saved as " + show(w.Backup) + "): " + what + "."
	}
	if w.Left != "" {
		s += " Left out of the bundle: " + w.Left + "."
	}
	return s
}

// pointCodexEnv sets NO_PROXY and, with a bundle (certFile, "" for none), SSL_CERT_FILE in the
// .env of codexHome, recording what they held first; stamp names a backup.
func (a *App) pointCodexEnv(codexHome, certFile, stamp string) (CodexEnvWrite, error) {
	w := CodexEnvWrite{Path: filepath.Join(codexHome, ".env"), CertFile: certFile, Change: Unchanged}
	d, err := readDotenv(w.Path)
	if err != nil {
		return w, fmt.Errorf("cannot read Codex's %s, so it was left alone: %w", w.Path, err)
	}
	bundle := filepath.Join(a.opt.ConfigDir, loopbackBundleFile)
	prev := map[string]*prevValue{}
	if certFile != "" {
		if v, ok := d.get(envCertFile); !ok || filepath.Clean(v) != filepath.Clean(bundle) {
			prev[envCertFile] = &prevValue{Was: valueIf(v, ok), Wrote: certFile}
			d.set(envCertFile, certFile)
		}
	}
	v, ok := d.get(envNoProxy)
	w.NoProxy = v
	if !ok {
		// Codex's .env wins over its environment: keep what the environment excepted.
		w.NoProxy = cmpOr(a.opt.Getenv("NO_PROXY"), a.opt.Getenv("no_proxy"))
	}
	if next := withLoopback(w.NoProxy); !ok || next != v {
		prev[envNoProxy] = &prevValue{Was: valueIf(v, ok), Wrote: next}
		d.set(envNoProxy, next)
		w.NoProxy = next
	}
	if !d.changed() {
		return w, nil
	}
	if err := a.recordPrevious(codexHome, func(h *homePrevious) {
		if !d.exists {
			h.NoEnv = true
		}
		for k, p := range prev {
			h.Env = setPrev(h.Env, k, p)
		}
	}); err != nil {
		return w, fmt.Errorf("cannot keep what Codex's .env held, so it was left alone: %w", err)
	}
	w.Change = ConfigUpdated
	if !d.exists {
		w.Change = ConfigCreated
	}
	var old []byte
	if d.exists {
		old = d.old
	}
	if w.Backup, err = d.save(stamp, a.previousOf(codexHome).EnvFile.keptBackup()); err != nil {
		return w, err
	}
	err = a.recordPrevious(codexHome, func(h *homePrevious) { h.EnvFile = traced(h.EnvFile, old, w.Backup, []byte(d.text())) })
	return w, err
}

// valueIf is v when set, else nil (the variable was not set).
func valueIf(v string, set bool) *string {
	if !set {
		return nil
	}
	return &v
}
