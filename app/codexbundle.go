package app

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/codexrelay/codexrelay/app/looptls"
)

// The bundle of authorities Codex trusts once pointed at the relay: SSL_CERT_FILE in
// $CODEX_HOME/.env names it (codexenv.go), so that Codex, and every command it runs (curl, git,
// pip), trusts the relay's loopback authority beside the system's. It is built from the
// system's authorities, those of the file SSL_CERT_FILE named before the relay's (a company's
// authority), and the loopback authority's certificate: certificates only, each once. Since
// the system's authorities change (update-ca-certificates: an authority added or withdrawn), a
// relay rebuilds it at each start and whenever the system's file changes (FollowTrust).

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

// loopbackBundleFile is the bundle, in the settings folder.
const loopbackBundleFile = "codex-ca-bundle.pem"

// maxCertFile bounds a file of authorities the bundle is built from: the system's holds about
// 150 of them in 220 KB.
const maxCertFile = 16 << 20

// errNoSystemRoots: no file of the system's authorities to build Codex's bundle from.
var errNoSystemRoots = errors.New("this system keeps its trusted authorities in no file Codex could read beside the relay's (Windows, or an unusual Linux)")

// systemRootsFile is the first of systemRoots that holds a certificate, or "".
func systemRootsFile() string {
	for _, f := range systemRoots {
		if certs, err := readCerts(f); err == nil && len(certs) > 0 {
			return f
		}
	}
	return ""
}

// readCerts reads the certificates of the file at path: a regular file (never a FIFO or a
// device) of at most maxCertFile bytes, of which only the PEM CERTIFICATE blocks that parse are
// taken (a private key or anything else in it is left out).
func readCerts(path string) ([][]byte, error) {
	b, err := readBounded(path, maxCertFile, "a file of certificates")
	if err != nil {
		return nil, err
	}
	var certs [][]byte
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			return certs, nil
		}
		if blk.Type != "CERTIFICATE" {
			continue
		}
		if _, err := x509.ParseCertificate(blk.Bytes); err == nil {
			certs = append(certs, blk.Bytes)
		}
	}
}

// buildBundle writes the bundle: the system's authorities, those of the files extra names
// (the bundle itself read as nothing), and the authority's certificate caPEM, each certificate
// once. It replaces whatever is at its path, a link included, never writing through one. It
// returns the bundle's path, whether its content changed, and why a file of extra was left
// out (nil: none was).
func (a *App) buildBundle(caPEM []byte, extra []string) (path string, changed bool, left error, err error) {
	if runtime.GOOS == "windows" {
		return "", false, nil, errNoSystemRoots
	}
	roots := systemRootsFile()
	if roots == "" {
		return "", false, nil, errNoSystemRoots
	}
	path = filepath.Join(a.opt.ConfigDir, loopbackBundleFile)
	var out bytes.Buffer
	seen := map[string]bool{}
	add := func(certs [][]byte) {
		for _, der := range certs {
			if !seen[string(der)] {
				seen[string(der)] = true
				pem.Encode(&out, &pem.Block{Type: "CERTIFICATE", Bytes: der})
			}
		}
	}
	sys, err := readCerts(roots)
	if err != nil {
		return "", false, nil, err
	}
	add(sys)
	for _, f := range extra {
		if f == "" || filepath.Clean(f) == filepath.Clean(path) {
			continue
		}
		certs, err := readCerts(f)
		if err == nil && len(certs) == 0 {
			err = fmt.Errorf("%s holds no PEM certificate", f)
		}
		if err != nil {
			left = errors.Join(left, err)
			continue
		}
		add(certs)
	}
	if blk, _ := pem.Decode(caPEM); blk != nil {
		add([][]byte{blk.Bytes})
	}
	if old, err := readBounded(path, maxCertFile, "the relay's bundle"); err == nil && bytes.Equal(old, out.Bytes()) {
		if st, err := os.Lstat(path); err == nil && st.Mode().IsRegular() {
			return path, false, left, nil
		}
	}
	return path, true, left, replaceFile(path, out.Bytes(), 0o644)
}

// RefreshCodexBundle rebuilds the bundle when the relay wrote one (its file is there) and the
// folder has an authority: a relay does it at each start and when the system's authorities
// change. An authority without today's limits is replaced first (EnsureLoopbackCA), so that
// the bundle vouches only for the current one. It reports whether the bundle changed.
func (a *App) RefreshCodexBundle() (bool, error) {
	path := filepath.Join(a.opt.ConfigDir, loopbackBundleFile)
	id := a.Settings().LoopbackCAID
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) || id == "" {
		return false, nil
	}
	ca, _, err := a.readLoopbackCA(id)
	if err != nil {
		return false, fmt.Errorf("the loopback authority cannot be read: %w", err)
	}
	if !looptls.Current(ca) {
		if ca, _, err = a.EnsureLoopbackCA(); err != nil {
			return false, err
		}
		a.log.Warn("replaced the loopback authority with one that vouches for loopback servers only; a Codex started before trusts the relay's HTTPS again once restarted")
	}
	_, changed, left, err := a.buildBundle(ca, a.previousCertFiles())
	if left != nil {
		a.log.Warn("a file of authorities Codex trusted before is left out of its bundle", "error", left)
	}
	return changed, err
}

// trustSettle is how long FollowTrust waits after a change to the system's authorities before
// it rebuilds the bundle: update-ca-certificates rewrites a folder of links besides the file.
var trustSettle = time.Second

// FollowTrust keeps the bundle current while a relay runs: it rebuilds it at once, then
// whenever the system's file of authorities (or one the bundle takes authorities from) is
// written, replaced or removed, until ctx ends. It watches their folders, so that it sleeps
// in between; where nothing can be watched it returns after the first rebuild.
func (a *App) FollowTrust(ctx context.Context) {
	refresh := func() {
		if changed, err := a.RefreshCodexBundle(); err != nil {
			a.log.Warn("the bundle of authorities Codex trusts could not be rebuilt", "error", err)
		} else if changed {
			a.log.Info("rebuilt the bundle of authorities Codex trusts", "file", filepath.Join(a.opt.ConfigDir, loopbackBundleFile))
		}
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		refresh()
		return
	}
	defer w.Close()
	files := map[string]bool{}
	for _, f := range append(systemRoots, a.previousCertFiles()...) {
		// A file and, when it is a link (Fedora's ca-bundle.crt), the file it names.
		for _, p := range []string{f, resolved(f)} {
			if _, err := os.Stat(filepath.Dir(p)); err != nil || files[filepath.Clean(p)] {
				continue
			}
			files[filepath.Clean(p)] = true
			w.Add(filepath.Dir(p)) // an error: one folder fewer to follow
		}
	}
	refresh() // after the watch is in place: a change from now on is seen
	if len(w.WatchList()) == 0 {
		return
	}
	settle := time.NewTimer(time.Hour)
	settle.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			if files[filepath.Clean(ev.Name)] {
				settle.Reset(trustSettle)
			}
		case _, ok := <-w.Errors:
			if !ok {
				return
			}
			settle.Reset(trustSettle) // events were lost: look again
		case <-settle.C:
			refresh()
		}
	}
}

// resolved is the file path names, its links followed (path itself when it cannot be).
func resolved(path string) string {
	if p, err := filepath.EvalSymlinks(path); err == nil {
		return p
	}
	return path
}
