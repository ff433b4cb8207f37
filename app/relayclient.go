package app

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/codexrelay/codexrelay/proxy"
)

// RelayClient talks to the Codex Relay that holds this settings folder's instance lock, and to
// nothing else: never to the configured port on the chance that the relay is there (another
// user's program may listen there), never with the local key. Each request is signed with the
// instance secret the relay wrote beside its lock (readable by this user alone), and an answer
// without the relay's proof is refused (proxy/instanceauth.go).
type RelayClient struct {
	info   InstanceInfo
	client *http.Client
	now    func() time.Time
}

// ErrNotTheRelay is an answer that the relay of this folder did not sign: something else
// answers on its address.
var ErrNotTheRelay = errors.New("the program answering there is not this folder's Codex Relay (its answer is not signed with the folder's instance secret)")

// ErrRelayTooOld is a running relay that signs nothing (a version before instance secrets).
var ErrRelayTooOld = errors.New("the running Codex Relay is an older version that cannot prove it is this folder's: restart it")

// Relay returns a client of the relay running for this settings folder, nil when none runs or
// it does not serve; err when one runs that cannot be talked to safely (ErrRelayTooOld).
func (a *App) Relay(timeout time.Duration) (*RelayClient, error) {
	info := RunningInstance(a.ConfigDir())
	switch {
	case info == nil || info.Listen == "":
		return nil, nil
	case info.Secret == "":
		return nil, fmt.Errorf("%w (%s)", ErrRelayTooOld, info)
	}
	return &RelayClient{info: *info, client: &http.Client{Timeout: timeout}, now: a.opt.Now}, nil
}

// Info describes the relay.
func (c *RelayClient) Info() *InstanceInfo { return &c.info }

// URL is the relay's address for path.
func (c *RelayClient) URL(path string) string { return "http://" + c.info.Listen + path }

// Do signs req (made with URL), sends it, and returns the answer if the relay signed it. An
// answer it did not sign is closed unread and reported as ErrNotTheRelay.
func (c *RelayClient) Do(req *http.Request) (*http.Response, error) {
	req.Header.Del("Authorization")
	nonce := proxy.SignInstanceRequest(req, c.info.Secret, c.now())
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, err
	}
	if !proxy.CheckInstanceProof(resp, c.info.Secret, nonce) {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		resp.Body.Close()
		return nil, fmt.Errorf("%s: %w", c.info.Listen, ErrNotTheRelay)
	}
	return resp, nil
}
