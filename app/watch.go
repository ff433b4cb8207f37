package app

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// watchSettle is how long Watch waits after a change to the settings file before reading it,
// so that a burst of events (an editor's save, several CLI changes) costs one reload.
const watchSettle = 5 * time.Millisecond

// watchPoll is how often Watch looks at the file when the system cannot notify it.
const watchPoll = 250 * time.Millisecond

// Watch follows the settings file until ctx ends: each time it changes (a CLI command, the
// tray of course, a hand edit), Reload applies it to the running proxy, within a few tens of
// milliseconds. It watches the folder, since an atomic write replaces the file, and, when
// settings.json is a symbolic link, the folder of its target too. Where the system cannot
// notify (no inotify watches left, say) it polls the file instead.
func (a *App) Watch(ctx context.Context) {
	a.Reload() // what changed since Open
	w, err := fsnotify.NewWatcher()
	if err == nil {
		err = os.MkdirAll(a.opt.ConfigDir, 0o700)
	}
	if err == nil {
		err = w.Add(a.opt.ConfigDir)
	}
	if err != nil {
		if w != nil {
			w.Close()
		}
		a.log.Warn("cannot watch the settings folder; polling it instead", "error", err)
		a.poll(ctx)
		return
	}
	defer w.Close()
	path := a.SettingsPath()
	target := a.watchTarget(w, path, "")
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
			name := filepath.Clean(ev.Name)
			if name == path || name == target {
				settle.Reset(watchSettle)
			}
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			// An overflow loses events: read the file anyway.
			a.log.Warn("settings watch", "error", err)
			settle.Reset(watchSettle)
		case <-settle.C:
			target = a.watchTarget(w, path, target)
			a.Reload()
		}
	}
}

// watchTarget makes w watch the folder of the file the settings link points to (when
// settings.json is a link into another folder) and returns that file.
func (a *App) watchTarget(w *fsnotify.Watcher, path, old string) string {
	t, err := resolveLink(path)
	if err != nil || t == path {
		return ""
	}
	t = filepath.Clean(t)
	if t != old {
		if old != "" && filepath.Dir(old) != a.opt.ConfigDir {
			w.Remove(filepath.Dir(old))
		}
		if filepath.Dir(t) != filepath.Clean(a.opt.ConfigDir) {
			if err := w.Add(filepath.Dir(t)); err != nil {
				a.log.Warn("cannot watch the folder the settings link points into", "error", err)
			}
		}
	}
	return t
}

// poll reloads the settings whenever the file's size, time or identity changes.
func (a *App) poll(ctx context.Context) {
	t := time.NewTicker(watchPoll)
	defer t.Stop()
	var last os.FileInfo
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		st, err := os.Stat(a.SettingsPath())
		if err != nil {
			continue
		}
		if last == nil || !os.SameFile(last, st) || st.ModTime() != last.ModTime() || st.Size() != last.Size() {
			last = st
			a.Reload()
		}
	}
}
