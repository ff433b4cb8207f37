package app

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"
	"time"
)

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
		return fieldError(FieldListen, fmt.Sprintf("%q is not a loopback address: Codex Relay only listens on 127.0.0.1 or [::1] unless remote access is allowed and the local API key is on", addr))
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
		err = fieldError(FieldListen, fmt.Sprintf("%q is not a loopback address: the setting takes 127.0.0.1 or [::1] (`codexrelay serve --allow-remote --listen` serves others)", addr))
	}
	return err
}

// checkAddr checks that addr is host:port with a port it may use, and returns the host.
func checkAddr(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		return "", fieldError(FieldListen, fmt.Sprintf("%q is not valid: use host:port, e.g. %s", addr, DefaultListen))
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil {
		return "", fieldError(FieldListen, fmt.Sprintf("%q is not valid: the port must be a number from 0 to 65535", addr))
	} else if n == callbackPort {
		return "", fieldError(FieldListen, "cannot use port 1455: it is the Codex sign-in callback's; choose another port")
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

// Listen opens the proxy's listener, with a clear error when the port is taken.
func (a *App) Listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, &portTakenError{addr: addr, err: err}
	}
	if err != nil {
		return nil, fmt.Errorf("cannot listen on %s: %w", addr, err)
	}
	return ln, nil
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

// LocalKeyForNewInstall turns the local API key on when this is a new install (the settings
// folder had no settings file when the App opened it) and the key is off: on a shared machine
// any local user could otherwise spend the accounts and read the stats, where a ChatGPT
// account's e-mail appears. The Codex configuration the relay writes carries the key
// (codex-config --write), so no variable has to be set. It reports whether it made one.
func (a *App) LocalKeyForNewInstall() (bool, error) {
	if !a.newInstall || a.Settings().LocalAPIKey {
		return false, nil
	}
	a.newInstall = false
	if _, err := a.SetLocalKey(true); err != nil {
		return false, fmt.Errorf("could not turn the local API key on for this new install: %w", err)
	}
	return true, nil
}

// SetLocalKey turns the local API key on (storing a new one, returned once) or off. Every
// running relay reads the change from the settings file: the new key from the keychain.
func (a *App) SetLocalKey(on bool) (string, error) {
	if !on {
		if err := a.update(func(s *Settings) error { s.LocalAPIKey = false; return nil }); err != nil {
			return "", err
		}
		return "", a.opt.Keychain.Delete(localKeyUser)
	}
	var b [24]byte
	rand.Read(b[:])
	key := "crk-" + base64.RawURLEncoding.EncodeToString(b[:])
	err := a.update(func(s *Settings) error {
		if err := a.opt.Keychain.Set(localKeyUser, key); err != nil {
			return err
		}
		s.LocalAPIKey = true
		s.LocalKeyRev++
		return nil
	})
	if err != nil {
		return "", err
	}
	return key, nil
}

// LocalKey returns the local API key, if it is on.
func (a *App) LocalKey() (string, error) {
	if !a.Settings().LocalAPIKey {
		return "", nil
	}
	return a.opt.Keychain.Get(localKeyUser)
}
