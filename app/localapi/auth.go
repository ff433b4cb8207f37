package localapi

import (
	"fmt"
	"net/http"
	"time"

	"github.com/codexrelay/codexrelay/proxy"
)

// Auth is how a client proves who it is to the port it talks to, and checks who answered.
type Auth interface {
	// Authorize readies req and returns the check of its answer (nil: none). An answer the
	// check refuses is closed unread.
	Authorize(req *http.Request) (check func(*http.Response) error)
}

// Bearer sends token as the bearer token: the relay's local key (the first run's test,
// through the relay port as Codex goes) or the window token (the window process, on the
// tray's window port). "" sends none.
func Bearer(token string) Auth { return bearer(token) }

type bearer string

func (b bearer) Authorize(req *http.Request) func(*http.Response) error {
	if b != "" {
		req.Header.Set("Authorization", "Bearer "+string(b))
	}
	return nil
}

// Signed signs each request with the instance secret the relay of this settings folder wrote
// beside its lock, sends no key, and refuses an answer without the relay's proof as
// ErrNotTheRelay (proxy/instanceauth.go): the folder's programs talk to its relay, and to
// nothing else that may listen on its port.
func Signed(secret string, now func() time.Time) Auth {
	if now == nil {
		now = time.Now
	}
	return signed{secret, now}
}

type signed struct {
	secret string
	now    func() time.Time
}

func (s signed) Authorize(req *http.Request) func(*http.Response) error {
	req.Header.Del("Authorization")
	req.Header.Del("X-Api-Key")
	nonce := proxy.SignInstanceRequest(req, s.secret, s.now())
	return func(resp *http.Response) error {
		if !proxy.CheckInstanceProof(resp, s.secret, nonce) {
			return fmt.Errorf("%s: %w", req.URL.Host, ErrNotTheRelay)
		}
		return nil
	}
}
