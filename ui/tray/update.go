package tray

import (
	"context"
	"sync"
	"time"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/app/update"
)

// The update notice: with the update-check setting on (off by default: no network call at
// all), the tray asks the release feed once a day and, when a newer release exists, shows a
// line that opens its page.

// updateEvery is how often the feed is asked while the check is on.
const updateEvery = 24 * time.Hour

// updateNotice is the last answer of the release feed and when it was asked.
type updateNotice struct {
	mu      sync.Mutex
	asked   time.Time
	running bool
	newer   update.Release // Version "" : none newer known
}

// check is the newer release to show ("" Version: none), starting a check in the background
// when one is due; done is called when a check found one.
func (u *updateNotice) check(store *app.App, now time.Time, done func()) update.Release {
	if !store.Settings().Updates.Check {
		u.mu.Lock()
		u.newer, u.asked = update.Release{}, time.Time{}
		u.mu.Unlock()
		return update.Release{}
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if !u.running && (u.asked.IsZero() || now.Sub(u.asked) >= updateEvery) {
		u.running, u.asked = true, now
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			r, ok, err := store.CheckForUpdate(ctx, nil)
			found := err == nil && ok && r.Newer
			u.mu.Lock()
			u.running = false
			if found {
				u.newer = r
			}
			u.mu.Unlock()
			if found {
				done() // the menu shows it at once
			}
		}()
	}
	return u.newer
}

// updateItem is the menu line of a newer release (nil: none).
func updateItem(r update.Release) *menuItem {
	if r.Version == "" {
		return nil
	}
	return item("Codex Relay "+truncate(r.Version, 24)+" is available: open its page", func() {
		if r.URL != "" {
			app.OpenBrowser(r.URL)
		}
	})
}
