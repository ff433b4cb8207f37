package app

import (
	"context"
	"sync"
)

// Service runs the proxy's listener for the tray: start, pause and resume, and restart on a
// new address. Its methods are safe for concurrent use; they return once the change is done
// (a stop waits for in-flight requests to drain, up to DrainTimeout).
type Service struct {
	a *App

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
	status ServiceStatus
	// OnChange, when set, is called (outside the lock) after every status change.
	OnChange func(ServiceStatus)
}

// ServiceStatus is what the tray shows about the listener.
type ServiceStatus struct {
	Addr    string // where it listens, or would
	Running bool
	Paused  bool  // stopped by the user
	Err     error // why it is not running, when it should be
}

// NewService returns a stopped service for a.
func (a *App) NewService() *Service { return &Service{a: a} }

// Status returns the current status.
func (s *Service) Status() ServiceStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status
}

// Start listens on the configured address and serves in the background. A port that is
// taken is reported at once in the returned error and in the status.
func (s *Service) Start() error {
	s.mu.Lock()
	err := s.startLocked(s.a.ListenAddr())
	st := s.status
	s.mu.Unlock()
	s.changed(st)
	return err
}

func (s *Service) startLocked(addr string) error {
	if s.cancel != nil {
		return nil
	}
	s.status = ServiceStatus{Addr: addr}
	if err := s.a.CheckListen(addr, false); err != nil {
		s.status.Err = err
		return err
	}
	ln, err := s.a.Listen(addr)
	if err != nil {
		s.status.Err = err
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	s.cancel, s.done = cancel, done
	s.status.Running = true
	s.status.Addr = ln.Addr().String()
	go func() {
		defer close(done)
		err := s.a.Proxy.Serve(ctx, ln, DrainTimeout)
		s.mu.Lock()
		if s.done == done { // not replaced by a stop or restart
			s.status.Running = false
			s.status.Err = err
			s.cancel, s.done = nil, nil
		}
		st := s.status
		s.mu.Unlock()
		if err != nil {
			s.a.log.Error("proxy stopped", "error", err)
			s.changed(st)
		}
	}()
	s.a.log.Info("codex relay listening", "addr", s.status.Addr)
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
	s.stopLocked()
	st := s.status
	s.mu.Unlock()
	s.changed(st)
}

// Pause stops serving until Resume; clients get connection refused meanwhile.
func (s *Service) Pause() {
	s.mu.Lock()
	s.stopLocked()
	s.status.Paused, s.status.Err = true, nil
	st := s.status
	s.mu.Unlock()
	s.changed(st)
}

// Resume serves again after Pause.
func (s *Service) Resume() error {
	s.mu.Lock()
	s.status.Paused = false
	err := s.startLocked(s.a.ListenAddr())
	st := s.status
	s.mu.Unlock()
	s.changed(st)
	return err
}

// SetListen validates and saves a new listen address, then restarts the proxy on it (unless
// paused). If the new address cannot be opened, the old one is kept and serves on.
func (s *Service) SetListen(addr string) error {
	if err := s.a.CheckListen(addr, false); err != nil {
		return err
	}
	s.mu.Lock()
	defer func() {
		st := s.status
		s.mu.Unlock()
		s.changed(st)
	}()
	old := s.status.Addr
	wasRunning := s.cancel != nil
	if wasRunning && addr == old {
		return s.a.update(func(st *Settings) error { st.Listen = addr; return nil })
	}
	// Check the new port before giving up the old one.
	ln, err := s.a.Listen(addr)
	if err != nil {
		return err
	}
	ln.Close()
	if err := s.a.update(func(st *Settings) error { st.Listen = addr; return nil }); err != nil {
		return err
	}
	if s.status.Paused {
		s.status.Addr = addr
		return nil
	}
	s.stopLocked()
	return s.startLocked(addr)
}

func (s *Service) changed(st ServiceStatus) {
	if s.OnChange != nil {
		s.OnChange(st)
	}
}
