package window

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/app/ledger"
	"github.com/codexrelay/codexrelay/app/localapi"
	"github.com/codexrelay/codexrelay/proxy"
	"github.com/codexrelay/codexrelay/ui/source"
)

// windowClient is the window process's side of the window API: a Source, a UsageSource and a
// RelayControl (package source) over the local API's client (app/localapi).
type windowClient struct {
	base, token string
	api         *localapi.Client
}

func newWindowClient(base, token string) *windowClient {
	return &windowClient{base: base, token: token, api: localapi.NewClient(base, localapi.Bearer(token), source.UsageReadTimeout+2*time.Second)}
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
