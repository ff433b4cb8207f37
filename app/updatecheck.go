package app

import (
	"cmp"
	"context"
	"net/http"

	"github.com/codexrelay/codexrelay/app/update"
)

// UpdateSettings are the update notice's settings: off unless the user turns it on.
type UpdateSettings struct {
	Check bool   `json:"check,omitempty"`
	Feed  string `json:"feed,omitempty"` // "": update.DefaultFeed
}

// CheckForUpdate asks the release feed whether a newer release than this build exists. With the
// update-check setting off (the default) it returns at once without touching the network: ok is
// false. client nil is the default client.
func (a *App) CheckForUpdate(ctx context.Context, client *http.Client) (r update.Release, ok bool, err error) {
	s := a.Settings().Updates
	if !s.Check {
		return update.Release{}, false, nil
	}
	r, err = update.Check(ctx, client, cmp.Or(s.Feed, update.DefaultFeed), ReadBuild().Version)
	return r, err == nil, err
}
