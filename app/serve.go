package app

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"
	"time"

	"github.com/codexrelay/codexrelay/app/localapi"
	"github.com/codexrelay/codexrelay/app/looptls"
)

// The listener as the store knows it: where the relay may listen, opening its port, and its
// status as the tray shows it and the local API steers it. The relay's Service (app/relay)
// runs it.

// DrainTimeout is how long in-flight requests may finish after a stop.
const DrainTimeout = 10 * time.Second

// callbackPort is the Codex sign-in callback's port, which the relay must leave free.
const callbackPort = 1455

// CheckListen refuses a non-loopback address unless remote access is allowed and protected
// by the local API key, and the sign-in callback's port however it is written.
func (a *App) CheckListen(addr string, allowRemote bool) error {
	host, err := checkAddr(addr)
	if err != nil {
		return err
	}
	if isLoopback(host) {
		return nil
	}
	if !allowRemote {
		return fieldError(string(SettingListen), fmt.Sprintf("must be a loopback address, not %q: Codex Relay only listens on 127.0.0.1 or [::1] unless remote access is allowed and the local API key is on", addr))
	}
	if !a.Settings().LocalAPIKey {
		return errors.New("a non-loopback listen address needs the local API key on: turn it on first") // a state: not a usage error
	}
	return nil
}

// checkListenSyntax checks a loopback listen address as the settings take it, without any
// state: host:port, a port number, not the sign-in callback's, a loopback host.
func checkListenSyntax(addr string) error {
	host, err := checkAddr(addr)
	if err == nil && !isLoopback(host) {
		err = fieldError(string(SettingListen), fmt.Sprintf("must be a loopback address (127.0.0.1 or [::1]), not %q: `codexrelay serve --allow-remote --listen` serves others", addr))
	}
	if _, port, _ := net.SplitHostPort(addr); err == nil && parsePort(port) > 0 && parsePort(port) < 1024 {
		// Saved, it would be written into Codex's config, and no relay of a user could open it.
		err = fieldError(string(SettingListen), fmt.Sprintf("must have a port from 1024 to 65535 (ports below 1024 need root), not %q", addr))
	}
	return err
}

// parsePort is a port number (0 when it is none).
func parsePort(port string) uint64 {
	n, _ := strconv.ParseUint(port, 10, 16)
	return n
}

// checkAddr checks that addr is host:port with a port it may use, and returns the host.
func checkAddr(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		return "", fieldError(string(SettingListen), fmt.Sprintf("must be host:port, e.g. %s, not %q", DefaultListen, addr))
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil {
		return "", fieldError(string(SettingListen), fmt.Sprintf("must have a port from 0 to 65535, not %q", addr))
	} else if n == callbackPort {
		return "", fieldError(string(SettingListen), "cannot use port 1455: it is the Codex sign-in callback's; choose another port")
	}
	return host, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Listen opens the proxy's listener, with a clear error when the port is taken. The port
// serves TLS too, once the folder has a loopback authority (loopca.go).
func (a *App) Listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, &portTakenError{addr: addr, err: err}
	}
	if err != nil {
		return nil, fmt.Errorf("cannot listen on %s: %w", addr, err)
	}
	return looptls.Listener(ln, a.LoopbackTLS), nil
}

// portTakenError is a listen address whose port another program holds. It unwraps to the
// listener's error, so that errors.Is(err, syscall.EADDRINUSE) tells it apart.
type portTakenError struct {
	addr string
	err  error
}

func (e *portTakenError) Error() string {
	return fmt.Sprintf("cannot listen on %s: the port is taken (is another Codex Relay running?)", e.addr)
}

func (e *portTakenError) Unwrap() error { return e.err }

// ServiceStatus is what the tray shows about the listener.
type ServiceStatus struct {
	Addr    string // where it listens, or would
	Running bool
	Paused  bool  // stopped by the user
	Err     error // why it is not running, when it should be
	// Warning says why the relay does not listen where the settings say (the address is
	// pinned, or the new port could not be opened); "" when it does.
	Warning string
	// Refusing says why the relay refuses every client while it listens (the local key is on
	// but cannot be read, with what repairs it); "" when it does not.
	Refusing string
}

// The listener as the local API steers it (app/localapi's Control): the tray serves it on its
// window port from its relay's Service, and the window process reads it back (ServiceStatusOf).

// ListenerControl steers a relay's listener: the relay's Service, or the tray's from a window
// process.
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
