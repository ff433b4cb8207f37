package app

import (
	"errors"
	"net/http"

	"github.com/codexrelay/codexrelay/app/localapi"
	"github.com/codexrelay/codexrelay/proxy"
)

// The local API (app/localapi) as this process serves it on the relay's port: the proxy's
// stats, traces and reset credits, the pause through the relay service this process runs (so
// that the tray's icon and the instance file follow), and the usage ledger it keeps. The tray
// serves the same table on its window port, with its listener besides (ControlAPI).

// localAPI is the relay port's handler of /relay/* (proxy.Options.LocalAPI).
func (a *App) localAPI(s *proxy.Server) http.Handler {
	b := localapi.ServerBackend(s)
	b.Pause = appPause{a, b.Pause}
	b.Usage = a.Usage
	return localapi.Handler(b)
}

// appPause pauses through the App's relay service, or the bare proxy while it has none.
type appPause struct {
	a    *App
	bare localapi.Pauser
}

func (p appPause) SetPaused(pause bool) (localapi.PauseState, error) {
	if s := p.a.service(); s != nil {
		return ControlAPI(s).SetPaused(pause)
	}
	return p.bare.SetPaused(pause)
}

// service is the relay service this App runs (the latest made), or nil.
func (a *App) service() *Service {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.svc
}

// ListenerControl steers a relay's listener: a *Service, or the tray's from a window process.
type ListenerControl interface {
	Status() ServiceStatus
	Pause()
	Resume() error
	SetListen(addr string) error
}

// ControlAPI is c as the local API's pause and listener parts.
func ControlAPI(c ListenerControl) localapi.Control { return controlAPI{c} }

type controlAPI struct{ c ListenerControl }

func (c controlAPI) SetPaused(pause bool) (localapi.PauseState, error) {
	was := c.c.Status().Paused
	var err error
	if pause {
		c.c.Pause()
	} else {
		err = c.c.Resume()
	}
	now := c.c.Status().Paused
	return localapi.PauseState{Paused: now, Changed: was != now}, err
}

func (c controlAPI) Status() localapi.Status { return c.c.Status().API() }

func (c controlAPI) SetListen(addr string) error { return c.c.SetListen(addr) }

// API is st as the local API answers it (its error as text).
func (st ServiceStatus) API() localapi.Status {
	j := localapi.Status{Addr: st.Addr, Running: st.Running, Paused: st.Paused, Warning: st.Warning, Refusing: st.Refusing}
	if st.Err != nil {
		j.Error = st.Err.Error()
	}
	return j
}

// ServiceStatusOf is the status the local API answered.
func ServiceStatusOf(j localapi.Status) ServiceStatus {
	st := ServiceStatus{Addr: j.Addr, Running: j.Running, Paused: j.Paused, Warning: j.Warning, Refusing: j.Refusing}
	if j.Error != "" {
		st.Err = errors.New(j.Error)
	}
	return st
}
