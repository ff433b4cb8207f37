package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
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
	var st localapi.PauseState
	rc, err := a.Relay(pauseTimeout)
	if err != nil {
		return st, err
	}
	if rc == nil {
		return st, ErrNoRelay
	}
	path := "/relay/resume"
	if pause {
		path = "/relay/pause"
	}
	ctx, cancel := context.WithTimeout(context.Background(), pauseTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rc.URL(path), nil)
	if err != nil {
		return st, err
	}
	resp, err := rc.Do(req)
	if err != nil {
		return st, fmt.Errorf("the running relay (%s) did not answer: %w", rc.Info(), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		json.NewDecoder(resp.Body).Decode(&e)
		return st, errors.New(cmpOr(e.Error.Message, fmt.Sprintf("the running relay answered HTTP %d", resp.StatusCode)))
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return st, fmt.Errorf("the running relay's answer: %w", err)
	}
	return st, nil
}
