package ui

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/app/ledger"
	"github.com/codexrelay/codexrelay/app/localapi"
	"github.com/codexrelay/codexrelay/proxy"
)

// The window API is how the window process (B) reads the tray process's (A's) live state and
// asks it for what only A can do (pause, resume, move the listener): the local API's route
// table (app/localapi), served by A on a loopback port of its own behind the token A hands to
// each window process it starts (localapi.WithToken). The relay's port may be paused, taken or
// moved, and the window process must still say so. A serves it from its relay (stats, traces,
// reset credits), its listener (pause, resume, status, listen) and its usage ledger; B reads
// it with the local API's client (windowClient) and builds no relay of its own.

// relayControl is what the windows ask of the listener: the in-process *app.Service, or the
// tray process through the window API.
type relayControl interface {
	Status() app.ServiceStatus
	Pause()
	Resume() error
	SetListen(addr string) error
}

// windowAPI serves the window API for one relay (A's side).
type windowAPI struct {
	src   Source
	ctl   relayControl
	usage func() UsageSource
	token string

	once sync.Once
	h    http.Handler
}

// newToken is a random bearer token for the window API.
func newToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// serveWindowAPI listens on a loopback port and serves api there until ctx ends. It returns
// the base URL.
func serveWindowAPI(ctx context.Context, api *windowAPI) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: windowAPIIdle}
	go srv.Serve(capListener(ln, windowAPIMaxConns)) // windowlimits.go
	go func() { <-ctx.Done(); srv.Close() }()
	return "http://" + ln.Addr().String(), nil
}

// ServeHTTP serves the local API's table from A's parts, to the holders of the token.
func (api *windowAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	api.once.Do(func() {
		b := localapi.Backend{Relay: api.src}
		if c, ok := api.src.(localapi.Credits); ok {
			b.Credits = c
		}
		if api.ctl != nil {
			b.Pause, b.Listener = app.ControlAPI(api.ctl), app.ControlAPI(api.ctl)
		}
		if api.usage != nil {
			b.Usage = func() localapi.Usage { return api.usage() }
		}
		api.h = localapi.WithToken(api.token, localapi.Handler(b))
	})
	api.h.ServeHTTP(w, r)
}

// windowClient is the window process's side of the window API: a Source, a UsageSource and a
// relayControl over the local API's client.
type windowClient struct {
	base, token string
	api         *localapi.Client
}

func newWindowClient(base, token string) *windowClient {
	return &windowClient{base: base, token: token, api: localapi.NewClient(base, localapi.Bearer(token), usageReadTimeout+2*time.Second)}
}

// errTrayGone says the tray process does not answer.
var errTrayGone = errors.New("the Codex Relay tray process does not answer")

// gone is err, a request that got no answer marked errTrayGone (an answer, a *localapi.Error,
// is what the tray said).
func gone(err error) error {
	var answer *localapi.Error
	if err == nil || errors.As(err, &answer) {
		return err
	}
	return fmt.Errorf("%w (%v)", errTrayGone, err)
}

func brief() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 5*time.Second)
}

// Stats is A's snapshot (an empty one when A does not answer: the status says why).
func (c *windowClient) Stats() proxy.Snapshot {
	ctx, cancel := brief()
	defer cancel()
	s, _ := c.api.Stats(ctx)
	return s
}

// Traces are A's recent requests.
func (c *windowClient) Traces(limit int) []proxy.Trace {
	ctx, cancel := brief()
	defer cancel()
	t, _ := c.api.Traces(ctx, limit)
	return t
}

// Status is A's listener status; when A does not answer, a stopped one that says so.
func (c *windowClient) Status() app.ServiceStatus {
	ctx, cancel := brief()
	defer cancel()
	st, err := c.api.Status(ctx)
	if err != nil {
		return app.ServiceStatus{Err: gone(err)}
	}
	return app.ServiceStatusOf(st)
}

// steer bounds a request that changes the listener: a pause drains the requests in flight (up
// to the drain timeout).
func steer() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), time.Minute)
}

func (c *windowClient) Pause() {
	ctx, cancel := steer()
	defer cancel()
	c.api.Pause(ctx)
}

func (c *windowClient) Resume() error {
	ctx, cancel := steer()
	defer cancel()
	_, err := c.api.Resume(ctx)
	return gone(err)
}

func (c *windowClient) SetListen(addr string) error {
	ctx, cancel := steer()
	defer cancel()
	_, err := c.api.SetListen(ctx, addr)
	return gone(err)
}

func (c *windowClient) Summary(ctx context.Context, q ledger.Query) (ledger.Report, error) {
	rep, err := c.api.Summary(ctx, q)
	return rep, gone(err)
}

func (c *windowClient) Daily(ctx context.Context, since time.Time) ([]ledger.DayByAccount, error) {
	days, err := c.api.Daily(ctx, since)
	return days, gone(err)
}

func (c *windowClient) Burn(ctx context.Context, account string) (ledger.Burn, error) {
	b, err := c.api.Burn(ctx, account)
	return b, gone(err)
}

func (c *windowClient) Forecast(ctx context.Context, accounts []string, now time.Time) (ledger.Forecast, error) {
	f, err := c.api.Forecast(ctx, accounts, now)
	return f, gone(err)
}
