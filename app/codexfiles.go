package app

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// CodexFiles remembers what CodexConfigured and FindCodexLogin found, and reads and parses the
// Codex home's config.toml or auth.json again only when that file (its time, size or presence)
// or the settings it is judged against changed since the last look: a window can ask at each
// view (and follows the files with Watch). Its methods are safe for concurrent use.
type CodexFiles struct {
	a *App

	mu       sync.Mutex
	setupKey codexFileKey
	setup    CodexSetup
	loginKey codexFileKey
	login    CodexLogin
}

// codexFileKey identifies what was read: the file as it was, and the settings (generation,
// listen address) it was compared with.
type codexFileKey struct {
	mtime      time.Time
	size       int64
	exists     bool
	generation uint64
	listen     string
}

// NewCodexFiles returns an empty cache over a's Codex home.
func (a *App) NewCodexFiles() *CodexFiles { return &CodexFiles{a: a} }

// key is the key of the Codex home's file name as it is now, judged against listen.
func (c *CodexFiles) key(name, listen string) codexFileKey {
	k := codexFileKey{generation: c.a.Settings().Generation, listen: listen}
	if st, err := os.Stat(filepath.Join(c.a.CodexHome(), name)); err == nil {
		k.mtime, k.size, k.exists = st.ModTime(), st.Size(), true
	}
	return k
}

// Configured is CodexConfigured, read again only when config.toml or the settings changed.
func (c *CodexFiles) Configured() CodexSetup {
	k := c.key("config.toml", c.a.ListenAddr())
	c.mu.Lock()
	defer c.mu.Unlock()
	if k != c.setupKey || c.setup.Path == "" {
		c.setupKey, c.setup = k, c.a.CodexConfigured()
	}
	return c.setup
}

// Login is FindCodexLogin, read again only when auth.json or the settings (the accounts that
// may hold the login) changed.
func (c *CodexFiles) Login() CodexLogin {
	k := c.key("auth.json", "")
	c.mu.Lock()
	defer c.mu.Unlock()
	if k != c.loginKey || c.login.Path == "" {
		c.loginKey, c.login = k, c.a.FindCodexLogin()
	}
	return c.login
}

// Watch calls changed when the Codex home's config.toml, auth.json or .env is written, created,
// removed or renamed, until ctx ends: a window that shows whether Codex points at the relay
// follows the files instead of polling them. Without a Codex home folder to watch (or without
// inotify watches left) it returns at once; the window then sees a change at its next view.
func (c *CodexFiles) Watch(ctx context.Context, changed func()) {
	dir := c.a.CodexHome()
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return
	}
	defer w.Close()
	if err := w.Add(dir); err != nil {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			switch filepath.Base(ev.Name) {
			case "config.toml", "auth.json", ".env":
				changed()
			}
		case _, ok := <-w.Errors:
			if !ok {
				return
			}
			changed() // events were lost: look again
		}
	}
}
