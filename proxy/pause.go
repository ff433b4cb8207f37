package proxy

import (
	"net/http"
	"sync/atomic"
)

// Pausing from another process: POST /relay/pause and POST /relay/resume are the routes
// `codexrelay pause` and `codexrelay resume` take to the relay of their settings folder. Only a
// request signed with the instance secret is obeyed (the local key is not enough): the
// folder's own programs pause its relay, no other local program does.

// PauseFunc pauses (true) or resumes the relay for its embedder, which keeps its own state of
// it (the tray's icon and menu, the instance file); it returns the error of a resume that could
// not open the port.
type PauseFunc func(pause bool) error

// pauseHook holds the embedder's PauseFunc (nil: SetPaused alone).
type pauseHook struct{ f atomic.Pointer[PauseFunc] }

// SetPauseFunc has the pause routes call f instead of SetPaused (nil restores SetPaused).
func (s *Server) SetPauseFunc(f PauseFunc) {
	if f == nil {
		s.pause.f.Store(nil)
		return
	}
	s.pause.f.Store(&f)
}

// Paused says whether the relay is paused.
func (s *Server) Paused() bool { return s.paused.Load() }

// PauseState is the pause routes' answer.
type PauseState struct {
	Paused bool `json:"paused"`
	// Changed is false when the relay already was as asked.
	Changed bool `json:"changed"`
}

// handlePause serves POST /relay/pause (pause true) and POST /relay/resume.
func (s *Server) handlePause(pause bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !instanceSigned(r) {
			writeError(w, &apiError{Status: http.StatusUnauthorized, Type: "invalid_request_error", Code: "unsigned_request",
				Message: "pausing or resuming the relay needs a request signed by its settings folder's programs (`codexrelay pause`, `codexrelay resume`)"})
			return
		}
		was := s.paused.Load()
		var err error
		if f := s.pause.f.Load(); f != nil {
			err = (*f)(pause)
		} else {
			s.SetPaused(pause)
		}
		if err != nil {
			writeError(w, &apiError{Status: http.StatusInternalServerError, Type: "server_error", Code: "resume_failed", Message: err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, PauseState{Paused: s.paused.Load(), Changed: was != s.paused.Load()})
	}
}
