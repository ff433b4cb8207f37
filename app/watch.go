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

// folderCheck is how often Watch makes sure, beside the events, that the settings folder and
// this relay's instance lock are still there. The events tell at once: the lock's removal, and
// the folder's own removal or move (inotify's IN_DELETE_SELF and IN_MOVE_SELF, which fsnotify
// reports as Remove and Rename of the folder). The check is for what no event tells: a
// folder taken back by another relay first (retakeFolder fails) is tried again, and a system
// that drops events (a queue overflow is reported and handled) is covered within this time.
// It was once a second, which cost the idle tray a stat pair a second (issue 39).
const folderCheck = 30 * time.Second

// Watch follows the settings file until ctx ends: each time it changes (a CLI command, the
// tray of course, a hand edit), Reload applies it to the running proxy, within a few tens of
// milliseconds. It watches the folder, since an atomic write replaces the file, and, when
// settings.json is a symbolic link, the folder of its target too. Where the system cannot
// notify (no inotify watches left, say) it polls the file instead. When the folder itself is
// deleted or moved away, it recreates it (see retakeFolder) and watches the new one.
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
	path, dir := a.SettingsPath(), filepath.Clean(a.opt.ConfigDir)
	target := a.watchTarget(w, path, "")
	lock := filepath.Join(dir, instanceLockName)
	settle := time.NewTimer(time.Hour)
	settle.Stop()
	check := time.NewTicker(folderCheck)
	defer check.Stop()
	retake := func() {
		if a.retakeFolder() {
			w.Remove(dir) // the watch of the old folder, if it was moved rather than deleted
			if err := w.Add(dir); err != nil {
				a.log.Warn("cannot watch the recreated settings folder", "error", err)
			}
			a.Reload()
		}
	}
	retake() // what happened before the watch was in place
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			name := filepath.Clean(ev.Name)
			if name == path || name == target || name == dir || name == lock {
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
			if ctx.Err() != nil {
				return
			}
			retake()
			target = a.watchTarget(w, path, target)
			a.Reload()
		case <-check.C:
			retake()
		}
	}
}

// retakeFolder checks that the settings folder is still there with this relay's instance lock
// in it and, when it was deleted or moved away, recreates both: otherwise a second relay would
// start beside this one. It reports whether it recreated anything; the settings themselves
// stay the last good ones until a settings file is there again (see followSettings).
func (a *App) retakeFolder() bool {
	dir := a.opt.ConfigDir
	in := claimOf(dir)
	if _, err := os.Stat(dir); err == nil && (in == nil || in.holdsFolder()) {
		return false
	}
	if in != nil {
		if fresh, err := in.retake(); err != nil {
			if fresh { // once: a folder another relay took stays taken
				a.log.Error("the settings folder was deleted and could not be taken back", "folder", dir, "error", err)
			}
			return false
		}
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		a.log.Error("the settings folder was deleted and cannot be recreated", "folder", dir, "error", err)
		return false
	}
	a.log.Warn("the settings folder was deleted or moved away: recreated it with this relay's instance lock; the last good settings stay in force until a settings file is there", "folder", dir)
	return true
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
	gone := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		a.retakeFolder()
		st, err := os.Stat(a.SettingsPath())
		if err != nil {
			if !gone { // it went away: say so once, keeping the last good settings
				gone, last = true, nil
				a.Reload()
			}
			continue
		}
		gone = false
		if last == nil || !os.SameFile(last, st) || st.ModTime() != last.ModTime() || st.Size() != last.Size() {
			last = st
			a.Reload()
		}
	}
}
