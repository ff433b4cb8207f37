package window

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/app/ledger"
	"github.com/codexrelay/codexrelay/app/localapi"
	"github.com/codexrelay/codexrelay/proxy"
	"github.com/codexrelay/codexrelay/ui/source"
)

// windowClient is the window process's side of the window API: a Source, a UsageSource and a
// RelayControl (package source) over the local API's client (app/localapi). It asks the tray
// only for what changed: follow waits on GET /relay/changes and raises sig, which the windows'
// loop waits on (Changes), and Traces asks only for the requests newer than those it holds.
type windowClient struct {
	base, token string
	api         *localapi.Client
	sig         proxy.Signal

	tracesMu sync.Mutex
	traces   []proxy.Trace // the last read, newest first
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

// changesWait is how long one GET /relay/changes waits for a change; followRetry the longest
// wait before asking again a tray that did not answer.
const (
	changesWait = 25 * time.Second
	followRetry = 30 * time.Second
)

// follow waits on the tray's relay for changes until ctx ends, raising sig at each. A tray that
// does not answer raises it too (the windows say so), and is asked again after 1 s, then
// longer, up to followRetry (the window process ends anyway when the tray does).
func (c *windowClient) follow(ctx context.Context) {
	var gen uint64
	retry := time.Second
	for ctx.Err() == nil {
		wctx, cancel := context.WithTimeout(ctx, changesWait+10*time.Second)
		g, err := c.api.Changes(wctx, gen, changesWait)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			c.sig.Raise()
			select {
			case <-ctx.Done():
			case <-time.After(retry):
			}
			retry = min(2*retry, followRetry)
			continue
		}
		retry = time.Second
		if g != gen {
			gen = g
			c.sig.Raise()
		}
	}
}

// Changes is the generation of the tray's relay as follow last saw it.
func (c *windowClient) Changes() (uint64, <-chan struct{}) { return c.sig.Changes() }

// Stats is A's snapshot (an empty one when A does not answer: the status says why).
func (c *windowClient) Stats() proxy.Snapshot {
	ctx, cancel := brief()
	defer cancel()
	s, _ := c.api.Stats(ctx)
	return s
}

// Traces are A's recent requests: those it holds, with the newer ones A adds (it keeps the
// last ones when A does not answer).
func (c *windowClient) Traces(limit int) []proxy.Trace {
	ctx, cancel := brief()
	defer cancel()
	c.tracesMu.Lock()
	defer c.tracesMu.Unlock()
	after := ""
	if len(c.traces) > 0 {
		after = c.traces[0].ID
	}
	if newer, err := c.api.TracesAfter(ctx, limit, after); err == nil {
		c.traces = append(newer, c.traces...)
		c.traces = c.traces[:min(limit, len(c.traces))]
	}
	return slices.Clone(c.traces)
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
