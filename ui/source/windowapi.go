package source

import (
	"errors"

	"github.com/codexrelay/codexrelay/app"
)

// The window API is how the window process (B) reads the tray process's (A's) live state and
// asks it for what only A can do (pause, resume, move the listener). It is served by A on a
// loopback port of its own, with a token A hands to each window process it starts: the relay's
// port may be paused, taken or moved, and the window process must still say so.
//
//	GET  /relay/stats                      proxy.Snapshot
//	GET  /relay/traces?limit=N             []proxy.Trace, newest first
//	GET  /relay/status                     the listener's status (StatusJSON)
//	POST /relay/pause, /relay/resume       pause (draining) or resume the listener
//	POST /relay/listen?addr=HOST:PORT      move the listener (and save the address)
//	GET  /relay/usage/summary?since=&until=&by=    ledger.Report
//	GET  /relay/usage/daily?since=                 []ledger.DayByAccount
//	GET  /relay/usage/burn?account=                ledger.Burn
//	GET  /relay/usage/forecast?account=...&now=    ledger.Forecast
//
// Times are RFC 3339 with nanoseconds. Every answer that is not 2xx is {"error":{"code","message"}}.
// The tray process serves it (ui/tray), the window process is its client (ui/window); this
// file is what both ends agree on.

// RelayControl is what the windows ask of the listener: the in-process *app.Service, or the
// tray process through the window API.
type RelayControl interface {
	Status() app.ServiceStatus
	Pause()
	Resume() error
	SetListen(addr string) error
}

// StatusJSON is app.ServiceStatus on the wire (its error as text).
type StatusJSON struct {
	Addr    string `json:"addr"`
	Running bool   `json:"running"`
	Paused  bool   `json:"paused"`
	Error   string `json:"error,omitempty"`
	Warning string `json:"warning,omitempty"`
	// Refusing is app.ServiceStatus.Refusing.
	Refusing string `json:"refusing,omitempty"`
}

// StatusToJSON is s as the tray process sends it.
func StatusToJSON(s app.ServiceStatus) StatusJSON {
	j := StatusJSON{Addr: s.Addr, Running: s.Running, Paused: s.Paused, Warning: s.Warning, Refusing: s.Refusing}
	if s.Err != nil {
		j.Error = s.Err.Error()
	}
	return j
}

// Status is the status j carries, as the window process reads it.
func (j StatusJSON) Status() app.ServiceStatus {
	s := app.ServiceStatus{Addr: j.Addr, Running: j.Running, Paused: j.Paused, Warning: j.Warning, Refusing: j.Refusing}
	if j.Error != "" {
		s.Err = errors.New(j.Error)
	}
	return s
}

// Error codes of the window API.
const (
	CodeUsageOff     = "usage_off"    // ErrUsageOff
	CodeUsageClosed  = "usage_closed" // ErrUsageClosed
	CodeFailed       = "failed"
	CodeBadRequest   = "bad_request"
	CodeUnauthorized = "unauthorized"
)
