package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/codexrelay/codexrelay/app/localapi"
)

// Pausing the relay from the command line: `codexrelay pause` and `codexrelay resume` reach
// the relay of this settings folder through RelayClient (a signed request), as the tray's
// Pause and Resume do in its own process.

// ErrNoRelay is a command that needs the running relay of this settings folder when none runs.
var ErrNoRelay = errors.New("no Codex Relay is running for this settings folder: start it with codexrelay (the tray app) or codexrelay serve")

// pauseTimeout bounds a pause or resume request.
const pauseTimeout = 10 * time.Second

// SetRelayPaused asks the relay running for this settings folder to pause (true) or resume.
func (a *App) SetRelayPaused(pause bool) (localapi.PauseState, error) {
	rc, err := a.RunningRelay(pauseTimeout)
	if err != nil {
		return localapi.PauseState{}, err
	}
	if rc == nil {
		return localapi.PauseState{}, ErrNoRelay
	}
	ctx, cancel := context.WithTimeout(context.Background(), pauseTimeout)
	defer cancel()
	set := rc.Resume
	if pause {
		set = rc.Pause
	}
	st, err := set(ctx)
	var answer *localapi.Error
	if err != nil && !errors.As(err, &answer) {
		return st, fmt.Errorf("the running relay (%s) did not answer: %w", rc.Info(), err)
	}
	return st, err
}
