//go:build unix

package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// within runs f and fails the test if it has not returned after a few seconds (a FIFO read
// would block for ever).
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s hangs", what)
	}
}

// The file an SSL_CERT_FILE already in Codex's .env names is read only when it is a regular
// file of a bounded size, and only its certificates go into the bundle: a FIFO does not hang
// the write, a huge file is not copied, and a private file's key never lands in the bundle,
// which everyone may read.
func TestTheBundleTakesOnlyCertificatesFromASmallRegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.pem")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge.pem")
	f, _ := os.Create(huge)
	f.Truncate(300 << 20) // sparse: 300 MB that take no room
	f.Close()
	private := filepath.Join(dir, "private.pem")
	key := "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg\n-----END PRIVATE KEY-----\n"
	os.WriteFile(private, append([]byte(key), testCert(t, "a private file's root")...), 0o600)

	for path, want := range map[string]string{
		fifo:    "is not a regular file (a FIFO)",
		huge:    "larger than the 16 MiB a file of certificates may have",
		private: "",
	} {
		t.Run(filepath.Base(path), func(t *testing.T) {
			a, codexHome := codexTestRelay(t)
			os.WriteFile(filepath.Join(codexHome, ".env"), []byte("SSL_CERT_FILE="+path+"\n"), 0o600)
			var res CodexConfigWrite
			var err error
			within(t, "codex-config --write", func() { res, err = a.WriteCodexConfig("") })
			if err != nil {
				t.Fatal(err)
			}
			if want != "" && !strings.Contains(res.Env.Left, want) {
				t.Fatalf("left out: %q, want %q", res.Env.Left, want)
			}
			bundle := filepath.Join(a.ConfigDir(), loopbackBundleFile)
			b, _ := os.ReadFile(bundle)
			names := strings.Join(certNames(t, b), "|")
			if len(b) > 64<<10 || strings.Contains(string(b), "PRIVATE KEY") {
				t.Fatalf("bundle of %d bytes: %s", len(b), names)
			}
			if path == private && names != "system root|a private file's root|Codex Relay loopback CA" {
				t.Fatalf("bundle: %s", names)
			}
			if st, _ := os.Stat(bundle); st.Mode().Perm() != 0o644 {
				t.Fatalf("bundle mode %v", st.Mode())
			}
			// The .env names the bundle, and its backup keeps what it named before.
			if d, _ := readDotenv(filepath.Join(codexHome, ".env")); d == nil || must(d.get(envCertFile)) != bundle {
				t.Fatal("SSL_CERT_FILE does not name the bundle")
			}
			// The relay's start rebuilds it the same way.
			within(t, "the bundle's refresh", func() { _, err = a.RefreshCodexBundle() })
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

func must(v string, _ bool) string { return v }

// A .env that is a FIFO is refused, without waiting on it, and nothing is written; one that is
// a link to a file is written through it, keeping the file's mode.
func TestCodexEnvIsReadSafelyAndWrittenThroughALink(t *testing.T) {
	a, codexHome := codexTestRelay(t)
	env := filepath.Join(codexHome, ".env")
	if err := syscall.Mkfifo(env, 0o600); err != nil {
		t.Fatal(err)
	}
	var err error
	within(t, "codex-config --write over a FIFO .env", func() { _, err = a.WriteCodexConfig("") })
	if err == nil || !strings.Contains(err.Error(), "a FIFO") {
		t.Fatalf("a FIFO .env: %v", err)
	}
	if _, err := os.Stat(filepath.Join(codexHome, "config.toml")); err == nil {
		t.Fatal("config.toml was written beside an unreadable .env")
	}
	os.Remove(env)
	dotfiles := filepath.Join(t.TempDir(), "codex.env")
	os.WriteFile(dotfiles, []byte("A=1\n"), 0o640)
	os.Symlink(dotfiles, env)
	if _, err := a.WriteCodexConfig(""); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(env); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatal(".env is no longer a link")
	}
	b, _ := os.ReadFile(dotfiles)
	if st, _ := os.Stat(dotfiles); st.Mode().Perm() != 0o640 || !strings.HasPrefix(string(b), "A=1\nSSL_CERT_FILE=") {
		t.Fatalf("the linked .env: %v\n%s", st.Mode(), b)
	}
}

// The relay's own files (the bundle, the authority's certificate, the record of what Codex
// held) are never written through a link: a link in the folder is replaced, and the file it
// pointed to (a decoy of the test's own) keeps its content and mode.
func TestTheRelaysFilesAreNotWrittenThroughALink(t *testing.T) {
	a, _ := codexTestRelay(t)
	decoys := t.TempDir()
	for _, name := range []string{loopbackBundleFile, loopbackCAFile, codexPreviousFile} {
		decoy := filepath.Join(decoys, name)
		os.WriteFile(decoy, []byte("secret\n"), 0o600)
		if err := os.Symlink(decoy, filepath.Join(a.ConfigDir(), name)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.WriteCodexConfig(""); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{loopbackBundleFile, loopbackCAFile, codexPreviousFile} {
		decoy := filepath.Join(decoys, name)
		b, _ := os.ReadFile(decoy)
		st, _ := os.Stat(decoy)
		if string(b) != "secret\n" || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: the decoy became %v %q", name, st.Mode(), b)
		}
		if st, err := os.Lstat(filepath.Join(a.ConfigDir(), name)); err != nil || !st.Mode().IsRegular() {
			t.Errorf("%s is not a regular file in the folder", name)
		}
	}
}

// A running relay keeps the bundle current: when the system's authorities change (an
// authority added by update-ca-certificates, which replaces the file), the bundle follows.
func TestTheBundleFollowsTheSystemsAuthorities(t *testing.T) {
	a, _ := codexTestRelay(t)
	if _, err := a.WriteCodexConfig(""); err != nil {
		t.Fatal(err)
	}
	old := trustSettle
	trustSettle = 10 * time.Millisecond
	t.Cleanup(func() { trustSettle = old })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); a.FollowTrust(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	bundle := filepath.Join(a.ConfigDir(), loopbackBundleFile)
	sys := systemRoots[len(systemRoots)-1]
	// Whenever the change comes, before FollowTrust's first rebuild or after, the bundle has it.
	b, _ := os.ReadFile(sys)
	tmp := sys + ".new"
	os.WriteFile(tmp, append(b, testCert(t, "a company root added later")...), 0o644)
	if err := os.Rename(tmp, sys); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(bundle)
		if names := strings.Join(certNames(t, b), "|"); names == "system root|a company root added later|Codex Relay loopback CA" {
			return
		} else if time.Now().After(deadline) {
			t.Fatalf("the bundle did not follow the system's authorities: %s", names)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
