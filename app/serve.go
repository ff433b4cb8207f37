package app

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"
)

// DrainTimeout is how long in-flight requests may finish after a stop.
const DrainTimeout = 10 * time.Second

// CheckListen refuses a non-loopback address unless remote access is allowed and protected
// by the local API key.
func (a *App) CheckListen(addr string, allowRemote bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		return fmt.Errorf("listen address %q is not valid: use host:port, e.g. %s", addr, DefaultListen)
	}
	if port == "1455" {
		return errors.New("port 1455 is the Codex sign-in callback: choose another port")
	}
	if isLoopback(host) {
		return nil
	}
	if !allowRemote {
		return fmt.Errorf("listen address %q is not a loopback address: Codex Relay only listens on 127.0.0.1 or [::1] unless --allow-remote is given together with a local API key", addr)
	}
	if !a.Settings().LocalAPIKey {
		return errors.New("--allow-remote needs the local API key: turn it on first with `codexrelay local-key on`")
	}
	return nil
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
		return nil, fmt.Errorf("cannot listen on %s: the port is taken (is another Codex Relay running? `codexrelay serve --listen 127.0.0.1:PORT` picks another)", addr)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot listen on %s: %w", addr, err)
	}
	return ln, nil
}

// Serve runs the proxy on addr until ctx is cancelled, then drains for up to DrainTimeout.
func (a *App) Serve(ctx context.Context, addr string, allowRemote bool) error {
	if err := a.CheckListen(addr, allowRemote); err != nil {
		return err
	}
	ln, err := a.Listen(addr)
	if err != nil {
		return err
	}
	a.log.Info("codex relay listening", "addr", ln.Addr().String(), "accounts", len(a.Accounts()))
	return a.Proxy.Serve(ctx, ln, DrainTimeout)
}

// SetLocalKey turns the local API key on (generating a new one, returned once) or off.
func (a *App) SetLocalKey(on bool) (string, error) {
	if !on {
		if err := a.update(func(s *Settings) error { s.LocalAPIKey = false; return nil }); err != nil {
			return "", err
		}
		a.Proxy.SetLocalAPIKey("")
		return "", a.opt.Keychain.Delete(localKeyUser)
	}
	var b [24]byte
	rand.Read(b[:])
	key := "crk-" + base64.RawURLEncoding.EncodeToString(b[:])
	if err := a.opt.Keychain.Set(localKeyUser, key); err != nil {
		return "", err
	}
	if err := a.update(func(s *Settings) error { s.LocalAPIKey = true; return nil }); err != nil {
		return "", err
	}
	a.Proxy.SetLocalAPIKey(key)
	return key, nil
}

// LocalKey returns the local API key, if it is on.
func (a *App) LocalKey() (string, error) {
	if !a.Settings().LocalAPIKey {
		return "", nil
	}
	return a.opt.Keychain.Get(localKeyUser)
}
