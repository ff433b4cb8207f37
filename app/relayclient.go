package app

import (
	"errors"
	"fmt"
	"time"

	"github.com/codexrelay/codexrelay/app/localapi"
)

// RelayClient is the local API's client (localapi.Client) of the Codex Relay that holds this
// settings folder's instance lock, and of nothing else: never of the configured port on the
// chance that the relay is there (another user's program may listen there), never with the
// local key. Each request is signed with the instance secret the relay wrote beside its lock
// (readable by this user alone), and an answer without the relay's proof is refused as
// ErrNotTheRelay (localapi.Signed).
type RelayClient struct {
	*localapi.Client
	info InstanceInfo
}

// ErrNotTheRelay is an answer that the relay of this folder did not sign: something else
// answers on its address.
var ErrNotTheRelay = localapi.ErrNotTheRelay

// ErrRelayTooOld is a running relay that signs nothing (a version before instance secrets).
var ErrRelayTooOld = errors.New("the running Codex Relay is an older version that cannot prove it is this folder's: restart it")

// RunningRelay returns a client of the relay running for this settings folder, each request bounded
// by timeout (0: by its context alone); nil when none runs or it does not serve; err when one
// runs that cannot be talked to safely (ErrRelayTooOld).
func (a *App) RunningRelay(timeout time.Duration) (*RelayClient, error) {
	info := RunningInstance(a.ConfigDir())
	switch {
	case info == nil || info.Listen == "":
		return nil, nil
	case info.Secret == "":
		return nil, fmt.Errorf("%w (%s)", ErrRelayTooOld, info)
	}
	c := localapi.NewClient("http://"+info.Listen, localapi.Signed(info.Secret, a.opt.Now), timeout)
	return &RelayClient{Client: c, info: *info}, nil
}

// Info describes the relay.
func (c *RelayClient) Info() *InstanceInfo { return &c.info }
