package relay

import (
	"context"
	"fmt"
	"sync"

	"github.com/codexrelay/codexrelay/app"
)

// Service runs the proxy's listener for the tray app and `serve`: start, pause and resume,
// and a move to a new address when the listen setting changes (from any process). Its methods
// are safe for concurrent use; they return once the change is done (a stop waits for
// in-flight requests to drain, up to DrainTimeout).
type Service struct {
	r           *Relay
	pinned      string // an address fixed for this process (serve --listen); "" follows the settings
	allowRemote bool

	mu     sync.Mutex
	active bool // between Start and Stop
	cancel context.CancelFunc
	done   chan struct{}
	status app.ServiceStatus
	// OnChange, when set, is called (outside the lock) after every status change.
	OnChange func(app.ServiceStatus)
	// Instance, when set, is told where the relay serves.
	Instance *app.Instance
}

// NewService returns a stopped service for the tray app: it listens where the settings (or
// CODEXRELAY_LISTEN) say, and follows the listen setting while it runs.
func (r *Relay) NewService() *Service { return r.newService("", false) }

// NewServeService returns a stopped service for `serve`: listen, when not empty, fixes the
// address for this process; allowRemote lets a non-loopback address be used with the local key.
func (r *Relay) NewServeService(listen string, allowRemote bool) *Service {
	return r.newService(listen, allowRemote)
}

func (r *Relay) newService(pinned string, allowRemote bool) *Service {
	s := &Service{r: r, pinned: pinned, allowRemote: allowRemote}
	// `codexrelay pause` and `resume` (POST /relay/pause, /relay/resume) pause through the
	// service, as the tray's menu does, so that its status and the instance file follow; a
	// change of the listen setting moves it (follow).
	r.mu.Lock()
	r.svc = s
	r.onListen = append(r.onListen, s.follow)
	r.mu.Unlock()
	return s
}

// Addr is where the service should listen now.
func (s *Service) Addr() string {
	if s.pinned != "" {
		return s.pinned
	}
	return s.r.ListenAddr()
}

// pinnedBy names what fixes the address, or "".
func (s *Service) pinnedBy() string {
	switch {
	case s.pinned != "":
		return "--listen " + s.pinned
	case s.r.ListenPinned() != "":
		return "CODEXRELAY_LISTEN=" + s.r.ListenPinned()
	}
	return ""
}

// Status returns the current status.
func (s *Service) Status() app.ServiceStatus {
	s.mu.Lock()
	st := s.status
	s.mu.Unlock()
	if err := s.r.LocalKeyError(); err != nil {
		st.Refusing = err.Error()
	}
	return st
}

// Start listens on the configured address and serves in the background. A port that is
// taken is reported at once in the returned error and in the status.
func (s *Service) Start() error {
	s.mu.Lock()
	if !s.active {
		s.r.startUsage()
	}
	s.active = true
	err := s.startLocked(s.Addr())
	st := s.status
	s.mu.Unlock()
	s.changed(st)
	return err
}

func (s *Service) startLocked(addr string) error {
	if s.cancel != nil {
		return nil
	}
	s.status = app.ServiceStatus{Addr: addr, Warning: s.status.Warning, Paused: s.status.Paused}
	if err := s.r.CheckListen(addr, s.allowRemote); err != nil {
		s.status.Err = err
		return err
	}
	ln, err := s.r.Listen(addr)
	if err != nil {
		s.status.Err = err
		return err
	}
	s.r.Proxy.SetAllowRemote(s.allowRemote)
	if s.Instance != nil {
		s.r.Proxy.SetInstanceSecret(s.Instance.Secret())
	}
	s.r.Proxy.SetListenAddr(ln.Addr().String()) // now, not when the goroutine gets to it
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	s.cancel, s.done = cancel, done
	s.status.Running = !s.status.Paused
	s.status.Addr = ln.Addr().String()
	go func() {
		defer close(done)
		err := s.r.Proxy.Serve(ctx, ln, app.DrainTimeout)
		s.mu.Lock()
		if s.done == done { // not replaced by a stop or restart
			s.status.Running = false
			s.status.Err = err
			s.cancel, s.done = nil, nil
		}
		st := s.status
		s.mu.Unlock()
		if err != nil {
			s.r.Log().Error("proxy stopped", "error", err)
			s.changed(st)
		}
	}()
	s.r.Log().Info("codex relay listening", "addr", s.status.Addr)
	return nil
}

// stopLocked stops serving and waits for the drain; s.mu is released while waiting.
func (s *Service) stopLocked() {
	cancel, done := s.cancel, s.done
	if cancel == nil {
		return
	}
	s.cancel, s.done = nil, nil
	s.status.Running = false
	s.mu.Unlock()
	cancel()
	<-done
	s.mu.Lock()
}

// Stop stops serving (for Quit).
func (s *Service) Stop() {
	s.mu.Lock()
	wasActive := s.active
	s.active = false
	s.stopLocked()
	if wasActive {
		s.r.stopUsage() // after the drain: the last requests' rows are written
	}
	st := s.status
	s.mu.Unlock()
	s.changed(st)
}

// Done returns a channel closed when the listener stops by itself (an error), or nil when
// nothing serves.
func (s *Service) Done() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done
}

// Pause stops serving requests until Resume. The port stays the relay's: a client gets 503
// relay_paused, which says how to resume, rather than a refused connection (which the Codex CLI
// reports as "stream disconnected"); requests under way finish.
func (s *Service) Pause() {
	s.mu.Lock()
	s.r.Proxy.SetPaused(true)
	s.status.Paused, s.status.Running, s.status.Err = true, false, nil
	st := s.status
	s.mu.Unlock()
	s.changed(st)
}

// Resume serves again after Pause.
func (s *Service) Resume() error {
	s.mu.Lock()
	s.r.Proxy.SetPaused(false)
	s.status.Paused = false
	var err error
	if s.cancel != nil {
		s.status.Running = true
	} else {
		err = s.startLocked(s.Addr())
	}
	st := s.status
	s.mu.Unlock()
	s.changed(st)
	return err
}

// SetListen validates and saves a new listen address, then moves the proxy to it (unless
// paused). If the new address cannot be opened, nothing is saved and the old one serves on.
func (s *Service) SetListen(addr string) error {
	if err := s.r.CheckListen(addr, false); err != nil {
		return err
	}
	s.mu.Lock()
	if s.cancel == nil || addr != s.status.Addr {
		// Check the new port before giving up the old one.
		ln, err := s.r.Listen(addr)
		if err != nil {
			s.mu.Unlock()
			return err
		}
		ln.Close()
	}
	s.active = true // the user asks it to listen there
	s.mu.Unlock()
	// The reload that follows the write moves the listener (follow); the second call only
	// matters when the setting was already addr.
	if err := s.r.SaveListen(addr); err != nil {
		return err
	}
	s.follow()
	st := s.Status()
	if st.Err != nil {
		return st.Err
	}
	if st.Warning != "" {
		return fmt.Errorf("saved, but %s", st.Warning)
	}
	return nil
}

// follow moves the listener to the address the settings name now, if it is not pinned and
// the relay is not paused. A new port that cannot be opened leaves the old one serving, with
// a warning. It runs on the goroutine that reloaded the settings and never waits for a drain.
func (s *Service) follow() {
	s.mu.Lock()
	want, pin := s.r.Settings().Listen, s.pinnedBy()
	if want == "" {
		want = app.DefaultListen
	}
	prev := s.status
	s.status.Warning = ""
	switch {
	case !s.active:
	case pin != "":
		if want != s.Addr() {
			s.status.Warning = fmt.Sprintf("the settings say listen on %s, but this relay's address is fixed by %s: restart it without that to move", want, pin)
		}
	case s.cancel != nil && want == s.status.Addr:
	case s.cancel != nil:
		ln, err := s.r.Listen(want)
		if err == nil {
			err = s.r.CheckListen(want, s.allowRemote)
			ln.Close()
		}
		if err != nil {
			s.status.Warning = fmt.Sprintf("the relay stays on %s: it cannot move to %s (%v)", s.status.Addr, want, err)
			break
		}
		// The new listener opens before the old one closes; the old one drains in the
		// background, so that a reload never waits for long streams to end.
		cancel, done := s.cancel, s.done
		s.cancel, s.done = nil, nil
		s.startLocked(want)
		go func() { cancel(); <-done }()
	default: // not running because of an earlier error: try the new address
		s.startLocked(want)
	}
	st := s.status
	s.mu.Unlock()
	if st.Addr != prev.Addr || st.Running != prev.Running || st.Warning != prev.Warning || fmt.Sprint(st.Err) != fmt.Sprint(prev.Err) {
		if st.Warning != "" {
			s.r.Log().Warn(st.Warning)
		}
		s.changed(st)
	}
}

func (s *Service) changed(st app.ServiceStatus) {
	if s.Instance != nil {
		// A paused relay keeps its port (it answers 503 relay_paused, and /relay/* for
		// `codexrelay resume`), so the instance file keeps its address.
		s.mu.Lock()
		open := s.cancel != nil
		s.mu.Unlock()
		listen := ""
		if st.Running || (st.Paused && open) {
			listen = st.Addr
		}
		s.Instance.Serving(listen, st.Paused)
	}
	s.r.Proxy.Touch() // those who wait on the relay's changes (the windows) read the status again
	if s.OnChange != nil {
		s.OnChange(st)
	}
}
